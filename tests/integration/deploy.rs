//! `kinit run`, `kinit state` and `kinit ssh` through the real binary. The phases up to
//! create-network run for real on this machine against libvirt's test driver
//! (`test:///default`, whose objects live inside the kinit process), with the local machine
//! as the hypervisor; the hypervisor preparation (packages, libvirtd service) is switched off
//! with `kinit_hypervisor_prepared`, and the capacity checks are relaxed because no test
//! machine has the 40 GiB of RAM a real 1-1-1 cluster needs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A scratch folder with its own `XDG_STATE_HOME`, shared by the runs of one test.
struct Scratch {
    dir: tempfile::TempDir,
}

/// Variables that keep the cluster content on this machine and the libvirt test driver.
fn local_vars(pool: &Path) -> Vec<String> {
    vec![
        "-e".into(),
        "libvirt_uri=test:///default".into(),
        "-e".into(),
        "kinit_hypervisor_prepared=true".into(),
        "-e".into(),
        "kinit_hosted_deployment=true".into(),
        "-e".into(),
        r#"{"capacity_headroom": 0, "vcpus_per_core": 64}"#.into(),
        "-e".into(),
        format!("libvirt_pool_path={}", pool.display()),
    ]
}

impl Scratch {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn state(&self) -> PathBuf {
        self.path().join("state/kinit/k8scluster")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(args)
            .current_dir(self.path())
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR");
        c
    }

    /// `kinit run --spec k8s-libvirt-1-1-1 <local vars> <args>`.
    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(&["run", "--spec", "k8s-libvirt-1-1-1"]);
        c.args(local_vars(&self.path().join("pool"))).args(args);
        c.output().unwrap()
    }

    /// The run folders, oldest first.
    fn runs(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.state().join("runs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap());
        v
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "--- stdout\n{}\n--- stderr\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn events(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn phases_ended(ev: &[Value]) -> Vec<(String, String)> {
    ev.iter()
        .filter(|e| e["event"] == "phase_end")
        .map(|e| {
            (
                e["phase"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn changed_tasks(ev: &[Value]) -> Vec<String> {
    ev.iter()
        .filter(|e| e["event"] == "task_result" && e["status"] == "changed")
        .map(|e| format!("{} on {}", e["task"], e["host"]))
        .collect()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every regular file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A Windows compute node: the cluster then gets a Windows administrator password.
const WINDOWS_COMPUTE: [&str; 2] = [
    "--cluster-nodes-spec",
    "[[when_group=compute_nodes,os=windows]]",
];

const FIRST_SIX: [&str; 6] = [
    "gather-facts",
    "prepare-hypervisors",
    "prepare-environment",
    "cleanup-hypervisors",
    "run-validations",
    "create-network",
];

#[test]
fn run_to_create_network_then_teardown_converges_and_leaks_no_secret() {
    let s = Scratch::new();
    let run = |stop: &str| {
        let mut args = vec!["--stop-after", stop];
        args.extend(WINDOWS_COMPUTE);
        s.run(&args)
    };
    let first = run("create-network");
    ok(&first);
    let out = text(&first.stdout);
    assert!(out.contains("PHASES"), "{out}");
    assert!(out.contains("create-network"), "{out}");

    // Phases that ran, in order, from the JSON event log.
    let run1 = s.runs().pop().unwrap();
    let ev = events(&run1);
    let ran = phases_ended(&ev);
    assert_eq!(
        ran.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        FIRST_SIX
    );
    assert!(ran.iter().all(|p| p.1 == "ok"), "{ran:?}");
    let changed = changed_tasks(&ev);
    assert!(
        changed.iter().any(|c| c.contains("Cluster network")),
        "the network is created on the test driver: {changed:?}"
    );
    assert!(run1.join("junit.xml").is_file());

    // State folder contents and modes.
    let st = s.state();
    assert_eq!(mode(&st), 0o700);
    assert_eq!(mode(&st.join("id_ed25519")), 0o600);
    assert_eq!(mode(&st.join("windows-admin-password")), 0o600);
    // The cluster's WinRM CA: its key private, its certificate what the Windows node trusts.
    assert_eq!(mode(&st.join("winrm-ca.key")), 0o600);
    let ca = std::fs::read(st.join("winrm-ca.pem")).unwrap();
    assert!(ca.starts_with(b"-----BEGIN CERTIFICATE-----"));
    assert!(
        std::fs::read_to_string(st.join("id_ed25519.pub"))
            .unwrap()
            .starts_with("ssh-ed25519 ")
    );
    let inv: Value =
        serde_json::from_str(&std::fs::read_to_string(st.join("inventory.json")).unwrap()).unwrap();
    assert_eq!(
        inv["_meta"]["hostvars"]["controller-01"]["kinit_ip"],
        "10.0.0.1"
    );
    let hostvars = &inv["_meta"]["hostvars"];
    assert_eq!(
        hostvars["compute-01"]["ansible_winrm_ca_trust_path"],
        st.join("winrm-ca.pem").display().to_string()
    );
    assert!(hostvars["controller-01"]["ansible_winrm_ca_trust_path"].is_null());
    assert!(!st.join("lock").exists(), "the lock is released at the end");
    let key = std::fs::read(st.join("id_ed25519")).unwrap();
    let password = std::fs::read_to_string(st.join("windows-admin-password")).unwrap();
    assert!(password.len() >= 20);

    // Teardown, then the same teardown again: the second changes nothing.
    let down = run("cleanup-hypervisors");
    ok(&down);
    let again = run("cleanup-hypervisors");
    ok(&again);
    let run3 = s.runs().pop().unwrap();
    let ev3 = events(&run3);
    assert_eq!(
        phases_ended(&ev3)
            .iter()
            .map(|p| p.0.as_str())
            .collect::<Vec<_>>(),
        ["gather-facts", "prepare-environment", "cleanup-hypervisors"],
        "a teardown does not prepare the hypervisors"
    );
    assert_eq!(
        changed_tasks(&ev3),
        Vec::<String>::new(),
        "a re-run converges"
    );
    assert_eq!(
        std::fs::read(st.join("id_ed25519")).unwrap(),
        key,
        "key kept"
    );
    assert_eq!(
        std::fs::read_to_string(st.join("windows-admin-password")).unwrap(),
        password,
        "password never regenerated"
    );
    assert_eq!(
        std::fs::read(st.join("winrm-ca.pem")).unwrap(),
        ca,
        "CA never regenerated"
    );

    // `kinit state show` names what is there, never a secret.
    let show = s
        .cmd(&["state", "show", "--spec", "k8s-libvirt-1-1-1"])
        .output()
        .unwrap();
    ok(&show);
    let shown = text(&show.stdout);
    assert!(shown.contains("0600"), "{shown}");
    assert!(
        shown.contains("windows administrator password: yes"),
        "{shown}"
    );
    assert!(shown.contains("ssh keypair: yes"), "{shown}");
    assert!(
        shown.contains("winrm-ca.key  (secret, not shown)"),
        "{shown}"
    );
    let path = s
        .cmd(&["state", "path", "--spec", "k8s-libvirt-1-1-1"])
        .output()
        .unwrap();
    assert_eq!(text(&path.stdout).trim(), st.display().to_string());

    // The password appears in no byte kinit wrote: outputs, logs, reports, inventory.
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    for o in [&first, &down, &again, &show, &path] {
        written.push(("stdout".into(), o.stdout.clone()));
        written.push(("stderr".into(), o.stderr.clone()));
    }
    for f in files(&st) {
        if f.file_name().unwrap() != "windows-admin-password" {
            written.push((f.display().to_string(), std::fs::read(&f).unwrap()));
        }
    }
    let needle = password.trim().as_bytes();
    for (name, bytes) in &written {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "the generated password leaked into {name}"
        );
    }
}

/// A playbook folder whose gather-facts phase holds the lock for a while and prints the
/// generated password (which the redaction layer must mask).
fn slow_playbooks(s: &Scratch) -> PathBuf {
    let dir = s.path().join("slow/playbooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("site.yml"),
        "- name: gather-facts\n  hosts: localhost\n  gather_facts: false\n  tags: [gather-facts]\n  tasks:\n    - command: sleep 2\n      changed_when: false\n    - debug:\n        msg: \"pw {{ kinit_windows_admin_password }}\"\n",
    )
    .unwrap();
    dir
}

#[test]
fn two_concurrent_runs_exactly_one_proceeds() {
    let s = Scratch::new();
    let dir = slow_playbooks(&s);
    let spawn = |extra: &[&str]| {
        let mut c = s.cmd(&[
            "run",
            "--spec",
            "k8s-libvirt-1-1-1",
            "--stop-after",
            "gather-facts",
        ]);
        c.args(WINDOWS_COMPUTE);
        c.arg("--playbook-dir").arg(&dir).args(extra);
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn(&[]);
    let b = spawn(&[]);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let codes = [a.status.code(), b.status.code()];
    assert!(
        codes.contains(&Some(0)) && codes.contains(&Some(1)),
        "exactly one proceeds: {codes:?}\n{}\n{}",
        text(&a.stderr),
        text(&b.stderr)
    );
    let loser = if a.status.code() == Some(1) { &a } else { &b };
    let msg = text(&loser.stderr);
    assert!(msg.contains("is locked by another kinit (PID "), "{msg}");
    assert!(msg.contains("started 20"), "{msg}");
    assert_eq!(s.runs().len(), 1, "the refused run wrote nothing");

    // With --wait-lock the second one waits, then runs.
    let a = spawn(&[]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let b = spawn(&["--wait-lock"]);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    ok(&a);
    ok(&b);
    assert!(
        text(&b.stderr).contains("waiting for the lock"),
        "{}",
        text(&b.stderr)
    );
}

#[test]
fn stale_lock_is_taken_over() {
    let s = Scratch::new();
    let dir = slow_playbooks(&s);
    std::fs::create_dir_all(s.state()).unwrap();
    // Linux PIDs stay below 2^22, so this holder cannot be running.
    std::fs::write(
        s.state().join("lock"),
        "pid=4194999\nstarted=2026-01-01T00:00:00Z\n",
    )
    .unwrap();
    let mut c = s.cmd(&[
        "run",
        "--spec",
        "k8s-libvirt-1-1-1",
        "--stop-after",
        "gather-facts",
    ]);
    c.args(WINDOWS_COMPUTE);
    let o = c.arg("--playbook-dir").arg(&dir).output().unwrap();
    ok(&o);
    let err = text(&o.stderr);
    assert!(err.contains("taking over the stale lock"), "{err}");
    assert!(err.contains("PID 4194999"), "{err}");
    assert!(!s.state().join("lock").exists());
    // A task printed the password: every sink shows the mask instead.
    let password = std::fs::read_to_string(s.state().join("windows-admin-password")).unwrap();
    let out = text(&o.stdout);
    assert!(out.contains("pw ********"), "{out}");
    let log = std::fs::read_to_string(s.runs()[0].join("events.jsonl")).unwrap();
    assert!(log.contains("pw ********"), "{log}");
    for bytes in [out, err, log] {
        assert!(!bytes.contains(password.trim()), "password leaked");
    }
}

/// A cluster without Windows nodes gets no Windows administrator password: no file in the
/// state folder, no variable for the playbooks.
#[test]
fn no_windows_password_without_windows_nodes() {
    let s = Scratch::new();
    let dir = s.path().join("plain/playbooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("site.yml"),
        "- name: gather-facts\n  hosts: localhost\n  gather_facts: false\n  tags: [gather-facts]\n  tasks:\n    - debug:\n        msg: \"defined {{ kinit_windows_admin_password is defined }}\"\n",
    )
    .unwrap();
    let mut c = s.cmd(&[
        "run",
        "--spec",
        "k8s-libvirt-1-1-1",
        "--stop-after",
        "gather-facts",
    ]);
    let o = c.arg("--playbook-dir").arg(&dir).output().unwrap();
    ok(&o);
    let out = text(&o.stdout);
    assert!(out.contains("defined False"), "{out}");
    assert!(s.state().join("id_ed25519").is_file());
    assert!(!s.state().join("windows-admin-password").exists());
    assert!(
        !s.state().join("winrm-ca.pem").exists(),
        "no WinRM CA without Windows nodes"
    );
    // The same cluster with a Windows compute node gets one, readable by the playbooks.
    let mut c = s.cmd(&[
        "run",
        "--spec",
        "k8s-libvirt-1-1-1",
        "--stop-after",
        "gather-facts",
    ]);
    c.args(WINDOWS_COMPUTE);
    let o = c.arg("--playbook-dir").arg(&dir).output().unwrap();
    ok(&o);
    assert!(
        text(&o.stdout).contains("defined True"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(mode(&s.state().join("windows-admin-password")), 0o600);
}

#[test]
fn bad_input_is_refused_before_touching_state() {
    let s = Scratch::new();
    let o = s
        .cmd(&["run", "--spec", "k8s-libvirt-2-1-1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("controllers `2` must be 1, 3 or 5"));
    let o = s
        .cmd(&[
            "run",
            "--spec",
            "k8s-libvirt-1-1-1",
            "--stop-after",
            "cleanup",
        ])
        .output()
        .unwrap();
    assert!(text(&o.stderr).contains("unknown phase `cleanup`"));
    assert!(!s.path().join("state").exists());
}

/// A teardown reaches cleanup on a machine where preparing the hypervisor fails: here its
/// package list names a package no repository has, so `prepare-hypervisors` fails (before it
/// installs or starts anything), and `--stop-after cleanup-hypervisors` still removes the
/// cluster's network from the libvirt test driver without preparing.
#[test]
fn teardown_works_where_preparation_fails() {
    let s = Scratch::new();
    let unpreparable = [
        "-e",
        "kinit_hypervisor_prepared=false",
        "-e",
        r#"{"hypervisor_packages": {"Debian": ["kinit-no-such-package"], "RedHat": ["kinit-no-such-package"]}}"#,
    ];
    let mut args = vec!["--stop-after", "prepare-hypervisors"];
    args.extend(unpreparable);
    let prepared = s.run(&args);
    assert_eq!(
        prepared.status.code(),
        Some(2),
        "{}",
        text(&prepared.stdout)
    );
    assert!(
        text(&prepared.stdout).contains("kinit-no-such-package"),
        "{}",
        text(&prepared.stdout)
    );
    let mut args = vec!["--stop-after", "cleanup-hypervisors"];
    args.extend(unpreparable);
    let down = s.run(&args);
    ok(&down);
    let out = text(&down.stdout);
    assert!(!out.contains("PHASE [prepare-hypervisors]"), "{out}");
    assert!(out.contains("PHASE [cleanup-hypervisors]"), "{out}");
    assert!(
        out.contains("TASK [kinit_cleanup : Cleanup complete]\nok: [hypervisor-01]"),
        "{out}"
    );
}

/// `kinit ssh` execs OpenSSH; a recording stand-in named `ssh` first on PATH captures its
/// arguments (no guest exists here to log into).
#[test]
fn ssh_builds_the_openssh_command() {
    let s = Scratch::new();
    let bin = s.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let rec = s.path().join("argv");
    std::fs::write(
        bin.join("ssh"),
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n", rec.display()),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let o = s
        .cmd(&[
            "ssh",
            "compute-01",
            "--spec",
            "k8s-libvirt-1-1-2",
            "--hypervisor-hosts-spec",
            "[[ansible_host=nyctea],[ansible_host=tyto,ssh_port=2222]]",
            "--",
            "uptime",
        ])
        .env("PATH", &path)
        .output()
        .unwrap();
    ok(&o);
    let argv = std::fs::read_to_string(&rec).unwrap();
    let st = s.path().join("state/kinit/k8scluster");
    let expected = format!(
        "-i\n{key}\n-o\nUserKnownHostsFile={kh}\n-o\nStrictHostKeyChecking=accept-new\n-o\nIdentitiesOnly=yes\n-J\nroot@tyto:2222\nroot@10.0.0.2\n--\nuptime\n",
        key = st.join("id_ed25519").display(),
        kh = st.join("known_hosts").display()
    );
    assert_eq!(argv, expected);
    let o = s
        .cmd(&["ssh", "compute-07", "--spec", "k8s-libvirt-1-1-1"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("node `compute-07` is not in cluster `k8scluster`; its nodes are: hypervisor-01, controller-01, compute-01, service"),
        "{}",
        text(&o.stderr)
    );
}

const ISO_SHA256: &str = "sha256:53f73f17e88f82c4c360b1e28b99fcb3a6a126426079932ad91870251a8540d6";

/// The cached base images survive a teardown; `--purge-cache` removes the ones the cluster's
/// guests use (the Debian image, a partial download of it, and with a Windows node the two
/// ISOs), leaves every other file in the image directory alone, and a second purge finds
/// nothing to do. Without `cleanup-hypervisors` in the run the flag is refused.
#[test]
fn purge_cache_removes_only_the_clusters_cached_images() {
    let s = Scratch::new();
    let images = s.path().join("images");
    std::fs::create_dir_all(&images).unwrap();
    let debian = "debian-12-genericcloud-amd64.qcow2";
    let cached = [
        debian.to_string(),
        format!("{debian}.kinit-dl"),
        "noble-server-cloudimg-amd64.img".into(),
        "SERVER_EVAL_x64FRE_en-us.iso".into(),
        "virtio-win-0.1.285.iso".into(),
        "somebody-elses.qcow2".into(),
    ];
    for f in &cached {
        std::fs::write(images.join(f), "cached\n").unwrap();
    }
    let left = || {
        let mut v: Vec<String> = std::fs::read_dir(&images)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // A file kinit did not put in the pool folder: the folder and the file stay.
    let pool = s.path().join("pool");
    std::fs::create_dir_all(&pool).unwrap();
    std::fs::write(pool.join("keep.txt"), "not kinit's\n").unwrap();
    let dir_var = format!("libvirt_image_dir={}", images.display());
    let teardown = |extra: &[&str]| {
        let mut args = vec!["--stop-after", "cleanup-hypervisors", "-e", &dir_var];
        args.extend_from_slice(extra);
        s.run(&args)
    };

    let out = teardown(&[]);
    ok(&out);
    assert_eq!(
        left().len(),
        cached.len(),
        "a plain teardown keeps the cache"
    );

    let out = teardown(&["--purge-cache"]);
    ok(&out);
    assert_eq!(
        left(),
        [
            "SERVER_EVAL_x64FRE_en-us.iso",
            "noble-server-cloudimg-amd64.img",
            "somebody-elses.qcow2",
            "virtio-win-0.1.285.iso"
        ],
        "{}",
        text(&out.stdout)
    );
    let out = teardown(&["--purge-cache"]);
    ok(&out);
    let ev = events(s.runs().last().unwrap());
    let purged: Vec<String> = changed_tasks(&ev)
        .into_iter()
        .filter(|t| t.contains("Cached images removed"))
        .collect();
    assert_eq!(
        purged,
        Vec::<String>::new(),
        "a second purge changes nothing"
    );

    // A Windows compute: its ISOs go too.
    let windows = [
        "--cluster-nodes-spec",
        "[[when_group=compute_nodes,os=windows]]",
    ];
    let out = teardown(&[&windows[..], &["--purge-cache"]].concat());
    ok(&out);
    assert_eq!(
        left(),
        ["noble-server-cloudimg-amd64.img", "somebody-elses.qcow2"],
        "{}",
        text(&out.stdout)
    );

    assert!(
        pool.join("keep.txt").is_file(),
        "a non-empty pool folder is kept"
    );

    let out = s.run(&["--start-at", "create-network", "--purge-cache"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "`--purge-cache` acts in `cleanup-hypervisors`, which this run leaves out (its \
             phases are `create-network` to `post-deployment`)"
        ),
        "{}",
        text(&out.stderr)
    );
}

/// deploy-cluster's guests against libvirt's test driver: the guest play runs on the guests
/// themselves (one host each, every task delegated to the hypervisor), so each step runs for
/// all guests at once and each guest's steps carry their own timing in the events and the
/// JUnit report. Images come from `file://` URLs; the test driver's guests never boot, so the waits
/// for SSH and WinRM (tag `guest-wait`) are skipped. The Windows node's name stays readable
/// after its config ISO (a `no_log` there used to mask the node's name and addresses in all
/// later output).
#[test]
fn guests_are_built_in_parallel_and_timed_one_by_one() {
    let s = Scratch::new();
    let mirror = s.path().join("mirror");
    let images = s.path().join("images");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(mirror.join("debian.qcow2"), "image\n").unwrap();
    std::fs::write(mirror.join("windows.iso"), "iso\n").unwrap();
    std::fs::write(mirror.join("virtio.iso"), "iso\n").unwrap();
    let sum = Command::new("sha256sum")
        .arg("debian.qcow2")
        .current_dir(&mirror)
        .output()
        .unwrap();
    std::fs::write(mirror.join("SHA256SUMS"), &sum.stdout).unwrap();
    let url = |f: &str| format!("file://{}", mirror.join(f).display());
    let vars = serde_json::json!({
        "libvirt_image_dir": images.display().to_string(),
        "cloud_images": {"debian": {"url": url("debian.qcow2"),
                                    "checksum": format!("sha256:{}", url("SHA256SUMS"))}},
        "windows_iso_url": url("windows.iso"),
        "virtio_iso_url": url("virtio.iso"),
        // sha256 of "iso\n", both ISOs' stand-in content.
        "windows_iso_checksum": ISO_SHA256,
        "virtio_iso_checksum": ISO_SHA256,
    })
    .to_string();
    let out = s.run(&[
        "--stop-after",
        "deploy-cluster",
        "--skip-tags",
        "create-services,kubernetes,guest-wait",
        "--cluster-nodes-spec",
        "[[when_group=compute_nodes,os=windows]]",
        "-e",
        &vars,
        "-e",
        "guest_cloud_user=toor",
    ]);
    ok(&out);
    let stdout = text(&out.stdout);
    let run = s.runs().pop().unwrap();
    let ev = events(&run);

    let play = ev
        .iter()
        .find(|e| e["event"] == "play_start" && e["name"] == "deploy-cluster (guests)")
        .expect("the guest play ran");
    assert_eq!(
        play["hosts"],
        serde_json::json!(["controller-01", "compute-01"])
    );
    // Each guest's own steps, each with its own duration, delegated to the hypervisor.
    let steps = |host: &str| -> Vec<(String, String)> {
        ev.iter()
            .filter(|e| {
                e["event"] == "task_result"
                    && e["host"] == host
                    && e["status"] == "changed"
                    && e["duration"].as_f64().is_some()
                    && e["delegated_to"] == "hypervisor-01"
            })
            .map(|e| {
                let task = e["task"].as_str().unwrap().to_string();
                (task, e["status"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let names = |host: &str| steps(host).into_iter().map(|(t, _)| t).collect::<Vec<_>>();
    assert_eq!(
        names("controller-01"),
        [
            "kinit_libvirt : Linux guest disk (overlay over the cloud image)",
            "kinit_libvirt : Linux guest cloud-init seed",
            "kinit_libvirt : Linux guest running"
        ]
    );
    assert_eq!(
        names("compute-01"),
        [
            "kinit_libvirt : Windows guest disk (empty; Windows Setup installs onto it)",
            "kinit_libvirt : Windows guest config ISO (autounattend.xml)",
            "kinit_libvirt : Windows guest running (Windows Setup runs unattended)"
        ]
    );
    let junit = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    assert!(
        junit.contains(
            r#"<testcase classname="compute-01" name="kinit_libvirt : Windows guest running"#
        ),
        "{junit}"
    );
    assert!(
        stdout.contains("changed: [compute-01 -> hypervisor-01]"),
        "{stdout}"
    );
    let masked: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("********") && !l.starts_with("PHASE ["))
        .collect();
    assert_eq!(masked, Vec::<&str>::new(), "{stdout}");
    for guest in [
        "k8scluster-controller-01-seed.iso",
        "k8scluster-compute-01-config.iso",
    ] {
        assert!(s.path().join("pool").join(guest).is_file(), "{guest}");
    }
    // Issue 18: the Windows guest boots SeaBIOS by default, so its answer file lays the disk
    // out MBR (an active system partition, Windows on partition 2).
    let answer = Command::new("isoinfo")
        .args(["-J", "-x", "/autounattend.xml", "-i"])
        .arg(s.path().join("pool/k8scluster-compute-01-config.iso"))
        .output()
        .unwrap();
    let answer = text(&answer.stdout);
    assert!(answer.contains("<Active>true</Active>"), "{answer}");
    assert!(!answer.contains("<Type>EFI</Type>"), "{answer}");
    let install_to = answer.split("<InstallTo>").nth(1).unwrap_or_default();
    assert!(
        install_to.contains("<PartitionID>2</PartitionID>"),
        "{answer}"
    );
    // The Linux seed: root and the optional cloud user both get the cluster key.
    let seed = s.path().join("pool/k8scluster-controller-01-seed.iso");
    let user_data = Command::new("isoinfo")
        .args(["-J", "-x", "/user-data", "-i"])
        .arg(&seed)
        .output()
        .unwrap();
    let user_data: Value = serde_yaml::from_slice(&user_data.stdout).unwrap();
    let key = std::fs::read_to_string(s.state().join("id_ed25519.pub")).unwrap();
    assert_eq!(user_data["ssh_authorized_keys"][0], key.trim());
    let toor = &user_data["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "toor")
        .cloned()
        .unwrap_or_else(|| panic!("no cloud user in {user_data}"));
    assert_eq!(toor["ssh_authorized_keys"][0], key.trim());
    assert_eq!(toor["sudo"], "ALL=(ALL) NOPASSWD:ALL");
}
