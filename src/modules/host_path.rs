//! Path-typed module arguments, expanded on the host as Ansible's argument spec expands every
//! `type='path'` value: `os.path.expanduser(os.path.expandvars(value))`
//! (ansible-core `module_utils/common/validation.py`, `check_type_path`). The module runs on
//! the host, so `~` is the home and `$VAR` the environment of the user the module runs as there
//! (the become user, the task's `environment:` on top), never the controller's.
//!
//! A params field says it is a path with `#[serde(deserialize_with = "host_path::opt")]` (or
//! `one`, `list`). Parsing (`parse`) runs the deserializers with what is already known of the
//! host: the task's `environment:` and this connection's `HostEnv` cache. A `~`/`$VAR` not
//! known yet is noted; then one command looks up everything noted, the cache keeps it, and the
//! params are parsed again. Arguments without `~` or `$` cost nothing; each variable and home is
//! looked up at most once per connection and become user. Where nothing is at hand (load-time
//! validation, `kinit plan --render`) the text stays as written.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

use crate::transport::quote::sh;
use crate::transport::{ExecRequest, ShellKind};

use super::{ModuleCtx, ModuleError};

/// One thing looked up on the host.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    /// An environment variable (`$NAME`, `${NAME}`).
    Var(String),
    /// A home folder: `~` (the user's own, `$HOME` first) or `~name`.
    Home(Option<String>),
}

/// The answers for one user: a looked-up key maps to `None` when the host has no such variable
/// or user.
type Answers = HashMap<Key, Option<String>>;

/// What is known of one host's environment, per become user (`None`: the login user).
#[derive(Debug, Default)]
pub struct HostEnv {
    known: Mutex<HashMap<Option<String>, Answers>>,
    /// Commands run to look things up (each answers every key one parse needs).
    lookups: AtomicUsize,
}

impl HostEnv {
    /// How many lookup commands this connection has run.
    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::Relaxed)
    }
}

/// What the deserializers see while one `parse` runs.
struct Scope {
    task_env: Vec<(String, String)>,
    known: Answers,
    missing: BTreeSet<Key>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Deserialize a module's typed params with their path arguments expanded on the host.
pub async fn parse<T: DeserializeOwned>(
    module: &'static str,
    args: &Value,
    ctx: &ModuleCtx<'_>,
) -> Result<T, ModuleError> {
    let user = ctx
        .become_
        .as_ref()
        .map(|b| b.user.clone().unwrap_or_default());
    let (p, missing) = parse_in_scope::<T>(module, args, ctx, &user)?;
    if missing.is_empty() || ctx.conn.shell() != ShellKind::Posix {
        return Ok(p);
    }
    lookup(ctx, &user, &missing).await?;
    let (p, missing) = parse_in_scope::<T>(module, args, ctx, &user)?;
    if missing.is_empty() {
        return Ok(p);
    }
    // A `~name` that only appeared once a variable was expanded (`$X` holding `~bob`).
    lookup(ctx, &user, &missing).await?;
    Ok(parse_in_scope::<T>(module, args, ctx, &user)?.0)
}

/// Expand one path on the host (for a path whose meaning depends on another argument, as
/// `copy`'s `src` is a host path only with `remote_src`).
pub async fn expand(ctx: &ModuleCtx<'_>, path: &str) -> Result<String, ModuleError> {
    #[derive(Deserialize)]
    struct One(#[serde(deserialize_with = "one")] String);
    let One(p) = parse("path", &Value::from(path), ctx).await?;
    Ok(p)
}

/// `expand` with a leading `~` as an action plugin expands it (see `expand_in_scope`).
pub async fn expand_action(ctx: &ModuleCtx<'_>, path: &str) -> Result<String, ModuleError> {
    #[derive(Deserialize)]
    struct One(#[serde(deserialize_with = "action_one")] String);
    let One(p) = parse("path", &Value::from(path), ctx).await?;
    Ok(p)
}

fn parse_in_scope<T: DeserializeOwned>(
    module: &'static str,
    args: &Value,
    ctx: &ModuleCtx<'_>,
    user: &Option<String>,
) -> Result<(T, BTreeSet<Key>), ModuleError> {
    let known = ctx
        .host_env
        .known
        .lock()
        .unwrap()
        .get(user)
        .cloned()
        .unwrap_or_default();
    let scope = Scope {
        task_env: ctx.env.clone(),
        known,
        missing: BTreeSet::new(),
    };
    SCOPE.with(|s| *s.borrow_mut() = Some(scope));
    let parsed = super::args::parse::<T>(module, args);
    let scope = SCOPE.with(|s| s.borrow_mut().take());
    Ok((parsed?, scope.map(|s| s.missing).unwrap_or_default()))
}

/// Look `keys` up on the host in one command, as the module's user, without the task's
/// environment (that is applied on top when expanding), and remember the answers.
async fn lookup(
    ctx: &ModuleCtx<'_>,
    user: &Option<String>,
    keys: &BTreeSet<Key>,
) -> Result<(), ModuleError> {
    let mut script = String::new();
    for key in keys {
        // Each answer is `S<value>` or `U` (unset / no such user), NUL-terminated.
        let line = match key {
            Key::Var(name) => format!(
                "if [ \"${{{name}+x}}\" ]; then printf 'S%s\\000' \"${name}\"; \
                 else printf 'U\\000'; fi\n"
            ),
            Key::Home(None) => "printf 'S%s\\000' ~\n".to_string(),
            // The shell leaves `~name` as written for an unknown user, as Python does.
            Key::Home(Some(name)) => format!(
                "h=~{name}; if [ \"$h\" = {lit} ]; then printf 'U\\000'; \
                 else printf 'S%s\\000' \"$h\"; fi\n",
                lit = sh(&format!("~{name}"))
            ),
        };
        script.push_str(&line);
    }
    let req = ExecRequest {
        script,
        become_: ctx.become_.clone(),
        timeout: ctx.timeout,
        ..ExecRequest::default()
    };
    ctx.host_env.lookups.fetch_add(1, Ordering::Relaxed);
    let out = ctx.conn.exec(&req).await?;
    let answers: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    if out.rc != 0 || answers.len() != keys.len() + 1 {
        return Err(ModuleError::Failed {
            msg: format!(
                "could not read the host's environment to expand a path (rc {}): {}",
                out.rc,
                out.stderr_str().trim()
            ),
        });
    }
    let mut known = ctx.host_env.known.lock().unwrap();
    let known = known.entry(user.clone()).or_default();
    for (key, answer) in keys.iter().zip(answers) {
        let value = answer
            .strip_prefix(b"S")
            .map(|v| String::from_utf8_lossy(v).into_owned());
        known.insert(key.clone(), value);
    }
    Ok(())
}

/// `text` expanded with what `scope` knows; `None` when something must be looked up first
/// (noted in `scope.missing`).
fn expand_known(text: &str, scope: &mut Scope, task_home: bool) -> Option<String> {
    let vars = expand_vars(text, &mut |name| {
        if let Some((_, v)) = scope.task_env.iter().rev().find(|(k, _)| k == name) {
            return Some(Some(v.clone()));
        }
        if !is_shell_name(name) {
            // Only a shell name can be asked of the host; Python would find no such
            // variable in practice either.
            return Some(None);
        }
        let key = Key::Var(name.to_string());
        let found = scope.known.get(&key).cloned();
        if found.is_none() {
            scope.missing.insert(key);
        }
        found
    });
    // Variables still unknown: the leading `~` as written is looked up in the same command.
    let vars_done = vars.is_some();
    let vars = vars.unwrap_or_else(|| text.to_string());
    let expanded = expand_user(&vars, &mut |user| {
        if user.is_none()
            && task_home
            && let Some((_, home)) = scope.task_env.iter().rev().find(|(k, _)| k == "HOME")
        {
            return Some(Some(home.clone()));
        }
        let key = Key::Home(user.map(str::to_string));
        let found = scope.known.get(&key).cloned();
        if found.is_none() {
            scope.missing.insert(key);
        }
        found
    });
    expanded.filter(|_| vars_done)
}

fn is_shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) use crate::template::expand_vars;

/// Python's `posixpath.expanduser`: a leading `~` or `~name` (up to the first `/`) becomes
/// that home, without its trailing slashes; an unknown user leaves the text as it is.
fn expand_user(
    text: &str,
    home: &mut impl FnMut(Option<&str>) -> Option<Option<String>>,
) -> Option<String> {
    let Some(after) = text.strip_prefix('~') else {
        return Some(text.to_string());
    };
    let end = after.find('/').unwrap_or(after.len());
    let name = &after[..end];
    let user = if name.is_empty() {
        None
    } else if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        Some(name)
    } else {
        // Not a name the host's shell can look up; left as written.
        return Some(text.to_string());
    };
    match home(user)? {
        Some(dir) => {
            let joined = format!("{}{}", dir.trim_end_matches('/'), &after[end..]);
            Some(if joined.is_empty() {
                "/".to_string()
            } else {
                joined
            })
        }
        None => Some(text.to_string()),
    }
}

/// Expand `text` in the current `parse`, or keep it when no parse on a host is running.
/// `task_home`: a leading `~` may be the task's `environment:` HOME (a module's expansion);
/// without it `~` is the user's own home, as an action plugin's `_remote_expand_user` finds
/// it with a command of its own before the module runs (`copy`, `template`, `assemble` and
/// `unarchive` destinations, ansible-core `plugins/action/__init__.py`).
fn expand_in_scope(text: String, task_home: bool) -> String {
    if !text.contains('$') && !text.starts_with('~') {
        return text;
    }
    SCOPE.with(|s| match s.borrow_mut().as_mut() {
        Some(scope) => expand_known(&text, scope, task_home).unwrap_or(text),
        None => text,
    })
}

/// A required path argument (a string; a number is taken as its text, as Ansible's `str`).
pub fn one<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = super::args::opt_stringish(d)?.unwrap_or_default();
    Ok(expand_in_scope(s, true))
}

/// A required path argument whose leading `~` an action plugin expands (see
/// `expand_in_scope`).
pub fn action_one<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = super::args::opt_stringish(d)?.unwrap_or_default();
    Ok(expand_in_scope(s, false))
}

/// An optional path argument.
pub fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(super::args::opt_stringish(d)?.map(|s| expand_in_scope(s, true)))
}

/// An optional path argument whose leading `~` an action plugin expands.
pub fn action_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(super::args::opt_stringish(d)?.map(|s| expand_in_scope(s, false)))
}

/// A list of paths (a YAML list or one comma-separated string).
pub fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(super::args::list(d)?
        .into_iter()
        .map(|s| expand_in_scope(s, true))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl FnMut(&str) -> Option<Option<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| Some(map.get(name).cloned())
    }

    #[test]
    fn variables_expand_as_python_expandvars() {
        let mut e = env(&[("HOME", "/home/u"), ("A_1", "x")]);
        assert_eq!(
            expand_vars("$HOME/.ssh/${A_1}y", &mut e).unwrap(),
            "/home/u/.ssh/xy"
        );
        assert_eq!(expand_vars("$NOPE/a", &mut e).unwrap(), "$NOPE/a");
        assert_eq!(expand_vars("${NOPE}/a", &mut e).unwrap(), "${NOPE}/a");
        assert_eq!(expand_vars("a$/b$", &mut e).unwrap(), "a$/b$");
        assert_eq!(expand_vars("${unclosed", &mut e).unwrap(), "${unclosed");
        let mut unknown = |_: &str| None;
        assert_eq!(expand_vars("$HOME", &mut unknown), None);
    }

    #[test]
    fn tilde_expands_as_python_expanduser() {
        let mut h = |u: Option<&str>| match u {
            None => Some(Some("/home/u/".to_string())),
            Some("bob") => Some(Some("/home/bob".to_string())),
            Some("root") => Some(Some("/".to_string())),
            Some(_) => Some(None),
        };
        assert_eq!(expand_user("~", &mut h).unwrap(), "/home/u");
        assert_eq!(expand_user("~/a", &mut h).unwrap(), "/home/u/a");
        assert_eq!(expand_user("~bob/a", &mut h).unwrap(), "/home/bob/a");
        assert_eq!(expand_user("~root", &mut h).unwrap(), "/");
        assert_eq!(expand_user("~nobody/a", &mut h).unwrap(), "~nobody/a");
        assert_eq!(expand_user("a/~", &mut h).unwrap(), "a/~");
    }

    #[test]
    fn without_a_host_paths_stay_as_written() {
        #[derive(Deserialize)]
        struct P {
            #[serde(deserialize_with = "one")]
            dest: String,
        }
        let p: P = super::super::args::parse("copy", &serde_json::json!({"dest": "~/x"})).unwrap();
        assert_eq!(p.dest, "~/x");
    }

    #[test]
    fn the_task_environment_wins_and_unknowns_are_noted() {
        let mut scope = Scope {
            task_env: vec![("HOME".into(), "/t".into()), ("X".into(), "1".into())],
            known: HashMap::new(),
            missing: BTreeSet::new(),
        };
        assert_eq!(expand_known("~/$X", &mut scope, true).unwrap(), "/t/1");
        assert_eq!(expand_known("$Y/~", &mut scope, true), None);
        // An action plugin's `~` is the user's own home, not the task's HOME.
        assert_eq!(expand_known("~/$X", &mut scope, false), None);
        scope.known.insert(Key::Home(None), Some("/home/u".into()));
        assert_eq!(
            expand_known("~/$X", &mut scope, false).unwrap(),
            "/home/u/1"
        );
        assert_eq!(
            scope.missing.iter().collect::<Vec<_>>(),
            [&Key::Var("Y".into()), &Key::Home(None)]
        );
    }
}
