//! `wait_for`: wait *on the host* until a TCP port opens or closes, or has no active
//! connections left (`drained`), or a file appears (with a matching line) or goes away. The
//! whole polling loop is one sh command on the host; it never changes anything and runs in
//! check mode too, as Ansible's does.

use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::sh;

use super::args::opt_u64ish;
use super::host_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(WaitFor, "wait_for", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    #[default]
    Started,
    Present,
    Stopped,
    Absent,
    Drained,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Host to connect to for `port`, as seen from the managed host (default 127.0.0.1).
    #[serde(default = "localhost")]
    host: String,
    /// TCP port to wait for.
    #[serde(default, deserialize_with = "opt_u64ish")]
    port: Option<u64>,
    /// File to wait for.
    #[serde(default, deserialize_with = "host_path::opt")]
    path: Option<String>,
    /// With `path`: wait until a line matches this (extended) regex.
    search_regex: Option<String>,
    /// `started`/`present` (default): wait for it to be there; `stopped`/`absent`: gone.
    #[serde(default)]
    state: State,
    /// Give up after this many seconds (default 300).
    #[serde(default, deserialize_with = "opt_u64ish")]
    timeout: Option<u64>,
    /// Seconds to wait before the first check.
    #[serde(default, deserialize_with = "opt_u64ish")]
    delay: Option<u64>,
    /// Seconds between checks (default 1).
    #[serde(default, deserialize_with = "opt_u64ish")]
    sleep: Option<u64>,
    /// Seconds one connection attempt may take (default 5).
    #[serde(default, deserialize_with = "opt_u64ish")]
    connect_timeout: Option<u64>,
    /// Message on timeout instead of the default one.
    msg: Option<String>,
    /// With `drained`: remote addresses whose connections do not count.
    #[serde(default, deserialize_with = "super::args::list")]
    exclude_hosts: Vec<String>,
    /// With `drained`: the TCP states that count as active.
    #[serde(default = "active_states", deserialize_with = "super::args::list")]
    active_connection_states: Vec<String>,
}

fn active_states() -> Vec<String> {
    [
        "ESTABLISHED",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "SYN_RECV",
        "SYN_SENT",
        "TIME_WAIT",
    ]
    .map(String::from)
    .to_vec()
}

/// The state number `/proc/net/tcp` shows for a state name (ansible-core's
/// `get_connection_state_id`).
fn state_id(name: &str) -> Option<&'static str> {
    Some(match name {
        "ESTABLISHED" => "01",
        "SYN_SENT" => "02",
        "SYN_RECV" => "03",
        "FIN_WAIT1" => "04",
        "FIN_WAIT2" => "05",
        "TIME_WAIT" => "06",
        _ => return None,
    })
}

/// An address as `/proc/net/tcp{,6}` prints it, family first (`4:0100007F` for 127.0.0.1):
/// each 32-bit word in host (little-endian) order, as ansible-core's `_convert_host_to_hex`.
fn proc_hex(ip: std::net::IpAddr) -> String {
    let (family, bytes) = match ip {
        std::net::IpAddr::V4(a) => ('4', a.octets().to_vec()),
        std::net::IpAddr::V6(a) => ('6', a.octets().to_vec()),
    };
    let words: String = bytes
        .chunks(4)
        .map(|w| format!("{:02X}{:02X}{:02X}{:02X}", w[3], w[2], w[1], w[0]))
        .collect();
    format!("{family}:{words}")
}

/// `_dr`: how many connections to local port `$1` are active (`drained` counts them down to
/// none), read from `/proc/net/tcp` and `tcp6` as ansible-core's `LinuxTCPConnectionInfo`
/// reads them. `$2`: the local addresses that count (`4:`/`6:` and the hex), `$3`: remote
/// addresses that do not, `$4`: the states that count.
const DRAIN_COUNT: &str = r#"_dr() {
  f=; for t in /proc/net/tcp /proc/net/tcp6; do [ -f "$t" ] && f="$f $t"; done
  [ -n "$f" ] || { echo 0; return; }
  awk -v port="$1" -v ips="$2" -v ex="$3" -v states="$4" '
BEGIN { n = split(ips, a, " "); for (i = 1; i <= n; i++) ip[a[i]] = 1
        n = split(ex, a, " "); for (i = 1; i <= n; i++) exc[a[i]] = 1
        n = split(states, a, " "); for (i = 1; i <= n; i++) st[a[i]] = 1 }
FNR == 1 { fam = (FILENAME ~ /6$/) ? "6" : "4"; next }
{ if (!($4 in st)) next
  split($2, l, ":"); if (l[2] != port) next
  split($3, r, ":"); if ((fam ":" r[1]) in exc) next
  all = (fam == "4") ? "00000000" : "00000000000000000000000000000000"
  if ((fam ":" l[1]) in ip || (fam ":" all) in ip ||
      (l[1] ~ /^0000000000000000FFFF0000/ && ("6:0000000000000000FFFF000000000000") in ip)) c++ }
END { print c + 0 }' $f
}
"#;

/// `host` as the addresses it stands for on the host (ansible-core resolves it there with
/// `getaddrinfo`), in `/proc/net/tcp` form.
async fn host_hex(ctx: &ModuleCtx<'_>, host: &str) -> Result<Vec<String>, ModuleError> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(vec![proc_hex(ip)]);
    }
    let out = ctx
        .run(format!("getent ahosts {} 2>/dev/null", sh(host)))
        .await?;
    let mut ips: Vec<String> = out
        .stdout_str()
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .map(proc_hex)
        .collect();
    ips.dedup();
    if ips.is_empty() {
        // Counting no address would report a busy port drained.
        return Err(ModuleError::Failed {
            msg: format!("cannot resolve `{host}` on the host (`getent ahosts` found nothing)"),
        });
    }
    Ok(ips)
}

fn localhost() -> String {
    "127.0.0.1".into()
}

/// `_po HOST PORT`: succeeds when a TCP connection opens (bash's /dev/tcp, else python3).
pub(crate) const PORT_OPEN: &str = r#"_po() {
  if command -v bash >/dev/null 2>&1; then
    timeout "$3" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null
  else
    python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3])).close()' "$1" "$2" "$3" 2>/dev/null
  fi
}
"#;

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    // ansible-core's own refusals (a failed result with `elapsed: 0`).
    let refuse = |msg: String| Ok(ModuleResult::failed(msg).with("elapsed", 0));
    if p.path.is_some() && p.state == State::Drained {
        return refuse(
            "state=drained should only be used for checking a port in the wait_for module".into(),
        );
    }
    if !p.exclude_hosts.is_empty() && p.state != State::Drained {
        return refuse("exclude_hosts should only be with state=drained".into());
    }
    let mut states = Vec::new();
    for s in &p.active_connection_states {
        match state_id(s) {
            Some(id) => states.push(id),
            None => return refuse(format!("unknown active_connection_state ({s}) defined")),
        }
    }
    let present = matches!(p.state, State::Started | State::Present);
    // `absent` waits for the file to go, whatever it holds (ansible-core's `wait_for`).
    if let (Some(path), Some(re), None, true) = (&p.path, &p.search_regex, &p.port, present) {
        return wait_for_text(ctx, &p, path, re).await;
    }
    let cond = match (&p.port, &p.path) {
        (Some(_), Some(_)) => {
            return Err(ModuleError::BadArgs {
                module: "wait_for",
                detail: "`port` and `path` are mutually exclusive".into(),
            });
        }
        (Some(port), None) => {
            if p.search_regex.is_some() {
                return Err(ModuleError::BadArgs {
                    module: "wait_for",
                    detail: "`search_regex` is supported with `path` only".into(),
                });
            }
            if p.state == State::Drained {
                let mut exclude = Vec::new();
                for h in &p.exclude_hosts {
                    exclude.extend(host_hex(ctx, h).await?);
                }
                format!(
                    "[ \"$(_dr {:04X} {} {} {})\" -eq 0 ]",
                    port,
                    sh(&host_hex(ctx, &p.host).await?.join(" ")),
                    sh(&exclude.join(" ")),
                    sh(&states.join(" "))
                )
            } else {
                let t = format!(
                    "_po {} {port} {}",
                    sh(&p.host),
                    p.connect_timeout.unwrap_or(5)
                );
                if present { t } else { format!("! {t}") }
            }
        }
        // (`present` with `search_regex` is `wait_for_text`.)
        (None, Some(path)) if present => format!("[ -e {} ]", sh(path)),
        (None, Some(path)) => format!("[ ! -e {} ]", sh(path)),
        // Neither: just wait `timeout` seconds (Ansible's behaviour).
        (None, None) => "false".into(),
    };
    let timeout = p.timeout.unwrap_or(300);
    let script = format!(
        "{PORT_OPEN}{DRAIN_COUNT}sleep {delay}\nend=$(( $(date +%s) + {timeout} ))\n\
         while :; do\n  if {cond}; then echo kinit-ready; exit 0; fi\n\
         [ \"$(date +%s)\" -ge \"$end\" ] && {{ echo kinit-timeout; exit 0; }}\n  sleep {sleep}\ndone\n",
        delay = p.delay.unwrap_or(0),
        sleep = p.sleep.unwrap_or(1).max(1),
    );
    let started = Instant::now();
    let out = ctx.run(script).await?;
    let elapsed = started.elapsed().as_secs();
    let text = out.stdout_str();
    let mut r = ModuleResult::ok()
        .with("elapsed", elapsed)
        .with("state", format!("{:?}", p.state).to_lowercase());
    if let Some(port) = p.port {
        r = r.with("port", port);
    }
    if let Some(path) = &p.path {
        r = r.with("path", path.as_str());
    }
    r = r
        .with("search_regex", Value::Null)
        .with("match_groups", Value::Array(Vec::new()))
        .with("match_groupdict", Value::Object(Default::default()));
    if p.port.is_none() && p.path.is_none() {
        return Ok(r);
    }
    if !text.contains("kinit-ready") {
        r.failed = true;
        // ansible-core's words for each wait.
        r.msg = Some(p.msg.unwrap_or_else(|| match (&p.port, &p.path, present) {
            (Some(port), _, _) if p.state == State::Drained => {
                format!("Timeout when waiting for {}:{port} to drain", p.host)
            }
            (Some(port), _, true) => format!("Timeout when waiting for {}:{port}", p.host),
            (Some(port), _, false) => {
                format!("Timeout when waiting for {}:{port} to stop.", p.host)
            }
            (_, Some(path), true) => format!("Timeout when waiting for file {path}"),
            (_, Some(path), false) => format!("Timeout when waiting for {path} to be absent."),
            _ => "Timeout".to_string(),
        }));
    }
    Ok(r)
}

/// `path` with `search_regex`: the file is read from the host every `sleep` seconds and
/// searched on the controller with Python's `re` (multi-line, as ansible-core searches it), so
/// named groups and Python's syntax work; the result carries `match_groups` and
/// `match_groupdict` of the match.
async fn wait_for_text(
    ctx: &ModuleCtx<'_>,
    p: &Params,
    path: &str,
    pattern: &str,
) -> Result<ModuleResult, ModuleError> {
    use crate::pyre::{Anchor, Flags, PyRegex};
    let re = PyRegex::with(
        pattern,
        Flags {
            multiline: true,
            ..Flags::default()
        },
        Anchor::Search,
    )
    .map_err(|e| ModuleError::BadArgs {
        module: "wait_for",
        detail: format!("`search_regex` `{pattern}`: {e}"),
    })?;
    let started = Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(p.delay.unwrap_or(0))).await;
    let timeout = std::time::Duration::from_secs(p.timeout.unwrap_or(300));
    let pause = std::time::Duration::from_secs(p.sleep.unwrap_or(1).max(1));
    let mut found: Option<(Value, Value)> = None;
    let ready = loop {
        let out = ctx.run(format!("cat -- {} 2>/dev/null", sh(path))).await?;
        let text = out.success().then(|| out.stdout_str());
        let hit = text.as_deref().and_then(|t| re.search(t)).map(|c| {
            let groups: Vec<Value> = (1..=re.groups())
                .map(|i| c.get(i).map_or(Value::Null, Value::from))
                .collect();
            let named: serde_json::Map<String, Value> = (1..=re.groups())
                .filter_map(|i| {
                    let name = re.group_name(i)?;
                    Some((name.to_string(), c.get(i).map_or(Value::Null, Value::from)))
                })
                .collect();
            (Value::Array(groups), Value::Object(named))
        });
        if hit.is_some() {
            found = hit;
            break true;
        }
        if started.elapsed() >= timeout {
            break false;
        }
        tokio::time::sleep(pause).await;
    };
    let (groups, named) =
        found.unwrap_or_else(|| (Value::Array(Vec::new()), Value::Object(Default::default())));
    let mut r = ModuleResult::ok()
        .with("elapsed", started.elapsed().as_secs())
        .with("state", format!("{:?}", p.state).to_lowercase())
        .with("path", path)
        .with("search_regex", pattern)
        .with("match_groups", groups)
        .with("match_groupdict", named);
    if !ready {
        r.failed = true;
        r.msg = Some(p.msg.clone().unwrap_or_else(|| {
            format!("Timeout when waiting for search string {pattern} in {path}")
        }));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/net/tcp` prints each 32-bit word of an address in host (little-endian) order.
    #[test]
    fn addresses_as_proc_net_tcp_prints_them() {
        assert_eq!(proc_hex("127.0.0.1".parse().unwrap()), "4:0100007F");
        assert_eq!(proc_hex("0.0.0.0".parse().unwrap()), "4:00000000");
        assert_eq!(
            proc_hex("::1".parse().unwrap()),
            "6:00000000000000000000000001000000"
        );
        assert_eq!(
            proc_hex("::ffff:10.0.0.1".parse().unwrap()),
            "6:0000000000000000FFFF00000100000A"
        );
    }
}
