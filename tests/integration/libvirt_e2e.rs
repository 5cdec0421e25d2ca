//! The slow end-to-end tier of the libvirt provider: `kinit run` against a real libvirtd
//! (QEMU software emulation) on this machine, as the cluster's only hypervisor, reached two
//! ways: locally (`libvirt_e2e_local_hypervisor`), and over SSH (`libvirt_e2e_ssh_hypervisor`)
//! through a private OpenSSH `sshd` the test starts on `127.0.0.2`, named with
//! `--hypervisor-hosts-spec`, that lets root in with a key the test generates.
//! Opt-in (`KINIT_E2E=1` and `--ignored`); `ci/e2e-libvirt.sh` prepares the machine (packages,
//! libvirtd, the Debian image) and runs both, one after the other:
//!
//! ```sh
//! ci/e2e-libvirt.sh
//! ```
//!
//! The guest image is a debootstrapped Debian 12 with cloud-init (`ci/e2e-image.sh`), served
//! to `download-images` as a `file://` URL with a `SHA256SUMS` file, because no prebuilt cloud
//! image can be downloaded on the build machine. The service node's container
//! (`create-services`) and the Kubernetes part of `deploy-cluster` are skipped with
//! `--skip-tags`: they need a container registry and kubeadm, which this machine lacks.
//!
//! What both prove: the phases up to the guests of `deploy-cluster` succeed; both cluster
//! guests run, booted from overlays over the cached image, and answer `kinit ssh` with their
//! own hostname and address (cloud-init applied kinit's seed); `cleanup-hypervisors` succeeds
//! twice in a row and leaves no domain, volume, pool or network of the cluster behind, while
//! a domain that is not the cluster's survives.
//!
//! What the SSH one proves on top, from the sshd's debug log: every `kinit run` logged in to
//! the hypervisor over SSH; the `virt_*` modules reached libvirt through kinit's own SSH
//! connection (a `direct-streamlocal` channel to the libvirt socket, with the default
//! `libvirt_uri` `qemu:///system`); kinit's tasks on the guests went through the hypervisor
//! (`direct-tcpip` channels to each guest's port 22); and `kinit ssh NODE` went through it as
//! OpenSSH's jump host. kinit finds the hypervisor's key and host key under a private `HOME`;
//! OpenSSH ignores `HOME`, so for `kinit ssh` a `ssh` wrapper first on `PATH` adds `-F` with
//! the same settings (OpenSSH passes `-F` on to the jump connection).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::fixtures::sshd::keygen;

const URI: &str = "qemu:///system";
const BYSTANDER: &str = "kinit-e2e-bystander";
/// The libvirt daemon's socket that the forward must reach (Debian 12: `/run`).
const LIBVIRT_SOCKET: &str = "/run/libvirt/libvirt-sock";

/// Both tests drive the same libvirtd with guests that fill a 2-core machine: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The two ways the hypervisor is reached, each with its own cluster and network so that
/// what one leaves behind after a failure cannot break the other.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Local,
    Ssh,
}

impl Mode {
    fn cluster(self) -> &'static str {
        match self {
            Mode::Local => "kinite2e",
            Mode::Ssh => "kinite2es",
        }
    }

    /// The first three octets of the cluster network; nodes are `.1` and `.2`.
    fn subnet(self) -> &'static str {
        match self {
            Mode::Local => "10.77.0",
            Mode::Ssh => "10.78.0",
        }
    }

    fn nodes(self) -> [(&'static str, String); 2] {
        let s = self.subnet();
        [
            ("controller-01", format!("{s}.1")),
            ("compute-01", format!("{s}.2")),
        ]
    }
}

fn virsh(args: &[&str]) -> Output {
    Command::new("virsh")
        .arg("-c")
        .arg(URI)
        .args(args)
        .output()
        .expect("run virsh")
}

fn virsh_ok(args: &[&str]) -> String {
    let o = virsh(args);
    assert!(o.status.success(), "virsh {args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The hypervisor as an SSH host: a private `sshd` on `127.0.0.2` (any loopback address but
/// `127.0.0.1`, which kinit takes for the local machine) that lets root in with a generated
/// key and logs every channel (`LogLevel DEBUG1`); a `HOME` whose `.ssh` holds that key and
/// the sshd's host key, for kinit; a `ssh` wrapper giving OpenSSH the same (see the top).
struct SshHypervisor {
    dir: tempfile::TempDir,
    port: u16,
    sshd: Child,
}

impl SshHypervisor {
    const ADDRESS: &'static str = "127.0.0.2";

    fn start() -> SshHypervisor {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let home_ssh = d.join("home/.ssh");
        std::fs::create_dir_all(&home_ssh).unwrap();
        let client_key = home_ssh.join("id_ed25519");
        keygen(&client_key, "ed25519");
        let host_key = d.join("ssh_host_ed25519_key");
        keygen(&host_key, "ed25519");
        std::fs::copy(client_key.with_extension("pub"), d.join("authorized_keys")).unwrap();
        let port = std::net::TcpListener::bind((Self::ADDRESS, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let host_pub = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
        let host_pub: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let known_hosts = home_ssh.join("known_hosts");
        std::fs::write(
            &known_hosts,
            format!("[{}]:{port} {}\n", Self::ADDRESS, host_pub.join(" ")),
        )
        .unwrap();
        let config = format!(
            "ListenAddress {addr}\nPort {port}\nHostKey {hk}\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\nUsePAM no\nStrictModes no\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nAllowTcpForwarding yes\n\
             AllowStreamLocalForwarding yes\nMaxSessions 20\nMaxStartups 100:30:200\n\
             LogLevel DEBUG1\nUseDNS no\nPrintMotd no\nSubsystem sftp internal-sftp\n",
            addr = Self::ADDRESS,
            hk = host_key.display(),
            d = d.display(),
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let sshd = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .arg("-E")
            .arg(d.join("sshd.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /usr/sbin/sshd");
        let bin = d.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ssh_config = d.join("ssh_config");
        std::fs::write(
            &ssh_config,
            format!(
                "Host {addr}\n  IdentityFile {key}\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {kh}\n  StrictHostKeyChecking yes\n  BatchMode yes\n",
                addr = Self::ADDRESS,
                key = client_key.display(),
                kh = known_hosts.display(),
            ),
        )
        .unwrap();
        let wrapper = bin.join("ssh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec /usr/bin/ssh -F '{}' \"$@\"\n",
                ssh_config.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let hv = SshHypervisor { dir, port, sshd };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !hv.log().contains("Server listening on") {
            assert!(
                Instant::now() < deadline,
                "sshd did not start: {}",
                hv.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        hv
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// What the sshd logged since `from` (a length of `log()` taken earlier).
    fn log_since(&self, from: usize) -> String {
        self.log().get(from..).unwrap_or_default().to_string()
    }

    fn spec(&self) -> String {
        format!("[[ansible_host={},ssh_port={}]]", Self::ADDRESS, self.port)
    }

    /// The environment kinit and `kinit ssh` run with.
    fn env(&self, c: &mut Command) {
        let path = std::env::var("PATH").unwrap_or_default();
        c.env("HOME", self.dir.path().join("home"))
            .env(
                "PATH",
                format!("{}:{path}", self.dir.path().join("bin").display()),
            )
            .env_remove("SSH_AUTH_SOCK");
    }
}

impl Drop for SshHypervisor {
    fn drop(&mut self) {
        // sshd's sessions ended with the kinit processes; only the listener is left.
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}

struct E2e {
    mode: Mode,
    dir: tempfile::TempDir,
    pool_path: PathBuf,
    image_url: String,
    sums_url: String,
    hv: Option<SshHypervisor>,
}

impl E2e {
    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.args(args)
            .current_dir(self.dir.path())
            .env("XDG_STATE_HOME", self.state())
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR");
        if let Some(hv) = &self.hv {
            hv.env(&mut c);
        }
        c
    }

    /// Cluster name, network, small guests (two 1-vCPU, 1 GiB guests fit a 2-core CI
    /// machine) and, over SSH, the hypervisor.
    fn shape(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--cluster-spec".into(),
            format!("[cluster_name={}]", self.mode.cluster()),
            "--network-spec".into(),
            format!(
                "[network_name={},network={}.0/24]",
                self.mode.cluster(),
                self.mode.subnet()
            ),
            "--cluster-nodes-spec".into(),
            "[[vcpus=1,maxvcpus=1,ram=1GiB,disk=4GiB]]".into(),
        ];
        if let Some(hv) = &self.hv {
            a.extend(["--hypervisor-hosts-spec".into(), hv.spec()]);
        }
        a
    }

    /// `kinit run` with the e2e cluster's shape and variables, then `extra`. `libvirt_uri`
    /// is left at its default, `qemu:///system`, in both modes.
    fn run(&self, extra: &[&str]) -> Output {
        let cloud_images = serde_json::json!({"cloud_images": {"debian": {
            "url": self.image_url, "checksum": format!("sha256:{}", self.sums_url)}}});
        let mut c = self.cmd(&["run", "--spec", "k8s-libvirt-1-1-1"]);
        c.args(self.shape())
            .args(["-e", "kinit_hosted_deployment=true"])
            .args([
                "-e",
                &format!("libvirt_pool_path={}", self.pool_path.display()),
            ])
            .args(["-e", &cloud_images.to_string()])
            .args(extra);
        let started = Instant::now();
        let out = c.output().expect("run kinit");
        eprintln!(
            "kinit run {extra:?}: {:?} in {:.0?}\n{}",
            out.status.code(),
            started.elapsed(),
            tail(&text(&out.stdout), 40)
        );
        out
    }

    fn ssh(&self, node: &str, command: &[&str]) -> Output {
        let mut c = self.cmd(&["ssh", node, "--spec", "k8s-libvirt-1-1-1"]);
        c.args(self.shape()).arg("--").args(command);
        let started = Instant::now();
        let out = c.output().expect("run kinit ssh");
        eprintln!(
            "kinit ssh {node}: {:?} in {:.1?}",
            out.status.code(),
            started.elapsed()
        );
        out
    }

    /// `kinit playbook` running `hostname` on both cluster nodes, with the inventory
    /// `kinit run` wrote to the state folder (`ansible-inventory --list` JSON) as a YAML
    /// inventory of those two hosts. Guest host keys are learned into a private `HOME`.
    fn playbook_on_guests(&self) -> Output {
        let written = self
            .state()
            .join("kinit")
            .join(self.mode.cluster())
            .join("inventory.json");
        let listed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
        let hosts: serde_json::Map<String, serde_json::Value> = self
            .mode
            .nodes()
            .iter()
            .map(|(node, _)| (node.to_string(), listed["_meta"]["hostvars"][node].clone()))
            .collect();
        let inventory = self.dir.path().join("guests.yml");
        let yaml = serde_json::json!({"all": {"hosts": hosts}});
        std::fs::write(&inventory, yaml.to_string()).unwrap();
        let book = self.dir.path().join("guests-play.yml");
        std::fs::write(
            &book,
            "- hosts: all\n  gather_facts: false\n  tasks:\n\
             \x20   - command: hostname\n      register: h\n\
             \x20   - debug:\n          msg: \"{{ inventory_hostname }} says {{ h.stdout }}\"\n",
        )
        .unwrap();
        let mut c = self.cmd(&["playbook"]);
        c.arg(&book)
            .arg("-i")
            .arg(&inventory)
            .args(["--host-key-checking", "accept-new"]);
        if self.hv.is_none() {
            let home = self.dir.path().join("home");
            std::fs::create_dir_all(home.join(".ssh")).unwrap();
            std::fs::write(home.join(".ssh/known_hosts"), "").unwrap();
            c.env("HOME", home);
        }
        let started = Instant::now();
        let out = c.output().expect("run kinit playbook");
        eprintln!(
            "kinit playbook on the guests: {:?} in {:.1?}\n{}",
            out.status.code(),
            started.elapsed(),
            tail(&text(&out.stdout), 20)
        );
        out
    }

    /// The sshd log grown by `f`, with what `f` returned; `None` for a local hypervisor.
    fn logged<T>(&self, f: impl FnOnce() -> T) -> (T, Option<String>) {
        let from = self.hv.as_ref().map(|hv| hv.log().len());
        let out = f();
        let grown = self.hv.as_ref().zip(from).map(|(hv, n)| hv.log_since(n));
        (out, grown)
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({:?})\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Over SSH, `log` (what sshd logged during one `kinit run`) shows the run logged in to the
/// hypervisor as root, and `also` each of the given fragments.
fn assert_over_ssh(log: Option<&str>, what: &str, also: &[String]) {
    let Some(log) = log else { return };
    let logins = log.matches("Accepted publickey for root from").count();
    eprintln!("{what}: sshd accepted {logins} login(s)");
    assert!(logins > 0, "{what}: no SSH login to the hypervisor:\n{log}");
    for needle in also {
        assert!(
            log.contains(needle.as_str()),
            "{what}: sshd did not log `{needle}`:\n{}",
            tail(log, 60)
        );
    }
}

/// What sshd logs for a `direct-streamlocal` channel to the libvirt socket (only that kind
/// of channel has a path as its target).
fn libvirt_forwarded() -> String {
    format!("target {LIBVIRT_SOCKET}")
}

/// A domain that is not the cluster's: defined (not started) before the run, it must survive
/// the cleanup.
fn define_bystander(dir: &Path) {
    let _ = virsh(&["undefine", BYSTANDER]);
    let xml = format!(
        "<domain type='qemu'><name>{BYSTANDER}</name><memory unit='MiB'>64</memory>\
         <os><type arch='x86_64'>hvm</type></os></domain>"
    );
    let f = dir.join("bystander.xml");
    std::fs::write(&f, xml).unwrap();
    virsh_ok(&["define", f.to_str().unwrap()]);
}

fn domains() -> String {
    virsh_ok(&["list", "--all", "--name"])
}

#[test]
#[ignore = "slow (minutes): needs root, a real libvirtd with QEMU and a guest image; run ci/e2e-libvirt.sh"]
fn libvirt_e2e_local_hypervisor() {
    e2e(Mode::Local);
}

#[test]
#[ignore = "slow (minutes): needs root, a real libvirtd with QEMU, sshd and a guest image; run ci/e2e-libvirt.sh"]
fn libvirt_e2e_ssh_hypervisor() {
    e2e(Mode::Ssh);
}

fn e2e(mode: Mode) {
    if std::env::var("KINIT_E2E").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set KINIT_E2E=1 (ci/e2e-libvirt.sh does) to run the libvirt end-to-end test"
        );
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let image =
        PathBuf::from(std::env::var("KINIT_E2E_IMAGE").expect("KINIT_E2E_IMAGE: the guest image"));
    let sums = image.with_file_name("SHA256SUMS");
    assert!(
        image.is_file() && sums.is_file(),
        "{} and its SHA256SUMS must exist (ci/e2e-image.sh)",
        image.display()
    );
    let cluster = mode.cluster();
    let dir = tempfile::tempdir().unwrap();
    // QEMU runs as its own user: the cluster's disks live under libvirt's images folder.
    let pool_path = PathBuf::from(format!(
        "/var/lib/libvirt/images/{cluster}-{}",
        std::process::id()
    ));
    let e = E2e {
        mode,
        dir,
        pool_path: pool_path.clone(),
        image_url: format!("file://{}", image.display()),
        sums_url: format!("file://{}", sums.display()),
        hv: (mode == Mode::Ssh).then(SshHypervisor::start),
    };
    define_bystander(e.dir.path());

    // Up to the guests of deploy-cluster.
    let (out, log) = e.logged(|| {
        e.run(&[
            "--stop-after",
            "deploy-cluster",
            "--skip-tags",
            "create-services,kubernetes",
        ])
    });
    assert_ok(&out, "kinit run --stop-after deploy-cluster");
    // libvirt through kinit's own SSH connection (the guests' readiness is waited for on the
    // hypervisor, so kinit itself has not connected to a guest yet).
    assert_over_ssh(log.as_deref(), "deploy run", &[libvirt_forwarded()]);
    let listed = domains();
    for (node, _) in mode.nodes() {
        let name = format!("{cluster}-{node}");
        assert!(
            listed.lines().any(|l| l.trim() == name),
            "domain {name} missing:\n{listed}"
        );
        let state = virsh_ok(&["domstate", &name]);
        assert_eq!(state.trim(), "running", "{name}");
    }
    let base = Path::new("/var/lib/libvirt/images").join(image.file_name().unwrap());
    assert!(base.is_file(), "download-images cached {}", base.display());

    // Each guest, through kinit's own SSH command line, is the node kinit configured; over
    // SSH, OpenSSH reached it through the hypervisor as jump host.
    for (node, ip) in mode.nodes() {
        let (out, log) = e.logged(|| {
            e.ssh(
                node,
                &[
                    "hostname",
                    "&&",
                    "ip",
                    "-4",
                    "-o",
                    "addr",
                    "show",
                    "eth0",
                    "&&",
                    "echo",
                    "\"$SSH_CONNECTION\"",
                ],
            )
        });
        assert_ok(&out, &format!("kinit ssh {node}"));
        let stdout = text(&out.stdout);
        eprintln!("kinit ssh {node}: {stdout}");
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), Some(node), "hostname of {node}: {stdout}");
        assert!(
            stdout.contains(&format!("inet {ip}/24")),
            "address of {node}: {stdout}"
        );
        if let Some(log) = log {
            assert!(
                log.contains("remote software version OpenSSH")
                    && log.contains(&format!("target {ip} port 22")),
                "kinit ssh {node}: no OpenSSH jump through the hypervisor to {ip}:\n{log}"
            );
        }
    }

    // kinit's own SSH transport reaches both guests with the cluster's inventory (the one
    // the Kubernetes plays use); over SSH through the hypervisor as jump host.
    let (out, log) = e.logged(|| e.playbook_on_guests());
    assert_ok(&out, "kinit playbook on the cluster nodes");
    let stdout = text(&out.stdout);
    for (node, ip) in mode.nodes() {
        assert!(
            stdout.contains(&format!("{node} says {node}")),
            "{node} did not answer the playbook:\n{stdout}"
        );
        if let Some(log) = &log {
            assert!(
                log.contains("remote software version russh")
                    && log.contains(&format!("target {ip} port 22")),
                "kinit playbook: no jump through the hypervisor to {ip}:\n{log}"
            );
        }
    }

    // Teardown, twice: the second finds nothing to remove and still succeeds.
    for round in 1..=2 {
        let (out, log) = e.logged(|| e.run(&["--stop-after", "cleanup-hypervisors"]));
        assert_ok(&out, &format!("cleanup round {round}"));
        assert_over_ssh(
            log.as_deref(),
            &format!("cleanup round {round}"),
            &[libvirt_forwarded()],
        );
        let recap = text(&out.stdout);
        let hv = recap
            .lines()
            .find(|l| l.starts_with("hypervisor-01") && l.contains("changed="))
            .unwrap_or_default()
            .to_string();
        assert_eq!(
            hv.contains("changed=0 "),
            round == 2,
            "cleanup round {round}: {hv}"
        );
    }
    let listed = domains();
    assert!(!listed.contains(cluster), "cluster domains left:\n{listed}");
    assert!(
        listed.lines().any(|l| l.trim() == BYSTANDER),
        "the bystander domain was removed:\n{listed}"
    );
    let nets = virsh_ok(&["net-list", "--all", "--name"]);
    assert!(
        !nets.lines().any(|l| l.trim() == cluster),
        "network left:\n{nets}"
    );
    let pools = virsh_ok(&["pool-list", "--all", "--name"]);
    assert!(
        !pools.lines().any(|l| l.trim() == cluster),
        "pool left:\n{pools}"
    );
    let vols = virsh(&["vol-list", cluster]);
    assert!(
        !vols.status.success(),
        "vol-list {cluster} still answers: {}",
        text(&vols.stdout)
    );
    for (node, _) in mode.nodes() {
        for f in [
            format!("{cluster}-{node}.qcow2"),
            format!("{cluster}-{node}-seed.iso"),
        ] {
            assert!(
                !pool_path.join(&f).exists(),
                "{f} left in {}",
                pool_path.display()
            );
        }
    }
    assert!(base.is_file(), "the cached base image is kept");
    virsh_ok(&["undefine", BYSTANDER]);
    let _ = std::fs::remove_dir(&pool_path);
}
