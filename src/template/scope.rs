//! The variables a template sees, as a minijinja object that templates lazily: a variable
//! whose value holds `{{ ... }}` is rendered when a template first reads it (with the same
//! variables, recursively, each variable once per scope), and a variable that reaches itself
//! again is reported as a cycle instead of overflowing the stack. `hostvars[h]` is another
//! scope over host `h`'s variables.
//!
//! Values made while running (registered results, `set_fact` values, facts) are data, never
//! templates: a command whose output holds `{{ x }}` registers that text, and reading it
//! gives it back as it is. ansible-core 2.19 templates only trusted text (from playbooks,
//! roles, inventories and vars files); everything a task produces is untrusted. The names of
//! such variables travel with the variables under `DATA_KEY` (see `data_names`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::Value as Json;

use crate::vars::VarMap;

/// Where `hostvars` gets each host's variables from (the executor's per-host state, or an
/// `Inventory`). The variables are returned unrendered; the scope templates them.
pub trait HostVarsSource: Send + Sync {
    /// Every host name, in inventory order.
    fn host_names(&self) -> Vec<String>;
    /// The variables of `host`, or `None` when there is no such host.
    fn vars_of(&self, host: &str) -> Option<Arc<VarMap>>;
}

impl HostVarsSource for crate::inventory::Inventory {
    fn host_names(&self) -> Vec<String> {
        self.hosts.keys().cloned().collect()
    }

    fn vars_of(&self, host: &str) -> Option<Arc<VarMap>> {
        if !self.has_host(host) {
            return None;
        }
        let mut vars = self.host_vars(host);
        crate::vars::overlay(&mut vars, &self.magic_vars(host));
        Some(Arc::new(vars))
    }
}

/// How many variables deep one template may reach through variables that template others
/// (`a: "{{ b }}"`, `b: "{{ c }}"`, ...) before it is refused; each level costs stack, and
/// a longer chain is a generated or broken variable set, not a real one.
pub(crate) const MAX_VAR_DEPTH: usize = 200;

/// A variable scope object (see the module doc).
pub(crate) struct LazyVars {
    pub env: Arc<Environment<'static>>,
    pub vars: Arc<VarMap>,
    pub hostvars: Option<Arc<dyn HostVarsSource>>,
    /// Rendered variables, so each is templated once per scope.
    cache: Mutex<HashMap<String, Value>>,
    /// Variables being rendered right now per thread, outermost first (for cycle reports).
    resolving: Mutex<Vec<(ThreadId, String)>>,
    /// Why each variable whose template met an undefined value is itself undefined (see
    /// `resolve`), told when a template uses one (`undefined_reason`).
    undefined_why: Mutex<HashMap<String, String>>,
}

/// The key under which a scope hands itself to `lookup('template')` (never enumerated).
pub(crate) const SELF_KEY: &str = "__kinit_scope__";

/// The variable (never visible to templates) listing the names whose values are data, not
/// templates: set by whoever builds the variables (the executor), read by every scope.
pub const DATA_KEY: &str = "__kinit_data__";

/// Whether `vars[DATA_KEY]` lists `name` (a scan of the registered names, without
/// allocating: it runs for every variable a template reads).
pub(crate) fn is_data(vars: &VarMap, name: &str) -> bool {
    vars.get(DATA_KEY)
        .and_then(Json::as_array)
        .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)))
}

impl std::fmt::Debug for LazyVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyVars")
            .field("vars", &self.vars.len())
            .finish()
    }
}

impl LazyVars {
    pub fn new(
        env: Arc<Environment<'static>>,
        vars: Arc<VarMap>,
        hostvars: Option<Arc<dyn HostVarsSource>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            env,
            vars,
            hostvars,
            cache: Mutex::default(),
            resolving: Mutex::default(),
            undefined_why: Mutex::default(),
        })
    }

    /// The value of variable `name`, rendered; `None` when it is not defined.
    fn resolve(self: &Arc<Self>, name: &str) -> Option<Value> {
        if let Some(v) = self.cache.lock().unwrap().get(name) {
            return Some(v.clone());
        }
        if name == DATA_KEY {
            return None;
        }
        let raw = self.vars.get(name)?;
        // A mapping that carries its own `DATA_KEY` is another host's variables (the
        // delegated host's in `ansible_delegated_vars`): a scope of its own, templated
        // lazily with its own variables, its data kept as data.
        if let Json::Object(inner) = raw
            && inner.contains_key(DATA_KEY)
        {
            let nested = LazyVars::new(
                self.env.clone(),
                Arc::new(inner.clone()),
                self.hostvars.clone(),
            );
            let value = Value::from_dyn_object(nested);
            self.cache
                .lock()
                .unwrap()
                .insert(name.to_string(), value.clone());
            return Some(value);
        }
        if is_data(&self.vars, name) {
            let value = Value::from_serialize(raw);
            self.cache
                .lock()
                .unwrap()
                .insert(name.to_string(), value.clone());
            return Some(value);
        }
        {
            let me = std::thread::current().id();
            let mut stack = self.resolving.lock().unwrap();
            let mine: Vec<&str> = stack
                .iter()
                .filter(|(t, _)| *t == me)
                .map(|(_, n)| n.as_str())
                .collect();
            if mine.len() >= MAX_VAR_DEPTH {
                let msg = format!(
                    "variables refer to variables more than {MAX_VAR_DEPTH} levels deep: {} -> \
                     ... -> {} -> {name}",
                    mine[..3].join(" -> "),
                    mine[mine.len() - 2..].join(" -> ")
                );
                return Some(Value::from(Error::new(ErrorKind::InvalidOperation, msg)));
            }
            if let Some(pos) = mine.iter().position(|n| *n == name) {
                let mut chain: Vec<&str> = mine[pos..].to_vec();
                chain.push(name);
                let msg = format!(
                    "recursive loop detected in template: variable `{name}` refers to itself \
                     through {}",
                    chain.join(" -> ")
                );
                return Some(Value::from(Error::new(ErrorKind::InvalidOperation, msg)));
            }
            stack.push((me, name.to_string()));
        }
        let ctx = Value::from_dyn_object(self.clone());
        let result = variable_to_value(&self.env, raw, &ctx);
        {
            let me = std::thread::current().id();
            let mut stack = self.resolving.lock().unwrap();
            if let Some(pos) = stack.iter().rposition(|(t, _)| *t == me) {
                stack.remove(pos);
            }
        }
        // An error is kept like a value: a template may read a variable more than once, and
        // each read re-rendering a failing chain of variables doubled the work per level
        // (a chain of 20 ending in an undefined variable took a minute).
        let value = match result {
            Ok(v) => v,
            // A variable whose template meets an undefined value is undefined itself, as
            // ansible-core 2.19 propagates its undefined marker: with `a: "{{ nope }}"`,
            // `a is defined` is false and `a | default(1)` is 1; a template that uses `a`
            // fails for the reason (`'nope' is undefined`), told by `undefined_reason`.
            Err(e) if e.kind() == ErrorKind::UndefinedError => {
                let why = describe(&e);
                let why = match why.starts_with(IN_VARIABLE) {
                    true => why,
                    false => format!("{IN_VARIABLE}{name}`: {why}"),
                };
                self.undefined_why
                    .lock()
                    .unwrap()
                    .insert(name.to_string(), why);
                Value::UNDEFINED
            }
            // The innermost variable is the one to report; outer ones only repeat it.
            Err(e)
                if describe(&e).starts_with(IN_VARIABLE)
                    || describe(&e).starts_with("recursive loop") =>
            {
                Value::from(e)
            }
            Err(e) => {
                let msg = format!("{IN_VARIABLE}{name}`: {}", describe(&e));
                Value::from(Error::new(e.kind(), msg))
            }
        };
        self.cache
            .lock()
            .unwrap()
            .insert(name.to_string(), value.clone());
        Some(value)
    }
}

/// How an error met while templating a variable's own value begins; the variable's name and
/// a backtick follow.
const IN_VARIABLE: &str = "while templating variable `";

/// `msg` without the variable it was met in, and that variable (`while templating variable
/// `a``): ansible-core's message says only the reason, kinit shows the variable beside it.
pub fn variable_context(msg: &str) -> (String, Option<String>) {
    let Some(at) = msg.find(IN_VARIABLE) else {
        return (msg.to_string(), None);
    };
    let after = &msg[at + IN_VARIABLE.len()..];
    let Some((name, rest)) = after.split_once("`: ") else {
        return (msg.to_string(), None);
    };
    (
        format!("{}{rest}", &msg[..at]),
        Some(format!("{IN_VARIABLE}{name}`")),
    )
}

/// An error's text without minijinja's `(in template:line)` suffix noise duplicated; an
/// unknown filter or test in ansible-core's words (`No filter named 'x'.`).
pub(crate) fn describe(e: &Error) -> String {
    let unknown = |what: &str, d: &str| {
        d.strip_prefix(&format!("{what} "))
            .and_then(|r| r.strip_suffix(" is unknown"))
            .map(|name| format!("Syntax error in template: No {what} named '{name}'."))
    };
    match (e.kind(), e.detail()) {
        (ErrorKind::UnknownFilter, Some(d)) => unknown("filter", d).unwrap_or_else(|| d.into()),
        (ErrorKind::UnknownTest, Some(d)) => unknown("test", d).unwrap_or_else(|| d.into()),
        (_, Some(d)) => d.to_string(),
        (k, None) => k.to_string(),
    }
}

impl Object for LazyVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        if let Some(v) = self.resolve(name) {
            return Some(v);
        }
        match name {
            "hostvars" => self.hostvars.as_ref().map(|src| {
                Value::from_object(HostVars {
                    env: self.env.clone(),
                    source: src.clone(),
                })
            }),
            SELF_KEY => Some(Value::from_dyn_object(self.clone())),
            // Why a variable is undefined (`resolve`), asked for by `undefined_reason`; the
            // bare prefix tells that this is a scope (see `check_items`).
            super::undefined::WHY_PREFIX => Some(Value::from(true)),
            _ if name.starts_with(super::undefined::WHY_PREFIX) => {
                let var = &name[super::undefined::WHY_PREFIX.len()..];
                let why = self.undefined_why.lock().unwrap().get(var).cloned();
                why.map(Value::from)
            }
            // `vars`: every variable, by name (`vars['ansible_' + iface]`), templated when
            // read like any other.
            "vars" => Some(Value::from_dyn_object(self.clone())),
            _ => None,
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let keys: Vec<Value> = self
            .vars
            .keys()
            .filter(|k| *k != DATA_KEY)
            .map(|k| Value::from(k.as_str()))
            .collect();
        Enumerator::Values(keys)
    }
}

/// `hostvars`: host name to that host's lazily templated variables.
#[derive(Clone)]
struct HostVars {
    env: Arc<Environment<'static>>,
    source: Arc<dyn HostVarsSource>,
}

impl std::fmt::Debug for HostVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hostvars")
    }
}

impl Object for HostVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let host = key.as_str()?;
        let vars = self.source.vars_of(host)?;
        Some(Value::from_dyn_object(LazyVars::new(
            self.env.clone(),
            vars,
            Some(self.source.clone()),
        )))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let names: Vec<Value> = self
            .source
            .host_names()
            .into_iter()
            .map(Value::from)
            .collect();
        Enumerator::Values(names)
    }
}

/// Whether a string needs templating at all.
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// The expression inside a string that is exactly one `{{ expr }}`, which keeps its type.
/// Braces of dict literals inside the expression are balanced, as Jinja's lexer does.
pub(crate) fn single_expression(s: &str) -> Option<&str> {
    if !s.ends_with("}}") || expression_end(s)? != s.len() {
        return None;
    }
    let inner = &s[2..s.len() - 2];
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    Some(inner.trim())
}

/// Byte offset just past the `}}` that closes the `{{ ... }}` starting `s`, skipping string
/// literals and the brackets of list and dict literals; `None` when `s` does not start one or
/// it does not close.
pub(crate) fn expression_end(s: &str) -> Option<usize> {
    if !s.starts_with("{{") {
        return None;
    }
    let bytes = s.as_bytes();
    let (mut depth, mut quote, mut i) = (0usize, None::<u8>, 2usize);
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'{' | b'[' | b'(' => depth += 1,
                b'}' if depth == 0 => {
                    return (bytes.get(i + 1) == Some(&b'}')).then_some(i + 2);
                }
                b'}' | b']' | b')' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        i += 1;
    }
    None
}

/// A JSON value as a template value, templating every string in it against `ctx`. A
/// mapping's keys stay as written: ansible-core 2.19 templates no key (`set_fact` renders its
/// own names).
pub(crate) fn json_to_value(
    env: &Environment<'static>,
    raw: &Json,
    ctx: &Value,
) -> Result<Value, Error> {
    to_value(env, raw, ctx, false)
}

/// `json_to_value` for a variable's value, whose lists and mappings may hold Jinja's plain
/// undefined value: `{{ x if cond }}` (an inline `if` without `else`) whose condition is
/// false is that value there, as in ansible-core 2.19's lazy containers: the container holds
/// it, `select` drops it (it is false), `length` counts it, and only a result that still
/// holds it is an error. kubespray builds its address lists so
/// (`["{{ ipv4 if ipv4_stack }}", "{{ ipv6 if ipv6_stack }}"] | select`).
fn variable_to_value(env: &Environment<'static>, raw: &Json, ctx: &Value) -> Result<Value, Error> {
    to_value(env, raw, ctx, true)
}

fn to_value(
    env: &Environment<'static>,
    raw: &Json,
    ctx: &Value,
    lazy_items: bool,
) -> Result<Value, Error> {
    let item = |v: &Json| match v {
        Json::String(s) if lazy_items => {
            match single_expression(s).and_then(inline_if_without_else) {
                Some((test, value)) => match super::render::eval(env, test, ctx)?.is_true() {
                    true => super::render::eval(env, value, ctx),
                    false => Ok(Value::UNDEFINED),
                },
                None => to_value(env, v, ctx, lazy_items),
            }
        }
        _ => to_value(env, v, ctx, lazy_items),
    };
    Ok(match raw {
        Json::String(s) if is_template(s) => render_native(env, s, ctx)?,
        Json::Array(items) => Value::from(items.iter().map(item).collect::<Result<Vec<_>, _>>()?),
        Json::Object(map) => {
            let mut out = indexmap::IndexMap::with_capacity(map.len());
            for (k, v) in map {
                out.insert(Value::from(k.as_str()), item(v)?);
            }
            Value::from_iter(out)
        }
        other => Value::from_serialize(other),
    })
}

/// The condition and the value of `value if condition` with no `else`, as source text.
fn inline_if_without_else(expr: &str) -> Option<(&str, &str)> {
    if !expr.contains(" if ") {
        return None;
    }
    let ast = minijinja::machinery::parse_expr(expr).ok()?;
    let minijinja::machinery::ast::Expr::IfExpr(i) = &ast else {
        return None;
    };
    if i.false_expr.is_some() {
        return None;
    }
    let text = |span: minijinja::machinery::Span| {
        expr.get(span.start_offset as usize..span.end_offset as usize)
    };
    Some((text(i.test_expr.span())?, text(i.true_expr.span())?))
}

/// Render `s`; a lone `{{ expr }}` yields the expression's value with its type, and so does
/// any template whose whole output is one value (`render::render_value`).
pub(crate) fn render_native(
    env: &Environment<'static>,
    s: &str,
    ctx: &Value,
) -> Result<Value, Error> {
    match single_expression(s) {
        Some(expr) => super::render::eval(env, expr, ctx),
        None => match s.strip_suffix('\n').and_then(single_expression) {
            // A lone expression and a final line break (`x: >` folds to that): ansible-core
            // 2.19 keeps the expression's type and gives a string result its line break back
            // (`"{{ [1] }}\n"` is a list, `"{{ 'a' }}\n"` is `"a\n"`).
            Some(expr) => super::render::eval(env, expr, ctx).map(|v| match v.as_str() {
                Some(text) if v.kind() == minijinja::value::ValueKind::String => {
                    Value::from(format!("{text}\n"))
                }
                _ => v,
            }),
            None => super::render::render_value(env, s, ctx),
        },
    }
}
