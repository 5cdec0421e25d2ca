//! The slow end-to-end tier of the libvirt provider: `kinit run` against a real libvirtd
//! (QEMU software emulation) on this machine, as the cluster's only hypervisor, reached two
//! ways: locally (`libvirt_e2e_local_hypervisor`), and over SSH (`libvirt_e2e_ssh_hypervisor`)
//! through a private OpenSSH `sshd` the test starts on `127.0.0.2`, named with
//! `--hypervisor-hosts-spec`, that lets root in with a key the test generates.
//! Opt-in (`KINIT_E2E=1` and `--ignored`); `ci/e2e-libvirt.sh` prepares the machine (packages,
//! libvirtd, the Debian image) and runs them one after the other:
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
//! The third (`libvirt_e2e_ovn_local_hypervisor`) is the local hypervisor with OVN as the
//! cluster network (`-e kinit_ovn=true`, as KubeInit on one hypervisor; the userspace datapath
//! where the openvswitch kernel module is missing, chosen by kinit): the role starts Open
//! vSwitch and OVN, libvirt plugs the guests' NICs into `br-int` with their interface ids, and
//! the test checks from OVN's side that both logical ports are bound to this chassis through
//! the domains' taps, that `kinit ssh` reaches the guests through br-ex and the cluster router,
//! that each guest reaches the other and this machine's default gateway (through the gateway
//! chassis and the masquerading), and that the two cleanups leave no OVN object, port binding,
//! host route or iptables rule of the cluster while a logical switch of nobody's cluster and
//! the daemons (cleanup stops none) stay. It runs only when Open vSwitch is not running yet;
//! a guard then stops the daemons kinit started and removes their databases, also on failure.
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

/// The two ways the hypervisor is reached, and the local one with OVN as the cluster
/// network; each with its own cluster and network so that what one leaves behind after a
/// failure cannot break another.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Local,
    Ssh,
    Ovn,
}

impl Mode {
    fn cluster(self) -> &'static str {
        match self {
            Mode::Local => "kinite2e",
            Mode::Ssh => "kinite2es",
            Mode::Ovn => "kinite2eo",
        }
    }

    /// The first three octets of the cluster network; nodes are `.1` and `.2`.
    fn subnet(self) -> &'static str {
        match self {
            Mode::Local => "10.77.0",
            Mode::Ssh => "10.78.0",
            Mode::Ovn => "10.79.0",
        }
    }

    /// Variables every `kinit run` of this mode adds.
    fn vars(self) -> &'static [&'static str] {
        match self {
            Mode::Ovn => &["-e", "kinit_ovn=true"],
            Mode::Local | Mode::Ssh => &[],
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
            .args(self.mode.vars())
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

#[test]
#[ignore = "slow (minutes): needs root, a real libvirtd with QEMU, Open vSwitch, OVN and a guest image; run ci/e2e-libvirt.sh"]
fn libvirt_e2e_ovn_local_hypervisor() {
    e2e(Mode::Ovn);
}

fn e2e(mode: Mode) {
    if std::env::var("KINIT_E2E").as_deref() != Ok("1") {
        crate::support::cannot_run(
            "set KINIT_E2E=1 (ci/e2e-libvirt.sh does) to run the libvirt end-to-end test",
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
    // OVN: the role starts Open vSwitch and OVN, so the test runs only where none runs yet,
    // and the guard puts the machine back even when an assertion fails.
    let _restore = if mode == Mode::Ovn {
        match ovn::unavailable() {
            Some(why) => {
                crate::support::cannot_run(why);
                return;
            }
            None => Some(ovn::Restore::new(mode, &pool_path)),
        }
    } else {
        None
    };
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

    if mode == Mode::Ovn {
        ovn::network_works(&e);
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

    if mode == Mode::Ovn {
        ovn::add_bystander();
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
    if mode == Mode::Ovn {
        ovn::cleaned_up(&e);
    }
    virsh_ok(&["undefine", BYSTANDER]);
    let _ = std::fs::remove_dir(&pool_path);
}

/// The OVN mode: a single hypervisor running OVN as KubeInit did (`-e kinit_ovn=true`), the
/// guests' NICs on `br-int` (`<virtualport type='openvswitch'>` with their interface ids),
/// the userspace datapath where the openvswitch kernel module is missing (the role's `auto`).
mod ovn {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::{BYSTANDER, E2e, Mode, text, virsh};
    use crate::support::{OVN_CTL, OVS_CTL};

    const SYSCTL_FILE: &str = "/etc/sysctl.d/90-kinit-ovn.conf";
    /// A logical switch that is not the cluster's: cleanup must leave it.
    const BYSTANDER_SWITCH: &str = "kinit-e2e-bystander";

    /// One ICMP echo from the guest to `argv[1]` (raw socket; the guest image has python3
    /// for cloud-init but no `ping`): exit 0 on a reply, after up to five tries.
    const PING_PY: &str = r#"import os, socket, struct, sys, time
def csum(b):
    b += b'\0' * (len(b) % 2)
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff
to = sys.argv[1]
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
sock.settimeout(1)
ident = os.getpid() & 0xffff
for seq in range(5):
    body = struct.pack('!HH', ident, seq) + b'kinit-e2e'
    sock.sendto(struct.pack('!BBH', 8, 0, csum(struct.pack('!BBH', 8, 0, 0) + body)) + body, (to, 0))
    end = time.time() + 1
    while time.time() < end:
        try:
            r, (src, _) = sock.recvfrom(2048)
        except socket.timeout:
            break
        h = (r[0] & 15) * 4
        if src == to and r[h] == 0 and struct.unpack('!H', r[h + 4:h + 6])[0] == ident:
            print('reply from', to)
            sys.exit(0)
print('no reply from', to)
sys.exit(1)
"#;

    fn sh(script: &str) -> std::process::Output {
        Command::new("sh")
            .args(["-c", script])
            .output()
            .expect("run sh")
    }

    fn ok(script: &str) -> bool {
        sh(script).status.success()
    }

    /// Runs `script`; panics with its output unless it succeeds.
    fn sh_ok(script: &str) -> String {
        let o = sh(script);
        assert!(
            o.status.success(),
            "{script}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// This machine's default gateway (`ip -4 route show default`): the "outside" a guest
    /// must reach through the cluster router, br-ex and the masquerading.
    fn default_gateway() -> Option<String> {
        let routes = text(&sh("ip -4 route show default").stdout);
        let mut words = routes.split_whitespace();
        words.find(|w| *w == "via")?;
        words.next().map(str::to_string)
    }

    /// Why this machine cannot run the OVN test, if it cannot.
    pub(super) fn unavailable() -> Option<String> {
        if let Some(why) = crate::support::ovn_unavailable(&[]) {
            return Some(why);
        }
        if default_gateway().is_none() {
            return Some("this machine has no default route for the guests to reach".into());
        }
        None
    }

    /// The interface id (OVN logical port) of each node, from the inventory `kinit run` wrote.
    fn ports(e: &E2e) -> Vec<(&'static str, String)> {
        let written = e
            .state()
            .join("kinit")
            .join(e.mode.cluster())
            .join("inventory.json");
        let listed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
        e.mode
            .nodes()
            .iter()
            .map(|(node, _)| {
                let id = listed["_meta"]["hostvars"][node]["kinit_interface_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no kinit_interface_id for {node}"))
                    .to_string();
                (*node, id)
            })
            .collect()
    }

    /// The chassis the southbound database has `port` bound to (empty when unbound).
    fn bound_on(port: &str) -> String {
        let chassis = sh_ok(&format!(
            "ovn-sbctl --bare --columns=chassis find Port_Binding logical_port={port}"
        ));
        if chassis.trim().is_empty() {
            return String::new();
        }
        sh_ok(&format!(
            "ovn-sbctl --bare --columns=name list Chassis {}",
            chassis.trim()
        ))
        .trim()
        .to_string()
    }

    /// `kinit ssh NODE` running the ICMP echo to `to`.
    fn guest_pings(e: &E2e, node: &str, to: &str) -> bool {
        use base64::Engine;
        let script = base64::engine::general_purpose::STANDARD.encode(PING_PY);
        let command = [
            "echo",
            &script,
            "|",
            "base64",
            "-d",
            ">",
            "/tmp/kinit-ping.py",
            "&&",
            "python3",
            "/tmp/kinit-ping.py",
            to,
        ];
        // OpenSSH exits 255 when it cannot connect: the guest's sshd may be restarting
        // (cloud-init's last stage can still be running under software emulation).
        let mut out = e.ssh(node, &command);
        for _ in 0..10 {
            if out.status.code() != Some(255) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_secs(3));
            out = e.ssh(node, &command);
        }
        eprintln!(
            "{node} -> {to}: {}{}",
            text(&out.stdout).trim(),
            text(&out.stderr).trim()
        );
        out.status.success()
    }

    /// The guests are on OVN: their ports bound to this chassis through libvirt's taps on
    /// br-int, the host routes the cluster network through br-ex (which `kinit ssh` already
    /// used), and each guest reaches the other and, through the router, its gateway chassis
    /// and the masquerading, this machine's default gateway.
    pub(super) fn network_works(e: &E2e) {
        let cluster = e.mode.cluster();
        let kernel = Path::new("/sys/module/openvswitch").exists();
        let datapath = sh_ok("ovs-vsctl get bridge br-int datapath_type");
        eprintln!("br-int datapath_type: {}", datapath.trim());
        if !kernel {
            assert_eq!(
                datapath.trim().trim_matches('"'),
                "netdev",
                "no openvswitch kernel module: the userspace datapath must be chosen"
            );
        }
        sh_ok("ovn-nbctl --wait=hv --timeout=30 sync");
        // The hypervisor is `localhost` in the inventory: the chassis tunnels from a real
        // address of this machine, not from a name.
        let encap = sh_ok("ovn-sbctl --bare --columns=ip list Encap");
        let encap = encap.trim();
        assert!(
            encap
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|a| !a.is_loopback()),
            "the chassis's geneve address is `{encap}`"
        );
        for (node, port) in ports(e) {
            assert_eq!(
                bound_on(&port),
                "hypervisor-01",
                "{node}'s logical port {port} is not bound to this chassis"
            );
            // The OVS interface carrying the port is libvirt's tap for the domain, on br-int.
            let iface = sh_ok(&format!(
                "ovs-vsctl --bare --columns=name find Interface external_ids:iface-id={port}"
            ));
            let iface = iface.trim();
            assert!(!iface.is_empty(), "no OVS interface has iface-id {port}");
            assert_eq!(
                sh_ok(&format!("ovs-vsctl iface-to-br {iface}")).trim(),
                "br-int"
            );
            let domiflist = text(&virsh(&["domiflist", &format!("{cluster}-{node}")]).stdout);
            assert!(
                domiflist
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(iface)),
                "{iface} is not {node}'s NIC:\n{domiflist}"
            );
            let xml = text(&virsh(&["dumpxml", &format!("{cluster}-{node}")]).stdout);
            assert!(
                xml.contains("<virtualport type='openvswitch'>")
                    && xml.contains(&format!("interfaceid='{port}'")),
                "{node}'s NIC is not an OVS port with interfaceid {port}:\n{xml}"
            );
        }
        let route = sh_ok(&format!("ip -4 route show {}.0/24", e.mode.subnet()));
        assert!(route.contains("dev br-ex"), "host route: {route}");
        let nodes = e.mode.nodes();
        assert!(
            guest_pings(e, nodes[0].0, &nodes[1].1),
            "{} does not reach {}",
            nodes[0].0,
            nodes[1].0
        );
        assert!(
            guest_pings(e, nodes[1].0, &nodes[0].1),
            "{} does not reach {}",
            nodes[1].0,
            nodes[0].0
        );
        let gateway = default_gateway().unwrap();
        for (node, _) in &nodes {
            assert!(
                guest_pings(e, node, &gateway),
                "{node} does not reach this machine's default gateway {gateway} (router, br-ex, NAT)"
            );
        }
        let nat = sh_ok("iptables -t nat -S POSTROUTING");
        assert!(
            nat.contains(&format!("--comment kinit-ovn-{cluster} -j MASQUERADE")),
            "{nat}"
        );
    }

    /// A logical switch of nobody's cluster, which cleanup must leave.
    pub(super) fn add_bystander() {
        sh_ok(&format!("ovn-nbctl --may-exist ls-add {BYSTANDER_SWITCH}"));
    }

    /// After the cleanups: no OVN object, port binding, host route or iptables rule of the
    /// cluster; the bystander switch and the daemons (cleanup stops none) are still there.
    pub(super) fn cleaned_up(e: &E2e) {
        let cluster = e.mode.cluster();
        let nb = sh_ok("ovn-nbctl show");
        assert!(
            !nb.contains(cluster),
            "OVN objects of the cluster left:\n{nb}"
        );
        assert!(!nb.contains("(public)"), "the public switch is left:\n{nb}");
        assert!(
            nb.contains(BYSTANDER_SWITCH),
            "the bystander switch went:\n{nb}"
        );
        for (node, port) in ports(e) {
            let left = sh_ok(&format!(
                "ovn-sbctl --bare --columns=logical_port find Port_Binding logical_port={port}"
            ));
            assert!(left.trim().is_empty(), "{node}'s port binding left");
        }
        assert!(!ok("ovs-vsctl br-exists br-ex"), "br-ex left");
        let routes = sh_ok("ip -4 route show");
        assert!(
            !routes.contains(&format!("{}.0/24", e.mode.subnet())),
            "route left:\n{routes}"
        );
        let rules = sh_ok("iptables -t nat -S; iptables -S");
        assert!(
            !rules.contains(&format!("kinit-ovn-{cluster}")),
            "iptables rules left:\n{rules}"
        );
        for status in [
            format!("{OVS_CTL} status"),
            format!("{OVN_CTL} status_northd"),
            format!("{OVN_CTL} status_controller"),
        ] {
            assert!(ok(&status), "cleanup stopped a daemon: `{status}` fails");
        }
        sh_ok(&format!("ovn-nbctl --if-exists ls-del {BYSTANDER_SWITCH}"));
    }

    /// Puts the machine back as the test found it, also after a failure: the cluster's
    /// domains, network, pool and files, the Open vSwitch and OVN daemons the role started
    /// (the test runs only when none was running) with their databases and bridges, the
    /// cluster's route and iptables rules, the sysctl file and values, the bystander domain.
    pub(super) struct Restore {
        mode: Mode,
        pool_path: PathBuf,
        sysctls: Vec<(String, String)>,
        sysctl_file_existed: bool,
    }

    impl Restore {
        pub(super) fn new(mode: Mode, pool_path: &Path) -> Restore {
            let sysctls = ["net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter"]
                .iter()
                .map(|k| {
                    (
                        k.to_string(),
                        sh_ok(&format!("sysctl -n {k}")).trim().to_string(),
                    )
                })
                .collect();
            Restore {
                mode,
                pool_path: pool_path.to_path_buf(),
                sysctls,
                sysctl_file_existed: Path::new(SYSCTL_FILE).exists(),
            }
        }
    }

    impl Drop for Restore {
        fn drop(&mut self) {
            let cluster = self.mode.cluster();
            let v = "virsh -c qemu:///system";
            let pool = self.pool_path.display();
            let mut script = String::new();
            for (node, _) in self.mode.nodes() {
                let d = format!("{cluster}-{node}");
                script += &format!(
                    "{v} destroy {d}; {v} undefine --nvram {d}; \
                     rm -f {pool}/{d}.qcow2 {pool}/{d}-seed.iso; "
                );
            }
            script += &format!(
                "{v} net-destroy {cluster}; {v} net-undefine {cluster}; \
                 {v} pool-destroy {cluster}; {v} pool-undefine {cluster}; rmdir {pool}; \
                 {v} undefine {BYSTANDER}; "
            );
            script += &format!("ip route del {}.0/24 dev br-ex; ", self.mode.subnet());
            for t in ["nat", "filter"] {
                script += &format!(
                    "iptables -t {t} -S | grep -E -- '--comment \"?kinit-ovn-{cluster}\"?( |$)' \
                     | sed 's/^-A /-D /' | while read -r r; do iptables -t {t} $r; done; "
                );
            }
            // ovn-controller recreates a missing br-int, so it stops before the bridges go.
            script += &format!(
                "{OVN_CTL} stop_controller; \
                 for b in br-ex br-int; do ovs-vsctl --timeout=5 --if-exists del-br $b; done; \
                 {OVN_CTL} stop_northd; {OVS_CTL} stop; \
                 rm -f /etc/openvswitch/conf.db /etc/openvswitch/.conf.db.~lock~ \
                 /etc/openvswitch/system-id.conf /var/lib/ovn/ovnnb_db.db /var/lib/ovn/ovnsb_db.db \
                 /var/lib/ovn/.ovnnb_db.db.~lock~ /var/lib/ovn/.ovnsb_db.db.~lock~; "
            );
            if !self.sysctl_file_existed {
                script += &format!("rm -f {SYSCTL_FILE}; ");
            }
            for (k, val) in &self.sysctls {
                script += &format!("sysctl -qw {k}={val}; ");
            }
            script += "for l in br-ex br-int ovs-netdev; do ip link del $l; done; ";
            let _ = Command::new("sh")
                .args(["-c", &script])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output();
        }
    }
}
