//! OpenSSH options as Ansible users write them in `ansible_ssh_common_args`: jump hosts
//! (`-J hop`, `-o ProxyJump=hop1,hop2`, `-o ProxyCommand="ssh -W %h:%p ... hop"`) and the
//! other options kinit's SSH client honours (`options_from_ssh_args`).

use std::path::PathBuf;

use super::ini::shell_words;
use crate::transport::JumpHost;

/// Jump hosts named by `-J hop`, `-o ProxyJump=hop1,hop2` or
/// `-o ProxyCommand="ssh -W %h:%p [-p port] [-i key] [user@]hop"`.
pub(super) fn jumps_from_ssh_args(args: &str) -> Result<Vec<JumpHost>, &'static str> {
    let words = shell_words(args).map_err(|_| "unbalanced quotes")?;
    let mut out = Vec::new();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let option = if w == "-o" {
            it.next().cloned()
        } else {
            w.strip_prefix("-o").map(str::to_string)
        };
        let jump_spec = if w == "-J" {
            it.next().cloned()
        } else {
            w.strip_prefix("-J").map(str::to_string)
        };
        if let Some(spec) = jump_spec {
            for hop in spec.split(',') {
                out.push(parse_jump(hop)?);
            }
            continue;
        }
        let Some(opt) = option else { continue };
        let (key, value) = opt
            .split_once('=')
            .or_else(|| opt.split_once(' '))
            .ok_or("an `-o` option without a value")?;
        match key.trim().to_ascii_lowercase().as_str() {
            "proxyjump" => {
                for hop in value.split(',') {
                    out.push(parse_jump(hop)?);
                }
            }
            "proxycommand" => out.push(jump_from_proxy_command(value)?),
            _ => {}
        }
    }
    Ok(out)
}

/// Every option of an OpenSSH argument string as `(name, value)`: `-o Name=value` (or
/// `-o "Name value"`) with the name as written, `-i`, `-p`, `-l` and `-F` as `IdentityFile`,
/// `Port`, `User` and `F`, and a bare flag (`-C`, `-A`) as itself with an empty value.
pub(super) fn options_from_ssh_args(args: &str) -> Result<Vec<(String, String)>, &'static str> {
    let words = shell_words(args).map_err(|_| "unbalanced quotes")?;
    let mut out = Vec::new();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let (flag, attached) = match w.strip_prefix('-') {
            Some(rest) if !rest.is_empty() => rest.split_at(1),
            _ => continue,
        };
        let mut value = || -> Result<String, &'static str> {
            if attached.is_empty() {
                it.next().cloned().ok_or("an option without its value")
            } else {
                Ok(attached.to_string())
            }
        };
        match flag {
            "o" => {
                let opt = value()?;
                let (k, v) = opt
                    .split_once('=')
                    .or_else(|| opt.split_once(' '))
                    .ok_or("an `-o` option without a value")?;
                out.push((k.trim().to_string(), v.trim().to_string()));
            }
            "i" => out.push(("IdentityFile".into(), value()?)),
            "p" => out.push(("Port".into(), value()?)),
            "l" => out.push(("User".into(), value()?)),
            "J" => out.push(("ProxyJump".into(), value()?)),
            "F" => out.push(("F".into(), value()?)),
            _ => out.push((w.clone(), String::new())),
        }
    }
    Ok(out)
}

fn jump_from_proxy_command(cmd: &str) -> Result<JumpHost, &'static str> {
    const EXPECTED: &str = "a ProxyCommand of the form `ssh -W %h:%p [-p port] [user@]host`";
    let words = shell_words(cmd).map_err(|_| EXPECTED)?;
    let (first, rest) = words.split_first().ok_or(EXPECTED)?;
    if !first.ends_with("ssh") || !words.iter().any(|w| w == "-W" || w.starts_with("-W")) {
        return Err(EXPECTED);
    }
    let (mut port, mut user, mut key, mut host) = (None, None, None, None);
    let mut it = rest.iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "-W" | "-o" | "-F" => {
                it.next();
            }
            "-p" => port = it.next().and_then(|p| p.parse::<u16>().ok()),
            "-l" => user = it.next().cloned(),
            "-i" => key = it.next().map(|k| expand_home(k)),
            s if s.starts_with('-') => {}
            s => host = Some(s.to_string()),
        }
    }
    let mut jump = parse_jump(&host.ok_or(EXPECTED)?)?;
    if let Some(p) = port {
        jump.port = p;
    }
    if user.is_some() {
        jump.user = user;
    }
    jump.private_key_file = key;
    Ok(jump)
}

/// `[user@]host[:port]` (or `[user@][v6addr]:port`).
pub(super) fn parse_jump(spec: &str) -> Result<JumpHost, &'static str> {
    let spec = spec.trim().trim_start_matches("ssh://");
    let (user, hostport) = match spec.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, spec),
    };
    let (address, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let (a, tail) = rest
            .split_once(']')
            .ok_or("an unclosed `[` in the jump host")?;
        (a, tail.strip_prefix(':'))
    } else {
        match hostport.split_once(':') {
            Some((a, p)) => (a, Some(p)),
            None => (hostport, None),
        }
    };
    if address.is_empty() {
        return Err("a jump host of the form `[user@]host[:port]`");
    }
    let port = match port {
        Some(p) => p.parse().map_err(|_| "a numeric jump host port")?,
        None => 22,
    };
    Ok(JumpHost {
        address: address.to_string(),
        port,
        user,
        private_key_file: None,
    })
}

/// `~/x` as `$HOME/x` (key files named in SSH options and inventory variables).
pub(super) fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => PathBuf::from(p),
        },
        None => PathBuf::from(p),
    }
}
