//! Rendering and evaluating with Ansible's conventions on top of minijinja: backslashes in
//! string literals inside `{{ }}` are taken literally (Ansible doubles them before Jinja sees
//! them), values print as Python's `str()` does, and an undefined value is an error that names
//! the expression that produced it.

use minijinja::{Environment, Error, ErrorKind, Value};

use super::pyrepr;

/// Render template text against `ctx`.
pub(crate) fn render(env: &Environment<'_>, source: &str, ctx: &Value) -> Result<String, Error> {
    let src = escape_backslashes(source);
    let tmpl = env.template_from_str(&src)?;
    tmpl.render(ctx).map_err(|e| {
        let names = tmpl.undeclared_variables(false);
        explain(e, &src, missing(env, names, ctx))
    })
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

/// Evaluate an expression against `ctx`; an undefined result is an error.
pub(crate) fn eval(env: &Environment<'_>, expr: &str, ctx: &Value) -> Result<Value, Error> {
    let src = escape_literals(expr);
    let compiled = env.compile_expression_owned(src.clone())?;
    let v = compiled.eval(ctx).map_err(|e| {
        let names = compiled.undeclared_variables(false);
        explain(e, &src, missing(env, names, ctx))
    })?;
    if v.is_undefined() {
        return Err(Error::new(
            ErrorKind::UndefinedError,
            format!("`{}` is undefined", expr.trim()),
        ));
    }
    Ok(v)
}

/// Print values as Jinja2 under Ansible does: `None` as nothing, `True`, `['a', 1]`.
pub(crate) fn python_formatter(
    out: &mut minijinja::Output<'_>,
    _state: &minijinja::State<'_, '_>,
    value: &Value,
) -> Result<(), Error> {
    if value.is_undefined() {
        return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
    }
    if value.is_none() {
        return Ok(());
    }
    let text = pyrepr::to_str(value)?;
    out.write_str(&text).map_err(Error::from)
}

/// Make an undefined-value error say which variable or expression was undefined: the
/// variables the template reads that are not defined, else the failing expression's text.
fn explain(e: Error, source: &str, missing: Vec<String>) -> Error {
    if e.kind() != ErrorKind::UndefinedError {
        return e;
    }
    // Only the engine's anonymous "undefined" errors get a name; messages that already say
    // what is missing (a lazily templated variable, `mandatory`) stay as they are.
    if e.detail().is_some_and(|d| d != "undefined value") {
        return e;
    }
    let what = e
        .range()
        .and_then(|r| source.get(r))
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
    let is_path = |t: &str| {
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_alphanumeric() || "_.[]'\"".contains(c))
    };
    match what {
        Some(expr) if is_path(expr) && missing.iter().all(|m| expr.starts_with(m.as_str())) => {
            format!("`{expr}` is undefined")
        }
        _ if !missing.is_empty() => {
            let names: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
            format!("{} is undefined", names.join(", "))
        }
        Some(expr) => format!("`{expr}` is undefined"),
        None => "undefined variable".to_string(),
    }
}

fn strip_braces(s: &str) -> &str {
    let s = s.strip_prefix("{{").unwrap_or(s);
    let s = s.strip_suffix("}}").unwrap_or(s);
    s.trim_matches(|c: char| c == '-' || c.is_whitespace())
}

/// Double the backslashes of string literals inside `{{ ... }}` (not `{% %}`), as Ansible
/// does, so `regex_replace('(\d)', '\1')` means what a playbook author wrote.
fn escape_backslashes(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains('\\') || !source.contains("{{") {
        return source.into();
    }
    let mut out = String::with_capacity(source.len() + 8);
    let mut rest = source;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let body = &rest[start..];
        let end = expression_end(body).unwrap_or(body.len());
        out.push_str(&escape_literals(&body[..end]));
        rest = &body[end..];
    }
    out.push_str(rest);
    out.into()
}

/// Byte offset just past the `}}` closing the expression that starts `body`, skipping
/// string literals.
fn expression_end(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 2;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'}' && bytes.get(i + 1) == Some(&b'}') => return Some(i + 2),
            None => {}
        }
        i += 1;
    }
    None
}

/// Double backslashes inside the string literals of an expression, keeping `\'` and `\"`
/// (an escaped quote of the literal's own kind) intact.
pub(crate) fn escape_literals(expr: &str) -> String {
    if !expr.contains('\\') {
        return expr.to_string();
    }
    let mut out = String::with_capacity(expr.len() + 8);
    let mut quote: Option<char> = None;
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == '\\' {
                    if chars.peek() == Some(&q) {
                        out.push('\\');
                        out.push(chars.next().unwrap_or(q));
                        continue;
                    }
                    out.push_str("\\\\");
                    continue;
                }
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslashes_in_literals_are_doubled() {
        assert_eq!(
            escape_backslashes(r"a\1 {{ x | regex_replace('(\d)', '\1') }} \n"),
            r"a\1 {{ x | regex_replace('(\\d)', '\\1') }} \n"
        );
        assert_eq!(escape_literals(r"'it\'s'"), r"'it\'s'");
        assert_eq!(escape_backslashes("{{ '}}' }}\\"), "{{ '}}' }}\\");
    }
}
