//! Ansible's rules for undefined values on top of minijinja: using one (printing, `~`,
//! arithmetic, comparing, testing its truth) is an error naming the variable, while
//! `is defined`, `default` and attribute chains on it (`a.b.c | default(1)`) are fine.
//! minijinja has no mode with exactly these rules, so a template is first run strictly; only
//! if that fails on an attribute chain whose base is undefined, and the chain ends in a
//! `defined` test or `default`, is it run again with chainable undefined values.
//!
//! A list or dict built with an undefined item (`[u, 1]`) may be passed on (`| length` is 2,
//! as in Ansible) but a result that still holds one is an error (`check_items`).

use minijinja::value::ValueKind;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior, Value};

/// An evaluation error with the names the template reads (to tell which are undefined).
pub(super) struct Failed {
    pub e: Error,
    pub names: std::collections::HashSet<String>,
}

/// Why one evaluation failed: before it ran (syntax) or while it ran.
pub(super) enum Attempt {
    Compile(Error),
    Run(Failed),
}

impl From<Error> for Attempt {
    fn from(e: Error) -> Self {
        Attempt::Compile(e)
    }
}

/// Run `once` with `env` (strict about undefined values); if it failed on an attribute
/// chain over an undefined value, run it again with chainable undefined values.
pub(super) fn with_fallback<T>(
    env: &Environment<'_>,
    src: &str,
    ctx: &Value,
    once: impl Fn(&Environment<'_>) -> Result<T, Attempt>,
) -> Result<T, Error> {
    let failed = match once(env) {
        Ok(v) => return Ok(v),
        Err(Attempt::Compile(e)) => return Err(e),
        Err(Attempt::Run(f)) => f,
    };
    let retry = env.undefined_behavior() != UndefinedBehavior::Chainable
        && is_chain_on_undefined(&failed.e, src);
    let failed = if retry {
        let mut chainable = env.clone();
        chainable.set_undefined_behavior(UndefinedBehavior::Chainable);
        match once(&chainable) {
            Ok(v) => return Ok(v),
            Err(Attempt::Compile(e)) => return Err(e),
            Err(Attempt::Run(f)) => f,
        }
    } else {
        failed
    };
    let e = explain(failed.e, src, missing(env, failed.names, ctx));
    let e = undefined_path(env, src, ctx, e);
    let e = in_ansible_words(no_attribute(env, ctx, e), src);
    Err(undefined_reason(ctx, e))
}

/// The message as ansible-core 2.19 words it, which playbooks test for (`msg is search(..)`
/// in a `rescue`): the steps above name the undefined path in backticks
/// (`` `d.zz` is undefined ``) to find the reason; Ansible says only the reason when the base
/// is defined (`object of type 'dict' has no attribute 'zz'`), else the undefined variable
/// the template reads first (`'u' is undefined` for `u.v`, and for `u + w`).
fn in_ansible_words(e: Error, src: &str) -> Error {
    if e.kind() != ErrorKind::UndefinedError {
        return e;
    }
    let Some(rest) = e.detail().and_then(|d| d.strip_prefix('`')) else {
        return e;
    };
    if let Some((_, reason)) = rest.split_once("` is undefined: ") {
        return Error::new(ErrorKind::UndefinedError, reason.to_string());
    }
    let Some((named, after)) = rest.split_once(" is undefined") else {
        return e;
    };
    // `a`, `b` (several undefined names) or one path; each starts with its variable.
    let bases: Vec<&str> = named
        .split(", ")
        .map(|n| n.trim_matches('`'))
        .map(|n| n.split(['.', '[']).next().unwrap_or(n))
        .collect();
    if !bases.iter().all(|b| is_path(b)) {
        return e;
    }
    let first = bases
        .iter()
        .min_by_key(|b| word_at(src, b).unwrap_or(usize::MAX))
        .unwrap_or(&bases[0]);
    Error::new(
        ErrorKind::UndefinedError,
        format!("'{first}' is undefined{after}"),
    )
}

/// Where the path an attribute or item lookup belongs to starts: the engine's range for
/// `d.b.c` may begin at `.b`, after the base it reads from.
fn with_base(source: &str, r: std::ops::Range<usize>) -> usize {
    if !source
        .get(r.clone())
        .is_some_and(|t| t.starts_with(['.', '[']))
    {
        return r.start;
    }
    let path_char =
        |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '\'' | '"');
    source[..r.start]
        .char_indices()
        .rev()
        .take_while(|(_, c)| path_char(*c))
        .last()
        .map_or(r.start, |(i, _)| i)
}

/// Where `word` first appears in `src` as a whole name.
fn word_at(src: &str, word: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    src.match_indices(word).map(|(i, _)| i).find(|&i| {
        !src[..i].ends_with(|c: char| ident(c) || c == '.')
            && !src[i + word.len()..].starts_with(ident)
    })
}

/// `` `match('a')` is undefined `` (the engine points at the call that received the undefined
/// value) becomes `` `d.missing` is undefined ``: the first attribute path of the template
/// whose value is undefined, so `no_attribute` can say which key is missing, as Ansible does.
fn undefined_path(env: &Environment<'_>, src: &str, ctx: &Value, e: Error) -> Error {
    let named = e
        .detail()
        .and_then(|d| d.strip_prefix('`'))
        .and_then(|d| d.strip_suffix("` is undefined"));
    // The engine said where nothing (`r.stderr == 'x'` fails inside `==`): the template's
    // first undefined path is the one to name, as for a call.
    let named = match (named, e.detail()) {
        (Some(n), _) => n,
        (None, Some(UNNAMED)) => "",
        (None, _) => return e,
    };
    let undefined = |p: &&str| {
        env.compile_expression(p)
            .and_then(|c| c.eval(ctx))
            .is_ok_and(|v| v.is_undefined())
    };
    // A variable is named (`u + d.zz`): a missing attribute read before it (`d.zz + u`) is
    // what Python meets first, when its base is defined.
    if is_path(named) {
        let base = named.split(['.', '[']).next().unwrap_or(named);
        let at = word_at(src, base).unwrap_or(usize::MAX);
        let offset = |p: &str| p.as_ptr() as usize - src.as_ptr() as usize;
        let earlier = paths(src).into_iter().filter(|p| offset(p) < at).find(|p| {
            let b = p.split(['.', '[']).next().unwrap_or(p);
            undefined(p) && !undefined(&b)
        });
        return match earlier {
            Some(p) => Error::new(ErrorKind::UndefinedError, format!("`{p}` is undefined")),
            None => e,
        };
    }
    let found = paths(src).into_iter().find(undefined);
    match found {
        Some(p) => Error::new(ErrorKind::UndefinedError, format!("`{p}` is undefined")),
        None => e,
    }
}

/// The dotted paths (`a.b`, `a.b.c`) a template reads, outside string literals.
fn paths(src: &str) -> Vec<&str> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == b'\'' || c == b'"' {
            quote = Some(c);
            i += 1;
            continue;
        }
        let starts = (c.is_ascii_alphabetic() || c == b'_')
            && (i == 0
                || !(bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'_'
                    || bytes[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len()
            && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
        {
            i += 1;
        }
        let word = src[start..i].trim_end_matches('.');
        // `s.startswith(..)` is a method call, not a value to read.
        let called = src[i..].trim_start().starts_with('(');
        if word.contains('.') && !called {
            out.push(word);
        }
    }
    out
}

/// The error for expression `expr` (compiled from `src`) whose value is undefined: it names
/// the undefined variables it reads (`missing | upper` passes `missing` through, see
/// `filters::propagating`), else the expression.
pub(super) fn undefined_result(env: &Environment<'_>, src: &str, expr: &str, ctx: &Value) -> Error {
    // `undef(hint)` says why in its own words (ansible-core's `_undef`).
    if let Some(args) = expr.strip_prefix("undef(") {
        let hint = env
            .compile_expression(&format!("{UNDEF_HINT}({args}"))
            .and_then(|c| c.eval(ctx));
        if let Ok(hint) = hint {
            return Error::new(ErrorKind::UndefinedError, hint.to_string());
        }
    }
    let names = env
        .compile_expression(src)
        .map(|c| c.undeclared_variables(false))
        .unwrap_or_default();
    let msg = undefined_message(Some(expr), &missing(env, names, ctx));
    let e = in_ansible_words(
        no_attribute(env, ctx, Error::new(ErrorKind::UndefinedError, msg)),
        src,
    );
    undefined_reason(ctx, e)
}

/// The key prefix under which a scope tells why one of its variables is undefined (never
/// enumerated; a variable's name follows).
pub(super) const WHY_PREFIX: &str = "__kinit_undefined_why__";

/// `'a' is undefined` said of a variable of `ctx` that is undefined because its own template
/// met an undefined value: that reason instead (`'nope' is undefined`, while templating `a`).
fn undefined_reason(ctx: &Value, e: Error) -> Error {
    if e.kind() != ErrorKind::UndefinedError {
        return e;
    }
    let name = e
        .detail()
        .and_then(|d| d.strip_prefix('\''))
        .and_then(|d| d.strip_suffix("' is undefined"));
    let why = name.and_then(|n| {
        ctx.get_item(&Value::from(format!("{WHY_PREFIX}{n}")))
            .ok()
            .filter(|v| !v.is_undefined())
    });
    match why {
        Some(why) => Error::new(ErrorKind::UndefinedError, why.to_string()),
        None => e,
    }
}

/// `` `d.zz` is undefined `` over a base that is defined gets Ansible's reason appended:
/// `object of type 'dict' has no attribute 'zz'` (the text ansible-core 2.19 reports for a
/// missing attribute or key; playbooks test for it, e.g. a loop label reading `r.stdout`).
pub(super) fn no_attribute(env: &Environment<'_>, ctx: &Value, e: Error) -> Error {
    let Some(detail) = e.detail() else {
        return e;
    };
    let Some(expr) = detail
        .strip_prefix('`')
        .and_then(|d| d.strip_suffix("` is undefined"))
        .filter(|x| !x.contains('`'))
    else {
        return e;
    };
    // The first key missing along the path (`d.b.c`: `d` has no `b`) is the one Python
    // meets.
    let mut path = expr;
    loop {
        let Some((base, key)) = split_last(path) else {
            return e;
        };
        let Ok(v) = env.compile_expression(base).and_then(|c| c.eval(ctx)) else {
            return e;
        };
        if v.is_undefined() {
            path = base;
            continue;
        }
        return Error::new(
            ErrorKind::UndefinedError,
            format!(
                "`{path}` is undefined: object of type '{}' has no attribute {key}",
                super::filters::core::type_debug(v.clone())
            ),
        );
    }
}

/// A path's base and its last key as Python shows it: `d.zz` is (`d`, `'zz'`), `l[3]` is
/// (`l`, `3`), `d['k']` is (`d`, `'k'`).
fn split_last(expr: &str) -> Option<(&str, String)> {
    if !is_path(expr) || !expr.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        return None;
    }
    if let Some(inner) = expr.strip_suffix(']') {
        let open = inner.rfind('[')?;
        let key = &inner[open + 1..];
        let shown = if let Some(k) = key
            .strip_prefix('\'')
            .and_then(|k| k.strip_suffix('\''))
            .or_else(|| key.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
        {
            format!("'{k}'")
        } else if key.parse::<i64>().is_ok() {
            key.to_string()
        } else {
            return None;
        };
        return Some((&expr[..open], shown)).filter(|(b, _)| !b.is_empty());
    }
    let dot = expr.rfind('.')?;
    let (base, key) = (&expr[..dot], &expr[dot + 1..]);
    (!base.is_empty() && !key.is_empty() && !key.contains(['[', ']']))
        .then(|| (base, format!("'{key}'")))
}

/// An error if a list or dict in `value` holds an undefined item, at any depth: Ansible
/// fails when such a result is used (`{{ [u, 1] }}`, `{{ {'k': u} }}`). `value` itself
/// being undefined is left to the caller, which names it.
pub(super) fn check_items(value: &Value) -> Result<(), Error> {
    // A variable scope (another host's `hostvars[h]`, listed by `map('extract', hostvars)`)
    // may hold undefined variables, as ansible-core's lazy hostvars do; only a use of one
    // fails. Nor is every variable of it rendered to look.
    if value.kind() == ValueKind::Map
        && value
            .get_item(&Value::from(WHY_PREFIX))
            .is_ok_and(|v| v.is_true())
    {
        return Ok(());
    }
    let check = |item: &Value| {
        if item.is_undefined() {
            return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
        }
        check_items(item)
    };
    match value.kind() {
        ValueKind::Seq => value.try_iter()?.try_for_each(|item| check(&item)),
        ValueKind::Map => value
            .try_iter()?
            .try_for_each(|key| check(&value.get_item(&key)?)),
        _ => Ok(()),
    }
}

/// The engine's bare "undefined" error raised at an attribute or item lookup (`a.b.c`,
/// `a['b'].c`) over an undefined base, where the chain ends in `is defined`, `is undefined`,
/// `| default(..)` or `| mandatory` (which names the base): allowed in Ansible. Any other use of the chain stays an error.
fn is_chain_on_undefined(e: &Error, src: &str) -> bool {
    if e.kind() != ErrorKind::UndefinedError {
        return false;
    }
    let Some(range) = e.range() else {
        return false;
    };
    if src
        .get(range.clone())
        .is_some_and(|t| t.starts_with("extract("))
    {
        return is_guarded_extract(src, range);
    }
    if e.detail().is_some() {
        return false;
    }
    let chain = src.get(range.clone()).map(|t| strip_braces(t.trim()));
    let lookups_on_parens = |t: &str| {
        t.strip_prefix('(')
            .and_then(|inner| closing_paren(inner).map(|end| &inner[end + 1..]))
            .is_some_and(|after| !after.is_empty() && skip_lookups(after).is_empty())
    };
    if !chain.is_some_and(|t| (is_path(t) && t.contains(['.', '['])) || lookups_on_parens(t)) {
        return false;
    }
    // Filters between the chain and its guard pass the undefined value on, as ansible-core
    // 2.19's plugins pass an undefined argument on without running (`u.x | upper | default`).
    guarded(skip_filters(skip_lookups(
        src.get(range.end..).unwrap_or_default(),
    )))
}

/// Whether `rest` begins with a guard that takes an undefined value: `is defined`, `is
/// undefined` (and their `not` forms), `| default`, `| d` or `| mandatory`.
fn guarded(rest: &str) -> bool {
    let guard = |words: &[&str]| {
        let mut r = rest;
        for w in words {
            match r.trim_start().strip_prefix(w) {
                Some(after) => r = after,
                None => return false,
            }
        }
        !r.starts_with(|c: char| c.is_alphanumeric() || c == '_')
    };
    guard(&["is", "defined"])
        || guard(&["is", "undefined"])
        || guard(&["is", "not", "defined"])
        || guard(&["is", "not", "undefined"])
        || guard(&["|", "default"])
        || guard(&["|", "d"])
        || guard(&["|", "mandatory"])
}

/// An `extract` that found no such key (its error's range is the call), followed by lookups
/// out of any parentheses around it and filters, and then a guard: `('k' | extract(d)).x |
/// default(1)`.
fn is_guarded_extract(src: &str, range: std::ops::Range<usize>) -> bool {
    let mut rest = src.get(range.end..).unwrap_or_default();
    loop {
        let t = skip_lookups(rest.trim_start());
        match t.trim_start().strip_prefix(')') {
            Some(after) => rest = after,
            None => {
                rest = t;
                break;
            }
        }
    }
    guarded(skip_filters(rest))
}

/// `text` after any `| name` and `| name(...)` filters but a last `default`, `d` or
/// `mandatory`, and any lookups after each.
fn skip_filters(mut text: &str) -> &str {
    loop {
        let t = text.trim_start();
        let Some(after) = t.strip_prefix('|') else {
            return t;
        };
        let after = after.trim_start();
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(after.len());
        let name = &after[..end];
        if name.is_empty() || matches!(name, "default" | "d" | "mandatory") {
            return t;
        }
        let mut next = &after[end..];
        if let Some(args) = next.strip_prefix('(') {
            let Some(close) = closing_paren(args) else {
                return t;
            };
            next = &args[close + 1..];
        }
        text = skip_lookups(next);
    }
}

/// Where the `)` closing an already opened `(` is in `text`, skipping quoted strings.
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 1usize;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return (c == ')').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` after any further `.name` and `[...]` lookups of a chain.
fn skip_lookups(mut text: &str) -> &str {
    loop {
        if let Some(after) = text.strip_prefix('.') {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            text = &after[end..];
        } else if let Some(after) = text.strip_prefix('[') {
            match after.find(']') {
                Some(end) => text = &after[end + 1..],
                None => return text,
            }
        } else {
            return text;
        }
    }
}

/// Names a template reads that neither the scope nor the globals define.
fn missing(
    env: &Environment<'_>,
    names: std::collections::HashSet<String>,
    ctx: &Value,
) -> Vec<String> {
    let globals: Vec<&str> = env.globals().map(|(n, _)| n).collect();
    let mut out: Vec<String> = names
        .into_iter()
        .filter(|n| !globals.contains(&n.as_str()) && n != "loop")
        .filter(|n| ctx.get_attr(n).is_ok_and(|v| v.is_undefined()))
        .collect();
    out.sort();
    out
}

/// Make an undefined-value error say which variable or expression was undefined: the
/// variables the template reads that are not defined, else the failing expression's text.
fn explain(e: Error, source: &str, missing: Vec<String>) -> Error {
    // `undefined_var + 1`: the engine's operators refuse the undefined operand by type.
    let undefined_operand = e.kind() == ErrorKind::InvalidOperation
        && e.detail()
            .is_some_and(|d| d.contains("types undefined") || d.ends_with(" undefined"))
        && !missing.is_empty();
    if undefined_operand {
        let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
        return Error::new(
            ErrorKind::UndefinedError,
            format!("{} is undefined", names.join(", ")),
        );
    }
    if e.kind() != ErrorKind::UndefinedError {
        return e;
    }
    // `mandatory` names the variable as ansible-core does: the first undefined one read.
    let unnamed = super::filters::core::MANDATORY_UNNAMED;
    if let Some(d) = e.detail().filter(|d| d.ends_with(unnamed))
        && let Some(first) = missing
            .iter()
            .min_by_key(|m| word_at(source, m).unwrap_or(usize::MAX))
    {
        let named = format!("Mandatory variable '{first}' not defined.");
        return Error::new(ErrorKind::UndefinedError, d.replace(unnamed, &named));
    }
    // Only the engine's anonymous "undefined" errors get a name; messages that already say
    // what is missing (a lazily templated variable, `mandatory`) stay as they are.
    if e.detail().is_some_and(|d| d != "undefined value") {
        return e;
    }
    let what = e
        .range()
        .and_then(|r| source.get(with_base(source, r.clone())..r.end))
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let what = what.map(strip_braces);
    let msg = undefined_message(what, &missing);
    let line = e.line();
    let mut out = Error::new(ErrorKind::UndefinedError, msg);
    if let Some(line) = line.filter(|_| source.contains('\n')) {
        out = Error::new(
            ErrorKind::UndefinedError,
            format!(
                "{} (template line {line})",
                out.detail().unwrap_or_default()
            ),
        );
    }
    out
}

fn undefined_message(what: Option<&str>, missing: &[String]) -> String {
    match what {
        Some(expr) if is_path(expr) && missing.iter().all(|m| expr.starts_with(m.as_str())) => {
            format!("`{expr}` is undefined")
        }
        _ if !missing.is_empty() => {
            let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
            format!("{} is undefined", names.join(", "))
        }
        Some(expr) => format!("`{expr}` is undefined"),
        None => UNNAMED.to_string(),
    }
}

/// An undefined value the engine located nowhere.
const UNNAMED: &str = "undefined variable";

/// A variable with attribute or item lookups: `a`, `a.b`, `a['b'].c`.
fn is_path(t: &str) -> bool {
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_alphanumeric() || "_.[]'\"".contains(c))
}

fn strip_braces(s: &str) -> &str {
    let s = s.strip_prefix("{{").unwrap_or(s);
    let s = s.strip_suffix("}}").unwrap_or(s);
    s.trim_matches(|c: char| c == '-' || c.is_whitespace())
}

/// The hidden function that tells the message of an `undef(...)` call (same arguments).
pub(super) const UNDEF_HINT: &str = "__kinit_undef_hint";

/// `undef`'s hint, positional or `hint=`; without one, ansible-core's default message.
pub(super) fn undef_hint(
    hint: Option<Value>,
    kwargs: minijinja::value::Kwargs,
) -> Result<String, Error> {
    let named: Option<Value> = kwargs.get("hint")?;
    kwargs.assert_all_used()?;
    Ok(match hint.or(named).filter(|h| !h.is_none()) {
        Some(h) => h.to_string(),
        None => "Mandatory variable has not been overridden".to_string(),
    })
}
