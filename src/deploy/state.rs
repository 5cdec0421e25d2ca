//! The cluster state folder (`$XDG_STATE_HOME/kinit/<cluster>/`, mode 0700): the cluster SSH
//! keypair (made once with `ssh-keygen`), the generated Windows administrator password (0600,
//! never regenerated: a lost password locks the user out of the node), the cluster
//! known_hosts, the expanded inventory, and one folder per run for its logs and reports.
//! With Windows nodes also the cluster's WinRM CA (`winrm-ca.pem`, `winrm-ca.key` 0600, made
//! once) and the guests' certificates it issued (`winrm/`, see `provider::winrm_cert`).
//! Every file is written atomically (`atomic`). `kinit state show` lists it without secrets.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::atomic;
use crate::secret::Secret;

pub const PRIVATE_KEY: &str = "id_ed25519";
pub const PUBLIC_KEY: &str = "id_ed25519.pub";
pub const PASSWORD: &str = "windows-admin-password";
pub const KNOWN_HOSTS: &str = "known_hosts";
pub const INVENTORY: &str = "inventory.json";
pub const KUBECONFIG: &str = "kubeconfig";
pub const LOCK: &str = "lock";
pub const RUNS: &str = "runs";
pub use crate::provider::winrm_cert::{CA_CERT as WINRM_CA, CA_KEY as WINRM_CA_KEY};

/// Files whose content is never shown (and the guests' PKCS#12 files, `winrm/*.pfx`).
const SECRET_FILES: [&str; 4] = [PRIVATE_KEY, PASSWORD, KUBECONFIG, WINRM_CA_KEY];

fn is_secret(name: &str) -> bool {
    SECRET_FILES.contains(&name) || name.ends_with(".pfx")
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot write `{}` in the cluster state folder", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`ssh-keygen` failed making the cluster key `{}`: {stderr}", path.display())]
    Keygen { path: PathBuf, stderr: String },
    #[error("the Windows administrator password file `{}` is empty; remove it only if no Windows node was installed with it", path.display())]
    EmptyPassword { path: PathBuf },
    #[error(transparent)]
    WinrmCa(#[from] crate::provider::winrm_cert::CertError),
}

/// A cluster's state folder.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: PathBuf,
}

/// What `prepare` produced.
#[derive(Debug)]
pub struct Prepared {
    /// The Windows administrator password: the one on file, or a new one for a cluster with
    /// Windows nodes; none for a cluster without Windows nodes and no password yet.
    pub password: Option<Secret>,
    /// Files created by this run (for the user, and the tests).
    pub created: Vec<&'static str>,
}

impl StateDir {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn io(&self, name: &Path) -> impl FnOnce(std::io::Error) -> StateError {
        let path = name.to_path_buf();
        move |source| StateError::Io { path, source }
    }

    /// Create the folder (0700) if needed; the lock lives in it, so this comes first.
    pub fn create(&self) -> Result<(), StateError> {
        mkdir(&self.root).map_err(self.io(&self.root))
    }

    /// Keypair, password and WinRM CA: made when missing (the password and the CA only when
    /// the cluster has `windows` nodes), never replaced. A password on file is always read, so a cluster that
    /// once had Windows nodes keeps it and its redaction. The cluster known_hosts is left to
    /// OpenSSH and the transports (cleanup removes it with the guests).
    pub fn prepare(&self, windows: bool) -> Result<Prepared, StateError> {
        let mut created = Vec::new();
        if !self.path(PRIVATE_KEY).exists() {
            self.keygen()?;
            created.push(PRIVATE_KEY);
        }
        let pw_path = self.path(PASSWORD);
        let password = match fs::read_to_string(&pw_path) {
            Ok(s) => {
                let s = s.trim().to_string();
                if s.is_empty() {
                    return Err(StateError::EmptyPassword { path: pw_path });
                }
                Some(Secret::new(s))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !windows => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let pw = generate_password();
                atomic::write(&pw_path, pw.expose().as_bytes(), 0o600)
                    .map_err(self.io(&pw_path))?;
                created.push(PASSWORD);
                Some(pw)
            }
            Err(e) => return Err(self.io(&pw_path)(e)),
        };
        if windows && crate::provider::winrm_cert::ensure_ca(&self.root)? {
            created.extend([WINRM_CA_KEY, WINRM_CA]);
        }
        Ok(Prepared { password, created })
    }

    /// `ssh-keygen` writes to temp names; both files are moved into place once complete,
    /// the private key last, so an existing private key always has its public half.
    fn keygen(&self) -> Result<(), StateError> {
        let key = self.path(PRIVATE_KEY);
        let tmp = atomic::temp_name(&key);
        let tmp_pub = PathBuf::from(format!("{}.pub", tmp.display()));
        let _ = fs::remove_file(&tmp);
        let _ = fs::remove_file(&tmp_pub);
        let comment = format!(
            "kinit-{}",
            self.root.file_name().unwrap_or_default().to_string_lossy()
        );
        let out = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", &comment, "-f"])
            .arg(&tmp)
            .output()
            .map_err(self.io(&key))?;
        if !out.status.success() {
            return Err(StateError::Keygen {
                path: key,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let public = self.path(PUBLIC_KEY);
        atomic::commit(&tmp_pub, &public, 0o644).map_err(self.io(&public))?;
        atomic::commit(&tmp, &key, 0o600).map_err(self.io(&key))
    }

    /// The expanded inventory as JSON (Ansible's `ansible-inventory --list` shape).
    pub fn write_inventory(&self, inv: &crate::inventory::Inventory) -> Result<(), StateError> {
        let p = self.path(INVENTORY);
        let text = serde_json::to_string_pretty(&inventory_json(inv)).unwrap_or_default();
        atomic::write(&p, format!("{text}\n").as_bytes(), 0o600).map_err(self.io(&p))
    }

    /// A new `runs/<timestamp>/` folder (a suffix keeps two runs in one second apart).
    pub fn new_run_dir(&self, stamp: &str) -> Result<PathBuf, StateError> {
        let runs = self.path(RUNS);
        mkdir(&runs).map_err(self.io(&runs))?;
        let mut n = 0;
        loop {
            let name = if n == 0 {
                stamp.to_string()
            } else {
                format!("{stamp}-{n}")
            };
            let dir = runs.join(name);
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(self.io(&dir)(e)),
            }
        }
    }

    /// `kinit state show`: one line per entry (recursing into `runs/`), never any content.
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let mut out = format!("state folder: {}\n", self.root.display());
        if !self.root.exists() {
            out.push_str("(does not exist yet: `kinit run` creates it)\n");
            return out;
        }
        for entry in walk(&self.root) {
            let Ok(meta) = fs::symlink_metadata(&entry) else {
                continue;
            };
            let rel = entry.strip_prefix(&self.root).unwrap_or(&entry);
            let mode = meta.permissions().mode() & 0o7777;
            let kind = if meta.is_dir() { "dir " } else { "file" };
            let name = rel.to_string_lossy();
            let note = if is_secret(&name) {
                "  (secret, not shown)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{kind} {mode:04o} {:>9}  {name}{note}",
                if meta.is_dir() { 0 } else { meta.len() }
            );
        }
        let yes = |f: &str| if self.path(f).exists() { "yes" } else { "no" };
        let _ = writeln!(
            out,
            "ssh keypair: {}\nwindows administrator password: {}\nwinrm ca: {}\nkubeconfig: {}",
            yes(PRIVATE_KEY),
            yes(PASSWORD),
            yes(WINRM_CA),
            yes(KUBECONFIG)
        );
        out
    }
}

fn mkdir(p: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(p)?;
    fs::set_permissions(p, fs::Permissions::from_mode(0o700))
}

/// Every path under `root`, sorted, folders before their content.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    for e in entries {
        let is_dir = fs::symlink_metadata(&e).is_ok_and(|m| m.is_dir());
        out.push(e.clone());
        if is_dir {
            out.extend(walk(&e));
        }
    }
    out
}

/// 20 random letters and digits after a fixed `Kn1t-`, which alone meets Windows' complexity
/// rule (upper, lower, digit, symbol).
fn generate_password() -> Secret {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let mut raw = [0u8; 20];
    getrandom::fill(&mut raw).expect("the OS random source works");
    let tail: String = raw
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    Secret::new(format!("Kn1t-{tail}"))
}

/// `ansible-inventory --list` layout: `_meta.hostvars` plus one entry per group.
fn inventory_json(inv: &crate::inventory::Inventory) -> serde_json::Value {
    let mut root = serde_json::Map::new();
    let mut hostvars = serde_json::Map::new();
    for name in inv.hosts.keys() {
        hostvars.insert(name.clone(), serde_json::Value::Object(inv.host_vars(name)));
    }
    root.insert("_meta".into(), serde_json::json!({ "hostvars": hostvars }));
    for (name, g) in &inv.groups {
        let mut entry = serde_json::Map::new();
        if !g.hosts.is_empty() {
            entry.insert("hosts".into(), serde_json::json!(g.hosts));
        }
        if !g.children.is_empty() {
            entry.insert("children".into(), serde_json::json!(g.children));
        }
        if !g.vars.is_empty() {
            entry.insert("vars".into(), serde_json::Value::Object(g.vars.clone()));
        }
        root.insert(name.clone(), serde_json::Value::Object(entry));
    }
    serde_json::Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_once_then_keep() {
        let d = tempfile::tempdir().unwrap();
        let s = StateDir::new(d.path().join("c"));
        s.create().unwrap();
        // No Windows node: no password is made.
        let linux = s.prepare(false).unwrap();
        assert_eq!(linux.created, [PRIVATE_KEY]);
        assert!(linux.password.is_none());
        assert!(!s.path(PASSWORD).exists());
        assert!(
            s.describe().contains("windows administrator password: no"),
            "{}",
            s.describe()
        );
        fs::remove_file(s.path(PRIVATE_KEY)).unwrap();
        let first = s.prepare(true).unwrap();
        assert_eq!(
            first.created,
            [PRIVATE_KEY, PASSWORD, WINRM_CA_KEY, WINRM_CA]
        );
        let first = first.password.unwrap();
        let mode = |f| fs::metadata(s.path(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(PRIVATE_KEY), 0o600);
        assert_eq!(mode(PASSWORD), 0o600);
        assert_eq!(mode(PUBLIC_KEY), 0o644);
        assert_eq!(mode(WINRM_CA_KEY), 0o600);
        assert_eq!(mode(WINRM_CA), 0o644);
        let ca = fs::read(s.path(WINRM_CA)).unwrap();
        let key = fs::read(s.path(PRIVATE_KEY)).unwrap();
        let again = s.prepare(true).unwrap();
        assert!(again.created.is_empty());
        assert_eq!(again.password.unwrap().expose(), first.expose());
        assert_eq!(fs::read(s.path(PRIVATE_KEY)).unwrap(), key);
        assert_eq!(fs::read(s.path(WINRM_CA)).unwrap(), ca);
        // Without Windows nodes now, the password on file is still read (kept, redacted).
        let later = s.prepare(false).unwrap();
        assert_eq!(later.password.unwrap().expose(), first.expose());
        let shown = s.describe();
        assert!(!shown.contains(first.expose()), "{shown}");
        assert!(
            shown.contains("winrm-ca.key  (secret, not shown)"),
            "{shown}"
        );
        assert!(shown.contains("winrm ca: yes"), "{shown}");
        assert!(
            shown.contains("windows administrator password: yes"),
            "{shown}"
        );
    }
}
