//! exec, put, get and become over SSH against one fixture host, through both the persistent
//! shell and exec channels.

use kinit::secret::Secret;
use kinit::transport::ssh::SshConnection;
use kinit::transport::{BecomeOptions, ExecRequest, Source};

use crate::fixtures::netns::is_root;
use crate::fixtures::sshd::{PW_USER, PW_USER_PASSWORD, SshLab};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_put_get_over_ssh() {
    let lab = SshLab::new(1);
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();

    let out = c
        .exec(&ExecRequest::new("echo out; echo err >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(
        (out.rc, out.stdout_str(), out.stderr_str()),
        (3, "out\n".into(), "err\n".into())
    );
    let out = c
        .exec_channel(&ExecRequest::new("echo out; echo err >&2; exit 3"))
        .await
        .unwrap();
    assert_eq!(
        (out.rc, out.stdout_str(), out.stderr_str()),
        (3, "out\n".into(), "err\n".into())
    );

    let mut req = ExecRequest::new("cat; printf x");
    req.stdin = Some(b"line1\nno-newline".to_vec());
    assert_eq!(
        c.exec(&req).await.unwrap().stdout_str(),
        "line1\nno-newlinex"
    );
    assert_eq!(
        c.exec_channel(&req).await.unwrap().stdout_str(),
        "line1\nno-newlinex"
    );

    let home = c
        .exec(&ExecRequest::new("printf %s \"$HOME\""))
        .await
        .unwrap()
        .stdout_str();
    let dest = format!("{home}/uploaded.txt");
    c.put(&Source::Bytes(b"hello\n".to_vec()), &dest, Some(0o640))
        .await
        .unwrap();
    let out = c
        .exec(&ExecRequest::new(format!("stat -c %a {dest}; cat {dest}")))
        .await
        .unwrap();
    assert_eq!(out.stdout_str(), "640\nhello\n");

    // Small uploads go through one command: every byte value survives, a replaced file
    // keeps its mode, and a missing directory is an error naming the path.
    let every_byte: Vec<u8> = (0..=255u8).rev().collect();
    c.put(&Source::Bytes(every_byte.clone()), &dest, None)
        .await
        .unwrap();
    let back = lab.dir().join("every_byte.back");
    c.get(&dest, &back).await.unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), every_byte);
    let mode = c
        .exec(&ExecRequest::new(format!("stat -c %a {dest}")))
        .await
        .unwrap()
        .stdout_str();
    assert_eq!(mode, "640\n");
    let err = c
        .put(
            &Source::Bytes(b"x".to_vec()),
            &format!("{home}/no/such/dir/f"),
            None,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no/such/dir"), "{err}");

    // A file bigger than one SFTP packet and one read buffer, streamed both ways.
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let local = lab.dir().join("big.bin");
    std::fs::write(&local, &big).unwrap();
    c.put(
        &Source::File(local.clone()),
        &format!("{home}/big.bin"),
        None,
    )
    .await
    .unwrap();
    let back = lab.dir().join("big.back");
    c.get(&format!("{home}/big.bin"), &back).await.unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), big);
    let ls = c
        .exec(&ExecRequest::new(format!("ls -a {home}")))
        .await
        .unwrap()
        .stdout_str();
    assert!(!ls.contains("kinit-tmp"), "temp files left behind: {ls}");

    let err = c.get(&format!("{home}/missing"), &back).await.unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn become_with_and_without_password_never_shows_it() {
    if !is_root() {
        crate::support::cannot_run("become tests need root to create the sudo users");
        return;
    }
    let lab = SshLab::new(1);
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let mut req = ExecRequest::new("id -un; cat");
    req.become_ = Some(BecomeOptions::default());
    req.stdin = Some(b"input".to_vec());
    let out = c.exec(&req).await.unwrap();
    assert_eq!(
        (out.rc, out.stdout_str()),
        (0, "root\ninput".into()),
        "{}",
        out.stderr_str()
    );
    c.close().await;

    let mut t = lab.target(0);
    t.user = Some(PW_USER.into());
    t.private_key_files.clear();
    t.password = Some(Secret::new(PW_USER_PASSWORD));
    let c = SshConnection::connect(&t).await.unwrap();
    for shell in [true, false] {
        let mut req = ExecRequest::new("id -un; cat");
        req.stdin = Some(b"data".to_vec());
        req.become_ = Some(BecomeOptions {
            user: None,
            password: Some(Secret::new(PW_USER_PASSWORD)),
            ..Default::default()
        });
        let out = if shell {
            c.exec(&req).await
        } else {
            c.exec_channel(&req).await
        }
        .unwrap();
        assert_eq!(
            (out.rc, out.stdout_str()),
            (0, "root\ndata".into()),
            "{}",
            out.stderr_str()
        );
        assert!(!out.stderr_str().contains(PW_USER_PASSWORD));

        req.become_ = Some(BecomeOptions {
            user: None,
            password: Some(Secret::new("wrong-password")),
            ..Default::default()
        });
        // sudo caches per parent process; a fresh command must not reuse the good one.
        let out = c.exec_channel(&req).await.unwrap();
        assert_ne!(out.rc, 0);
        let all = format!("{}{}", out.stdout_str(), out.stderr_str());
        assert!(all.contains("become password was refused"), "{all}");
        assert!(
            !all.contains("wrong-password") && !all.contains("[sudo]"),
            "{all}"
        );
    }
    c.close().await;
}
