//! Host key checking against OpenSSH `known_hosts` files (plain and hashed `|1|` entries):
//! `strict` refuses unknown and changed keys, `accept-new` records unknown keys and refuses
//! changed ones, `off` accepts anything. Decisions come back as a `Verdict` whose message
//! names the host, the offered fingerprint and the file/line involved.

use std::path::{Path, PathBuf};

use russh::keys::known_hosts::{known_host_keys_path, learn_known_hosts_path};
use russh::keys::{HashAlg, PublicKey};

use crate::transport::HostKeyChecking;

/// Where keys are looked up and (under accept-new) written.
#[derive(Debug, Clone)]
pub struct KnownHosts {
    pub policy: HostKeyChecking,
    /// Consulted in order; the first is where new keys are recorded.
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Trusted,
    /// Recorded under accept-new into this file.
    Learned(PathBuf),
    /// Accepted without checking (`off`).
    Unchecked,
    Rejected(String),
}

impl KnownHosts {
    /// `extra` (a cluster's own file) first, then `~/.ssh/known_hosts`.
    pub fn new(policy: HostKeyChecking, extra: Option<&Path>) -> Self {
        let mut files = Vec::new();
        if let Some(p) = extra {
            files.push(p.to_path_buf());
        }
        if let Some(home) = std::env::home_dir() {
            files.push(home.join(".ssh/known_hosts"));
        }
        Self { policy, files }
    }

    /// Decide about `key` offered by `host:port` (the address connected to, as OpenSSH
    /// records it: `host` for port 22, `[host]:port` otherwise).
    pub fn check(&self, host: &str, port: u16, key: &PublicKey) -> Verdict {
        if self.policy == HostKeyChecking::Off {
            return Verdict::Unchecked;
        }
        let fingerprint = key.fingerprint(HashAlg::Sha256);
        let shown = if port == 22 {
            host.to_string()
        } else {
            format!("[{host}]:{port}")
        };
        let mut changed = None;
        for file in &self.files {
            let recorded = match known_host_keys_path(host, port, file) {
                Ok(r) => r,
                Err(e) => {
                    return Verdict::Rejected(format!(
                        "cannot read known_hosts file `{}`: {e}",
                        file.display()
                    ));
                }
            };
            for (line, rec) in recorded {
                if rec.key_data() == key.key_data() {
                    return Verdict::Trusted;
                }
                if rec.algorithm() == key.algorithm() && changed.is_none() {
                    changed = Some((file.clone(), line));
                }
            }
        }
        if let Some((file, line)) = changed {
            return Verdict::Rejected(format!(
                "REMOTE HOST KEY CHANGED for `{shown}`: it offered {} {fingerprint}, but `{}` \
                 line {line} records a different key (possible man-in-the-middle; remove that \
                 line if the host was reinstalled)",
                key.algorithm(),
                file.display()
            ));
        }
        match self.policy {
            HostKeyChecking::AcceptNew => {
                let Some(file) = self.files.first() else {
                    return Verdict::Rejected("no known_hosts file to record the key in".into());
                };
                match learn_known_hosts_path(host, port, key, file) {
                    Ok(()) => Verdict::Learned(file.clone()),
                    Err(e) => Verdict::Rejected(format!(
                        "cannot record the key of `{shown}` in `{}`: {e}",
                        file.display()
                    )),
                }
            }
            _ => Verdict::Rejected(format!(
                "`{shown}` is not a known host: it offered {} {fingerprint}, which is in none \
                 of {}; add it (ssh-keyscan) or use --host-key-checking accept-new",
                key.algorithm(),
                self.files
                    .iter()
                    .map(|f| format!("`{}`", f.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use russh::keys::parse_public_key_base64;

    const KEY_A: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ";
    const KEY_B: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIA6rWI3G1sz07DnfFlrouTcysQlj2P+jpNSOEWD9OJ3X";

    fn file(content: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("known_hosts");
        std::fs::write(&p, content).unwrap();
        (d, p)
    }

    fn kh(policy: HostKeyChecking, p: &Path) -> KnownHosts {
        KnownHosts {
            policy,
            files: vec![p.to_path_buf()],
        }
    }

    #[test]
    fn strict_trusts_recorded_and_refuses_unknown_or_changed() {
        let (_d, p) = file(&format!("[10.1.1.1]:2222 ssh-ed25519 {KEY_A}\n"));
        let a = parse_public_key_base64(KEY_A).unwrap();
        let b = parse_public_key_base64(KEY_B).unwrap();
        let strict = kh(HostKeyChecking::Strict, &p);
        assert_eq!(strict.check("10.1.1.1", 2222, &a), Verdict::Trusted);
        let Verdict::Rejected(msg) = strict.check("10.1.1.1", 2222, &b) else {
            panic!("changed key accepted")
        };
        assert!(
            msg.contains("REMOTE HOST KEY CHANGED") && msg.contains("line 1"),
            "{msg}"
        );
        let Verdict::Rejected(msg) = strict.check("10.1.1.2", 22, &a) else {
            panic!("unknown key accepted")
        };
        assert!(
            msg.contains("not a known host") && msg.contains("SHA256:"),
            "{msg}"
        );
    }

    #[test]
    fn accept_new_records_then_trusts() {
        let (_d, p) = file("");
        let a = parse_public_key_base64(KEY_A).unwrap();
        let k = kh(HostKeyChecking::AcceptNew, &p);
        assert_eq!(k.check("h", 2200, &a), Verdict::Learned(p.clone()));
        assert_eq!(k.check("h", 2200, &a), Verdict::Trusted);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.trim_start().starts_with("[h]:2200 ssh-ed25519 "),
            "{text}"
        );
    }
}
