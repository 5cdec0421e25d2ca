//! `hostname`: the host's name, through the strategy ansible-core's `hostname` module would
//! pick (or the one `use` names).
//!
//! One probe tells whether systemd manages the host and which distribution it is, and reads
//! the current and permanent names the strategy keeps; the names are compared on the
//! controller; then only the parts that differ are set. Strategies:
//!
//! - `systemd` (also `use: debian`, as upstream maps it; picked whenever systemd runs):
//!   `hostnamectl --transient` and `--static`.
//! - file (Debian, Ubuntu and their relatives without systemd): `/etc/hostname` only, as
//!   upstream's `FileStrategy` does: the running name follows at the next boot.
//! - `alpine`: `/etc/hostname`, then `hostname -F /etc/hostname` (upstream runs that
//!   before it writes the file, so its running name lags one run behind; here it follows).
//! - `sles`: `/etc/HOSTNAME`. `redhat`: `HOSTNAME=` in `/etc/sysconfig/network`.
//!
//! Files are written in place (as upstream opens them), so a bind-mounted `/etc/hostname`
//! stays one. BSD, macOS, Solaris and OpenRC hosts are refused with a clear message. The
//! result has `name` and `ansible_facts` (`ansible_hostname`, `ansible_nodename`,
//! `ansible_fqdn`, `ansible_domain`; the FQDN as upstream's `socket.getfqdn()` finds it,
//! through `getent hosts` on the host), and with `--diff` the before/after `hostname = NAME`.

use serde::Deserialize;
use serde_json::json;

use crate::transport::quote::sh;

use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Hostname, "hostname", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Use {
    Alpine,
    Debian,
    Freebsd,
    Generic,
    Macos,
    Macosx,
    Darwin,
    Openbsd,
    Openrc,
    Redhat,
    Sles,
    Solaris,
    Systemd,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The host's name.
    name: String,
    /// The strategy (default: picked from the host, as upstream does).
    #[serde(default, rename = "use")]
    use_: Option<Use>,
}

/// How a host keeps its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Systemd,
    /// The name in one file (`/etc/hostname`, `/etc/HOSTNAME`); `set_running` also runs
    /// `hostname -F FILE` (Alpine).
    File {
        file: &'static str,
        set_running: bool,
    },
    RedHat,
}

const NETWORK: &str = "/etc/sysconfig/network";

/// Upstream's distribution classes, by os-release `ID`.
fn by_distribution(id: &str) -> Option<Strategy> {
    let file = Strategy::File {
        file: "/etc/hostname",
        set_running: false,
    };
    Some(match id {
        "debian" | "ubuntu" | "kali" | "linuxmint" | "devuan" | "raspbian" | "pop" | "parrot"
        | "cumulus-linux" | "kylin" | "linaro" | "neon" | "deepin" | "uos" | "void" => file,
        "alpine" => Strategy::File {
            file: "/etc/hostname",
            set_running: true,
        },
        "sles" | "sled" => Strategy::File {
            file: "/etc/HOSTNAME",
            set_running: false,
        },
        "rhel" | "centos" | "amzn" | "ol" | "scientific" | "cloudlinux" | "anolis" | "alinux"
        | "altlinux" | "eurolinux" | "virtuozzo" => Strategy::RedHat,
        _ => return None,
    })
}

fn by_use(u: Use) -> Result<Strategy, String> {
    Ok(match u {
        Use::Systemd | Use::Debian => Strategy::Systemd,
        Use::Alpine => Strategy::File {
            file: "/etc/hostname",
            set_running: true,
        },
        Use::Sles => Strategy::File {
            file: "/etc/HOSTNAME",
            set_running: false,
        },
        Use::Redhat => Strategy::RedHat,
        other => {
            return Err(format!(
                "`use: {}` is not supported by kinit's hostname module (it has systemd, debian, \
                 alpine, sles, redhat and the Debian file strategy)",
                format!("{other:?}").to_lowercase()
            ));
        }
    })
}

const MARK: &str = "kinit-hostname-";

/// Python's `socket.getfqdn()` on the host: the running name resolved to an address, that
/// address resolved back; prints the `getent hosts` line, or the bare name when it does not
/// resolve.
const FQDN: &str = "n=$(hostname)\n\
    a=$(getent hosts \"$n\" 2>/dev/null | awk '{print $1; exit}')\n\
    if [ -n \"$a\" ] && l=$(getent hosts \"$a\" 2>/dev/null | head -n 1) && [ -n \"$l\" ]; then\n\
    printf '%s\\n' \"$l\"; else printf 'none %s\\n' \"$n\"; fi\n";

/// The first of the canonical name and its aliases that has a dot, else the canonical name.
fn fqdn(getent: &str) -> String {
    let names: Vec<&str> = getent.split_whitespace().skip(1).collect();
    names
        .iter()
        .find(|n| n.contains('.'))
        .or(names.first())
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// Run `script` and return its stdout, failing the task with upstream's text otherwise.
async fn must(ctx: &ModuleCtx<'_>, script: String) -> Result<String, ModuleError> {
    let out = ctx.run(script).await?;
    if !out.success() {
        return Err(ModuleError::Failed {
            msg: format!(
                "Command failed rc={}, out={}, err={}",
                out.rc,
                out.stdout_str(),
                out.stderr_str()
            ),
        });
    }
    Ok(out.stdout_str())
}

async fn pick(ctx: &ModuleCtx<'_>, p: &Params) -> Result<Strategy, ModuleError> {
    if let Some(u) = p.use_ {
        return by_use(u).map_err(|msg| ModuleError::Failed { msg });
    }
    // ansible-core's ServiceMgrFactCollector.is_systemd_managed, then the distribution.
    let out = must(
        ctx,
        format!(
            "if command -v systemctl >/dev/null 2>&1 && {{ [ -d /run/systemd/system ] || [ -d /dev/.run/systemd ] || [ -d /dev/.systemd ]; }}; then echo {MARK}systemd; fi\n\
             ( . /etc/os-release 2>/dev/null; printf '{MARK}id=%s\\n{MARK}os=%s\\n' \"$ID\" \"$NAME\" )\n"
        ),
    )
    .await?;
    if out.contains(&format!("{MARK}systemd")) {
        return Ok(Strategy::Systemd);
    }
    let field = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{MARK}{k}=")))
            .unwrap_or_default()
            .to_string()
    };
    let id = field("id");
    by_distribution(&id).ok_or_else(|| ModuleError::Failed {
        msg: format!(
            "hostname module cannot be used on platform Linux ({})",
            if id.is_empty() {
                "unknown".into()
            } else {
                field("os")
            }
        ),
    })
}

/// The (current, permanent) names as the strategy reads them.
async fn names(ctx: &ModuleCtx<'_>, s: Strategy) -> Result<(String, String), ModuleError> {
    Ok(match s {
        Strategy::Systemd => {
            let out = must(
                ctx,
                "hostnamectl --transient status && echo '--' && hostnamectl --static status".into(),
            )
            .await?;
            let (cur, perm) = out.split_once("\n--\n").unwrap_or((&out, ""));
            (cur.trim().to_string(), perm.trim().to_string())
        }
        Strategy::File { file, .. } => {
            // Not a file: the empty name (upstream's `os.path.isfile` check).
            let out = must(ctx, format!("if [ -f {file} ]; then cat {file}; fi")).await?;
            let name = out.trim().to_string();
            (name.clone(), name)
        }
        Strategy::RedHat => {
            let out = ctx.run(format!("cat {NETWORK}")).await?;
            if !out.success() {
                return Err(ModuleError::Failed {
                    msg: format!("failed to read hostname: {}", out.stderr_str().trim()),
                });
            }
            let text = out.stdout_str();
            let name = text
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("HOSTNAME"))
                .and_then(|l| l.split_once('='))
                .map(|(_, v)| v.trim().to_string())
                .ok_or_else(|| ModuleError::Failed {
                    msg: format!("Unable to locate HOSTNAME entry in {NETWORK}"),
                })?;
            (name.clone(), name)
        }
    })
}

/// The commands that bring the host to `name`: (running, permanent), each only when needed.
fn commands(s: Strategy, name: &str, current: &str, permanent: &str) -> Vec<String> {
    let n = sh(name);
    let mut cmds = Vec::new();
    match s {
        Strategy::Systemd => {
            // Permanent first, so NetworkManager does not object (upstream's order).
            if permanent != name {
                cmds.push(format!("hostnamectl --pretty --static set-hostname {n}"));
            }
            if current != name {
                cmds.push(format!("hostnamectl --transient set-hostname {n}"));
            }
        }
        Strategy::File { file, set_running } => {
            if name != permanent {
                cmds.push(format!("printf '%s\\n' {n} > {file}"));
                if set_running {
                    cmds.push(format!("hostname -F {file}"));
                }
            }
        }
        Strategy::RedHat => {
            if name != permanent {
                // Every HOSTNAME line replaced, or one appended (written in place).
                cmds.push(format!(
                    "t=$(awk -v n={n} 'BEGIN{{f=0}} {{l=$0; sub(/^[ \\t]+/, \"\", l)}} l ~ /^HOSTNAME/ {{print \"HOSTNAME=\" n; f=1; next}} {{print}} END{{if(!f) print \"HOSTNAME=\" n}}' {NETWORK}) && printf '%s\\n' \"$t\" > {NETWORK}"
                ));
            }
        }
    }
    cmds
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let name = p.name.as_str();
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ModuleError::BadArgs {
            module: "hostname",
            detail: format!("`name` `{name}` is not a host name"),
        });
    }
    let s = pick(ctx, &p).await?;
    if s == Strategy::Systemd && name.len() > 64 {
        return Ok(ModuleResult::failed(
            "name cannot be longer than 64 characters on systemd servers, try a shorter name",
        ));
    }
    let (current, permanent) = names(ctx, s).await?;
    let cmds = commands(s, name, &current, &permanent);
    let changed = !cmds.is_empty();
    if changed && !ctx.check_mode {
        let out = ctx.run(cmds.join(" && ")).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "failed to update hostname: {}",
                out.stderr_str().trim()
            )));
        }
    }
    let fqdn = fqdn(&must(ctx, FQDN.into()).await?);
    let domain = fqdn.split_once('.').map(|(_, d)| d).unwrap_or_default();
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("name", name)
    .with(
        "ansible_facts",
        json!({
            "ansible_hostname": name.split('.').next().unwrap_or_default(),
            "ansible_nodename": name,
            "ansible_fqdn": fqdn,
            "ansible_domain": domain,
        }),
    );
    if changed && ctx.diff {
        let before = if name != current {
            &current
        } else {
            &permanent
        };
        r.diff = Some(Diff {
            path: None,
            before: format!("hostname = {before}\n").into(),
            after: format!("hostname = {name}\n").into(),
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_change_only_what_differs() {
        let file = by_distribution("debian").unwrap();
        assert_eq!(commands(file, "web", "web", "web"), Vec::<String>::new());
        assert_eq!(
            commands(file, "web", "old", "old"),
            vec!["printf '%s\\n' web > /etc/hostname"]
        );
        let alpine = by_use(Use::Alpine).unwrap();
        assert_eq!(
            commands(alpine, "a", "b", "b")[1],
            "hostname -F /etc/hostname"
        );
        let sd = by_use(Use::Debian).unwrap();
        assert_eq!(
            commands(sd, "x", "y", "x"),
            vec!["hostnamectl --transient set-hostname x"]
        );
        assert!(by_use(Use::Freebsd).is_err());
        assert_eq!(by_distribution("fedora"), None);
        assert_eq!(fqdn("127.0.0.1 localhost"), "localhost");
        assert_eq!(fqdn("10.0.0.1 web web.example.org"), "web.example.org");
    }
}
