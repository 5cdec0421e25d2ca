//! `ci/deps.sh`, the install step of `ci/test.sh`, resolved for real with `apt-get -s` against
//! two package sets: this project's CI image (its dpkg status, kept in
//! `tests/fixtures/apt/image-status.gz`: Debian 12 with `qemu-utils` 10.0.2 from
//! bookworm-backports and no backports source) and a plain Debian 12 (the same set without
//! `qemu-utils`). Debian's archive answers (the index is fetched into a private folder); no
//! package is installed. A third resolution shows what the script avoids: bookworm's own
//! `qemu-system-x86` on the image cannot go in without removing `qemu-utils`.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A dpkg admin folder holding the image's status, minus the packages in `drop`.
fn admindir(drop: &[&str]) -> tempfile::TempDir {
    let mut text = String::new();
    gunzip(
        &root().join("tests/fixtures/apt/image-status.gz"),
        &mut text,
    );
    let kept: Vec<&str> = text
        .split("\n\n")
        .filter(|stanza| {
            let name = stanza
                .lines()
                .find_map(|l| l.strip_prefix("Package: "))
                .unwrap_or("");
            !drop.contains(&name)
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("status"), kept.join("\n\n")).unwrap();
    dir
}

/// `gzip -dc`: the fixture is compressed with gzip, which every Debian machine has.
fn gunzip(path: &Path, out: &mut String) {
    let mut child = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    child.stdout.take().unwrap().read_to_string(out).unwrap();
    assert!(child.wait().unwrap().success());
}

fn simulate(admin: &Path, apt_dir: &Path) -> Output {
    Command::new(root().join("ci/deps.sh"))
        .args(["test", "--simulate"])
        .env("KINIT_DPKG_ADMINDIR", admin)
        .env("KINIT_APT_DIR", apt_dir)
        .env_remove("KINIT_SKIP_INSTALL")
        .output()
        .expect("run ci/deps.sh")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The version `Inst <package> (<version> ...` of a simulation.
fn inst_version(out: &str, package: &str) -> Option<String> {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("deps:   Inst {package} ")))
        .and_then(|rest| {
            rest.split(['(', ' '])
                .find(|w| !w.is_empty() && !w.starts_with('['))
        })
        .map(str::to_string)
}

fn apt_available() -> bool {
    if Command::new("apt-get").arg("--version").output().is_ok() {
        return true;
    }
    crate::support::cannot_run("no apt-get: ci/deps.sh is for Debian-family machines");
    false
}

#[test]
fn deps_resolve_on_the_ci_image_with_backports_qemu_and_remove_nothing() {
    if !apt_available() {
        return;
    }
    let admin = admindir(&[]);
    let apt_dir = tempfile::tempdir().unwrap();
    let out = simulate(admin.path(), apt_dir.path());
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("installed QEMU is from bookworm-backports; QEMU and libvirt come from bookworm-backports"),
        "{t}"
    );
    assert!(t.contains("none removed"), "{t}");
    assert!(!t.contains("Remv "), "{t}");
    let qemu = inst_version(&t, "qemu-system-x86").expect("qemu-system-x86 is installed");
    assert_eq!(
        qemu, "1:10.0.2+ds-2+deb13u1~bpo12+1",
        "matches the image's qemu-utils"
    );
    let libvirt = inst_version(&t, "libvirt-daemon-system").unwrap();
    assert!(libvirt.contains("~bpo12"), "{libvirt}");
    assert!(inst_version(&t, "chromium").is_some(), "{t}");
    assert!(
        inst_version(&t, "qemu-utils").is_none(),
        "the installed qemu-utils is kept as it is:\n{t}"
    );

    // What the script avoids: bookworm's QEMU on the same package set takes qemu-utils away
    // (refused here by --no-remove).
    let opt = |k: &str, v: &Path| format!("{k}={}", v.display());
    let plain = Command::new("apt-get")
        .args(["install", "-s", "--no-install-recommends", "--no-remove"])
        .arg("-o")
        .arg(opt("Dir::State::Lists", &apt_dir.path().join("lists")))
        .arg("-o")
        .arg(opt("Dir::State::status", &admin.path().join("status")))
        .args(["qemu-system-x86/bookworm"])
        .output()
        .unwrap();
    let p = text(&plain);
    assert!(!plain.status.success(), "{p}");
    assert!(
        p.contains("qemu-utils") || p.contains("held broken packages"),
        "apt names the conflict: {p}"
    );
}

#[test]
fn deps_resolve_on_a_plain_debian_12_from_bookworm_alone() {
    if !apt_available() {
        return;
    }
    let admin = admindir(&["qemu-utils"]);
    let apt_dir = tempfile::tempdir().unwrap();
    let out = simulate(admin.path(), apt_dir.path());
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(!t.contains("backports"), "{t}");
    assert!(t.contains("none removed"), "{t}");
    let qemu = inst_version(&t, "qemu-system-x86").expect("qemu-system-x86 is installed");
    assert!(qemu.starts_with("1:7.2"), "bookworm's QEMU: {qemu}");
    let utils = inst_version(&t, "qemu-utils").expect("qemu-utils is installed");
    assert!(utils.starts_with("1:7.2"), "{utils}");
}
