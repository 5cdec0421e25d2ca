//! Interrupted guest creation across processes, against a real libvirtd: `kinit playbook`
//! builds a pool, three volumes and three domains and is stopped with SIGINT at seeded
//! points; each time a plain re-run must succeed, leave every domain defined once with
//! kinit's definition (the same fingerprint and uuid-per-name as an uninterrupted run), and
//! a further run must change nothing. The domains are only defined (`state: present`): a
//! half-written definition is what could block the next run, and started guests would spin
//! QEMU in software emulation for nothing.
//!
//! Needs a libvirtd at `KINIT_TEST_LIBVIRT_URI` (default `qemu:///system`); ci/test.sh
//! installs libvirt-daemon-system and qemu-system-x86 and starts `/usr/sbin/virtlogd -d && /usr/sbin/libvirtd -d`
//! when none answers. Without one the test prints why and passes without running. Names
//! carry the test's PID, so other users of the same libvirtd are not touched.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::chaos::Rng;

const POINTS: usize = 8;

use super::{real_uri as uri, virsh};

/// Removes the test's domains, volumes and pool, also when the test fails.
struct Cleanup {
    prefix: String,
    dir: String,
}

impl Cleanup {
    fn run(&self) {
        for g in 1..=3 {
            let name = format!("{}-g{g}", self.prefix);
            virsh(&["destroy", &name]);
            virsh(&["undefine", &name]);
        }
        for g in 1..=3 {
            virsh(&["vol-delete", "--pool", &self.prefix, &format!("g{g}.qcow2")]);
        }
        virsh(&["pool-destroy", &self.prefix]);
        virsh(&["pool-undefine", &self.prefix]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.run();
    }
}

fn playbook(prefix: &str, dir: &str) -> String {
    format!(
        r#"- hosts: localhost
  gather_facts: false
  vars:
    uri: "{uri}"
  tasks:
    - virt_pool: name={prefix} uri={{{{ uri }}}} path={dir}
    - virt_volume:
        pool: {prefix}
        uri: "{{{{ uri }}}}"
        name: g{{{{ item }}}}.qcow2
        capacity: 64M
      loop: [1, 2, 3]
    - virt_guest:
        name: {prefix}-g{{{{ item }}}}
        uri: "{{{{ uri }}}}"
        state: present
        virt_type: qemu
        linux:
          vcpus: 1
          ram_kib: 131072
          network: default
          mac: "52:54:00:7e:00:0{{{{ item }}}}"
          disk: {dir}/g{{{{ item }}}}.qcow2
          seed_iso: {dir}/seed.iso
      loop: [1, 2, 3]
"#,
        uri = uri()
    )
}

/// name → (uuid, kinit fingerprint) of the test's domains, from `virsh dumpxml`.
fn domains(prefix: &str) -> Vec<(String, String)> {
    (1..=3)
        .filter_map(|g| {
            let name = format!("{prefix}-g{g}");
            let out = virsh(&["dumpxml", &name]);
            out.status.success().then(|| {
                let xml = String::from_utf8_lossy(&out.stdout).into_owned();
                // `<kinit:definition xmlns:kinit="...">sha256</kinit:definition>`
                let fp = xml
                    .split_once(":definition")
                    .and_then(|(_, r)| r.split_once('>'))
                    .and_then(|(_, r)| r.split_once('<'))
                    .map(|(h, _)| h.to_string())
                    .unwrap_or_default();
                (name, fp)
            })
        })
        .collect()
}

#[test]
fn interrupted_guest_creation_on_a_real_libvirtd_converges() {
    let probe = virsh(&["version"]);
    if !probe.status.success() {
        crate::support::cannot_run(format!(
            "no libvirtd answers at {} ({}); ci/test.sh starts one",
            uri(),
            String::from_utf8_lossy(&probe.stderr).trim()
        ));
        return;
    }
    let prefix = format!("kinit-resume-{}", std::process::id());
    // Under the images folder: QEMU (another user) must be able to reach the files.
    let dir = format!("/var/lib/libvirt/images/{prefix}");
    let cleanup = Cleanup {
        prefix: prefix.clone(),
        dir: dir.clone(),
    };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("site.yml"), playbook(&prefix, &dir)).unwrap();
    let kinit = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(["playbook", "site.yml"])
            .current_dir(work.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let run_ok = |what: &str| -> String {
        let out = kinit().output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };

    // Timed like the interrupted runs below: from when kinit catches SIGINT to its exit.
    let child = kinit().spawn().unwrap();
    crate::support::wait_catching_sigint(child.id());
    let t0 = Instant::now();
    let first = child.wait_with_output().unwrap();
    let full = t0.elapsed();
    assert_eq!(
        first.status.code(),
        Some(0),
        "uninterrupted run\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let reference = domains(&prefix);
    assert_eq!(reference.len(), 3, "{reference:?}");
    assert!(reference.iter().all(|d| !d.1.is_empty()), "{reference:?}");
    assert!(run_ok("second run").contains("changed=0"));

    let mut rng = Rng(0x1ab_7e57);
    // The first three quarters of a run: the pool, volume and domain tasks, not the recap.
    let span = (full.as_millis() as u64 * 3 / 4).max(50);
    let mut interrupted = 0;
    for point in 0..POINTS {
        cleanup.run();
        let delay = Duration::from_millis(rng.next() % span);
        let out = crate::support::interrupt_after(kinit().spawn().unwrap(), delay);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(130)),
            "point {point} ({delay:?}): exit {code:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        interrupted += usize::from(code == Some(130));
        run_ok(&format!("re-run after point {point} ({delay:?})"));
        assert_eq!(domains(&prefix), reference, "point {point} ({delay:?})");
        let third = run_ok(&format!("run after the re-run of point {point}"));
        assert!(third.contains("changed=0"), "point {point}: {third}");
    }
    eprintln!(
        "real libvirtd resume: run {full:?}, {POINTS} points, {interrupted} interrupted, \
         all converged"
    );
    assert!(
        interrupted * 4 >= POINTS,
        "{interrupted}/{POINTS} interrupted (run {full:?})"
    );
}
