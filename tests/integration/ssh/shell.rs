//! The persistent remote shell's framing holds for any command and output, and the channel
//! limit holds under load.

use std::time::{Duration, Instant};

use kinit::transport::ssh::SshConnection;
use kinit::transport::{ExecRequest, TransportError};

use crate::fixtures::sshd::SshLab;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framing_survives_hostile_commands_and_output() {
    let lab = SshLab::new(1);
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let cases: Vec<(&str, i32, Vec<u8>, Vec<u8>)> = vec![
        // No trailing newline, on both streams.
        ("printf a; printf b >&2", 0, b"a".to_vec(), b"b".to_vec()),
        // Binary bytes, NUL included.
        (
            "printf '\\000\\377\\n\\001'",
            0,
            vec![0, 255, b'\n', 1],
            vec![],
        ),
        // Output that looks like an end marker of some other command.
        (
            "printf '\\nKINIT0:0\\n'; exit 4",
            4,
            b"\nKINIT0:0\n".to_vec(),
            vec![],
        ),
        // A syntax error fails this command only.
        ("echo 'unterminated", 2, vec![], b"Syntax error".to_vec()),
        ("exit 7", 7, vec![], vec![]),
        // `cd` and variables stay inside the command.
        ("cd /; X=1; pwd", 0, b"/\n".to_vec(), vec![]),
        (
            "echo \"${X:-unset}\"; test \"$PWD\" != /",
            0,
            b"unset\n".to_vec(),
            vec![],
        ),
        // A command that reads stdin gets EOF, not the shell's command stream.
        ("cat; echo done", 0, b"done\n".to_vec(), vec![]),
        ("kill -9 $$", 137, vec![], vec![]),
    ];
    for (script, rc, stdout, stderr_has) in cases {
        let out = c.exec(&ExecRequest::new(script)).await.unwrap();
        assert_eq!(out.rc, rc, "{script}: {out:?}");
        assert_eq!(out.stdout, stdout, "{script}: {out:?}");
        let has = |hay: &[u8]| {
            hay.windows(stderr_has.len().max(1))
                .any(|w| w == stderr_has)
        };
        assert!(
            stderr_has.is_empty() || has(&out.stderr),
            "{script}: {out:?}"
        );
        let chan = c.exec_channel(&ExecRequest::new(script)).await.unwrap();
        assert_eq!(
            (chan.rc, &chan.stdout),
            (rc, &stdout),
            "exec channel, {script}: {chan:?}"
        );
    }
    // Large output on both streams at once (bigger than any channel window).
    let out = c
        .exec(&ExecRequest::new(
            "head -c 3000000 /dev/zero; head -c 1000000 /dev/zero >&2",
        ))
        .await
        .unwrap();
    assert_eq!((out.stdout.len(), out.stderr.len()), (3_000_000, 1_000_000));
    // Stdin with every byte value, and a line equal to a here-document delimiter.
    let data: Vec<u8> = (0..=255u8)
        .cycle()
        .take(100_000)
        .chain(*b"\nKINITIN\n")
        .collect();
    let mut req = ExecRequest::new("cat");
    req.stdin = Some(data.clone());
    assert_eq!(c.exec(&req).await.unwrap().stdout, data);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_concurrency_within_max_sessions() {
    let lab = SshLab::new(1);
    let c = SshConnection::connect(&lab.target(0)).await.unwrap();
    let mut req = ExecRequest::new("sleep 5");
    req.timeout = Some(Duration::from_millis(300));
    let err = c.exec(&req).await.unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
    // The connection is still good after a timed-out command.
    assert_eq!(
        c.exec(&ExecRequest::new("echo ok"))
            .await
            .unwrap()
            .stdout_str(),
        "ok\n"
    );

    // 20 parallel commands against sshd's MaxSessions 10: none is refused, at most 8 run at
    // a time (so 20 x 0.3 s takes at least three rounds).
    let start = Instant::now();
    let runs = (0..20).map(|i| {
        let c = &c;
        async move {
            c.exec(&ExecRequest::new(format!("sleep 0.3; echo {i}")))
                .await
        }
    });
    let results = futures_util::future::join_all(runs).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap().stdout_str(), format!("{i}\n"));
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(850), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    c.close().await;
    assert_eq!(lab.hosts[0].accepted_logins(), 1);
}
