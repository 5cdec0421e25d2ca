//! `synchronize`'s parameters and the rsync command line they make, as ansible.posix's
//! module builds it (plugins/modules/synchronize.py): the flag order, `--rsh` from the
//! connection's SSH settings, the `user@host:path` spelling of the remote side (the action
//! plugin's `_format_rsync_rsh_target`), and the `<<CHANGED>>%i %n%L` out-format whose
//! marker decides `changed`. Pure, so it is unit tested; `synchronize` runs it.
//!
//! Over 300 lines with its tests; the parameters and the command they make are read together.

use std::path::PathBuf;

use serde::Deserialize;

use crate::transport::quote::{sh, sh_join};

use super::args::{boolish, list, opt_boolish};
use super::command::yes;

/// The marker rsync prints before each itemized change (upstream's `changed_marker`).
pub const CHANGED: &str = "<<CHANGED>>";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From the controller to the host (default).
    #[default]
    Push,
    /// From the host to the controller.
    Pull,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// What to copy (on the controller for `push`, on the host for `pull`); a trailing `/`
    /// copies a folder's contents, as rsync does. A relative controller path is looked up in
    /// the role's or playbook's `files/`.
    pub src: String,
    /// Where to copy it (on the host for `push`, on the controller for `pull`).
    pub dest: String,
    /// `push` (default) or `pull`.
    #[serde(default)]
    pub mode: Direction,
    /// `--archive` (default yes): recursive, links, perms, times, owner, group.
    #[serde(default = "yes", deserialize_with = "boolish")]
    pub archive: bool,
    /// Compare checksums, not times and sizes.
    #[serde(default, deserialize_with = "boolish")]
    pub checksum: bool,
    /// Compress in transit (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    pub compress: bool,
    /// Only update files that already exist at `dest`.
    #[serde(default, deserialize_with = "boolish")]
    pub existing_only: bool,
    /// Delete what `dest` has and `src` lacks (`--delete-after`).
    #[serde(default, deserialize_with = "boolish")]
    pub delete: bool,
    /// Transfer folders without recursing (`--dirs`).
    #[serde(default, deserialize_with = "boolish")]
    pub dirs: bool,
    /// Recurse (defaults to `archive`).
    #[serde(default, deserialize_with = "opt_boolish")]
    pub recursive: Option<bool>,
    /// Copy links as links (defaults to `archive`).
    #[serde(default, deserialize_with = "opt_boolish")]
    pub links: Option<bool>,
    /// Copy what links point to.
    #[serde(default, deserialize_with = "boolish")]
    pub copy_links: bool,
    /// Keep permissions (defaults to `archive`).
    #[serde(default, deserialize_with = "opt_boolish")]
    pub perms: Option<bool>,
    /// Keep modification times (defaults to `archive`).
    #[serde(default, deserialize_with = "opt_boolish")]
    pub times: Option<bool>,
    /// Keep the owner, as root (defaults to `archive`).
    #[serde(default, deserialize_with = "opt_boolish")]
    pub owner: Option<bool>,
    /// Keep the group (defaults to `archive`).
    #[serde(default, deserialize_with = "opt_boolish")]
    pub group: Option<bool>,
    /// The rsync command on the host (e.g. `sudo rsync`).
    pub rsync_path: Option<String>,
    /// rsync's I/O timeout in seconds (0: none).
    #[serde(default, deserialize_with = "super::args::opt_u64ish")]
    pub rsync_timeout: Option<u64>,
    /// Extra rsync options (each split as a shell would).
    #[serde(default, deserialize_with = "list")]
    pub rsync_opts: Vec<String>,
    /// Put the connection's user in the remote path (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    pub set_remote_user: bool,
    /// Add the host's `ansible_ssh_args`/`_common_args`/`_extra_args` to the ssh command.
    #[serde(default, deserialize_with = "boolish")]
    pub use_ssh_args: bool,
    /// Let ssh share a control connection (default: `-S none`).
    #[serde(default, deserialize_with = "boolish")]
    pub ssh_connection_multiplexing: bool,
    /// Keep partially transferred files.
    #[serde(default, deserialize_with = "boolish")]
    pub partial: bool,
    /// Check the host's SSH key (default no, as upstream).
    #[serde(default, deserialize_with = "boolish")]
    pub verify_host: bool,
    /// Private key for ssh (default: the connection's).
    pub private_key: Option<String>,
    /// SSH port (default: the connection's).
    #[serde(default, deserialize_with = "super::args::opt_u64ish")]
    pub dest_port: Option<u64>,
    /// Put files in place at the end (`--delay-updates`, default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    pub delay_updates: bool,
    /// Hard-link unchanged files from these folders (`--link-dest`).
    #[serde(default, deserialize_with = "list")]
    pub link_dest: Vec<String>,
}

/// How ssh reaches the host, from its connection settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remote {
    pub address: String,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub private_key: Option<PathBuf>,
    /// Jump hosts, the first reached first.
    pub jumps: Vec<Jump>,
    pub ssh_config: Option<PathBuf>,
    pub known_hosts: Option<PathBuf>,
    /// `ansible_ssh_*args` words (with `use_ssh_args`).
    pub ssh_args: Option<String>,
}

/// One jump host on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jump {
    pub address: String,
    pub port: u16,
    pub user: Option<String>,
    pub private_key: Option<PathBuf>,
}

/// A word of the `--rsh` command as rsync splits it (spaces separate, single or double
/// quotes keep spaces, no backslash escapes).
fn rsh_word(w: &str) -> String {
    if !w.is_empty() && !w.contains([' ', '\'', '"']) {
        w.to_string()
    } else if !w.contains('"') {
        format!("\"{w}\"")
    } else {
        sh(w)
    }
}

impl Params {
    /// The host key options every ssh of the chain gets.
    fn host_key_opts(&self, r: &Remote) -> Vec<String> {
        let mut o = Vec::new();
        if !self.verify_host {
            o.extend([
                "-o".into(),
                "StrictHostKeyChecking=no".into(),
                "-o".into(),
                "UserKnownHostsFile=/dev/null".into(),
            ]);
        } else if let Some(k) = &r.known_hosts {
            o.extend(["-o".into(), format!("UserKnownHostsFile={}", k.display())]);
        }
        o.extend(["-o".into(), "BatchMode=yes".into()]);
        if let Some(c) = &r.ssh_config {
            o.extend(["-F".into(), c.display().to_string()]);
        }
        o
    }

    /// The `ProxyCommand` reaching the next hop through `r.jumps[..=i]`: an ssh to jump `i`
    /// with `-W %h:%p`, itself through the jumps before it (their `%` tokens doubled, as
    /// each ssh expands the tokens of the whole command once).
    fn proxy(&self, r: &Remote, i: usize) -> String {
        let j = &r.jumps[i];
        let mut ssh: Vec<String> = vec!["ssh".into(), "-S".into(), "none".into()];
        if let Some(k) = j.private_key.as_ref().or(r.private_key.as_ref()) {
            ssh.extend(["-i".into(), k.display().to_string()]);
        }
        ssh.extend(["-p".into(), j.port.to_string()]);
        ssh.extend(self.host_key_opts(r));
        if i > 0 {
            let inner = self.proxy(r, i - 1).replace('%', "%%");
            ssh.extend(["-o".into(), format!("ProxyCommand={inner}")]);
        }
        let u = j.user.as_ref().map(|u| format!("{u}@")).unwrap_or_default();
        ssh.extend(["-W".into(), "%h:%p".into(), format!("{u}{}", j.address)]);
        sh_join(&ssh)
    }

    /// The `--rsh` value: upstream's ssh command (`-S none`, `-i`, `-o Port=`, host key
    /// checking off unless `verify_host`), plus what kinit's connection needs that upstream
    /// leaves to `ssh_args`: batch mode (never a prompt), the ssh config file and the jump
    /// hosts (a `ProxyCommand` chain, so each hop gets its own key and host key options).
    pub fn rsh(&self, r: &Remote) -> String {
        let mut ssh: Vec<String> = vec!["ssh".into()];
        if !self.ssh_connection_multiplexing {
            ssh.extend(["-S".into(), "none".into()]);
        }
        let key = self
            .private_key
            .clone()
            .or_else(|| r.private_key.as_ref().map(|k| k.display().to_string()));
        if let Some(k) = key {
            ssh.extend(["-i".into(), k]);
        }
        let port = self
            .dest_port
            .map(|p| p.to_string())
            .or_else(|| r.port.map(|p| p.to_string()));
        if let Some(port) = port {
            ssh.extend(["-o".into(), format!("Port={port}")]);
        }
        ssh.extend(self.host_key_opts(r));
        if !r.jumps.is_empty() {
            let proxy = self.proxy(r, r.jumps.len() - 1);
            ssh.extend(["-o".into(), format!("ProxyCommand={proxy}")]);
        }
        let mut s = ssh
            .iter()
            .map(|w| rsh_word(w))
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(extra) = r.ssh_args.as_deref().filter(|a| !a.is_empty()) {
            s.push(' ');
            s.push_str(extra);
        }
        s
    }

    /// rsync's arguments (without the program), in upstream's order.
    pub fn argv(
        &self,
        check_mode: bool,
        rsh: Option<String>,
        rsync_path: Option<&str>,
        src: &str,
        dest: &str,
    ) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |s: &str| a.push(s.to_string());
        if self.delay_updates {
            push("--delay-updates");
            push("-F");
        }
        if self.compress {
            push("--compress");
        }
        if let Some(t) = self.rsync_timeout.filter(|t| *t > 0) {
            push(&format!("--timeout={t}"));
        }
        if check_mode {
            push("--dry-run");
        }
        if self.delete {
            push("--delete-after");
        }
        if self.existing_only {
            push("--existing");
        }
        if self.checksum {
            push("--checksum");
        }
        if self.copy_links {
            push("--copy-links");
        }
        let toggles = [
            (self.recursive, "recursive"),
            (self.links, "links"),
            (self.perms, "perms"),
            (self.times, "times"),
            (self.owner, "owner"),
            (self.group, "group"),
        ];
        if self.archive {
            push("--archive");
            for (v, name) in toggles {
                if v == Some(false) {
                    push(&format!("--no-{name}"));
                }
            }
        } else {
            for (v, name) in toggles {
                if v == Some(true) {
                    push(&format!("--{name}"));
                }
            }
        }
        if self.dirs {
            push("--dirs");
        }
        let has_rsh = self.rsync_opts.iter().any(|o| o.contains("--rsh"));
        if let Some(rsh) = rsh.filter(|_| !has_rsh) {
            push(&format!("--rsh={rsh}"));
        }
        if let Some(path) = rsync_path {
            push(&format!("--rsync-path={path}"));
        }
        for opt in &self.rsync_opts {
            // Upstream joins the command into one string that is split again like a shell
            // line, so an option with a space becomes two words and quotes go.
            match shlex::split(opt) {
                Some(words) if !words.is_empty() => a.extend(words),
                _ => a.push(opt.clone()),
            }
        }
        if self.partial {
            a.push("--partial".into());
        }
        if !self.link_dest.is_empty() {
            a.push("-H".into());
            a.push("-vv".into());
            for l in &self.link_dest {
                a.push(format!("--link-dest={l}"));
            }
        }
        a.push(format!("--out-format={CHANGED}%i %n%L"));
        a.push(src.to_string());
        a.push(dest.to_string());
        a
    }
}

/// The action plugin's `_format_rsync_rsh_target`: `user@host:path`, an IPv6 address in
/// brackets, a path already naming a host kept (with the user put in front).
pub fn remote_path(host: &str, path: &str, user: Option<&str>) -> String {
    if path.starts_with("rsync://") {
        return path.to_string();
    }
    let u = user.map(|u| format!("{u}@")).unwrap_or_default();
    if host.contains(':') {
        return format!("[{u}{host}]:{path}");
    }
    if !path.contains(':') {
        format!("{u}{host}:{path}")
    } else if !path.contains('@') {
        format!("{u}{path}")
    } else {
        path.to_string()
    }
}

/// The command as upstream reports it in `cmd`: the words joined, each quoted for sh.
pub fn display(program: &str, argv: &[String]) -> String {
    let mut words = vec![sh(program)];
    words.extend(argv.iter().map(|a| sh(a)));
    words.join(" ")
}

/// Changed and the itemized lines, from rsync's output, as upstream reads them (with
/// `link_dest`, only lines other than unchanged ones, `<<CHANGED>>.`, count).
pub fn outcome(out: &str, link_dest: bool) -> (bool, String, Vec<String>) {
    let changed = if link_dest {
        !out.contains(&format!("{CHANGED}."))
    } else {
        out.contains(CHANGED)
    };
    let clean = out.replace(CHANGED, "");
    let lines = clean
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    (changed, clean, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(extra: serde_json::Value) -> Params {
        let mut args = serde_json::json!({"src": "/s/", "dest": "/d"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(args).unwrap()
    }

    #[test]
    fn the_default_command_is_upstreams() {
        let p = params(serde_json::json!({}));
        assert_eq!(
            p.argv(false, None, None, "/s/", "/d"),
            vec![
                "--delay-updates",
                "-F",
                "--compress",
                "--archive",
                "--out-format=<<CHANGED>>%i %n%L",
                "/s/",
                "/d"
            ]
        );
    }

    #[test]
    fn toggles_options_and_check_mode() {
        let p = params(serde_json::json!({
            "archive": false, "times": true, "recursive": true, "delete": true,
            "checksum": true, "compress": false, "rsync_opts": ["--exclude=*.log", "--chmod 'u+rwx'"],
            "partial": true, "delay_updates": false, "rsync_timeout": 5
        }));
        assert_eq!(
            p.argv(true, None, Some("sudo rsync"), "a", "b"),
            vec![
                "--timeout=5",
                "--dry-run",
                "--delete-after",
                "--checksum",
                "--recursive",
                "--times",
                "--rsync-path=sudo rsync",
                "--exclude=*.log",
                "--chmod",
                "u+rwx",
                "--partial",
                "--out-format=<<CHANGED>>%i %n%L",
                "a",
                "b"
            ]
        );
        let p = params(serde_json::json!({"perms": false, "owner": "no"}));
        let a = p.argv(false, None, None, "a", "b");
        assert!(a.contains(&"--no-perms".to_string()) && a.contains(&"--no-owner".to_string()));
    }

    #[test]
    fn rsh_comes_from_the_connection() {
        let p = params(serde_json::json!({}));
        let r = Remote {
            address: "h".into(),
            user: Some("u".into()),
            port: Some(2222),
            private_key: Some("/k/id".into()),
            jumps: vec![Jump {
                address: "jump".into(),
                port: 22,
                user: Some("j".into()),
                private_key: None,
            }],
            ..Remote::default()
        };
        assert_eq!(
            p.rsh(&r),
            "ssh -S none -i /k/id -o Port=2222 -o StrictHostKeyChecking=no -o \
             UserKnownHostsFile=/dev/null -o BatchMode=yes -o \"ProxyCommand=ssh -S none -i \
             /k/id -p 22 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o \
             BatchMode=yes -W %h:%p j@jump\""
        );
        let p = params(
            serde_json::json!({"verify_host": true, "dest_port": 22, "private_key": "/other"}),
        );
        assert_eq!(
            p.rsh(&r),
            "ssh -S none -i /other -o Port=22 -o BatchMode=yes -o \"ProxyCommand=ssh -S none \
             -i /k/id -p 22 -o BatchMode=yes -W %h:%p j@jump\""
        );
        let two = Remote {
            jumps: vec![
                Jump {
                    address: "j1".into(),
                    port: 1,
                    ..Jump::default()
                },
                Jump {
                    address: "j2".into(),
                    port: 2,
                    ..Jump::default()
                },
            ],
            ..Remote::default()
        };
        assert!(
            p.rsh(&two).ends_with(
                "-o \"ProxyCommand=ssh -S none -p 2 -o BatchMode=yes -o \
                 'ProxyCommand=ssh -S none -p 1 -o BatchMode=yes -W %%h:%%p j1' -W %h:%p j2\""
            ),
            "{}",
            p.rsh(&two)
        );
        let opts = params(serde_json::json!({"rsync_opts": ["--rsh=ssh -p 1"]}));
        assert!(
            !opts
                .argv(false, Some("myssh".into()), None, "a", "b")
                .iter()
                .any(|a| a == "--rsh=myssh")
        );
    }

    #[test]
    fn remote_paths_as_the_action_plugin_spells_them() {
        assert_eq!(remote_path("h", "/x", Some("u")), "u@h:/x");
        assert_eq!(remote_path("h", "/x", None), "h:/x");
        assert_eq!(remote_path("::1", "/x", Some("u")), "[u@::1]:/x");
        assert_eq!(remote_path("h", "o:/x", Some("u")), "u@o:/x");
        assert_eq!(remote_path("h", "v@o:/x", Some("u")), "v@o:/x");
        assert_eq!(remote_path("h", "rsync://m/x", Some("u")), "rsync://m/x");
    }

    #[test]
    fn changed_from_the_marker() {
        let (c, clean, lines) = outcome(
            "<<CHANGED>>>f+++++++++ a\n<<CHANGED>>cd+++++++++ d/\n",
            false,
        );
        assert!(c);
        assert_eq!(clean, ">f+++++++++ a\ncd+++++++++ d/\n");
        assert_eq!(lines, vec![">f+++++++++ a", "cd+++++++++ d/"]);
        assert!(!outcome("", false).0);
        assert!(!outcome("<<CHANGED>>.f a\n", true).0);
    }
}
