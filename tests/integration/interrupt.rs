//! Ctrl-C at any moment: SIGINT while kinit is still loading its inputs (before any runtime
//! exists) or waiting for the cluster lock ends it with exit 130, never by the signal; an
//! upload or download cancelled half-way leaves no temp file on the local machine or a WinRM
//! host (the SSH side is `ssh/interrupted_put.rs`).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kinit::transport::local::LocalConnection;
use kinit::transport::winrm::WinRmConnection;
use kinit::transport::{ConnectionKind, HostTarget, Source};

use crate::support::Test;
use crate::winrm_server::{Mode, WinRmServer};

fn sigint(pid: u32) {
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn temps(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("kinit-tmp"))
        .collect()
}

/// Poll (bounded) until `dir` holds no temp file; returns what is left.
async fn temps_gone(dir: &Path) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !temps(dir).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    temps(dir)
}

#[test]
fn sigint_while_the_playbook_is_still_loading_exits_130() {
    // 20000 tasks take a good second to load in a debug build: the signal lands while
    // kinit parses (100 ms after `main` began), long before the executor and its runtime
    // exist.
    let mut book = String::from("- hosts: localhost\n  gather_facts: false\n  tasks:\n");
    for i in 0..20000 {
        book.push_str(&format!("    - debug: msg=\"task {i}\"\n"));
    }
    let ran = Test::new()
        .write("site.yml", &book)
        .args(["playbook", "site.yml", "-i", "localhost,"])
        .spawn()
        .interrupt_after(Duration::from_millis(100))
        .snapshot();
    let stdout = ran.stdout();
    assert_eq!(
        ran.output.status.signal(),
        None,
        "kinit was killed by the signal instead of handling it"
    );
    assert_eq!(ran.output.status.code(), Some(130), "{stdout}");
    assert!(
        !stdout.contains("task 0"),
        "a task ran after Ctrl-C: {stdout}"
    );
}

#[test]
fn ctrl_c_while_waiting_for_the_cluster_lock_exits_130_and_leaves_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("playbooks");
    std::fs::create_dir_all(&book).unwrap();
    std::fs::write(
        book.join("site.yml"),
        "- hosts: localhost\n  gather_facts: false\n  tags: [gather-facts]\n  tasks:\n    - debug: msg=ran\n",
    )
    .unwrap();
    let lock = dir.path().join("state/kinit/k8scluster/lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    // The holder is this test process: alive, so the lock is not stale.
    let holder = format!("pid={}\nstarted=2026-01-01T00:00:00Z\n", std::process::id());
    std::fs::write(&lock, &holder).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_kinit"))
        .args(["run", "--spec", "k8s-libvirt-1-1-1", "--stop-after"])
        .args(["gather-facts", "--wait-lock", "--playbook-dir"])
        .arg(&book)
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    sigint(child.id());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("waiting for the lock"), "{err}");
    assert!(
        err.contains("interrupted while waiting for the lock of cluster `k8scluster`"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), holder);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ran"));
}

/// SIGTERM (what CI runners and service managers send on a timeout) mid-task is handled like
/// Ctrl-C: the running command is stopped, kinit exits 130 and releases the cluster lock, so
/// the next run starts without a stale lock in its way.
#[test]
fn sigterm_mid_run_exits_130_and_releases_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("playbooks");
    std::fs::create_dir_all(&book).unwrap();
    let marker = dir.path().join("slept");
    std::fs::write(
        book.join("site.yml"),
        format!(
            "- hosts: localhost\n  gather_facts: false\n  tags: [gather-facts]\n  tasks:\n    \
             - shell: sleep 30 && touch {}\n",
            marker.display()
        ),
    )
    .unwrap();
    let lock = dir.path().join("state/kinit/k8scluster/lock");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_kinit"))
            .args(["run", "--spec", "k8s-libvirt-1-1-1", "--stop-after"])
            .args(["gather-facts", "--playbook-dir"])
            .arg(&book)
            .current_dir(dir.path())
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let child = run();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(lock.exists(), "the run never took the lock");
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "killed by the signal: {err}");
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "kinit did not stop promptly"
    );
    assert!(!lock.exists(), "the lock was left behind");
    assert!(!marker.exists(), "the interrupted command ran to the end");
}

/// A sparse local file of `len` bytes (reads as zeros, costs no disk until copied).
fn sparse(dir: &Path, len: u64) -> std::path::PathBuf {
    let p = dir.join("big.src");
    std::fs::File::create(&p).unwrap().set_len(len).unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_local_upload_leaves_no_temp_file() {
    let src_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = Source::File(sparse(src_dir.path(), 256 << 20));
    let dest = dir.path().join("big.bin");
    let c = LocalConnection::new(&HostTarget::new("localhost", ConnectionKind::Local));
    let appeared = async {
        while temps(dir.path()).is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    let dest_text = dest.display().to_string();
    tokio::select! {
        r = c.put(&src, &dest_text, Some(0o600)) => {
            panic!("upload finished before it was cancelled: {r:?}")
        }
        _ = appeared => {}
    }
    // The copy stops at its next chunk and removes what it wrote.
    assert_eq!(temps_gone(dir.path()).await, Vec::<String>::new());
    assert!(!dest.exists());
    // An upload that is not cancelled still lands, with its mode.
    let small = Source::Bytes(b"whole\n".to_vec());
    c.put(&small, &dest.display().to_string(), Some(0o640))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"whole\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(temps(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_winrm_transfers_leave_no_temp_file_on_either_side() {
    let srv = WinRmServer::for_mode(Mode::HttpsBasic, &[]);
    // The test server runs on this machine, so "remote" paths are local folders.
    let remote = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let c = WinRmConnection::connect(&srv.target(Mode::HttpsBasic))
        .await
        .unwrap();
    let dest = remote.path().join("big.bin").display().to_string();
    let big = Source::Bytes(vec![7u8; 32 << 20]);
    let appeared = async {
        while temps(remote.path()).is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::select! {
        r = c.put(&big, &dest, None) => panic!("upload finished before it was cancelled: {r:?}"),
        _ = appeared => {}
    }
    assert_eq!(temps_gone(remote.path()).await, Vec::<String>::new());
    assert!(!Path::new(&dest).exists());

    // A download cut short: the local temp file goes with it.
    let src = remote.path().join("src.bin");
    std::fs::write(&src, vec![9u8; 32 << 20]).unwrap();
    let got = local.path().join("got.bin");
    let appeared = async {
        while temps(local.path()).is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    let src_text = src.display().to_string();
    tokio::select! {
        r = c.get(&src_text, &got) => {
            panic!("download finished before it was cancelled: {r:?}")
        }
        _ = appeared => {}
    }
    assert_eq!(temps_gone(local.path()).await, Vec::<String>::new());
    assert!(!got.exists());

    // The connection still works after both cancellations, and closes its shell.
    c.put(&Source::Bytes(b"ok\n".to_vec()), &dest, None)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"ok\n");
    c.close().await;
    assert_eq!(srv.stat("shells_open").await, 0);
    assert!(temps(remote.path()).is_empty());
}
