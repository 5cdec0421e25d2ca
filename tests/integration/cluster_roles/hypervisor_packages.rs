//! prepare-hypervisors keeps the packages a hypervisor already has: `kinit run --stop-after
//! prepare-hypervisors` over SSH against a namespace host whose `/usr`, `/var` and `/etc` are
//! overlays, with the real apt and dpkg and a local apt repository of small packages built
//! here, so nothing of this machine's package set changes.
//!
//! The packages act out what a Debian 12 image with QEMU 10 from bookworm-backports meets:
//! `kinit-demo-utils` 2.0 is installed from nowhere (as `qemu-utils 1:10.0.2~bpo12+1` is) and
//! breaks the repository's `kinit-demo-system` 1.0 (as it breaks bookworm's
//! `qemu-system-common` 7.2), so plain `apt-get install kinit-demo-system` would remove it. The
//! repository also has the older `kinit-demo-utils` 1.0, and `kinit-demo-tool`, which
//! recommends `kinit-demo-docs`.

use std::path::Path;
use std::process::Command;

use super::hosts::{Host, Lab};
use crate::support::Test;

/// Why these runs are not compared whole: the hypervisor checks read this machine's
/// `/dev/kvm`, CPU count, memory and free disk, so which tasks run, skip or warn depends on it.
const MACHINE_DEPENDENT: &str = "the hypervisor checks read this machine's /dev/kvm, cores, \
                                 memory and disk: which of them run, skip or warn varies";

/// Builds the `.deb`s: the installed newer one and the flat repository (`Packages` index).
const BUILD: &str = r#"set -e
mk() { n=$1; v=$2; extra=$3; b=build/$n
  mkdir -p $b/DEBIAN $b/usr/share/$n; echo $v > $b/usr/share/$n/version
  printf "Package: $n\nVersion: $v\nArchitecture: all\nMaintainer: kinit <kinit@example.invalid>\n${extra}Description: kinit test package\n" > $b/DEBIAN/control
  dpkg-deb -Zgzip --build $b ${n}_${v}_all.deb >/dev/null; rm -rf $b; }
mk kinit-demo-utils 2.0 'Breaks: kinit-demo-system (<< 2)\n'
mv kinit-demo-utils_2.0_all.deb installed.deb
mkdir -p repo && cd repo
mk kinit-demo-utils 1.0 ''
mk kinit-demo-system 1.0 ''
mk kinit-demo-tool 1.0 'Recommends: kinit-demo-docs\n'
mk kinit-demo-docs 1.0 ''
for f in *.deb; do dpkg-deb -f $f; echo "Filename: ./$f"; echo "Size: $(stat -c %s $f)"
  echo "SHA256: $(sha256sum $f | cut -d' ' -f1)"; echo; done > Packages
"#;

/// `service`/`update-rc.d` stand-ins and init scripts for the libvirt daemons, so the daemon
/// tasks after the packages find them running instead of starting real ones on this machine.
const DAEMON_STANDINS: &str = r#"set -e
printf '#!/bin/sh\necho "service $*" >> /root/daemon-calls\nexit 0\n' > /usr/local/bin/service
printf '#!/bin/sh\necho "update-rc.d $*" >> /root/daemon-calls\nexit 0\n' > /usr/local/bin/update-rc.d
chmod 0755 /usr/local/bin/service /usr/local/bin/update-rc.d
for d in virtlogd libvirtd; do printf '#!/bin/sh\nexit 0\n' > /etc/init.d/$d; chmod 0755 /etc/init.d/$d; done
"#;

fn host_sh(host: &Host, script: &str) -> String {
    let out = host.sh(script);
    assert!(
        out.status.success(),
        "{script}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `name version` of every kinit-demo package dpkg has fully installed on the host.
fn installed(host: &Host) -> Vec<String> {
    let out = host_sh(
        host,
        "dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n' 'kinit-demo-*' 2>/dev/null \
         | awk '$1 == \"ii\" {print $2, $3}'",
    );
    out.lines().map(str::to_string).collect()
}

/// `kinit run` up to prepare-hypervisors with this host as the only hypervisor and `packages`
/// as its Debian package list.
fn prepare(home: &Path, host: &Host, packages: &[&str], check: bool) -> Test {
    prepare_with(home, host, packages, &[], check)
}

/// `prepare` with a RedHat package list too.
fn prepare_with(home: &Path, host: &Host, debian: &[&str], redhat: &[&str], check: bool) -> Test {
    let vars = serde_json::json!({
        "kinit_hosted_deployment": true,
        "capacity_headroom": 0,
        "vcpus_per_core": 64,
        "hypervisor_libvirt_uri": "test:///default",
        "hypervisor_packages": {"Debian": debian, "RedHat": redhat},
    });
    let mut t = Test::new()
        .args(["run", "--spec", "k8s-libvirt-1-1-1", "--stop-after"])
        .args(["prepare-hypervisors", "--hypervisor-hosts-spec"])
        .args([format!(
            "[[ansible_host={},ssh_port={}]]",
            host.address, host.port
        )])
        .args(["-e".to_string(), vars.to_string()])
        .env("HOME", home.to_str().unwrap())
        .env("SSH_AUTH_SOCK", "");
    if check {
        t = t.args(["--check"]);
    }
    t
}

#[test]
fn prepare_hypervisors_keeps_a_newer_installed_package_and_installs_without_recommends() {
    let Some(lab) = Lab::start_packaging(&["hypervisor-01"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    let host = lab.host("hypervisor-01");
    let work = tempfile::tempdir().unwrap();
    let build = Command::new("sh")
        .args(["-c", BUILD])
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(build.status.success(), "{build:?}");
    let w = work.path().display();
    host_sh(
        host,
        &format!(
            "set -e; dpkg -i {w}/installed.deb >/dev/null\n\
             echo 'deb [trusted=yes] file:{w}/repo ./' > /etc/apt/sources.list.d/kinit-demo.list\n\
             mkdir -p {w}/no-parts\n\
             apt-get update -q -o Dir::Etc::SourceParts={w}/no-parts \
               -o Dir::Etc::SourceList=/etc/apt/sources.list.d/kinit-demo.list \
               -o APT::Get::List-Cleanup=0 >/dev/null 2>&1\n\
             {DAEMON_STANDINS}"
        ),
    );
    assert_eq!(installed(host), ["kinit-demo-utils 2.0"]);
    let home = work.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::copy(&lab.client_key, home.join(".ssh/id_ed25519")).unwrap();
    std::fs::copy(&lab.known_hosts, home.join(".ssh/known_hosts")).unwrap();

    // The release's kinit-demo-system would take the newer kinit-demo-utils away: --check
    // predicts the refusal, the real run refuses before dpkg starts, naming the package and
    // apt's reason, and the host keeps what it had.
    let conflicting = ["kinit-demo-tool", "kinit-demo-system"];
    for check in [true, false] {
        let run = prepare(&home, host, &conflicting, check)
            .fails_with(2)
            .partial_output(MACHINE_DEPENDENT);
        let out = run.stdout();
        let verb = if check {
            "would fail"
        } else {
            "failed (apt-get rc 100)"
        };
        assert!(
            out.contains(&format!(
                "installing `kinit-demo-tool`, `kinit-demo-system` {verb}: it would remove \
                 kinit-demo-utils (kinit never removes a package to install another"
            )),
            "{out}"
        );
        assert!(
            out.contains("E: Packages need to be removed but remove is disabled."),
            "{out}"
        );
        assert_eq!(installed(host), ["kinit-demo-utils 2.0"]);
        assert_eq!(host_sh(host, "dpkg --audit"), "", "dpkg left work undone");
    }

    // The packages that can go in without removing anything: check mode lists them, the run
    // installs only the missing one, without its recommended package, and keeps the newer
    // kinit-demo-utils instead of going back to the repository's 1.0.
    let safe = ["kinit-demo-utils", "kinit-demo-tool"];
    let check = prepare(&home, host, &safe, true)
        .succeeds()
        .partial_output(MACHINE_DEPENDENT);
    assert!(
        check
            .stdout()
            .contains("hypervisor-01 would install: kinit-demo-tool"),
        "{}",
        check.stdout()
    );
    assert_eq!(installed(host), ["kinit-demo-utils 2.0"]);
    let run = prepare(&home, host, &safe, false)
        .succeeds()
        .partial_output(MACHINE_DEPENDENT);
    assert!(
        run.stdout().contains(
            "TASK [kinit_hypervisor : Virtualization packages (apt)]\nchanged: [hypervisor-01]"
        ),
        "{}",
        run.stdout()
    );
    assert_eq!(
        installed(host),
        ["kinit-demo-tool 1.0", "kinit-demo-utils 2.0"]
    );
    let again = prepare(&home, host, &safe, false)
        .succeeds()
        .partial_output(MACHINE_DEPENDENT);
    assert!(
        again.stdout().contains(
            "TASK [kinit_hypervisor : Virtualization packages (apt)]\nok: [hypervisor-01]"
        ),
        "{}",
        again.stdout()
    );
    // Nothing of it reached this machine.
    let here = Command::new("dpkg-query")
        .args(["-W", "kinit-demo-utils"])
        .output()
        .unwrap();
    assert!(!here.status.success(), "the package leaked out of the host");
}

/// A RedHat-family hypervisor gets `dnf`, never `apt`: the package family comes from the
/// gather-facts phase of the same run (no default, no second look in prepare-hypervisors).
/// The host is a namespace host whose `/etc/os-release` says Rocky Linux; `rpm` and `dnf` are
/// recording stand-ins (this Debian machine has neither), and so is `apt-get`, so a call to it
/// would show.
#[test]
fn redhat_family_hypervisor_gets_dnf_not_apt() {
    let Some(lab) = Lab::start_packaging(&["hypervisor-01"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    let host = lab.host("hypervisor-01");
    host_sh(
        host,
        &format!(
            "set -e\n\
             printf 'NAME=\"Rocky Linux\"\\nID=\"rocky\"\\nID_LIKE=\"rhel centos fedora\"\\n' > /etc/os-release\n\
             for t in dnf apt-get; do printf '#!/bin/sh\\necho \"%s $*\" >> /root/pkg-calls\\n' $t > /usr/local/bin/$t; done\n\
             printf '#!/bin/sh\\nexit 1\\n' > /usr/local/bin/rpm\n\
             chmod 0755 /usr/local/bin/dnf /usr/local/bin/apt-get /usr/local/bin/rpm\n\
             {DAEMON_STANDINS}"
        ),
    );
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::copy(&lab.client_key, home.join(".ssh/id_ed25519")).unwrap();
    std::fs::copy(&lab.known_hosts, home.join(".ssh/known_hosts")).unwrap();
    let run = prepare_with(
        &home,
        host,
        &["should-not-be-asked"],
        &["qemu-kvm", "libvirt"],
        false,
    )
    .succeeds()
    .partial_output(MACHINE_DEPENDENT);
    let out = run.stdout();
    assert!(
        out.contains(
            "TASK [kinit_hypervisor : Virtualization packages (dnf)]\nchanged: [hypervisor-01]"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "TASK [kinit_hypervisor : Virtualization packages (apt)]\nskipping: [hypervisor-01]"
        ),
        "{out}"
    );
    let calls = host_sh(host, "cat /root/pkg-calls");
    assert_eq!(
        calls, "dnf install -y --setopt=install_weak_deps=false qemu-kvm libvirt\n",
        "{out}"
    );
}
