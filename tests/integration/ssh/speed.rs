//! Per-command cost over SSH: persistent shell vs exec channel, direct vs through a jump
//! host, and round trips per command, per upload and per file-writing module on a slow link.
//!
//! `ms_per_command` only prints numbers (timing is a benchmark's job, not a test's):
//! `cargo test --release --test integration ms_per_command -- --ignored --nocapture`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kinit::transport::ssh::SshConnection;
use kinit::transport::{Connection, ExecRequest, Source};
use serde_json::json;

use crate::fixtures::delay_proxy::DelayProxy;
use crate::fixtures::sshd::SshLab;
use crate::modules::Fixture;

async fn per_command(c: &SshConnection, n: u32, shell: bool) -> Duration {
    let req = ExecRequest::new("true");
    let start = Instant::now();
    for _ in 0..n {
        let out = if shell {
            c.exec(&req).await
        } else {
            c.exec_channel(&req).await
        }
        .unwrap();
        assert_eq!(out.rc, 0);
    }
    start.elapsed() / n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "prints timings; run with --ignored --nocapture"]
async fn ms_per_command() {
    let lab = SshLab::jump_topology(1);
    let direct = SshConnection::connect(&lab.target(0)).await.unwrap();
    let jumped = SshConnection::connect(&lab.guest_target(0)).await.unwrap();
    for (name, c) in [("direct", &direct), ("jump", &jumped)] {
        per_command(c, 20, true).await; // warm up: shells started
        let shell = per_command(c, 300, true).await;
        let chan = per_command(c, 300, false).await;
        eprintln!(
            "{name}: persistent shell {:.3} ms/cmd, exec channel {:.3} ms/cmd",
            shell.as_secs_f64() * 1e3,
            chan.as_secs_f64() * 1e3
        );
    }
}

/// Two connections to the lab's first host: one direct, one through a proxy adding `rtt`
/// (the proxy must outlive them).
async fn slow_link(lab: &SshLab, rtt: Duration) -> (SshConnection, SshConnection, DelayProxy) {
    let upstream: SocketAddr = format!("{}:{}", lab.hosts[0].address, lab.hosts[0].port)
        .parse()
        .unwrap();
    let proxy = DelayProxy::start(upstream, rtt / 2).await;
    let direct = SshConnection::connect(&lab.target(0)).await.unwrap();
    let mut t = lab.target(0);
    // The proxy is a different address; the host key is still the host's.
    t.address = proxy.addr.ip().to_string();
    t.port = Some(proxy.addr.port());
    t.host_key_checking = kinit::transport::HostKeyChecking::Off;
    let slow = SshConnection::connect(&t).await.unwrap();
    (direct, slow, proxy)
}

/// The fastest of `n` single commands: load on the machine only ever adds time, so the
/// minimum is the cost of the protocol itself (what the slow-link test measures).
async fn fastest_command(c: &SshConnection, n: u32, shell: bool) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..n {
        best = best.min(per_command(c, 1, shell).await);
    }
    best
}

/// With 40 ms added per round trip, a trivial command through the persistent shell costs
/// one round trip (the bound is 1.5), and an exec channel two. Each measurement is the
/// fastest of several commands minus the same command's fastest time over a direct link
/// in the same run, so a loaded machine slows neither side into a wrong answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_link_round_trips_per_command() {
    let lab = SshLab::new(1);
    let rtt = Duration::from_millis(40);
    let (direct, c, _proxy) = slow_link(&lab, rtt).await;
    per_command(&c, 2, true).await;
    per_command(&direct, 2, true).await;
    let n = 10;
    let floor_shell = fastest_command(&direct, n, true).await;
    let floor_chan = fastest_command(&direct, n, false).await;
    let rt = |slow: Duration, floor: Duration| {
        slow.saturating_sub(floor).as_secs_f64() / rtt.as_secs_f64()
    };
    let shell = rt(fastest_command(&c, n, true).await, floor_shell);
    let chan = rt(fastest_command(&c, n, false).await, floor_chan);
    eprintln!(
        "round trips per command: persistent shell {shell:.2}, exec channel {chan:.2} \
         (direct floors {floor_shell:?}, {floor_chan:?})"
    );
    assert!(
        shell <= 1.5,
        "persistent shell: {shell:.2} round trips per command"
    );
    assert!(shell >= 0.9, "the proxy did not delay: {shell:.2}");
    assert!(
        chan >= 1.5,
        "exec channels should need two round trips, measured {chan:.2}"
    );
    c.close().await;
    direct.close().await;
}

/// The fastest of `n` uploads of `bytes` to `dest`.
async fn fastest_put(c: &SshConnection, n: u32, bytes: &[u8], dest: &str) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..n {
        let start = Instant::now();
        c.put(&Source::Bytes(bytes.to_vec()), dest, Some(0o644))
            .await
            .unwrap();
        best = best.min(start.elapsed());
    }
    best
}

/// A small upload (what `copy`, `template` and `lineinfile` send) is one command, so one
/// round trip on a slow link; a large one goes over SFTP and needs several. Measured as in
/// `slow_link_round_trips_per_command`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_link_small_upload_is_one_round_trip() {
    let lab = SshLab::new(1);
    let rtt = Duration::from_millis(40);
    let (direct, c, _proxy) = slow_link(&lab, rtt).await;
    let home = c
        .exec(&ExecRequest::new("printf %s \"$HOME\""))
        .await
        .unwrap()
        .stdout_str();
    let dest = format!("{home}/rt.txt");
    let small = vec![b'x'; 1024];
    let large = vec![b'y'; 256 * 1024];
    fastest_put(&c, 1, &large, &dest).await; // SFTP session started
    fastest_put(&direct, 1, &large, &dest).await;
    let rt = |slow: Duration, floor: Duration| {
        slow.saturating_sub(floor).as_secs_f64() / rtt.as_secs_f64()
    };
    let small_rt = rt(
        fastest_put(&c, 10, &small, &dest).await,
        fastest_put(&direct, 10, &small, &dest).await,
    );
    let large_rt = rt(
        fastest_put(&c, 3, &large, &dest).await,
        fastest_put(&direct, 3, &large, &dest).await,
    );
    eprintln!("round trips per upload: 1 KiB {small_rt:.2}, 256 KiB {large_rt:.2}");
    assert!(
        (0.9..=1.5).contains(&small_rt),
        "1 KiB upload: {small_rt:.2} round trips"
    );
    assert!(
        large_rt >= 2.5,
        "a 256 KiB upload over SFTP should need several round trips, measured {large_rt:.2}"
    );
    let out = c
        .exec(&ExecRequest::new(format!("wc -c < {dest}; ls -a {home}")))
        .await
        .unwrap()
        .stdout_str();
    assert!(out.starts_with("262144\n"), "{out}");
    assert!(!out.contains("kinit-tmp"), "temp files left behind: {out}");
    c.close().await;
    direct.close().await;
}

/// The fastest of `n` `copy` runs that each write a new small file.
async fn fastest_new_copy(fx: &Fixture<'_>, n: u32, tag: &str) -> Duration {
    let mut best = Duration::MAX;
    for i in 0..n {
        let args = json!({"content": "x\n", "dest": fx.path(&format!("{tag}{i}"))});
        let start = Instant::now();
        let r = fx.run("copy", args).await;
        best = best.min(start.elapsed());
        assert!(r.changed && !r.failed, "{r:?}");
        assert!(
            r.data["owner"].is_string() && r.data["uid"].is_u64(),
            "{r:?}"
        );
    }
    best
}

/// A `copy` that writes a new file is two round trips on a slow link: the probe of its
/// destination and the upload, whose finishing command also reads the new file's owner for
/// the result (a command of its own for that made it three, and cost the `file` benchmark a
/// third more controller CPU; ci/bench/RESULTS.md). Measured as the tests above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_link_copy_of_a_new_file_is_two_round_trips() {
    let lab = SshLab::new(1);
    // Longer than the other tests' 40 ms: a module run in a debug build varies by more than
    // a few milliseconds under load.
    let rtt = Duration::from_millis(100);
    let (direct, slow, _proxy) = slow_link(&lab, rtt).await;
    let (direct, slow) = (Connection::Ssh(direct), Connection::Ssh(slow));
    let (fx_direct, fx_slow) = (Fixture::new(&direct).await, Fixture::new(&slow).await);
    // Warm up: both persistent shells started on each connection.
    fastest_new_copy(&fx_direct, 2, "warm").await;
    fastest_new_copy(&fx_slow, 2, "warm").await;
    let floor = fastest_new_copy(&fx_direct, 8, "f").await;
    let slow_best = fastest_new_copy(&fx_slow, 8, "f").await;
    let rt = slow_best.saturating_sub(floor).as_secs_f64() / rtt.as_secs_f64();
    eprintln!("round trips per new-file copy: {rt:.2} (direct floor {floor:?})");
    assert!(
        (1.8..=2.5).contains(&rt),
        "new-file copy: {rt:.2} round trips"
    );
    fx_direct.finish().await;
    fx_slow.finish().await;
    direct.close().await;
    slow.close().await;
}
