//! The part of OpenSSH's client config (`~/.ssh/config`) kinit honours: `Host` blocks with
//! wildcard and negated patterns, and `HostName`, `User`, `Port`, `IdentityFile`,
//! `ProxyJump`. As in OpenSSH, the first value found for a keyword wins, and options outside
//! any `Host` block apply to every host. Other keywords are ignored.

use std::path::{Path, PathBuf};

use crate::transport::JumpHost;

/// What the config says about one host alias.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostConfig {
    pub hostname: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_files: Vec<PathBuf>,
    /// `None`: not set; `Some(empty)`: `ProxyJump none`.
    pub proxy_jump: Option<Vec<JumpHost>>,
}

#[derive(Debug, Clone, Default)]
pub struct SshConfig {
    blocks: Vec<Block>,
}

#[derive(Debug, Clone)]
struct Block {
    patterns: Vec<String>,
    options: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: `{keyword}` has an invalid value `{value}`: expected {expected}")]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub keyword: String,
    pub value: String,
    pub expected: &'static str,
}

impl SshConfig {
    /// Load `path`, or `~/.ssh/config` when `None`; a missing file is an empty config.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => match std::env::home_dir() {
                Some(h) => h.join(".ssh/config"),
                None => return Ok(Self::default()),
            },
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path.display().to_string()),
            Err(_) => Ok(Self::default()),
        }
    }

    pub fn parse(text: &str, file: &str) -> Result<Self, ConfigError> {
        // Options before the first Host line behave like `Host *`.
        let mut blocks = vec![Block {
            patterns: vec!["*".into()],
            options: Vec::new(),
        }];
        for (idx, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = split_keyword(line);
            let key = key.to_ascii_lowercase();
            if key == "host" {
                blocks.push(Block {
                    patterns: value.split_whitespace().map(str::to_string).collect(),
                    options: Vec::new(),
                });
                continue;
            }
            if key == "port" && value.parse::<u16>().is_err() {
                return Err(ConfigError {
                    file: file.into(),
                    line: idx + 1,
                    keyword: "Port".into(),
                    value: value.into(),
                    expected: "a port number 1-65535",
                });
            }
            if key == "proxyjump" && !value.eq_ignore_ascii_case("none") {
                parse_jumps(value).map_err(|_| ConfigError {
                    file: file.into(),
                    line: idx + 1,
                    keyword: "ProxyJump".into(),
                    value: value.into(),
                    expected: "`none` or comma-separated [user@]host[:port]",
                })?;
            }
            blocks
                .last_mut()
                .expect("one block always exists")
                .options
                .push((key, value.to_string()));
        }
        Ok(Self { blocks })
    }

    /// The settings that apply to `alias` (the name the user typed).
    pub fn host(&self, alias: &str) -> HostConfig {
        let mut out = HostConfig::default();
        let mut identity_files = Vec::new();
        for block in self
            .blocks
            .iter()
            .filter(|b| host_matches(&b.patterns, alias))
        {
            for (key, value) in &block.options {
                match key.as_str() {
                    "hostname" if out.hostname.is_none() => {
                        out.hostname = Some(value.replace("%h", alias));
                    }
                    "user" if out.user.is_none() => out.user = Some(value.clone()),
                    "port" if out.port.is_none() => out.port = value.parse().ok(),
                    "identityfile" => identity_files.push(expand_tilde(value)),
                    "proxyjump" if out.proxy_jump.is_none() => {
                        out.proxy_jump = Some(if value.eq_ignore_ascii_case("none") {
                            Vec::new()
                        } else {
                            parse_jumps(value).unwrap_or_default()
                        });
                    }
                    _ => {}
                }
            }
        }
        out.identity_files = identity_files;
        out
    }
}

/// `Keyword value`, `Keyword=value` or `Keyword = value`; surrounding quotes removed.
fn split_keyword(line: &str) -> (&str, &str) {
    let end = line
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('=').unwrap_or(rest).trim();
    let rest = rest
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(rest);
    (key, rest)
}

/// A host matches a `Host` line when one positive pattern matches and no negated one does.
fn host_matches(patterns: &[String], host: &str) -> bool {
    let mut matched = false;
    for p in patterns {
        if let Some(neg) = p.strip_prefix('!') {
            if glob(neg, host) {
                return false;
            }
        } else if glob(p, host) {
            matched = true;
        }
    }
    matched
}

/// OpenSSH patterns: `*` any run, `?` one character; case-insensitive like host names.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let t: Vec<char> = text.to_ascii_lowercase().chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn expand_tilde(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// A ProxyJump hop that is not `[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{hop}` is not a jump host of the form `[user@]host[:port]`")]
pub struct BadJump {
    pub hop: String,
}

/// Parse `[user@]host[:port]` hops, comma-separated (also the `-J` / ProxyJump syntax).
pub fn parse_jumps(value: &str) -> Result<Vec<JumpHost>, BadJump> {
    value.split(',').map(|hop| parse_jump(hop.trim())).collect()
}

fn parse_jump(hop: &str) -> Result<JumpHost, BadJump> {
    let hop = hop.strip_prefix("ssh://").unwrap_or(hop);
    let bad = || BadJump { hop: hop.into() };
    let (user, rest) = match hop.rsplit_once('@') {
        Some((u, r)) => (Some(u.to_string()), r),
        None => (None, hop),
    };
    let (address, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (addr, tail) = v6.split_once(']').ok_or_else(bad)?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None => 22,
        };
        (addr.to_string(), port)
    } else {
        match rest.rsplit_once(':') {
            Some((a, p)) => (a.to_string(), p.parse().map_err(|_| bad())?),
            None => (rest.to_string(), 22),
        }
    };
    if address.is_empty() {
        return Err(bad());
    }
    Ok(JumpHost {
        address,
        port,
        user,
        private_key_file: None,
    })
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
