//! Chaos by killed sshd: the chaos playbook (`chaos.rs`) against two real sshd hosts, and at
//! a seeded delay into the run one host's sshd, the other's or both are killed together with
//! every session process they started (the SSH service crashed; kinit's connection is cut
//! mid-task). After a seeded outage sshd comes back on the same address, port and host key,
//! the interrupted run ends (whatever it reports, it must not hang or die by a signal), and a
//! plain re-run must succeed and leave the managed files hashing the same as an uninterrupted
//! run's, with no upload temp file left: one whose SFTP server was killed mid-transfer is
//! removed by the re-run's upload to the same destination.
//!
//! Killing sshd hits every run against that host, so each worker thread has its own pair of
//! hosts. `CHAOS_SEED=<n>` picks another seed; the `#[ignore]` variant runs 200 points:
//! `cargo test --test integration chaos_long_killed -- --ignored`.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use crate::chaos::{Lab, Rng, diff, snapshot, temp_leftovers};

/// One interruption: when, which hosts (bit 0: host0, bit 1: host1), how long sshd stays down.
#[derive(Debug, Clone, Copy)]
struct Point {
    index: usize,
    delay: Duration,
    victims: u8,
    outage: Duration,
}

/// A point's exit code of the interrupted run, whether sshd died while the run was still going
/// (a kill after its end interrupts nothing), the upload temp files still on the hosts after
/// the re-run, and its convergence verdict.
type PointResult = (Point, Option<i32>, bool, usize, Result<(), String>);

/// Run `p` against `lab`: interrupt by killing sshd, restart it, re-run, compare.
fn one_point(
    lab: &mut Lab,
    p: Point,
    reference: &std::collections::BTreeMap<String, String>,
) -> PointResult {
    let dir = lab.managed_dir(&format!("point{}", p.index));
    let mut child = lab.command(&dir).spawn().unwrap();
    std::thread::sleep(p.delay);
    let hit = child.try_wait().unwrap().is_none();
    let victims: Vec<usize> = (0..2).filter(|h| p.victims & (1 << h) != 0).collect();
    for &h in &victims {
        lab.ssh.hosts[h].kill();
    }
    std::thread::sleep(p.outage);
    for &h in &victims {
        lab.ssh.hosts[h].restart();
    }
    let out = crate::support::wait_bounded(
        child,
        Duration::from_secs(120),
        "a run against a restarted sshd",
    );
    let code = out.status.code();
    let what = format!("{p:?}");
    assert!(
        matches!(code, Some(0) | Some(2) | Some(4)),
        "{what}: the interrupted run ended with {code:?} (signal {:?})\n{}\n{}",
        out.status.signal(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    lab.run_ok(&dir, &what);
    let mut snap = snapshot(&dir);
    // An upload's temp file on a host whose sshd died mid-transfer, which the re-run did not
    // remove: counted here, and the test fails on any.
    let leftovers = temp_leftovers(&snap);
    snap.retain(|k, _| !leftovers.contains(k));
    let verdict = if &snap == reference {
        Ok(())
    } else {
        Err(format!("differs: {:?}", diff(reference, &snap)))
    };
    (p, code, hit, leftovers.len(), verdict)
}

fn killed_sshd_chaos(points: usize, workers: usize) {
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x55d_dead);
    // Each worker's own hosts and its uninterrupted reference run (and its duration).
    let labs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let lab = Lab::new();
                    let dir = lab.managed_dir("reference");
                    lab.run_ok(&dir, "uninterrupted run");
                    let reference = snapshot(&dir);
                    // The run's length for placing the kills: a fresh run once the host keys
                    // are known and the caches warm, as every point's run will be.
                    let again = lab.managed_dir("timing");
                    let t0 = Instant::now();
                    lab.run_ok(&again, "timing run");
                    let full = t0.elapsed();
                    (lab, reference, full)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let reference = labs[0].1.clone();
    assert!(reference.len() >= 8, "{reference:#?}");
    assert!(temp_leftovers(&reference).is_empty(), "{reference:#?}");
    for (_, r, _) in &labs {
        assert_eq!(
            r, &reference,
            "host pairs disagree on the uninterrupted state"
        );
    }
    let full = labs.iter().map(|l| l.2).min().unwrap();

    let mut rng = Rng(seed);
    let span = (full.as_millis() as u64 * 11 / 10).max(50);
    let plan: Vec<Point> = (0..points)
        .map(|index| Point {
            index,
            delay: Duration::from_millis(rng.next() % span),
            victims: (rng.next() % 3) as u8 + 1,
            outage: Duration::from_millis(rng.next() % 400),
        })
        .collect();
    let results: Vec<PointResult> = std::thread::scope(|s| {
        let handles: Vec<_> = labs
            .into_iter()
            .enumerate()
            .map(|(w, (mut lab, reference, _))| {
                let mine: Vec<Point> = plan
                    .iter()
                    .copied()
                    .filter(|p| p.index % workers == w)
                    .collect();
                s.spawn(move || {
                    mine.into_iter()
                        .map(|p| one_point(&mut lab, p, &reference))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let cut = results.iter().filter(|r| r.1 != Some(0)).count();
    // A run whose sshd came back quickly may reconnect and finish: interrupted, yet exit 0.
    let hit = results.iter().filter(|r| r.2).count();
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(p, c, _, _, v)| {
            v.as_ref()
                .err()
                .map(|e| format!("seed {seed:#x} {p:?} exit {c:?}: {e}"))
        })
        .collect();
    let stray: usize = results.iter().map(|r| r.3).sum();
    eprintln!(
        "chaos (killed sshd): seed {seed:#x}, uninterrupted run {full:?}, {} points: {hit} \
         killed sshd during the run, {cut} cut it short (exit 2/4), {} ended ok; {stray} \
         upload temp file(s) left after the re-runs; {} converged",
        results.len(),
        results.len() - cut,
        results.len() - failures.len()
    );
    assert_eq!(results.len(), points);
    assert!(
        hit * 3 >= points,
        "at least a third of the points must kill sshd while the run is going: {hit}/{points}"
    );
    assert!(cut > 0, "no point cut a run short");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let stray_points: Vec<String> = results
        .iter()
        .filter(|r| r.3 > 0)
        .map(|(p, c, _, n, _)| format!("seed {seed:#x} {p:?} exit {c:?}: {n} temp file(s)"))
        .collect();
    assert!(stray_points.is_empty(), "{}", stray_points.join("\n"));
}

#[test]
fn chaos_killed_sshd_fifty_points_converge() {
    killed_sshd_chaos(50, 3);
}

/// Slow: 200 points. `cargo test --test integration chaos_long_killed -- --ignored`
#[test]
#[ignore]
fn chaos_long_killed_sshd_two_hundred_points_converge() {
    killed_sshd_chaos(200, 3);
}
