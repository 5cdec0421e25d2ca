//! Recording stand-ins for what `kinit_linux_node` drives on a Debian node, for namespace
//! hosts started with `Lab::start_nodes`: `modprobe`, `sysctl`, `swapon`/`swapoff`, `apt-get`,
//! `dpkg-query`, `apt-mark`, `containerd` and `systemctl`.
//!
//! The namespace hosts share the build machine's kernel, packages and init system, which a
//! test must not change (and CI has no systemd), so these tools are stand-ins: each records
//! the calls that would change the node in `calls.log` and keeps its state (loaded modules,
//! kernel parameters, installed and held packages, units) in the host's folder. Like the
//! real tools they refuse what the real ones would refuse: `apt-get install` finds the
//! Kubernetes and containerd.io packages only once their repository is configured in
//! `/etc/apt/sources.list.d`, `apt-mark` and `systemctl` only know installed packages.
//!
//! Inside the host's mount namespace `/sys/module` and `/proc/modules` are empty stand-ins
//! (so the module probe sees only what `modprobe` loaded) and `/run` is a tmpfs with
//! `/run/systemd/system` (so kinit's service module sees a systemd host), and `/var/cache` gets
//! an overlay like `/etc` (bind's zone folder is there).

use std::path::Path;

/// Mount commands (run as root inside the host's namespace, before sshd starts).
pub fn mounts(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "mount --bind {d}/sys-module /sys/module\n\
         if [ -e /proc/modules ]; then mount --bind {d}/proc-modules /proc/modules; fi\n\
         mount -t tmpfs tmpfs /run\n\
         mount -t overlay overlay -o lowerdir=/var/cache,upperdir={d}/var-cache-upper,workdir={d}/var-cache-work /var/cache\n\
         mkdir -p /run/sshd /run/systemd/system\n"
    )
}

const SYSCTL: &str = r#"[ "$1" = -e ] && shift
case "$1" in
  -n) [ -f @S/sysctl/$2 ] && cat @S/sysctl/$2 || echo 0 ;;
  -w) echo "sysctl $*" >> @C; k=${2%%=*}; printf '%s\n' "${2#*=}" > @S/sysctl/$k ;;
  -p) echo "sysctl $*" >> @C
      grep -v '^[[:space:]]*[#;]' "$2" | grep = | while IFS='=' read -r k v; do
        k=$(echo $k); v=$(echo $v); printf '%s\n' "$v" > @S/sysctl/$k; echo "$k = $v"
      done ;;
  *) echo "stand-in sysctl: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#;

const APT_GET: &str = r#"echo "apt-get $*" >> @C
verb=; for a; do case "$a" in update|install|remove) verb=$a ;; -s) exit 0 ;; esac; done
[ "$verb" = install ] || exit 0
seen=no
for a; do
  [ "$a" = install ] && { seen=yes; continue; }
  [ $seen = yes ] || continue
  case "$a" in -*) continue ;; esac
  p=${a%%=*}; v=1.0-1
  case "$a" in *=*) v=$(printf '%s' "${a#*=}" | sed 's/\*$/1.1/') ;; esac
  case "$p" in
    kubelet|kubeadm|kubectl) list=/etc/apt/sources.list.d/kubernetes.list ;;
    containerd.io) list=/etc/apt/sources.list.d/docker.list ;;
    *) list= ;;
  esac
  if [ -n "$list" ] && [ ! -f "$list" ]; then echo "E: Unable to locate package $p" >&2; exit 100; fi
  echo "$v" > @S/pkgs/$p
  # The units and folders the installed packages bring that the roles rely on.
  case "$p" in
    containerd.io) mkdir -p @S/units/containerd ;;
    kubelet) mkdir -p @S/units/kubelet ;;
    bind9) mkdir -p @S/units/named /etc/bind /var/cache/bind ;;
    openvswitch-switch|ovn-host|ovn-central) mkdir -p @S/units/$p ;;
    haproxy) mkdir -p @S/units/haproxy /etc/haproxy ;;
  esac
done
"#;

const APT_MARK: &str = r#"echo "apt-mark $*" >> @C
[ "$1" = hold ] || { echo "stand-in apt-mark: $*" >&2; exit 1; }
shift
for p; do
  [ -f @S/pkgs/$p ] || { echo "E: Unable to locate package $p" >&2; exit 100; }
  if [ -e @S/held/$p ]; then echo "$p was already set on hold."; else touch @S/held/$p; echo "$p set on hold."; fi
done
"#;

const CONTAINERD: &str = r#"echo "containerd $*" >> @C
[ "$*" = "config default" ] || { echo "stand-in containerd: $*" >&2; exit 1; }
printf '%s\n' 'version = 3' \
  "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]" \
  '    SystemdCgroup = false'
"#;

const SYSTEMCTL: &str = r#"if [ "$1" = show ]; then
  u=@S/units/$2
  [ -d $u ] || { echo LoadState=not-found; echo ActiveState=inactive; echo UnitFileState=; exit 0; }
  echo LoadState=loaded
  [ -e $u/active ] && echo ActiveState=active || echo ActiveState=inactive
  [ -e $u/enabled ] && echo UnitFileState=enabled || echo UnitFileState=disabled
  exit 0
fi
echo "systemctl $*" >> @C
case "$1" in
  daemon-reload) ;;
  start|restart|reload) [ -d @S/units/$2 ] || { echo "Unit $2.service not found." >&2; exit 5; }; touch @S/units/$2/active ;;
  enable) [ -d @S/units/$2 ] || { echo "Unit $2.service not found." >&2; exit 1; }; touch @S/units/$2/enabled ;;
  *) echo "stand-in systemctl: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#;

/// Write the stand-ins into the host's `bin` folder and their initial state: the packages a
/// Debian cloud image has (ca-certificates, curl), a swap file in use.
pub fn write(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let state = dir.join("node-state");
    for sub in ["sysctl", "pkgs", "held", "units"] {
        std::fs::create_dir_all(state.join(sub)).unwrap();
    }
    for d in ["sys-module", "var-cache-upper", "var-cache-work"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("proc-modules"), "").unwrap();
    for p in ["ca-certificates", "curl"] {
        std::fs::write(state.join("pkgs").join(p), "20230311\n").unwrap();
    }
    let tools = [
        (
            "modprobe",
            "echo \"modprobe $*\" >> @C\nmkdir -p /sys/module/$1\n",
        ),
        ("sysctl", SYSCTL),
        (
            "swapon",
            "[ \"$*\" = '--show --noheadings' ] || { echo \"stand-in swapon: $*\" >&2; exit 1; }\n\
             [ -e @S/swapoff ] || echo '/swap.img file 2G 0B -2'\n",
        ),
        ("swapoff", "echo \"swapoff $*\" >> @C\ntouch @S/swapoff\n"),
        (
            "dpkg-query",
            "for p; do :; done\n[ -f @S/pkgs/$p ] || exit 1\nprintf 'ii  %s' \"$(cat @S/pkgs/$p)\"\n",
        ),
        ("apt-get", APT_GET),
        ("apt-mark", APT_MARK),
        ("containerd", CONTAINERD),
        ("systemctl", SYSTEMCTL),
    ];
    let calls = dir.join("calls.log").display().to_string();
    let state = state.display().to_string();
    for (name, body) in tools {
        let p = dir.join("bin").join(name);
        let body = body.replace("@C", &calls).replace("@S", &state);
        std::fs::write(
            &p,
            format!("#!/bin/sh\n# Stand-in for {name} (node_standins.rs): records changing calls.\n{body}"),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
