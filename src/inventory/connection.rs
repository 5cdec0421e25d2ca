//! From a host's final variables to a `HostTarget`: the `ansible_*` connection variables
//! (address, port, user, password, keys, jump hosts from `ProxyJump`/`ProxyCommand`,
//! WinRM options) over the command-line defaults, and the host's `ansible_become*` settings.
//!
//! One file because SSH, WinRM and become settings are read from the same variables in one
//! precedence (host variables over the command line, `ansible_ssh_*` spellings included).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::InventoryError;
use super::jump::{expand_home, jumps_from_ssh_args, options_from_ssh_args, parse_jump};
use crate::secret::Secret;
use crate::transport::HostKeyChecking;
use crate::transport::target::{WinRmAuth, WinRmScheme};
use crate::transport::{ConnectionKind, HostTarget};
use crate::vars::VarMap;

/// Connection settings from the command line, used when a host's variables do not say.
#[derive(Debug, Clone, Default)]
pub struct ConnectionDefaults {
    pub user: Option<String>,
    pub private_key_files: Vec<PathBuf>,
    pub host_key_checking: HostKeyChecking,
    pub known_hosts_file: Option<PathBuf>,
    pub winrm_ca_file: Option<PathBuf>,
    pub connect_timeout: Option<Duration>,
    /// `-k`: the login password for hosts whose variables give none.
    pub password: Option<Secret>,
    /// `-K`: the become password for hosts whose variables give none.
    pub become_password: Option<Secret>,
}

/// A host's `ansible_become*` variables (the play and task keywords override them).
#[derive(Debug, Clone, Default)]
pub struct HostBecome {
    pub enabled: Option<bool>,
    pub method: Option<String>,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub flags: Option<String>,
}

/// Everything the executor needs to reach one host.
#[derive(Debug, Clone)]
pub struct ResolvedHost {
    pub target: HostTarget,
    pub become_: HostBecome,
    /// Options of `ansible_ssh_common_args`/`_extra_args` kinit's SSH client does not
    /// honour, for one warning.
    pub ignored_ssh_options: Vec<String>,
}

/// Build the connection of host `name` from its (already templated) variables.
pub fn resolve_target(
    name: &str,
    vars: &VarMap,
    defaults: &ConnectionDefaults,
) -> Result<ResolvedHost, InventoryError> {
    let r = Reader { host: name, vars };
    let connection = match r.string("ansible_connection")?.as_deref() {
        None | Some("ssh" | "smart" | "paramiko" | "paramiko_ssh") => ConnectionKind::Ssh,
        Some("winrm") => ConnectionKind::WinRm,
        Some("local") => ConnectionKind::Local,
        Some(other) => {
            return Err(r.bad(
                "ansible_connection",
                other,
                "`ssh`, `winrm` or `local` (also `smart`, `paramiko`)",
            ));
        }
    };
    let mut t = HostTarget::new(name, connection);
    t.host_key_checking = defaults.host_key_checking;
    t.known_hosts_file = defaults.known_hosts_file.clone();
    t.private_key_files = defaults.private_key_files.clone();
    t.user = defaults.user.clone();
    if let Some(d) = defaults.connect_timeout {
        t.connect_timeout = d;
    }
    if let Some(a) = r.first_string(&["ansible_host", "ansible_ssh_host"])? {
        t.address = a;
    }
    t.port = r.port(&["ansible_port", "ansible_ssh_port"])?;
    if let Some(u) = r.first_string(&["ansible_user", "ansible_ssh_user"])? {
        t.user = Some(u);
    }
    let password_vars = [
        "ansible_password",
        "ansible_ssh_pass",
        "ansible_ssh_password",
        "ansible_winrm_password",
    ];
    if let Some(p) = r.first_string(&password_vars)? {
        t.password = Some(Secret::new(p));
    } else if let Some(p) = &defaults.password {
        t.password = Some(p.clone());
    }
    if let Some(k) =
        r.first_string(&["ansible_ssh_private_key_file", "ansible_private_key_file"])?
    {
        t.private_key_files = vec![expand_home(&k)];
    }
    if let Some(v) = r
        .boolean("ansible_host_key_checking")?
        .or(r.boolean("ansible_ssh_host_key_checking")?)
        && !v
    {
        t.host_key_checking = HostKeyChecking::Off;
    }
    if let Some(v) = r.boolean("kinit_ssh_persistent_shell")? {
        t.persistent_shell = v;
    }
    if let Some(secs) = r.seconds("ansible_timeout")? {
        t.connect_timeout = secs;
    }
    let mut ignored = Vec::new();
    for var in [
        "ansible_ssh_args",
        "ansible_ssh_common_args",
        "ansible_ssh_extra_args",
    ] {
        if let Some(args) = r.string(var)? {
            t.jump
                .extend(jumps_from_ssh_args(&args).map_err(|why| r.bad(var, &args, why))?);
            let options = options_from_ssh_args(&args).map_err(|why| r.bad(var, &args, why))?;
            apply_ssh_options(&mut t, &r, &options, &mut ignored)?;
        }
    }
    if let Some(j) = r.value("kinit_jump_host") {
        let specs: Vec<String> = match j {
            Value::Array(items) => items.iter().map(value_text).collect(),
            Value::Null => Vec::new(),
            other => value_text(other).split(',').map(str::to_string).collect(),
        };
        for spec in specs.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            t.jump
                .push(parse_jump(spec).map_err(|why| r.bad("kinit_jump_host", spec, why))?);
        }
    }
    resolve_winrm(&r, &mut t, defaults)?;
    let become_ = HostBecome {
        enabled: r.boolean("ansible_become")?,
        method: r.string("ansible_become_method")?,
        user: r.string("ansible_become_user")?,
        password: r
            .first_string(&[
                "ansible_become_password",
                "ansible_become_pass",
                "ansible_sudo_pass",
            ])?
            .map(Secret::new)
            .or_else(|| defaults.become_password.clone()),
        flags: r.string("ansible_become_flags")?,
    };
    Ok(ResolvedHost {
        target: t,
        become_,
        ignored_ssh_options: ignored,
    })
}

/// What `ansible_ssh_common_args`/`_extra_args` say, as OpenSSH would take it after the
/// options Ansible itself passes first (first value wins in OpenSSH): host key checking and
/// the known_hosts file always; the user, port, key and connect timeout only where no
/// `ansible_*` variable set them. Options kinit's client has no use for are collected in
/// `ignored`.
fn apply_ssh_options(
    t: &mut HostTarget,
    r: &Reader<'_>,
    options: &[(String, String)],
    ignored: &mut Vec<String>,
) -> Result<(), InventoryError> {
    let set = |vars: &[&str]| vars.iter().any(|v| r.value(v).is_some());
    for (name, value) in options {
        match name.to_ascii_lowercase().as_str() {
            "stricthostkeychecking" => {
                t.host_key_checking = match value.to_ascii_lowercase().as_str() {
                    "no" | "off" => HostKeyChecking::Off,
                    "accept-new" => HostKeyChecking::AcceptNew,
                    "yes" | "ask" => HostKeyChecking::Strict,
                    _ => {
                        return Err(r.bad(
                            "ansible_ssh_common_args",
                            value,
                            "StrictHostKeyChecking yes, no, off, ask or accept-new",
                        ));
                    }
                }
            }
            "userknownhostsfile" => {
                if let Some(first) = value.split_whitespace().next() {
                    t.known_hosts_file = Some(expand_home(first));
                }
            }
            "identityfile"
                if !set(&["ansible_ssh_private_key_file", "ansible_private_key_file"]) =>
            {
                t.private_key_files.push(expand_home(value));
            }
            "user" if !set(&["ansible_user", "ansible_ssh_user"]) => {
                t.user = Some(value.clone());
            }
            "port" if !set(&["ansible_port", "ansible_ssh_port"]) => {
                t.port = Some(value.parse().map_err(|_| {
                    r.bad("ansible_ssh_common_args", value, "a port number for `Port`")
                })?);
            }
            "connecttimeout" if !set(&["ansible_timeout"]) => {
                let secs: u64 = value.parse().map_err(|_| {
                    r.bad(
                        "ansible_ssh_common_args",
                        value,
                        "seconds for `ConnectTimeout`",
                    )
                })?;
                t.connect_timeout = Duration::from_secs(secs);
            }
            // Jump hosts are `jumps_from_ssh_args`'; the rest were set by a variable.
            "proxyjump" | "proxycommand" | "identityfile" | "user" | "port" | "connecttimeout" => {}
            _ => {
                let shown = if value.is_empty() {
                    name.clone()
                } else {
                    format!("{name}={value}")
                };
                if !ignored.contains(&shown) {
                    ignored.push(shown);
                }
            }
        }
    }
    Ok(())
}

fn resolve_winrm(
    r: &Reader<'_>,
    t: &mut HostTarget,
    defaults: &ConnectionDefaults,
) -> Result<(), InventoryError> {
    let w = &mut t.winrm;
    w.ca_file = defaults.winrm_ca_file.clone();
    // Ansible picks http when the port is 5985 and no scheme is given.
    w.scheme = match r.string("ansible_winrm_scheme")?.as_deref() {
        Some("http") => WinRmScheme::Http,
        Some("https") => WinRmScheme::Https,
        Some(other) => return Err(r.bad("ansible_winrm_scheme", other, "`http` or `https`")),
        None if t.port == Some(5985) => WinRmScheme::Http,
        None => WinRmScheme::Https,
    };
    if let Some(tr) = r.string("ansible_winrm_transport")? {
        let first = tr.split(',').map(str::trim).find(|s| !s.is_empty());
        w.auth = match first {
            Some("ntlm") => WinRmAuth::Ntlm,
            Some("basic") => WinRmAuth::Basic,
            _ => return Err(r.bad("ansible_winrm_transport", &tr, "`ntlm` or `basic`")),
        };
    }
    if let Some(v) = r.string("ansible_winrm_server_cert_validation")? {
        w.cert_validation = match v.as_str() {
            "ignore" => false,
            "validate" => true,
            _ => {
                return Err(r.bad(
                    "ansible_winrm_server_cert_validation",
                    &v,
                    "`validate` or `ignore`",
                ));
            }
        };
    }
    if let Some(ca) = r.string("ansible_winrm_ca_trust_path")? {
        w.ca_file = Some(expand_home(&ca));
    }
    if let Some(d) = r.seconds("ansible_winrm_operation_timeout_sec")? {
        w.operation_timeout = d;
    }
    if let Some(p) = r.string("ansible_winrm_path")? {
        w.path = p;
    }
    // Ansible's winrm plugin has no reconnection setting; these follow its psrp plugin's
    // `reconnection_retries` / `reconnection_backoff` (ansible_psrp_reconnection_*): extra
    // tries after a connection error, waiting backoff, 2 x backoff, 4 x backoff, ...
    if let Some(n) = r.count("ansible_winrm_reconnection_retries")? {
        w.http_retries = n;
    }
    if let Some(d) = r.seconds("ansible_winrm_reconnection_backoff")? {
        w.retry_backoff = d;
    }
    // kinit's own opt-in: Basic over plain HTTP sends the password in clear text.
    if let Some(b) = r.boolean("kinit_winrm_allow_basic_over_http")? {
        w.allow_basic_over_http = b;
    }
    Ok(())
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Typed access to a host's variables; errors name the host, variable and value.
struct Reader<'a> {
    host: &'a str,
    vars: &'a VarMap,
}

impl Reader<'_> {
    fn value(&self, var: &str) -> Option<&Value> {
        self.vars.get(var).filter(|v| !v.is_null())
    }

    fn bad(&self, var: &'static str, value: &str, expected: &'static str) -> InventoryError {
        InventoryError::HostVar {
            host: self.host.to_string(),
            var,
            // A password's value never reaches an error message.
            value: if var.contains("pass") {
                "********".to_string()
            } else {
                value.to_string()
            },
            expected,
        }
    }

    fn string(&self, var: &'static str) -> Result<Option<String>, InventoryError> {
        match self.value(var) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(v) => Err(self.bad(var, &v.to_string(), "a string")),
        }
    }

    fn first_string(&self, vars: &[&'static str]) -> Result<Option<String>, InventoryError> {
        for v in vars {
            if let Some(s) = self.string(v)? {
                return Ok(Some(s));
            }
        }
        Ok(None)
    }

    fn port(&self, vars: &[&'static str]) -> Result<Option<u16>, InventoryError> {
        for var in vars {
            let Some(v) = self.value(var) else { continue };
            let text = value_text(v);
            return text
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .map(Some)
                .ok_or_else(|| self.bad(var, &text, "a port number (1-65535)"));
        }
        Ok(None)
    }

    fn boolean(&self, var: &'static str) -> Result<Option<bool>, InventoryError> {
        let Some(v) = self.value(var) else {
            return Ok(None);
        };
        let text = value_text(v).to_ascii_lowercase();
        match text.as_str() {
            "true" | "yes" | "on" | "1" | "y" | "t" => Ok(Some(true)),
            "false" | "no" | "off" | "0" | "n" | "f" => Ok(Some(false)),
            _ => Err(self.bad(var, &text, "a boolean (`true`/`false`, `yes`/`no`)")),
        }
    }

    fn count(&self, var: &'static str) -> Result<Option<u32>, InventoryError> {
        let Some(v) = self.value(var) else {
            return Ok(None);
        };
        let text = value_text(v);
        text.trim()
            .parse::<u32>()
            .map(Some)
            .map_err(|_| self.bad(var, &text, "a whole number from 0"))
    }

    fn seconds(&self, var: &'static str) -> Result<Option<Duration>, InventoryError> {
        let Some(v) = self.value(var) else {
            return Ok(None);
        };
        let text = value_text(v);
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Some(Duration::from_secs_f64(s)))
            .ok_or_else(|| self.bad(var, &text, "a number of seconds"))
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
