//! Templating: a minijinja environment with Ansible's filters, tests and lookups, and the
//! rules for rendering task arguments (a string that is exactly one `{{ expr }}` keeps the
//! expression's native type, as in Ansible).
//!
//! Variables are templated lazily: a variable whose value contains `{{ ... }}` is rendered
//! when a template reads it, in the same scope, recursively, and a cycle is an error naming
//! the variables involved. A `Scope` holds one set of variables (one host, one task) and
//! caches what it rendered; `Templar::render_str` and friends build a throw-away scope.
//!
//! Ansible conventions kept on purpose: backslashes inside string literals of `{{ }}` are
//! literal (`regex_replace('(\d)', '\1')`), lists and dicts print as Python does
//! (`['a', 1]`), `None` prints as nothing. Undefined values may be chained
//! (`a.b.c | default(1)`, `a.b is defined`) but printing, concatenating, computing with,
//! comparing or testing one is an error naming the variable (see `render`).

mod csvfile;
mod filters;
mod ini;
pub mod kv;
mod lookup;
mod markers;
mod now;
mod password;
mod predicates;
mod pydatetime;
pub mod pyfilters;
mod pyformat;
mod pymut;
mod pyops;
mod pyrandom;
pub mod pyrepr;
mod pyyaml;
mod render;
mod scope;
mod sequence;
mod subset;
mod undefined;

#[cfg(test)]
mod cases;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use minijinja::{ErrorKind, UndefinedBehavior};
use serde_json::Value;

pub use filters::data::type_name as python_type_name;
pub use filters::math::{bytes_to_human, human_to_bytes};
pub use filters::paths::{expand_vars, normpath_text};
pub use filters::serial::dumps as json_dumps;
pub use lookup::NAMES as LOOKUPS;
pub use lookup::{WITH_SUBDIR_VAR, is_lookup_failure, lookup_failed};
pub use markers::Marked;
pub use now::{datetime_str, local_now};
pub use pyrepr::quote_str as py_quote;
pub use scope::{DATA_KEY, HostVarsSource, is_template, variable_context};
pub use sequence::sequence;

use crate::vars::VarMap;

/// Python's `str()` of a JSON value, as Ansible's messages print one (`[1, 'x']`, `True`).
pub fn py_str(v: &Value) -> String {
    pyrepr::to_str(&minijinja::Value::from_serialize(v)).unwrap_or_default()
}

/// What a conditional that is no string (`when: 5`, an unquoted `- a: b` mapping in
/// `that`) is kept as: this marker, then the value as JSON. Evaluating it fails as
/// ansible-core 2.19 fails it, when the task runs: `Conditional expressions must be strings.`
pub const NON_STRING_CONDITION: &str = "\u{1}non-string conditional: ";

/// A conditional as the output names it (a non-string one without its marker's control
/// character).
pub fn shown_condition(cond: &str) -> &str {
    cond.strip_prefix('\u{1}').unwrap_or(cond)
}

/// The conditional `value` (a YAML value that is no string) as kept for evaluation: a boolean
/// is its Python spelling, anything else is [`NON_STRING_CONDITION`] text.
pub fn non_string_condition(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Bool(true) => "True".into(),
        serde_json::Value::Bool(false) => "False".into(),
        serde_json::Value::String(s) => s.clone(),
        other => format!("{NON_STRING_CONDITION}{other}"),
    }
}

/// Whether `s` is exactly one `{{ expr }}` (surrounding blanks aside).
pub fn is_single_expression(s: &str) -> bool {
    scope::single_expression(s.trim()).is_some()
}

/// The value of the `omit` variable; the executor drops module arguments equal to it
/// (`strip_omit`).
pub const OMIT: &str = "__omit_place_holder__kinit";

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// A template that could not be parsed or evaluated.
    #[error("{detail}")]
    Render { detail: String },
    /// A template used a variable (or attribute) that is not defined; `detail` names it.
    #[error("{detail}")]
    Undefined { detail: String },
    /// A conditional that ansible-core 2.19 refuses as such (no boolean result, an untrusted
    /// expression): its message stands alone, not as an evaluation error.
    #[error("{detail}")]
    Conditional { detail: String },
}

impl TemplateError {
    fn from_jinja(e: minijinja::Error) -> Self {
        let mut detail = scope::describe(&e);
        if e.kind() == ErrorKind::SyntaxError {
            detail = format!("template syntax error: {detail}");
        }
        if e.kind() == ErrorKind::UndefinedError {
            TemplateError::Undefined { detail }
        } else {
            TemplateError::Render { detail }
        }
    }
}

/// The templating engine shared by every host and task of a run.
#[derive(Clone)]
pub struct Templar {
    env: Arc<minijinja::Environment<'static>>,
    /// Where every scope of this templar finds `hostvars` (see `with_hostvars`).
    hostvars: Option<Arc<dyn HostVarsSource>>,
}

impl Default for Templar {
    fn default() -> Self {
        Self::new()
    }
}

impl Templar {
    pub fn new() -> Self {
        let mut env = minijinja::Environment::new();
        // Strict: using an undefined value is an error, as in Ansible; `render` runs a
        // template again with chainable undefined values when only an attribute chain over
        // an undefined base failed (`a.b.c | default(..)`, `a.b is defined`).
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        // Ansible's templating environment removes the first newline after a block tag
        // (`trim_blocks=True` in its Jinja environment; the `template` module's default and
        // the `template` lookup's only mode, ansible/ansible#75962), so a `{% for %}` line
        // leaves no blank line behind.
        env.set_trim_blocks(true);
        env.set_formatter(render::python_formatter);
        env.set_unknown_method_callback(python_method);
        env.add_global("omit", OMIT);
        env.add_function("lookup", lookup::lookup);
        env.add_function("query", lookup::query);
        env.add_function("q", lookup::query);
        env.add_function("now", pydatetime::now);
        env.add_function("dict", pymut::dict_function);
        // ansible-core 2.19's `undef(hint)`: an undefined value made on purpose (a role
        // default a user must set); `is defined` is false, `default` replaces it, and using
        // it fails with the hint (`undefined::undefined_result`).
        env.add_function(
            "undef",
            |hint: Option<minijinja::Value>, kwargs: minijinja::value::Kwargs| {
                undefined::undef_hint(hint, kwargs).map(|_| minijinja::Value::UNDEFINED)
            },
        );
        env.add_function(undefined::UNDEF_HINT, undefined::undef_hint);
        env.add_function(
            crate::yaml::UNDECRYPTABLE,
            |error: String| -> Result<String, _> {
                Err(minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    format!("Attempt to use undecryptable variable: {error}"),
                ))
            },
        );
        filters::register(&mut env);
        pyops::register(&mut env);
        Self {
            env: Arc::new(env),
            hostvars: None,
        }
    }

    /// This templar with `hostvars` read lazily from `source` in every scope it makes:
    /// `hostvars[h].x` renders `x` with host `h`'s variables when a template reads it.
    pub fn with_hostvars(mut self, source: Arc<dyn HostVarsSource>) -> Self {
        self.hostvars = Some(source);
        self
    }

    /// This templar with the custom Python filters and tests `host` serves (`pyfilters`).
    /// An undefined input or argument to a filter passes through without calling Python, as
    /// ansible-core calls its plugins; a test refuses one. A custom plugin wins over a
    /// built-in one of the same name, as plugin folders come before ansible-core's own in
    /// Ansible's search.
    pub fn with_python_filters(mut self, host: Arc<pyfilters::PythonFilters>) -> Self {
        let mut env = (*self.env).clone();
        for name in host.filters.keys() {
            let call = python_plugin(host.clone(), "filter", name);
            env.add_filter(name.clone(), move |value, args, kwargs| {
                call(value, args, kwargs)
            });
        }
        for name in host.tests.keys() {
            let call = python_plugin(host.clone(), "test", name);
            env.add_test(name.clone(), move |value, args, kwargs| {
                call(value, args, kwargs).map(|v| v.is_true())
            });
        }
        if !host.lookups.is_empty() {
            env.add_global(
                lookup::PYTHON_LOOKUPS,
                minijinja::Value::from_object(lookup::PythonLookups(host.clone())),
            );
        }
        self.env = Arc::new(env);
        self
    }

    /// A scope over `vars` (cheap to clone: the map is shared).
    pub fn scope(&self, vars: Arc<VarMap>) -> Scope {
        self.scope_with_hostvars(vars, self.hostvars.clone())
    }

    /// A scope whose `hostvars` come from `hostvars` (unless `vars` defines `hostvars`).
    pub fn scope_with_hostvars(
        &self,
        vars: Arc<VarMap>,
        hostvars: Option<Arc<dyn HostVarsSource>>,
    ) -> Scope {
        let lazy = scope::LazyVars::new(self.env.clone(), vars, hostvars);
        Scope {
            env: self.env.clone(),
            ctx: minijinja::Value::from_dyn_object(lazy),
        }
    }

    /// A throw-away scope holding the variables these templates can reach (all of them
    /// when that cannot be told, e.g. with `lookup`).
    fn scope_for(&self, templates: &[&str], expressions: &[&str], vars: &VarMap) -> Scope {
        let expressions: Vec<String> = expressions
            .iter()
            .map(|e| render::escape_literals(e))
            .collect();
        let exprs: Vec<&str> = expressions.iter().map(String::as_str).collect();
        let needed = subset::needed(&self.env, templates, &exprs, vars);
        self.scope(Arc::new(needed.unwrap_or_else(|| vars.clone())))
    }

    /// Render template text with `vars` as the context.
    pub fn render_str(&self, source: &str, vars: &VarMap) -> Result<String, TemplateError> {
        if !scope::is_template(source) {
            return Ok(source.to_string());
        }
        self.scope_for(&[source], &[], vars).render_str(source)
    }

    /// Evaluate a bare expression (`when:`, `that:`, `failed_when:`) to a value.
    pub fn eval(&self, expr: &str, vars: &VarMap) -> Result<Value, TemplateError> {
        self.scope_for(&[], &[expr], vars).eval(expr)
    }

    /// Evaluate a condition to a boolean (Jinja truthiness); its string literals are taken as
    /// written (no backslash doubling), as ansible-core evaluates conditionals.
    pub fn eval_bool(&self, expr: &str, vars: &VarMap) -> Result<bool, TemplateError> {
        self.scope_for(&[], &[expr], vars).eval_bool(expr)
    }

    /// A conditional (`when`, `that`, `failed_when`...) as ansible-core 2.19 evaluates it
    /// (`TemplateEngine.evaluate_conditional`): its result must be a boolean, or it fails with
    /// `Conditional result (True) was derived from value of type 'str'...`; with
    /// `allow_broken` (ansible.cfg's `allow_broken_conditionals`) any value counts by its
    /// truth, and the second item says so for a deprecation warning. A conditional that is
    /// one `{{ ... }}` is rendered; a string it gives is evaluated as an expression only when
    /// it is a variable's own text from the playbook or inventory (2.19 trusts that alone),
    /// else `Encountered untrusted template or expression.` (registered output is never run).
    pub fn eval_condition(
        &self,
        cond: &str,
        vars: &VarMap,
        allow_broken: bool,
    ) -> Result<(bool, Option<String>), TemplateError> {
        if cond.starts_with(NON_STRING_CONDITION) {
            return Err(TemplateError::Conditional {
                detail: "Conditional expressions must be strings.".into(),
            });
        }
        let scope = self.scope_for(&[], &[cond], vars);
        let trimmed = cond.trim();
        let value = match scope::single_expression(trimmed) {
            Some(inner) => {
                let v = render::eval_as(&self.env, inner, &scope.ctx, false)
                    .map_err(TemplateError::from_jinja)?;
                match v.as_str() {
                    Some(expr) if v.kind() == minijinja::value::ValueKind::String => {
                        let name = inner.trim();
                        let trusted = matches!(vars.get(name), Some(Value::String(_)))
                            && !scope::is_data(vars, name);
                        if !trusted {
                            return Err(TemplateError::Conditional {
                                detail: "Encountered untrusted template or expression.".into(),
                            });
                        }
                        let expr = expr.to_string();
                        let scope = self.scope_for(&[], &[&expr], vars);
                        render::eval_as(&self.env, &expr, &scope.ctx, false)
                            .map_err(TemplateError::from_jinja)?
                    }
                    _ => v,
                }
            }
            None => render::eval_as(&self.env, cond, &scope.ctx, false)
                .map_err(TemplateError::from_jinja)?,
        };
        if value.kind() == minijinja::value::ValueKind::Bool {
            return Ok((value.is_true(), None));
        }
        let truth = value.is_true();
        let msg = format!(
            "Conditional result ({}) was derived from value of type '{}'. Conditionals must \
             have a boolean result.",
            if truth { "True" } else { "False" },
            filters::core::type_debug(value)
        );
        match allow_broken {
            true => Ok((truth, Some(msg))),
            false => Err(TemplateError::Conditional { detail: msg }),
        }
    }

    /// `assert`'s `that` written as one template of a variable holding a list of conditions
    /// (`that: "{{ checks }}"`): the list's items, not templated, each a conditional of its
    /// own, as ansible-core's assert resolves `that` to its container only
    /// (`finalize_task_arg`). Only a playbook or inventory variable's own list counts (its
    /// items are trusted as its text is); anything else is `None` and `that` is one
    /// conditional.
    pub fn conditions_of(&self, that: &str, vars: &VarMap) -> Option<Vec<String>> {
        let name = scope::single_expression(that.trim())?.trim();
        let is_name = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name || scope::is_data(vars, name) {
            return None;
        }
        let Some(Value::Array(items)) = vars.get(name) else {
            return None;
        };
        Some(
            items
                .iter()
                .map(|i| match i {
                    Value::String(s) => s.clone(),
                    Value::Bool(true) => "True".into(),
                    Value::Bool(false) => "False".into(),
                    other => other.to_string(),
                })
                .collect(),
        )
    }

    /// Render a template file's text whose `{% include %}`, `{% import %}`, `{% from %}` and
    /// `{% extends %}` find their templates in `search` (the `template` module's search path,
    /// in order). Text without such a tag renders as `render_str` does; only one with them
    /// pays for an environment of its own (templates are cached per environment, and another
    /// task's search path may find another file under the same name).
    pub fn render_file(
        &self,
        source: &str,
        vars: &VarMap,
        search: &[std::path::PathBuf],
        opts: &FileOptions,
    ) -> Result<String, TemplateError> {
        if !loads_templates(source) && *opts == FileOptions::default() {
            if !scope::is_template(source) {
                return Ok(source.to_string());
            }
            let scope = self.scope_for(&[source], &[], vars);
            return render::render_file(&scope.env, source, &scope.ctx)
                .map_err(TemplateError::from_jinja);
        }
        let env = file_env(&self.env, search.to_vec(), opts).map_err(TemplateError::from_jinja)?;
        let env = Arc::new(env);
        // Included templates may read any variable: the whole set, not a subset.
        let lazy = scope::LazyVars::new(env.clone(), Arc::new(vars.clone()), self.hostvars.clone());
        let ctx = minijinja::Value::from_dyn_object(lazy);
        render::render_file(&env, source, &ctx).map_err(TemplateError::from_jinja)
    }

    /// Render every string inside `value`; a string that is exactly `{{ expr }}` becomes the
    /// expression's value with its type (list, dict, number).
    pub fn render_value(&self, value: &Value, vars: &VarMap) -> Result<Value, TemplateError> {
        let templates = subset::templates_in(value);
        if templates.is_empty() {
            return Ok(value.clone());
        }
        self.scope_for(&templates, &[], vars).render_value(value)
    }
}

/// An environment for a template file: `opts`' whitespace control and delimiters, and
/// `{% include %}` and friends loading from `search`, in order (the `template` module and
/// the `template` lookup).
pub(crate) fn file_env<'a>(
    base: &minijinja::Environment<'a>,
    search: Vec<std::path::PathBuf>,
    opts: &FileOptions,
) -> Result<minijinja::Environment<'a>, minijinja::Error> {
    let mut env = base.clone();
    env.set_trim_blocks(opts.trim_blocks);
    env.set_lstrip_blocks(opts.lstrip_blocks);
    if let Some(d) = &opts.delimiters {
        let mut syntax = minijinja::syntax::SyntaxConfig::builder();
        syntax
            .block_delimiters(d.block.0.clone(), d.block.1.clone())
            .variable_delimiters(d.variable.0.clone(), d.variable.1.clone())
            .comment_delimiters(d.comment.0.clone(), d.comment.1.clone());
        if let Some(p) = &d.line_statement_prefix {
            syntax.line_statement_prefix(p.clone());
        }
        if let Some(p) = &d.line_comment_prefix {
            syntax.line_comment_prefix(p.clone());
        }
        let syntax = syntax.build()?;
        env.set_syntax(syntax);
    }
    env.set_loader(move |name: &str| {
        for dir in &search {
            let path = dir.join(name);
            if path.is_file() {
                // Jinja drops one trailing newline of a loaded template (only the file
                // the `template` module renders keeps its own).
                let strip = |mut t: String| {
                    if t.ends_with('\n') {
                        t.pop();
                    }
                    t
                };
                return std::fs::read_to_string(&path)
                    .map(strip)
                    .map(Some)
                    .map_err(|e| {
                        minijinja::Error::new(
                            minijinja::ErrorKind::InvalidOperation,
                            format!("cannot read template `{}`: {e}", path.display()),
                        )
                    });
            }
        }
        Ok(None)
    });
    Ok(env)
}

/// Whether template text loads other templates (`{% include %}`, `import`, `from`,
/// `extends`), so that it needs an environment with a loader.
pub(crate) fn loads_templates(source: &str) -> bool {
    ["include", "import", "from", "extends"].iter().any(|tag| {
        source.contains(&format!("{{% {tag} ")) || source.contains(&format!("{{%- {tag} "))
    })
}

/// How a template file is read, as the `template` module's options set it (ansible-core's
/// defaults: `trim_blocks` on, `lstrip_blocks` off, Jinja's delimiters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOptions {
    pub trim_blocks: bool,
    pub lstrip_blocks: bool,
    /// Other delimiters than `{% %}`, `{{ }}` and `{# #}`.
    pub delimiters: Option<Delimiters>,
}

impl Default for FileOptions {
    fn default() -> Self {
        Self {
            trim_blocks: true,
            lstrip_blocks: false,
            delimiters: None,
        }
    }
}

/// A template's block, variable and comment delimiters (start, end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delimiters {
    pub block: (String, String),
    pub variable: (String, String),
    pub comment: (String, String),
    /// A line beginning so is a statement (`: if x`), as Jinja's `line_statement_prefix`.
    pub line_statement_prefix: Option<String>,
    /// A line beginning so is a comment, as Jinja's `line_comment_prefix`.
    pub line_comment_prefix: Option<String>,
}

/// One set of variables to render against, with its lazily templated variables cached.
/// Make a new scope when the variables change (after `set_fact`, per loop item, ...).
#[derive(Clone)]
pub struct Scope {
    env: Arc<minijinja::Environment<'static>>,
    ctx: minijinja::Value,
}

impl Scope {
    pub fn render_str(&self, source: &str) -> Result<String, TemplateError> {
        if !scope::is_template(source) {
            return Ok(source.to_string());
        }
        render::render(&self.env, source, &self.ctx).map_err(TemplateError::from_jinja)
    }

    pub fn eval(&self, expr: &str) -> Result<Value, TemplateError> {
        let v = render::eval(&self.env, expr, &self.ctx).map_err(TemplateError::from_jinja)?;
        to_json(&v)
    }

    /// A condition: an undefined variable is an error, `None` is false.
    pub fn eval_bool(&self, expr: &str) -> Result<bool, TemplateError> {
        let v = render::eval_as(&self.env, expr, &self.ctx, false)
            .map_err(TemplateError::from_jinja)?;
        Ok(v.is_true())
    }

    /// A variable of this scope, templated; `None` when it is not defined.
    pub fn get(&self, name: &str) -> Result<Option<Value>, TemplateError> {
        let v = self.ctx.get_attr(name).map_err(TemplateError::from_jinja)?;
        if v.is_undefined() {
            // A variable whose own template met an undefined value is used here: the reason.
            let why = self
                .ctx
                .get_attr(&format!("{}{name}", undefined::WHY_PREFIX))
                .ok()
                .filter(|w| !w.is_undefined());
            return match why {
                Some(why) => Err(TemplateError::Undefined {
                    detail: why.to_string(),
                }),
                None => Ok(None),
            };
        }
        let is_ident = name.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if v.kind() == minijinja::value::ValueKind::Invalid && is_ident {
            // Evaluating the name surfaces the error the lazy rendering stored.
            render::eval(&self.env, name, &self.ctx).map_err(TemplateError::from_jinja)?;
        }
        to_json(&v).map(Some)
    }

    pub fn render_value(&self, value: &Value) -> Result<Value, TemplateError> {
        let v =
            scope::json_to_value(&self.env, value, &self.ctx).map_err(TemplateError::from_jinja)?;
        to_json(&v)
    }
}

fn to_json(v: &minijinja::Value) -> Result<Value, TemplateError> {
    serde_json::to_value(v).map_err(|e| TemplateError::Render {
        detail: format!("the result cannot be represented as data: {e}"),
    })
}

/// Remove module arguments whose value is `omit` (in dicts, recursively, and in dicts
/// inside lists), as Ansible does before calling a module.
pub fn strip_omit(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| v.as_str() != Some(OMIT));
            map.values_mut().for_each(strip_omit);
        }
        Value::Array(items) => items.iter_mut().for_each(|v| {
            if v.is_object() {
                strip_omit(v);
            }
        }),
        _ => {}
    }
}

/// Python methods on values (`'a,b'.split(',')`, `d.items()`): minijinja's Python
/// compatibility set, plus `list.index(x)`, which Ansible content uses.
/// A call of the Python plugin `name` of `kind` (`filter` or `test`) through `host`.
fn python_plugin(
    host: Arc<pyfilters::PythonFilters>,
    kind: &'static str,
    name: &str,
) -> impl Fn(
    minijinja::Value,
    minijinja::value::Rest<minijinja::Value>,
    minijinja::value::Kwargs,
) -> Result<minijinja::Value, minijinja::Error>
+ Send
+ Sync
+ 'static {
    let name = name.to_string();
    move |value, args, kwargs| {
        if let Some(undefined) = std::iter::once(&value)
            .chain(args.iter())
            .find(|a| a.is_undefined())
        {
            if kind == "test" {
                return Err(minijinja::Error::new(
                    ErrorKind::UndefinedError,
                    "undefined value",
                ));
            }
            return Ok(undefined.clone());
        }
        let json = |v: &minijinja::Value| serde_json::to_value(v).unwrap_or_default();
        let mut named = serde_json::Map::new();
        for key in kwargs.args() {
            let v: minijinja::Value = kwargs.get(key)?;
            named.insert(key.to_string(), json(&v));
        }
        let positional = args.iter().map(json).collect();
        host.call(kind, &name, json(&value), positional, named)
            .map(|r| minijinja::Value::from_serialize(&r))
            .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e))
    }
}

fn python_method(
    state: &minijinja::State<'_, '_>,
    value: &minijinja::Value,
    method: &str,
    args: &[minijinja::Value],
) -> Result<minijinja::Value, minijinja::Error> {
    if method == "index"
        && value.kind() == minijinja::value::ValueKind::Seq
        && let [wanted] = args
    {
        let found = value.try_iter()?.position(|x| &x == wanted);
        return match found {
            Some(i) => Ok(minijinja::Value::from(i)),
            None => Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                format!("{wanted} is not in list"),
            )),
        };
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// Why `name` cannot be a variable's name, in ansible-core's words (`validate_variable_name`
/// in `utils/vars.py`), or `None` when it can: an ASCII identifier that is none of the names
/// Jinja resolves itself (`true`, `none`, `not`...). A name that is not a string is shown with
/// its Python type (`Invalid variable name '1' of type 'int'.`).
pub fn invalid_variable_name(name: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    const JINJA_NAMES: &[&str] = &["true", "false", "none", "True", "False", "None", "not"];
    if let Value::String(s) = name {
        let mut chars = s.chars();
        let identifier = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if identifier && !JINJA_NAMES.contains(&s.as_str()) {
            return None;
        }
    }
    let shown = match name {
        Value::String(s) => py_quote(s),
        Value::Bool(true) => "'True'".into(),
        Value::Bool(false) => "'False'".into(),
        Value::Null => "'None'".into(),
        Value::Number(x) => format!("'{x}'"),
        _ => String::new(),
    };
    let type_name = match name {
        Value::String(_) => None,
        Value::Bool(_) => Some("bool"),
        Value::Number(x) if x.is_f64() => Some("float"),
        Value::Number(_) => Some("int"),
        Value::Null => Some("NoneType"),
        Value::Array(_) => Some("list"),
        Value::Object(_) => Some("dict"),
    };
    let mut what = match shown.is_empty() {
        true => "name".to_string(),
        false => format!("name {shown}"),
    };
    if let Some(t) = type_name {
        what.push_str(&format!(" of type '{t}'"));
    }
    Some(format!("Invalid variable {what}."))
}
