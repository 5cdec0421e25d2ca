//! The download-images and run-validations phases, exactly as bundled, run by `kinit
//! playbook` with the local machine as the hypervisor: images come from `file://` URLs with a
//! `SHA256SUMS` file (no cloud image can be downloaded on the build machine), the capacity
//! checks read this machine's real free disk, RAM and cores.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::libvirt::{inventory_yaml, statuses};
use super::plays_from;
use crate::cluster_content::fixture::{Compute, yaml};
use crate::support::Test;

/// `kinit playbook phase.yml -i inventory.yml <extra>` in `dir`: (exit code, stdout).
fn playbook(dir: &Path, extra: &[String]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kinit"))
        .current_dir(dir)
        .args(["playbook", "phase.yml", "-i", "inventory.yml"])
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}\n--- stderr\n{stderr}"))
}

/// Source files for the image URLs: name → contents, with a `SHA256SUMS` beside them.
fn sources(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    let src = dir.join("mirror");
    std::fs::create_dir_all(&src).unwrap();
    let mut sums = String::new();
    for (name, body) in files {
        std::fs::write(src.join(name), body).unwrap();
        let hex: String = Sha256::digest(body.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        sums.push_str(&format!("{hex}  {name}\n"));
    }
    std::fs::write(src.join("SHA256SUMS"), sums).unwrap();
    src
}

/// Every Linux `os` a node may have has a cloud image in the role's defaults, and the node
/// role knows its package family; Windows is installed from the ISOs instead.
#[test]
fn every_linux_os_has_a_cloud_image_and_a_release() {
    let images = yaml("roles/kinit_libvirt/defaults/main.yml")["cloud_images"].clone();
    let releases = yaml("roles/kinit_linux_node/defaults/main.yml")["linux_os_release"].clone();
    for os in kinit::spec::Os::ALL.iter().filter(|o| !o.is_windows()) {
        let name = os.as_str();
        let url = images[name]["url"].as_str().unwrap_or_default();
        assert!(
            url.starts_with("https://"),
            "cloud image of `{name}`: {url:?}"
        );
        assert!(
            images[name]["checksum"].as_str().is_some(),
            "checksum of `{name}`'s image"
        );
        assert!(releases[name]["family"].is_string(), "release of `{name}`");
    }
    assert!(
        images["debian13"]["url"]
            .as_str()
            .unwrap()
            .contains("trixie")
    );
}

/// Each hypervisor fetches the images of its own guests' operating systems (here Debian 12
/// and Debian 13), once: a second run finds them with the right checksum and changes
/// nothing. The Windows Server and virtio-win ISOs are fetched only once a Windows node is
/// placed there; a file whose checksum does not match is refused.
#[test]
fn download_images_fetches_what_the_guests_need_once() {
    let test = Test::new();
    let (dir, state) = super::workspace(&test, None);
    let images = dir.join("images");
    std::fs::create_dir_all(&images).unwrap();
    let src = sources(
        &dir,
        &[
            ("bookworm.qcow2", "debian 12 image\n"),
            ("trixie.qcow2", "debian 13 image\n"),
            ("server2022.iso", "windows server\n"),
            ("virtio-win.iso", "virtio drivers\n"),
        ],
    );
    std::fs::write(
        dir.join("phase.yml"),
        plays_from("playbooks/download-images.yml", &["download-images"]),
    )
    .unwrap();
    let url = |f: &str| format!("file://{}", src.join(f).display());
    let image =
        |f: &str| json!({"url": url(f), "checksum": format!("sha256:{}", url("SHA256SUMS"))});
    let vars = json!({
        "libvirt_image_dir": images.display().to_string(),
        "cloud_images": {"debian": image("bookworm.qcow2"), "debian13": image("trixie.qcow2")},
        "windows_iso_url": url("server2022.iso"),
        "windows_iso_checksum": format!("sha256:{}", sha256_hex("windows server\n")),
        "virtio_iso_url": url("virtio-win.iso"),
        "virtio_iso_checksum": format!("sha256:{}", sha256_hex("virtio drivers\n")),
    });
    let extra = vec!["-e".to_string(), vars.to_string()];
    // The controller runs Debian 13, the compute the default Debian 12.
    let debian13 = |name: &str, v: &mut serde_json::Map<String, Value>| {
        if name == "controller-01" {
            v.insert("kinit_os".into(), json!("debian13"));
        }
    };
    let fetched = || {
        let mut names: Vec<String> = std::fs::read_dir(&images)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };

    std::fs::write(
        dir.join("inventory.yml"),
        inventory_yaml(Compute::Linux, &state, debian13),
    )
    .unwrap();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (code, out) = playbook(&dir, &extra);
        assert_eq!(code, Some(0), "{out}");
        runs.push(out);
    }
    assert_eq!(fetched(), ["bookworm.qcow2", "trixie.qcow2"]);
    assert_eq!(
        std::fs::read_to_string(images.join("trixie.qcow2")).unwrap(),
        "debian 13 image\n"
    );
    let cloud = |out: &str| statuses(out, "Linux cloud images");
    assert_eq!(cloud(&runs[0]), ["changed"], "{}", runs[0]);
    assert_eq!(cloud(&runs[1]), ["ok"], "{}", runs[1]);
    let isos = statuses(&runs[0], "Windows Server and virtio-win ISOs");
    assert_eq!(isos, ["skipping"], "{}", runs[0]);

    // The compute becomes a Windows node: the ISOs come, the cached images stay as they are.
    std::fs::write(
        dir.join("inventory.yml"),
        inventory_yaml(Compute::Windows, &state, debian13),
    )
    .unwrap();
    let (code, out) = playbook(&dir, &extra);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        fetched(),
        [
            "bookworm.qcow2",
            "server2022.iso",
            "trixie.qcow2",
            "virtio-win.iso"
        ]
    );
    assert_eq!(
        statuses(&out, "Windows Server and virtio-win ISOs"),
        ["changed"],
        "{out}"
    );

    // A mirror serving other bytes than its checksums file names: refused, nothing kept.
    std::fs::remove_file(images.join("trixie.qcow2")).unwrap();
    std::fs::write(src.join("trixie.qcow2"), "tampered\n").unwrap();
    let (code, out) = playbook(&dir, &extra);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("the checksum of `"), "{out}");
    assert!(!images.join("trixie.qcow2").exists(), "{out}");

    // The ISOs are pinned too: a tampered ISO is refused, naming both digests.
    std::fs::write(src.join("trixie.qcow2"), "debian 13 image\n").unwrap();
    std::fs::remove_file(images.join("server2022.iso")).unwrap();
    std::fs::write(src.join("server2022.iso"), "tampered windows\n").unwrap();
    let (code, out) = playbook(&dir, &extra);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains(&format!(
            "is `{}`, expected `{}`",
            sha256_hex("tampered windows\n"),
            sha256_hex("windows server\n")
        )),
        "{out}"
    );
    assert!(!images.join("server2022.iso").exists(), "{out}");

    // Without an override the role's pinned digest applies: these bytes are not the
    // Windows Server ISO it names.
    let mut defaults = vars.clone();
    defaults
        .as_object_mut()
        .unwrap()
        .remove("windows_iso_checksum");
    let pinned = yaml("roles/kinit_libvirt/defaults/main.yml")["windows_iso_checksum"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let (code, out) = playbook(&dir, &["-e".to_string(), defaults.to_string()]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains(&format!("expected `{pinned}`")), "{out}");
    assert!(!images.join("server2022.iso").exists(), "{out}");
}

fn sha256_hex(body: &str) -> String {
    Sha256::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The numbers run-validations reports for `hypervisor-01` when the guests ask for more than
/// the machine has: one run per resource, the other two sized to fit. The headroom the
/// message names is the one the check applied (`capacity_headroom`; it always said 10 %).
#[test]
fn run_validations_names_what_the_hypervisor_has_and_what_the_guests_need() {
    let test = Test::new();
    let (dir, state) = super::workspace(&test, None);
    std::fs::write(
        dir.join("phase.yml"),
        plays_from("playbooks/run-validations.yml", &["run-validations"]),
    )
    .unwrap();
    const HUGE_KIB: u64 = 1 << 40; // 1 PiB, more than any test machine has
    let run = |resource: &str, extra: &[String]| {
        let sized = |name: &str, v: &mut serde_json::Map<String, Value>| {
            if !v.contains_key("kinit_vcpus") {
                return; // the service node is a container and has no size
            }
            let big = name == "controller-01";
            v.insert("kinit_disk_kib".into(), json!(1));
            v.insert("kinit_ram_kib".into(), json!(1));
            v.insert("kinit_vcpus".into(), json!(1));
            match resource {
                "disk" if big => v.insert("kinit_disk_kib".into(), json!(HUGE_KIB)),
                "ram" if big => v.insert("kinit_ram_kib".into(), json!(HUGE_KIB)),
                "cores" if big => v.insert("kinit_vcpus".into(), json!(100_000)),
                _ => None,
            };
        };
        std::fs::write(
            dir.join("inventory.yml"),
            inventory_yaml(Compute::Linux, &state, sized),
        )
        .unwrap();
        playbook(&dir, extra)
    };
    // The guests are the controller (sized above) and the compute (1 of each).
    let need_gib = format!("{:.1}", (HUGE_KIB + 1) as f64 / 1048576.0);

    let (code, out) = run("fits", &[]);
    assert_eq!(code, Some(0), "{out}");

    let (code, out) = run("disk", &[]);
    assert_eq!(code, Some(2), "{out}");
    let free = sh("df -k --output=avail /var/lib/libvirt | tail -1");
    let free_gib = free.trim().parse::<f64>().unwrap() / 1048576.0;
    let line = failure(&out);
    assert!(
        line.contains(&format!(
            "hypervisor-01: {free_gib:.1} GiB free under /var/lib/libvirt, the guests need \
             {need_gib} GiB (+10 %)"
        )),
        "{line}"
    );

    // The headroom in the message is the one the check used.
    let headroom = ["-e".to_string(), "capacity_headroom=1.25".to_string()];
    let (code, out) = run("ram", &headroom);
    assert_eq!(code, Some(2), "{out}");
    let ram_kib: f64 = sh("free -k | awk '/^Mem:/ {print $2}'")
        .trim()
        .parse()
        .unwrap();
    let line = failure(&out);
    assert!(
        line.contains(&format!(
            "hypervisor-01: {:.1} GiB of RAM, the guests need {need_gib} GiB (+25 %)",
            ram_kib / 1048576.0
        )),
        "{line}"
    );

    let (code, out) = run("cores", &[]);
    assert_eq!(code, Some(2), "{out}");
    let cores = sh("lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l");
    let line = failure(&out);
    assert!(
        line.contains(&format!(
            "hypervisor-01: {} cores, the guests have 100001 vCPUs (at most 4 per core)",
            cores.trim()
        )),
        "{line}"
    );
}

fn sh(command: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `fatal:` line of a run.
fn failure(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("fatal:"))
        .unwrap_or_else(|| panic!("no failure in:\n{out}"))
        .to_string()
}
