//! Ansible's settings as users keep them: one `ansible.cfg`, found as Ansible finds it
//! (`ANSIBLE_CONFIG`, then `./ansible.cfg`, `~/.ansible.cfg`, `/etc/ansible/ansible.cfg`;
//! the first that exists, and only it), overridden by the `ANSIBLE_*` environment variables
//! of the same settings. `kinit playbook`'s own flags override both.
//!
//! Honoured: `inventory`, `roles_path`, `library` (custom Python modules), `filter_plugins`,
//! `test_plugins`, `lookup_plugins`, `collections_path` (installed collections' modules),
//! `remote_user`, `private_key_file`, `forks`,
//! `host_key_checking`, `timeout`, `gathering`, `fact_caching` (`memory` or `jsonfile`, with
//! `fact_caching_connection`, `_prefix`, `_timeout`) (`[defaults]`); `become`, `become_user`,
//! `become_method` (`[privilege_escalation]`); `ssh_args` (`[ssh_connection]`, read like
//! `ansible_ssh_args`); `vault_password_file`, `vault_identity_list`, `vault_id_match`
//! (`[defaults]`). Settings
//! that only change how Ansible works inside (`pipelining`,
//! `retry_files_enabled`, `interpreter_python`...) fit kinit as they are and are accepted
//! silently; any other setting is named once in a notice, never an error, never silence.
//! Relative paths in the file are relative to the file's folder, as in Ansible.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum AnsibleCfgError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: `{key}` = `{value}`: expected {expected}", path.display())]
    Value {
        path: PathBuf,
        line: usize,
        key: String,
        value: String,
        expected: &'static str,
    },
    #[error("`{var}` = `{value}`: expected {expected}")]
    Env {
        var: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// `gathering`: when plays that do not say `gather_facts` gather facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gathering {
    /// Always (Ansible's default).
    #[default]
    Implicit,
    /// Only plays with `gather_facts: true`.
    Explicit,
    /// Once per host per run (kinit's implicit gathering already never repeats itself), and
    /// not for a host whose facts a `jsonfile` fact cache holds from an earlier run.
    Smart,
}

/// `fact_caching`, `fact_caching_connection`, `fact_caching_prefix`, `fact_caching_timeout`
/// (ANSIBLE_CACHE_PLUGIN, `_CONNECTION`, `_PREFIX`, `_TIMEOUT`): where facts outlive a run.
/// What the plugin named means is the executor's business (`exec::fact_cache`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactCaching {
    /// The cache plugin (`memory` when unset).
    pub plugin: Option<String>,
    /// The jsonfile plugin's folder.
    pub connection: Option<PathBuf>,
    /// Put before each host's file name.
    pub prefix: Option<String>,
    /// Seconds a cached host stays fresh (0: forever; 86400 when unset).
    pub timeout: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct AnsibleSettings {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    pub inventory: Vec<String>,
    pub roles_path: Vec<PathBuf>,
    /// `library`: folders of custom modules.
    pub library: Vec<PathBuf>,
    /// `filter_plugins`: folders of custom Python filters.
    pub filter_plugins: Vec<PathBuf>,
    /// `test_plugins`: folders of custom Python tests.
    pub test_plugins: Vec<PathBuf>,
    /// `lookup_plugins`: folders of custom Python lookups.
    pub lookup_plugins: Vec<PathBuf>,
    /// `collections_path` (or the older `collections_paths`): folders of installed
    /// collections; `None` when unset.
    pub collections_path: Option<Vec<PathBuf>>,
    pub remote_user: Option<String>,
    pub private_key_file: Option<PathBuf>,
    pub forks: Option<usize>,
    pub host_key_checking: Option<bool>,
    pub timeout: Option<u64>,
    pub gathering: Gathering,
    pub fact_caching: FactCaching,
    /// `force_handlers`: notified handlers run on hosts that failed too.
    pub force_handlers: bool,
    /// `error_on_missing_handler` (ansible-core's default: on): a notification no handler
    /// answers ends the run; off, it is a warning.
    pub error_on_missing_handler: Option<bool>,
    /// `allow_broken_conditionals`: a conditional that gives no boolean counts by its truth
    /// (with a deprecation warning) instead of failing, as before ansible-core 2.19.
    pub allow_broken_conditionals: bool,
    /// `display_ok_hosts`, `display_skipped_hosts` (both on unless turned off): whether
    /// results that changed nothing, and skipped ones, are shown.
    pub display_ok_hosts: Option<bool>,
    pub display_skipped_hosts: Option<bool>,
    /// `show_custom_stats`: `set_stats` data is shown after the recap.
    pub show_custom_stats: bool,
    /// `hash_behaviour = merge`: mappings of the same variable from different places merge
    /// key by key (`replace`, the default, keeps the higher-precedence one whole).
    pub hash_merge: bool,
    pub become_: Option<bool>,
    pub become_user: Option<String>,
    pub become_method: Option<String>,
    pub ssh_args: Option<String>,
    /// `vault_password_file`: a vault password file (or script) tried after the command
    /// line's.
    pub vault_password_file: Option<PathBuf>,
    /// `vault_identity_list`: vault-ids (`label@source`) tried before the command line's.
    pub vault_identity_list: Vec<String>,
    /// `vault_id_match`: a vault is opened only by the secrets of its own vault-id.
    pub vault_id_match: bool,
    /// `localhost_warning`: warn that an empty inventory leaves only the implicit localhost
    /// (unset: yes).
    pub localhost_warning: Option<bool>,
    /// `[inventory] unparsed_warning`: warn when no inventory source was given (unset: yes).
    pub inventory_unparsed_warning: Option<bool>,
    /// `[inventory] unparsed_is_failed`: no source that could be read ends the run.
    pub inventory_unparsed_is_failed: bool,
    /// `[inventory] any_unparsed_is_failed`: any source that cannot be read ends the run.
    pub inventory_any_unparsed_is_failed: bool,
    /// Settings of the file kinit does not use, as `section.key`.
    pub ignored: Vec<String>,
}

/// Settings that need nothing from kinit: accepted without a notice.
const FITTING: &[&str] = &[
    "defaults.retry_files_enabled",
    "defaults.interpreter_python",
    "defaults.deprecation_warnings",
    "defaults.command_warnings",
    "defaults.nocows",
    "defaults.nocolor",
    "defaults.host_key_checking",
    "ssh_connection.pipelining",
    "ssh_connection.control_path",
    "ssh_connection.control_path_dir",
    "ssh_connection.retries",
    "privilege_escalation.become_ask_pass",
];

/// Find and read the settings. `env` looks up an environment variable; `cwd` and `home` are
/// where `./ansible.cfg` and `~/.ansible.cfg` are looked for.
pub fn load(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<AnsibleSettings, AnsibleCfgError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = env("ANSIBLE_CONFIG").filter(|p| !p.is_empty()) {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(cwd.join("ansible.cfg"));
    if let Some(h) = home {
        candidates.push(h.join(".ansible.cfg"));
    }
    candidates.push(PathBuf::from("/etc/ansible/ansible.cfg"));
    let mut s = AnsibleSettings::default();
    if let Some(path) = candidates.into_iter().find(|p| p.is_file()) {
        let text = std::fs::read_to_string(&path).map_err(|source| AnsibleCfgError::Read {
            path: path.clone(),
            source,
        })?;
        read_file(&mut s, &path, &text)?;
        s.file = Some(path);
    }
    read_env(&mut s, env)?;
    Ok(s)
}

fn read_file(s: &mut AnsibleSettings, path: &Path, text: &str) -> Result<(), AnsibleCfgError> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let rel = |v: &str| -> PathBuf {
        let p = expand_home(v);
        if p.is_absolute() { p } else { dir.join(p) }
    };
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        let Some((key, value)) = line.split_once(['=', ':']) else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let bad = |expected| AnsibleCfgError::Value {
            path: path.to_path_buf(),
            line: i + 1,
            key: key.to_string(),
            value: value.to_string(),
            expected,
        };
        // A `:`-separated list of folders, each relative to the file's folder.
        let folders =
            |v: &str| -> Vec<PathBuf> { v.split(':').filter(|v| !v.is_empty()).map(rel).collect() };
        match (section.as_str(), key) {
            ("defaults", "inventory" | "hostfile") => {
                s.inventory = value
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(|v| rel(v).display().to_string())
                    .collect();
            }
            ("defaults", "roles_path") => s.roles_path = folders(value),
            ("defaults", "library") => s.library = folders(value),
            ("defaults", "filter_plugins") => s.filter_plugins = folders(value),
            ("defaults", "test_plugins") => s.test_plugins = folders(value),
            ("defaults", "lookup_plugins") => s.lookup_plugins = folders(value),
            ("defaults", "collections_path" | "collections_paths") => {
                s.collections_path = Some(folders(value));
            }
            ("defaults", "remote_user") => s.remote_user = Some(value.to_string()),
            ("defaults", "private_key_file") => s.private_key_file = Some(rel(value)),
            ("defaults", "forks") => {
                s.forks = Some(value.parse().map_err(|_| bad("a whole number"))?);
            }
            ("defaults", "host_key_checking") => {
                s.host_key_checking = Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("defaults", "timeout") => {
                s.timeout = Some(value.parse().map_err(|_| bad("seconds"))?);
            }
            ("defaults", "force_handlers") => {
                s.force_handlers = boolean(value).ok_or_else(|| bad("a boolean"))?;
            }
            ("defaults", "allow_broken_conditionals") => {
                s.allow_broken_conditionals = boolean(value).ok_or_else(|| bad("a boolean"))?;
            }
            ("defaults", "display_ok_hosts") => {
                s.display_ok_hosts = Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("defaults", "display_skipped_hosts") => {
                s.display_skipped_hosts = Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("defaults", "show_custom_stats") => {
                s.show_custom_stats = boolean(value).ok_or_else(|| bad("a boolean"))?;
            }
            ("defaults", "error_on_missing_handler") => {
                s.error_on_missing_handler = Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("defaults", "hash_behaviour") => {
                s.hash_merge = hash_merge(value).ok_or_else(|| bad("replace or merge"))?;
            }
            ("defaults", "gathering") => {
                s.gathering = gathering(value).ok_or_else(|| bad("implicit, explicit or smart"))?;
            }
            ("defaults", "fact_caching") => s.fact_caching.plugin = Some(value.to_string()),
            ("defaults", "fact_caching_connection") => {
                s.fact_caching.connection = Some(rel(value));
            }
            ("defaults", "fact_caching_prefix") => {
                s.fact_caching.prefix = Some(value.to_string());
            }
            ("defaults", "fact_caching_timeout") => {
                s.fact_caching.timeout = Some(value.parse().map_err(|_| bad("seconds"))?);
            }
            ("privilege_escalation", "become") => {
                s.become_ = Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("privilege_escalation", "become_user") => s.become_user = Some(value.to_string()),
            ("privilege_escalation", "become_method") => {
                s.become_method = Some(value.to_string());
            }
            ("ssh_connection", "ssh_args") => s.ssh_args = Some(value.to_string()),
            ("defaults", "vault_password_file") => s.vault_password_file = Some(rel(value)),
            ("defaults", "vault_identity_list") => s.vault_identity_list = list(value),
            ("defaults", "vault_id_match") => {
                s.vault_id_match = boolean(value).ok_or_else(|| bad("a boolean"))?;
            }
            ("defaults", "localhost_warning") => {
                s.localhost_warning = Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("inventory", "unparsed_warning") => {
                s.inventory_unparsed_warning =
                    Some(boolean(value).ok_or_else(|| bad("a boolean"))?);
            }
            ("inventory", "unparsed_is_failed") => {
                s.inventory_unparsed_is_failed = boolean(value).ok_or_else(|| bad("a boolean"))?;
            }
            ("inventory", "any_unparsed_is_failed") => {
                s.inventory_any_unparsed_is_failed =
                    boolean(value).ok_or_else(|| bad("a boolean"))?;
            }
            _ => {
                let name = format!("{section}.{key}");
                if !FITTING.contains(&name.as_str()) && !s.ignored.contains(&name) {
                    s.ignored.push(name);
                }
            }
        }
    }
    Ok(())
}

fn read_env(
    s: &mut AnsibleSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), AnsibleCfgError> {
    let get = |k: &str| env(k).filter(|v| !v.is_empty());
    let bad = |var: &'static str, value: String, expected| AnsibleCfgError::Env {
        var,
        value,
        expected,
    };
    if let Some(v) = get("ANSIBLE_INVENTORY") {
        s.inventory = v.split(',').map(|p| p.trim().to_string()).collect();
    }
    let folders = |v: String| -> Vec<PathBuf> {
        std::env::split_paths(&v)
            .map(|p| expand_home(&p.to_string_lossy()))
            .collect()
    };
    if let Some(v) = get("ANSIBLE_LIBRARY") {
        s.library = folders(v);
    }
    if let Some(v) = get("ANSIBLE_FILTER_PLUGINS") {
        s.filter_plugins = folders(v);
    }
    if let Some(v) = get("ANSIBLE_TEST_PLUGINS") {
        s.test_plugins = folders(v);
    }
    if let Some(v) = get("ANSIBLE_LOOKUP_PLUGINS") {
        s.lookup_plugins = folders(v);
    }
    if let Some(v) = get("ANSIBLE_COLLECTIONS_PATH").or_else(|| get("ANSIBLE_COLLECTIONS_PATHS")) {
        s.collections_path = Some(folders(v));
    }
    if let Some(v) = get("ANSIBLE_REMOTE_USER") {
        s.remote_user = Some(v);
    }
    if let Some(v) = get("ANSIBLE_PRIVATE_KEY_FILE") {
        s.private_key_file = Some(expand_home(&v));
    }
    if let Some(v) = get("ANSIBLE_FORKS") {
        s.forks = Some(
            v.parse()
                .map_err(|_| bad("ANSIBLE_FORKS", v, "a whole number"))?,
        );
    }
    if let Some(v) = get("ANSIBLE_HOST_KEY_CHECKING") {
        s.host_key_checking =
            Some(boolean(&v).ok_or_else(|| bad("ANSIBLE_HOST_KEY_CHECKING", v, "a boolean"))?);
    }
    if let Some(v) = get("ANSIBLE_TIMEOUT") {
        s.timeout = Some(
            v.parse()
                .map_err(|_| bad("ANSIBLE_TIMEOUT", v, "seconds"))?,
        );
    }
    if let Some(v) = get("ANSIBLE_FORCE_HANDLERS") {
        s.force_handlers =
            boolean(&v).ok_or_else(|| bad("ANSIBLE_FORCE_HANDLERS", v, "a boolean"))?;
    }
    if let Some(v) = get("ANSIBLE_ALLOW_BROKEN_CONDITIONALS") {
        s.allow_broken_conditionals =
            boolean(&v).ok_or_else(|| bad("ANSIBLE_ALLOW_BROKEN_CONDITIONALS", v, "a boolean"))?;
    }
    if let Some(v) = get("ANSIBLE_DISPLAY_OK_HOSTS") {
        s.display_ok_hosts =
            Some(boolean(&v).ok_or_else(|| bad("ANSIBLE_DISPLAY_OK_HOSTS", v, "a boolean"))?);
    }
    if let Some(v) = get("ANSIBLE_DISPLAY_SKIPPED_HOSTS") {
        s.display_skipped_hosts =
            Some(boolean(&v).ok_or_else(|| bad("ANSIBLE_DISPLAY_SKIPPED_HOSTS", v, "a boolean"))?);
    }
    if let Some(v) = get("ANSIBLE_SHOW_CUSTOM_STATS") {
        s.show_custom_stats =
            boolean(&v).ok_or_else(|| bad("ANSIBLE_SHOW_CUSTOM_STATS", v, "a boolean"))?;
    }
    if let Some(v) = get("ANSIBLE_ERROR_ON_MISSING_HANDLER") {
        s.error_on_missing_handler = Some(
            boolean(&v).ok_or_else(|| bad("ANSIBLE_ERROR_ON_MISSING_HANDLER", v, "a boolean"))?,
        );
    }
    if let Some(v) = get("ANSIBLE_HASH_BEHAVIOUR") {
        s.hash_merge =
            hash_merge(&v).ok_or_else(|| bad("ANSIBLE_HASH_BEHAVIOUR", v, "replace or merge"))?;
    }
    if let Some(v) = get("ANSIBLE_GATHERING") {
        s.gathering = gathering(&v)
            .ok_or_else(|| bad("ANSIBLE_GATHERING", v, "implicit, explicit or smart"))?;
    }
    if let Some(v) = get("ANSIBLE_CACHE_PLUGIN") {
        s.fact_caching.plugin = Some(v);
    }
    if let Some(v) = get("ANSIBLE_CACHE_PLUGIN_CONNECTION") {
        s.fact_caching.connection = Some(expand_home(&v));
    }
    if let Some(v) = get("ANSIBLE_CACHE_PLUGIN_PREFIX") {
        s.fact_caching.prefix = Some(v);
    }
    if let Some(v) = get("ANSIBLE_CACHE_PLUGIN_TIMEOUT") {
        s.fact_caching.timeout = Some(
            v.parse()
                .map_err(|_| bad("ANSIBLE_CACHE_PLUGIN_TIMEOUT", v, "seconds"))?,
        );
    }
    if let Some(v) = get("ANSIBLE_BECOME") {
        s.become_ = Some(boolean(&v).ok_or_else(|| bad("ANSIBLE_BECOME", v, "a boolean"))?);
    }
    if let Some(v) = get("ANSIBLE_BECOME_USER") {
        s.become_user = Some(v);
    }
    if let Some(v) = get("ANSIBLE_BECOME_METHOD") {
        s.become_method = Some(v);
    }
    if let Some(v) = get("ANSIBLE_SSH_ARGS") {
        s.ssh_args = Some(v);
    }
    if let Some(v) = get("ANSIBLE_VAULT_PASSWORD_FILE") {
        s.vault_password_file = Some(expand_home(&v));
    }
    if let Some(v) = get("ANSIBLE_VAULT_IDENTITY_LIST") {
        s.vault_identity_list = list(&v);
    }
    if let Some(v) = get("ANSIBLE_VAULT_ID_MATCH") {
        s.vault_id_match =
            boolean(&v).ok_or_else(|| bad("ANSIBLE_VAULT_ID_MATCH", v, "a boolean"))?;
    }
    if let Some(v) = get("ANSIBLE_LOCALHOST_WARNING") {
        s.localhost_warning =
            Some(boolean(&v).ok_or_else(|| bad("ANSIBLE_LOCALHOST_WARNING", v, "a boolean"))?);
    }
    if let Some(v) = get("ANSIBLE_INVENTORY_UNPARSED_WARNING") {
        s.inventory_unparsed_warning = Some(
            boolean(&v).ok_or_else(|| bad("ANSIBLE_INVENTORY_UNPARSED_WARNING", v, "a boolean"))?,
        );
    }
    if let Some(v) = get("ANSIBLE_INVENTORY_UNPARSED_FAILED") {
        s.inventory_unparsed_is_failed =
            boolean(&v).ok_or_else(|| bad("ANSIBLE_INVENTORY_UNPARSED_FAILED", v, "a boolean"))?;
    }
    if let Some(v) = get("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED") {
        s.inventory_any_unparsed_is_failed = boolean(&v)
            .ok_or_else(|| bad("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", v, "a boolean"))?;
    }
    Ok(())
}

/// A `type: list` setting: comma-separated, each item trimmed.
fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// Ansible's boolean spellings (`yes`, `on`, `1`, `true`, any case).
fn boolean(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "yes" | "y" | "on" | "1" | "true" | "t" => Some(true),
        "no" | "n" | "off" | "0" | "false" | "f" => Some(false),
        _ => None,
    }
}

fn gathering(v: &str) -> Option<Gathering> {
    match v.trim() {
        "implicit" => Some(Gathering::Implicit),
        "explicit" => Some(Gathering::Explicit),
        "smart" => Some(Gathering::Smart),
        _ => None,
    }
}

/// `hash_behaviour`: whether it is `merge` (`None` for a word that is neither choice).
fn hash_merge(v: &str) -> Option<bool> {
    match v.trim() {
        "replace" => Some(false),
        "merge" => Some(true),
        _ => None,
    }
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_environment_with_relative_paths_and_notices() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ansible.cfg"),
            "# comment\n[defaults]\ninventory = hosts.ini\nroles_path = roles:/opt/roles\n\
             forks = 7\nhost_key_checking = False\nremote_user = deploy\ngathering = explicit\n\
             stdout_callback = yaml\nretry_files_enabled = False\n\
             [privilege_escalation]\nbecome = yes\n[ssh_connection]\nssh_args = -o ControlMaster=auto\n",
        )
        .unwrap();
        let env = |k: &str| (k == "ANSIBLE_FORKS").then(|| "9".to_string());
        let s = load(&env, dir.path(), None).unwrap();
        assert_eq!(
            s.inventory,
            [dir.path().join("hosts.ini").display().to_string()]
        );
        assert_eq!(
            s.roles_path,
            [dir.path().join("roles"), PathBuf::from("/opt/roles")]
        );
        assert_eq!(s.forks, Some(9), "the environment beats the file");
        assert_eq!(s.host_key_checking, Some(false));
        assert_eq!(s.remote_user.as_deref(), Some("deploy"));
        assert_eq!(s.gathering, Gathering::Explicit);
        assert_eq!(s.become_, Some(true));
        assert_eq!(s.ssh_args.as_deref(), Some("-o ControlMaster=auto"));
        assert_eq!(s.ignored, ["defaults.stdout_callback"]);
    }

    #[test]
    fn vault_settings_come_from_the_file_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ansible.cfg"),
            "[defaults]\nvault_password_file = pw.txt\nvault_identity_list = dev@a, prod@prompt\n\
             vault_id_match = yes\n",
        )
        .unwrap();
        let s = load(&|_| None, dir.path(), None).unwrap();
        assert_eq!(s.vault_password_file, Some(dir.path().join("pw.txt")));
        assert_eq!(s.vault_identity_list, ["dev@a", "prod@prompt"]);
        assert!(s.vault_id_match);
        assert!(s.ignored.is_empty(), "{:?}", s.ignored);
        let env = |k: &str| match k {
            "ANSIBLE_VAULT_PASSWORD_FILE" => Some("/etc/pw".to_string()),
            "ANSIBLE_VAULT_IDENTITY_LIST" => Some("ops@/x".to_string()),
            "ANSIBLE_VAULT_ID_MATCH" => Some("false".to_string()),
            _ => None,
        };
        let s = load(&env, dir.path(), None).unwrap();
        assert_eq!(s.vault_password_file, Some(PathBuf::from("/etc/pw")));
        assert_eq!(s.vault_identity_list, ["ops@/x"]);
        assert!(!s.vault_id_match, "the environment beats the file");
    }

    #[test]
    fn fact_cache_settings_come_from_the_file_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ansible.cfg"),
            "[defaults]\nfact_caching = jsonfile\nfact_caching_connection = facts\n\
             fact_caching_prefix = p_\nfact_caching_timeout = 600\n",
        )
        .unwrap();
        let s = load(&|_| None, dir.path(), None).unwrap();
        assert_eq!(
            s.fact_caching,
            FactCaching {
                plugin: Some("jsonfile".into()),
                connection: Some(dir.path().join("facts")),
                prefix: Some("p_".into()),
                timeout: Some(600),
            }
        );
        assert!(s.ignored.is_empty(), "{:?}", s.ignored);
        let env = |k: &str| match k {
            "ANSIBLE_CACHE_PLUGIN" => Some("memory".to_string()),
            "ANSIBLE_CACHE_PLUGIN_CONNECTION" => Some("/var/cache/facts".to_string()),
            "ANSIBLE_CACHE_PLUGIN_TIMEOUT" => Some("soon".to_string()),
            _ => None,
        };
        let err = load(&env, dir.path(), None).unwrap_err().to_string();
        assert_eq!(
            err,
            "`ANSIBLE_CACHE_PLUGIN_TIMEOUT` = `soon`: expected seconds"
        );
        let env = |k: &str| {
            (k != "ANSIBLE_CACHE_PLUGIN_TIMEOUT")
                .then(|| env(k))
                .flatten()
        };
        let s = load(&env, dir.path(), None).unwrap();
        assert_eq!(s.fact_caching.plugin.as_deref(), Some("memory"));
        assert_eq!(
            s.fact_caching.connection,
            Some(PathBuf::from("/var/cache/facts"))
        );
    }

    #[test]
    fn a_bad_value_names_file_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ansible.cfg"), "[defaults]\nforks = many\n").unwrap();
        let err = load(&|_| None, dir.path(), None).unwrap_err().to_string();
        assert!(
            err.ends_with("ansible.cfg:2: `forks` = `many`: expected a whole number"),
            "{err}"
        );
    }
}
