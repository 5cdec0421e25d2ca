//! `get_url` with `resume` (what `download-images` uses for cloud images and ISOs) against a
//! real HTTP server on 127.0.0.1: a small std-only server that answers `Range: bytes=N-`
//! with 206, and can cut its first answer short to play an interrupted download.
//!
//! The interrupted run fails and keeps the partial file; the re-run asks for the rest with a
//! Range request starting at the partial size, and the joined file passes the checksum. A
//! partial file with wrong bytes is caught by the checksum and removed, and the run after
//! that downloads the whole file again.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use sha2::Digest;

use crate::support::Test;

const INV: &str = "[nodes]\nalpha ansible_connection=local\n";

/// The ranges asked for, one entry per request (`None`: the whole file).
type Seen = Arc<Mutex<Vec<Option<usize>>>>;

/// Serve `body` at any path; the first `cut` answers stop after half the body.
fn serve(body: Vec<u8>, cut: usize) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut range = None;
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("range: bytes=") {
                    range = v.trim().trim_end_matches('-').parse::<usize>().ok();
                }
            }
            log.lock().unwrap().push(range);
            let start = range.unwrap_or(0).min(body.len());
            let head = match range {
                Some(s) => format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {s}-{}/{}\r\n",
                    body.len() - 1,
                    body.len()
                ),
                None => "HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\n".to_string(),
            };
            let rest = &body[start..];
            let _ = stream.write_all(
                format!(
                    "{head}Content-Length: {}\r\nConnection: close\r\n\r\n",
                    rest.len()
                )
                .as_bytes(),
            );
            // An interrupted transfer: half the promised bytes, then the connection closes.
            let send = if n < cut {
                &rest[..rest.len() / 2]
            } else {
                rest
            };
            let _ = stream.write_all(send);
        }
    });
    (port, seen)
}

fn payload() -> Vec<u8> {
    (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn play(port: u16, dest: &str, digest: &str) -> String {
    format!(
        "- hosts: alpha\n  gather_facts: false\n  tasks:\n\
         \x20   - get_url:\n        url: http://127.0.0.1:{port}/image.qcow2\n\
         \x20       dest: {dest}\n        checksum: sha256:{digest}\n        resume: true\n"
    )
}

#[test]
fn get_url_resumes_an_interrupted_download_with_a_range_request() {
    let body = payload();
    let digest = hex::encode(sha2::Sha256::digest(&body));
    let (port, seen) = serve(body.clone(), 1);
    let t = Test::new().write("hosts.ini", INV);
    let dest = t.path().join("image.qcow2");
    let partial = t.path().join("image.qcow2.kinit-dl");
    let t = t.write("site.yml", &play(port, dest.to_str().unwrap(), &digest));
    let first = t
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .redact(format!("127.0.0.1:{port}"), "127.0.0.1:[PORT]")
        .snapshot();
    assert_ne!(first.output.status.code(), Some(0), "{}", first.stdout());
    assert!(
        first.stdout().contains("is kept and a re-run continues it"),
        "{}",
        first.stdout()
    );
    let kept = std::fs::read(&partial).expect("the partial download is kept");
    assert_eq!(kept.len(), body.len() / 2);
    assert!(!dest.exists(), "nothing unverified is put in place");

    let again = Test::new()
        .write("hosts.ini", INV)
        .write("site.yml", &play(port, dest.to_str().unwrap(), &digest))
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .redact(format!("127.0.0.1:{port}"), "127.0.0.1:[PORT]")
        .snapshot();
    assert!(
        again.stdout().contains("changed: [alpha]"),
        "{}",
        again.stdout()
    );
    assert_eq!(
        std::fs::read(&dest).unwrap(),
        body,
        "the joined file is the whole image"
    );
    assert!(!partial.exists());
    assert_eq!(*seen.lock().unwrap(), vec![None, Some(body.len() / 2)]);
}

#[test]
fn get_url_resume_with_a_corrupt_partial_file_starts_over() {
    let body = payload();
    let digest = hex::encode(sha2::Sha256::digest(&body));
    let (port, seen) = serve(body.clone(), 0);
    let t = Test::new().write("hosts.ini", INV);
    let dest = t.path().join("image.qcow2");
    // A partial file whose bytes are not the image's: the resumed whole is wrong.
    std::fs::write(t.path().join("image.qcow2.kinit-dl"), vec![0u8; 1000]).unwrap();
    let play = play(port, dest.to_str().unwrap(), &digest);
    let first = t
        .write("site.yml", &play)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .redact(format!("127.0.0.1:{port}"), "127.0.0.1:[PORT]")
        .snapshot();
    assert_ne!(first.output.status.code(), Some(0), "{}", first.stdout());
    assert!(
        first.stdout().contains(&format!("expected `{digest}`")),
        "{}",
        first.stdout()
    );
    assert!(!dest.exists());
    let base = first.dir.clone();
    assert!(
        !base.join("image.qcow2.kinit-dl").exists(),
        "the bad partial file is removed"
    );

    let again = Test::new()
        .write("hosts.ini", INV)
        .write("site.yml", &play)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .redact(format!("127.0.0.1:{port}"), "127.0.0.1:[PORT]")
        .snapshot();
    assert!(
        again.stdout().contains("changed: [alpha]"),
        "{}",
        again.stdout()
    );
    assert_eq!(std::fs::read(&dest).unwrap(), body);
    assert_eq!(*seen.lock().unwrap(), vec![Some(1000), None]);
}
