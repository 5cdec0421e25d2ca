//! Namespace hosts for the cluster roles: each is a real OpenSSH `sshd` in its own mount
//! namespace (root only), so what a role writes to `/etc` and `/root` lands in that host's
//! own overlay layer and `/usr/local/bin` holds that host's recording stand-ins.
//!
//! kubeadm and kubelet cannot be obtained on the build machine (no package registry ships
//! them), so `kubeadm` and `kubectl` here are stand-ins: shell scripts that append their
//! arguments to `calls.log` and act out just enough of the real tool (files kubeadm init and
//! join create, "unchanged"/"(no change)" answers on a repeat) for the roles to run twice.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fixtures::sshd::keygen;

pub struct Host {
    pub name: String,
    /// The loopback address sshd listens on.
    pub address: &'static str,
    pub port: u16,
    pub host_public_key: String,
    /// Scratch folder of this host: overlay layers, stand-ins, calls.log.
    pub dir: PathBuf,
    child: Child,
}

impl Host {
    /// What the host's `/etc` got written (the upper overlay layer).
    pub fn etc(&self) -> PathBuf {
        self.dir.join("etc-upper")
    }

    /// What the host's `/root` got written.
    pub fn root(&self) -> PathBuf {
        self.dir.join("root-upper")
    }

    /// Stand-in calls in order, one `tool arg arg ...` line each.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Run `script` with `sh` inside this host's mount namespace (its overlays), as root.
    pub fn sh(&self, script: &str) -> std::process::Output {
        Command::new("nsenter")
            .args(["--target", &self.child.id().to_string(), "--mount", "--"])
            .args(["sh", "-c", script])
            .output()
            .expect("nsenter")
    }

    pub fn clear_calls(&self) {
        std::fs::write(self.dir.join("calls.log"), "").unwrap();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // sshd -D runs as the child's only process (`unshare` execs `sh`, which execs sshd);
        // killing it also unmounts the namespace's overlays.
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

pub struct Lab {
    pub hosts: Vec<Host>,
    pub client_key: PathBuf,
    pub known_hosts: PathBuf,
    /// Keys, host folders; removed when the lab is dropped (after the hosts stop).
    _dir: tempfile::TempDir,
}

impl Lab {
    /// One host per name; `None` without root (mount namespaces and overlays need it).
    pub fn start(names: &[&str]) -> Option<Lab> {
        Self::start_with(names, false, &[])
    }

    /// Hosts for the Linux node role: also the node stand-ins of `node_standins`.
    pub fn start_nodes(names: &[&str]) -> Option<Lab> {
        Self::start_with(names, true, &[])
    }

    /// Hosts whose `/usr` and `/var` are overlays too, so the real apt and dpkg can install
    /// and remove packages there without touching this machine's. They listen on 127.0.0.2:
    /// 127.0.0.1 is the implicit local host to `kinit run`, which would not use SSH for it.
    pub fn start_packaging(names: &[&str]) -> Option<Lab> {
        Self::start_with(names, false, &["/usr", "/var"])
    }

    fn start_with(names: &[&str], node: bool, overlays: &[&str]) -> Option<Lab> {
        if !crate::fixtures::netns::is_root() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let client_key = dir.path().join("id_ed25519");
        keygen(&client_key, "ed25519");
        std::fs::copy(
            client_key.with_extension("pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        let hosts: Vec<Host> = names
            .iter()
            .map(|n| start_host(dir.path(), n, node, overlays))
            .collect();
        let known_hosts = dir.path().join("known_hosts");
        let lines: String = hosts
            .iter()
            .map(|h| format!("[{}]:{} {}\n", h.address, h.port, h.host_public_key))
            .collect();
        std::fs::write(&known_hosts, lines).unwrap();
        Some(Lab {
            hosts,
            client_key,
            known_hosts,
            _dir: dir,
        })
    }

    pub fn host(&self, name: &str) -> &Host {
        self.hosts.iter().find(|h| h.name == name).unwrap()
    }
}

fn start_host(lab: &Path, name: &str, node: bool, overlays: &[&str]) -> Host {
    let dir = lab.join(name);
    for d in ["etc-upper", "etc-work", "root-upper", "root-work", "bin"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    // Before /usr/local/bin is bound over: an overlay of /usr would hide the bind.
    let mut extra_mounts = String::new();
    for o in overlays {
        let tag = o.trim_start_matches('/').replace('/', "-");
        for d in ["upper", "work"] {
            std::fs::create_dir_all(dir.join(format!("{tag}-{d}"))).unwrap();
        }
        extra_mounts += &format!(
            "mount -t overlay overlay -o lowerdir={o},upperdir={d}/{tag}-upper,workdir={d}/{tag}-work {o}\n",
            d = dir.display()
        );
    }
    write_standins(&dir);
    let node_mounts = if node {
        super::node_standins::write(&dir);
        super::node_standins::mounts(&dir)
    } else {
        String::new()
    };
    let host_key = dir.join("ssh_host_ed25519_key");
    keygen(&host_key, "ed25519");
    let pubkey = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
    let host_public_key = pubkey
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    // Packaging hosts are reached by `kinit run`, which takes 127.0.0.1 for itself.
    let address = if overlays.is_empty() {
        "127.0.0.1"
    } else {
        "127.0.0.2"
    };
    let port = std::net::TcpListener::bind((address, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = format!(
        "ListenAddress {address}\nPort {port}\nHostKey {hk}\nPidFile {d}/sshd.pid\n\
         AuthorizedKeysFile {lab}/authorized_keys\nUsePAM no\nStrictModes no\n\
         PasswordAuthentication no\nPermitRootLogin prohibit-password\nMaxSessions 10\n\
         LogLevel VERBOSE\nUseDNS no\nPrintMotd no\nSubsystem sftp internal-sftp\n",
        hk = host_key.display(),
        d = dir.display(),
        lab = lab.display(),
    );
    std::fs::write(dir.join("sshd_config"), config).unwrap();
    std::fs::create_dir_all("/run/sshd").ok();
    let d = dir.display();
    let script = format!(
        "set -e\n\
         mount -t overlay overlay -o lowerdir=/etc,upperdir={d}/etc-upper,workdir={d}/etc-work /etc\n\
         mount -t overlay overlay -o lowerdir=/root,upperdir={d}/root-upper,workdir={d}/root-work /root\n\
         {extra_mounts}\
         mount --bind {d}/bin /usr/local/bin\n\
         {node_mounts}\
         exec /usr/sbin/sshd -D -f {d}/sshd_config -E {d}/sshd.log\n"
    );
    let child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("unshare");
    let host = Host {
        name: name.to_string(),
        address,
        port,
        host_public_key,
        dir,
        child,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !host.log().contains("Server listening on") {
        assert!(
            Instant::now() < deadline,
            "sshd {name} did not start: {}",
            host.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    host
}

/// The recording stand-ins for kubeadm and kubectl in the host's `/usr/local/bin`.
fn write_standins(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let calls = dir.join("calls.log");
    let state = dir.join("standin-state");
    std::fs::create_dir_all(&state).unwrap();
    let kubeadm = format!(
        r#"#!/bin/sh
# Stand-in for kubeadm (the real one cannot be obtained here): records its arguments.
echo "kubeadm $*" >> {calls}
case "$1 $2" in
  "config images") echo "[config/images] Pulled registry.k8s.io/kube-apiserver" ;;
  "init --config")
    grep -q 'kind: InitConfiguration' "$3" || {{ echo "not an init configuration: $3" >&2; exit 1; }}
    mkdir -p /etc/kubernetes/pki
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kubernetes \
      -keyout /etc/kubernetes/pki/ca.key -out /etc/kubernetes/pki/ca.crt 2>/dev/null
    printf 'apiVersion: v1\nkind: Config\n# admin credentials of the stand-in\n' > /etc/kubernetes/admin.conf
    printf 'apiVersion: v1\nkind: Config\n' > /etc/kubernetes/kubelet.conf
    echo "Your Kubernetes control-plane has initialized successfully!" ;;
  "token create") echo "abcdef.0123456789abcdef" ;;
  "certs certificate-key") echo "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" ;;
  "init phase") echo "[upload-certs] Using certificate key" ;;
  "join --config")
    grep -q 'kind: JoinConfiguration' "$3" || {{ echo "not a join configuration: $3" >&2; exit 1; }}
    cp "$3" {dir}/joined-with.yaml
    printf 'apiVersion: v1\nkind: Config\n' > /etc/kubernetes/kubelet.conf
    echo "This node has joined the cluster" ;;
  *) echo "stand-in kubeadm: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#,
        calls = calls.display(),
        dir = dir.display(),
    );
    // kubectl answers like the real one: "unchanged" / "(no change)" / "not labeled" when the
    // same request was made before.
    let kubectl = format!(
        r#"#!/bin/sh
# Stand-in for kubectl: records its arguments.
echo "kubectl $*" >> {calls}
[ "$1" = "--kubeconfig" ] && shift 2
key=$(printf '%s' "$*" | cksum | cut -d' ' -f1)
for a in "$@"; do [ -f "$a" ] && key="$key-$(cksum < "$a" | cut -d' ' -f1)"; done
seen=no; [ -e {state}/$key ] && seen=yes; touch {state}/$key
while [ "${{1#-}}" != "$1" ]; do shift 2; done
case "$1" in
  apply) [ $seen = yes ] && echo "daemonset.apps/kube-flannel-ds unchanged" || echo "daemonset.apps/kube-flannel-ds created" ;;
  patch) [ $seen = yes ] && echo "$2/$3 patched (no change)" || echo "$2/$3 patched" ;;
  label) [ $seen = yes ] && echo "node/$3 not labeled" || echo "node/$3 labeled" ;;
  rollout) echo "daemon set \"$3\" successfully rolled out" ;;
  config) base64 -w0 /etc/kubernetes/pki/ca.crt ;;
  create)
    # `create token ACCOUNT --duration=Nh`: a JWT-shaped token (the API server signs a real
    # one) whose `exp` claim is N hours from now, and whose signature part names the account.
    [ "$2" = token ] || exit 1
    hours=${{4#--duration=}}; hours=${{hours%h}}
    exp=$(( $(date +%s) + hours * 3600 ))
    b64url() {{ printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }}
    echo "$(b64url '{{"alg":"RS256"}}').$(b64url "{{\"exp\":$exp,\"sub\":\"system:serviceaccount:$3\"}}").sa-token-of-$3" ;;
  *) echo "stand-in kubectl: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#,
        calls = calls.display(),
        state = state.display(),
    );
    for (name, text) in [("kubeadm", kubeadm), ("kubectl", kubectl)] {
        let p = dir.join("bin").join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
