//! `wait_for`: wait *on the host* until a TCP port opens or closes, or a file appears (with a
//! matching line) or goes away. The whole polling loop is one sh command on the host; it
//! never changes anything and runs in check mode too, as Ansible's does.

use std::time::Instant;

use serde::Deserialize;

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
    let present = matches!(p.state, State::Started | State::Present);
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
            let t = format!(
                "_po {} {port} {}",
                sh(&p.host),
                p.connect_timeout.unwrap_or(5)
            );
            if present { t } else { format!("! {t}") }
        }
        (None, Some(path)) => match (&p.search_regex, present) {
            (Some(re), true) => format!("grep -Eq -- {} {} 2>/dev/null", sh(re), sh(path)),
            (Some(re), false) => format!("! grep -Eq -- {} {} 2>/dev/null", sh(re), sh(path)),
            (None, true) => format!("[ -e {} ]", sh(path)),
            (None, false) => format!("[ ! -e {} ]", sh(path)),
        },
        // Neither: just wait `timeout` seconds (Ansible's behaviour).
        (None, None) => "false".into(),
    };
    let timeout = p.timeout.unwrap_or(300);
    let script = format!(
        "{PORT_OPEN}sleep {delay}\nend=$(( $(date +%s) + {timeout} ))\n\
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
    if p.port.is_none() && p.path.is_none() {
        return Ok(r);
    }
    if !text.contains("kinit-ready") {
        r.failed = true;
        r.msg = Some(p.msg.unwrap_or_else(|| {
            let what = match (&p.port, &p.path) {
                (Some(port), _) => format!("{}:{port}", p.host),
                (_, Some(path)) => path.clone(),
                _ => String::new(),
            };
            format!("timeout when waiting for {what}")
        }));
    }
    Ok(r)
}
