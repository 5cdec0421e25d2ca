//! The fact cache: facts that outlive a run, as ansible.cfg's `fact_caching = jsonfile` keeps
//! them. With `memory` (the default) facts live as long as the run, which the host states
//! already do, so only `jsonfile` has a store here.
//!
//! The files are ansible-core 2.19's, so kinit and ansible-playbook share one cache: one file
//! per host, `<fact_caching_connection>/<fact_caching_prefix>s1_<host>` (2.19 puts its cache
//! schema, `s1_`, before the host name: `_internal/_plugins/_cache.py`), holding
//! `{"__payload__": "<the facts as JSON text>"}`. The facts are as a module returned them
//! (`ansible_distribution`, a `cacheable` `set_fact`'s own names), with
//! `_ansible_facts_gathered` once fact gathering ran. ansible-core tags values with where they
//! came from (`{"__ansible_type": ..., "value": ..., "tags": [...]}`); kinit reads the value
//! and writes plain JSON, which ansible-core reads as untagged values.
//!
//! A file older than `fact_caching_timeout` seconds (86400 unless set; 0 never expires) is
//! not read. A store that cannot be written, or a file that cannot be read, is a warning: the
//! run goes on with the facts it has (ansible-core likewise falls back to memory when its
//! cache plugin cannot start).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::ansible_cfg::FactCaching;

/// The cache schema ansible-core 2.19 puts before each host's name.
const SCHEMA: &str = "s1_";
const PAYLOAD: &str = "__payload__";
/// `fact_caching_timeout`'s default, in seconds.
const DEFAULT_TIMEOUT: u64 = 86_400;
/// The key ansible-core's cache marks a host whose facts were gathered with (`gathering =
/// smart` does not gather such a host again).
pub const GATHERED: &str = "_ansible_facts_gathered";

/// A `jsonfile` fact cache.
#[derive(Debug, Clone)]
pub struct FactCache {
    dir: PathBuf,
    prefix: String,
    timeout: Option<Duration>,
}

impl FactCache {
    /// The cache the settings ask for: `None` for `memory`. A plugin kinit does not have, or a
    /// `jsonfile` cache without a usable folder, is `Err(warning)`: the run keeps its facts in
    /// memory.
    pub fn open(s: &FactCaching) -> Result<Option<Self>, String> {
        let plugin = s.plugin.as_deref().unwrap_or("memory");
        match plugin.strip_prefix("ansible.builtin.").unwrap_or(plugin) {
            "memory" => return Ok(None),
            "jsonfile" => {}
            other => {
                return Err(format!(
                    "fact_caching = {other}: kinit has the `memory` and `jsonfile` fact caches; \
                     facts are kept in memory for this run"
                ));
            }
        }
        let Some(dir) = s.connection.clone().filter(|d| !d.as_os_str().is_empty()) else {
            return Err("the `jsonfile` fact cache needs `fact_caching_connection` \
                        (ANSIBLE_CACHE_PLUGIN_CONNECTION), a writable folder; facts are kept \
                        in memory for this run"
                .into());
        };
        std::fs::create_dir_all(&dir).map_err(|e| {
            format!(
                "cannot create the fact cache folder `{}`: {e}; facts are kept in memory for \
                 this run",
                dir.display()
            )
        })?;
        let timeout = s.timeout.unwrap_or(DEFAULT_TIMEOUT);
        Ok(Some(Self {
            dir,
            prefix: s.prefix.clone().unwrap_or_default(),
            timeout: (timeout > 0).then(|| Duration::from_secs(timeout)),
        }))
    }

    fn file(&self, host: &str) -> PathBuf {
        self.dir.join(format!("{}{SCHEMA}{host}", self.prefix))
    }

    /// `host`'s cached facts: `Ok(None)` when there are none or they are older than the
    /// timeout.
    pub fn load(&self, host: &str) -> Result<Option<Map<String, Value>>, String> {
        let path = self.file(host);
        let modified = match std::fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "cannot read the fact cache `{}`: {e}",
                    path.display()
                ));
            }
        };
        if self.expired(modified) {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the fact cache `{}`: {e}", path.display()))?;
        decode(&text).map(Some).map_err(|why| {
            format!(
                "the fact cache `{}` is not a fact cache file ({why}); its facts are not used",
                path.display()
            )
        })
    }

    fn expired(&self, modified: SystemTime) -> bool {
        match (self.timeout, SystemTime::now().duration_since(modified)) {
            (Some(t), Ok(age)) => age > t,
            _ => false,
        }
    }

    /// Replace `host`'s cached facts (a temp file renamed over the old one, as readable as
    /// ansible-core makes it: owner read-write, group read).
    pub fn store(&self, host: &str, facts: &Map<String, Value>) -> Result<(), String> {
        let path = self.file(host);
        let payload = Value::Object(facts.clone()).to_string();
        let text = serde_json::json!({ PAYLOAD: payload }).to_string();
        crate::atomic::write(&path, text.as_bytes(), 0o640)
            .map_err(|e| format!("cannot write the fact cache `{}`: {e}", path.display()))
    }

    /// Forget `host`'s cached facts (`--flush-cache`, `meta: clear_facts`).
    pub fn delete(&self, host: &str) -> Result<(), String> {
        match std::fs::remove_file(self.file(host)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!(
                "cannot remove the fact cache `{}`: {e}",
                self.file(host).display()
            )),
        }
    }
}

/// A cache file's facts: 2.19's `__payload__` envelope (or a bare mapping), values untagged.
fn decode(text: &str) -> Result<Map<String, Value>, String> {
    let outer: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let inner = match outer.get(PAYLOAD) {
        Some(Value::String(p)) => serde_json::from_str(p).map_err(|e| e.to_string())?,
        Some(_) => return Err(format!("`{PAYLOAD}` is not text")),
        None => outer,
    };
    match untag(inner) {
        Value::Object(m) => Ok(m),
        other => Err(format!("a mapping was expected, not {}", kind(&other))),
    }
}

/// A value without ansible-core's data tags: a tagged value (`__ansible_type` with `value`)
/// is its value; another typed object (a date) loses only its type marker.
fn untag(v: Value) -> Value {
    match v {
        Value::Object(mut m) if m.contains_key("__ansible_type") => match m.remove("value") {
            Some(inner) => untag(inner),
            None => {
                m.remove("__ansible_type");
                Value::Object(m.into_iter().map(|(k, v)| (k, untag(v))).collect())
            }
        },
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, untag(v))).collect()),
        Value::Array(a) => Value::Array(a.into_iter().map(untag).collect()),
        other => other,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn settings(dir: &Path) -> FactCaching {
        FactCaching {
            plugin: Some("jsonfile".into()),
            connection: Some(dir.to_path_buf()),
            prefix: Some("p_".into()),
            timeout: None,
        }
    }

    #[test]
    fn memory_needs_no_store_and_other_plugins_are_named() {
        assert!(FactCache::open(&FactCaching::default()).unwrap().is_none());
        let redis = FactCaching {
            plugin: Some("redis".into()),
            ..Default::default()
        };
        let err = FactCache::open(&redis).unwrap_err();
        assert!(err.starts_with("fact_caching = redis: "), "{err}");
        let no_dir = FactCaching {
            plugin: Some("ansible.builtin.jsonfile".into()),
            ..Default::default()
        };
        let err = FactCache::open(&no_dir).unwrap_err();
        assert!(err.contains("fact_caching_connection"), "{err}");
    }

    #[test]
    fn stores_and_loads_ansible_core_2_19_files() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FactCache::open(&settings(&dir.path().join("new")))
            .unwrap()
            .unwrap();
        let facts = json!({"ansible_os_family": "Debian", "foo": 1})
            .as_object()
            .cloned();
        cache.store("web1", facts.as_ref().unwrap()).unwrap();
        let file = dir.path().join("new/p_s1_web1");
        let text = std::fs::read_to_string(&file).unwrap();
        let outer: Value = serde_json::from_str(&text).unwrap();
        assert!(outer[PAYLOAD].is_string(), "{text}");
        assert_eq!(cache.load("web1").unwrap(), facts);
        assert_eq!(cache.load("web2").unwrap(), None);
        cache.delete("web1").unwrap();
        assert!(!file.exists());
        cache.delete("web1").unwrap();
    }

    #[test]
    fn tagged_values_are_read_as_their_values() {
        let payload = json!({
            "foo": {"value": 1, "tags": [{"path": "/p.yml", "__ansible_type": "Origin"}],
                    "__ansible_type": "_AnsibleTaggedInt"},
            "ansible_lst": [{"value": "a", "tags": [], "__ansible_type": "_AnsibleTaggedStr"}],
        })
        .to_string();
        let text = json!({ PAYLOAD: payload }).to_string();
        let m = decode(&text).unwrap();
        assert_eq!(Value::Object(m), json!({"foo": 1, "ansible_lst": ["a"]}));
        assert!(decode("[1]").unwrap_err().contains("a list"));
        assert!(decode("{").is_err());
    }

    #[test]
    fn an_old_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = settings(dir.path());
        s.timeout = Some(60);
        let cache = FactCache::open(&s).unwrap().unwrap();
        cache.store("h", &Map::new()).unwrap();
        assert!(cache.load("h").unwrap().is_some());
        let old = SystemTime::now() - Duration::from_secs(120);
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join("p_s1_h"))
            .unwrap();
        f.set_modified(old).unwrap();
        assert_eq!(cache.load("h").unwrap(), None);
        s.timeout = Some(0);
        let forever = FactCache::open(&s).unwrap().unwrap();
        assert!(forever.load("h").unwrap().is_some(), "0 never expires");
    }
}
