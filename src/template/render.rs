//! Rendering and evaluating with Ansible's conventions on top of minijinja: backslashes in
//! string literals inside `{{ }}` are taken literally (Ansible doubles them before Jinja sees
//! them), values print as Python's `str()` does, operators follow Python's type rules (see
//! `pyops`), and an undefined value is an error that names the expression that produced it
//! (see `undefined`).

use std::collections::BTreeMap;

use minijinja::machinery::{Vm, make_string_output};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value};

use super::undefined::{Attempt, Failed, check_items, with_fallback};
use super::{pyops, pyrepr};

thread_local! {
    /// The values printed by the renders in progress, innermost last: `Some` for a render
    /// that wants its output as a value (`render_value`), `None` for one that wants text.
    static NODES: std::cell::RefCell<Vec<Option<Vec<Value>>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Ends a render's frame in `NODES`, however the render ends.
struct Frame;

impl Drop for Frame {
    fn drop(&mut self) {
        NODES.with(|n| n.borrow_mut().pop());
    }
}

/// Render template text against `ctx`.
pub(crate) fn render(env: &Environment<'_>, source: &str, ctx: &Value) -> Result<String, Error> {
    render_framed(env, source, ctx, false, true).map(|(text, _)| text)
}

/// Render a template file's text: its string literals' backslashes are Jinja's escapes
/// (`'a\nb'` holds a line break), as the `template` module and lookup render with
/// `escape_backslashes=False`.
pub(crate) fn render_file(
    env: &Environment<'_>,
    source: &str,
    ctx: &Value,
) -> Result<String, Error> {
    render_framed(env, source, ctx, false, false).map(|(text, _)| text)
}

/// Render template text against `ctx` as ansible-core 2.19's native concatenation does: a
/// template whose output is one value (`{% if a %}{{ [1, 2] }}{% endif %}`) gives that value
/// with its type; any other output is text. A macro's (or a captured block's) single value
/// passed on as text counts as that value, as ansible-core's macros return it natively.
pub(crate) fn render_value(
    env: &Environment<'_>,
    source: &str,
    ctx: &Value,
) -> Result<Value, Error> {
    render_value_as(env, source, ctx, true)
}

/// `render_value`, with string literals' backslashes doubled first (`escape`, as for a
/// playbook's text) or left as Jinja's escapes (a template file's, see `render_file`).
pub(crate) fn render_value_as(
    env: &Environment<'_>,
    source: &str,
    ctx: &Value,
    escape: bool,
) -> Result<Value, Error> {
    let (text, nodes) = render_framed(env, source, ctx, true, escape)?;
    let nodes = nodes.unwrap_or_default();
    // The template's own final line break is not output (Jinja drops it); ansible-core gives
    // it back to a text result only.
    let bare = match (source.ends_with('\n'), text.strip_suffix('\n')) {
        (true, Some(bare)) => bare,
        _ => &text,
    };
    Ok(single_node(bare, &nodes).unwrap_or_else(|| Value::from(text)))
}

/// The one value `nodes` (what a render printed) hold, when the printed `text` is exactly it:
/// one value that is not text, and only that value's text besides.
fn single_node(text: &str, nodes: &[Value]) -> Option<Value> {
    let is_text = |v: &Value| v.kind() == minijinja::value::ValueKind::String;
    let mut natives = nodes.iter().filter(|v| !is_text(v));
    let one = natives.next()?;
    if natives.next().is_some() || pyrepr::to_str(one).ok()? != text {
        return None;
    }
    nodes
        .iter()
        .all(|v| !is_text(v) || v.as_str() == Some(text))
        .then(|| one.clone())
}

fn render_framed(
    env: &Environment<'_>,
    source: &str,
    ctx: &Value,
    record: bool,
    escape: bool,
) -> Result<(String, Option<Vec<Value>>), Error> {
    NODES.with(|n| n.borrow_mut().push(record.then(Vec::new)));
    let _frame = Frame;
    let src = match escape {
        true => escape_backslashes(source),
        false => source.into(),
    };
    let once = |env: &Environment<'_>| {
        // A retried render starts its record afresh.
        NODES.with(|n| {
            if let Some(Some(v)) = n.borrow_mut().last_mut() {
                v.clear();
            }
        });
        let compiled = pyops::compile_template(env, &src)?;
        let mut text = String::with_capacity(compiled.buffer_size_hint);
        let ran = Vm::new(env).eval(
            &compiled.instructions,
            ctx.clone(),
            &compiled.blocks,
            &mut make_string_output(&mut text),
            AutoEscape::None,
        );
        match ran {
            Ok(_) => Ok(text),
            Err(e) => Err(Attempt::Run(Failed {
                e,
                names: env
                    .template_from_str(&src)
                    .map(|t| t.undeclared_variables(false))
                    .unwrap_or_default(),
            })),
        }
    };
    let text = with_fallback(env, &src, ctx, once)?;
    let nodes = NODES.with(|n| n.borrow_mut().last_mut().and_then(Option::take));
    Ok((text, nodes))
}

/// Evaluate an expression against `ctx`; an undefined result, or one holding an undefined
/// item, is an error.
pub(crate) fn eval(env: &Environment<'_>, expr: &str, ctx: &Value) -> Result<Value, Error> {
    eval_as(env, expr, ctx, true)
}

/// `eval`, with the backslashes of string literals doubled (as in a template) or not (as in a
/// conditional: ansible-core's `evaluate_conditional` turns `escape_backslashes` off, so
/// `that: x == '\\z'` compares with `\z`).
pub(crate) fn eval_as(
    env: &Environment<'_>,
    expr: &str,
    ctx: &Value,
    escape: bool,
) -> Result<Value, Error> {
    let src = if escape {
        escape_literals(expr)
    } else {
        expr.to_string()
    };
    let once = |env: &Environment<'_>| {
        let instructions = pyops::compile_expression(&src)?;
        let mut nothing = String::new();
        let value = Vm::new(env)
            .eval(
                &instructions,
                ctx.clone(),
                &BTreeMap::new(),
                &mut make_string_output(&mut nothing),
                AutoEscape::None,
            )
            .map(|(v, _)| v.unwrap_or_default())
            .and_then(|v| check_items(&v).map(|()| v));
        value.map_err(|e| {
            Attempt::Run(Failed {
                e,
                names: env
                    .compile_expression(&src)
                    .map(|c| c.undeclared_variables(false))
                    .unwrap_or_default(),
            })
        })
    };
    let v = with_fallback(env, &src, ctx, once)?;
    if v.is_undefined() {
        return Err(super::undefined::undefined_result(
            env,
            &src,
            expr.trim(),
            ctx,
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
    NODES.with(|n| {
        if let Some(Some(nodes)) = n.borrow_mut().last_mut() {
            nodes.push(value.clone());
        }
    });
    let text = pyrepr::to_str(value)?;
    out.write_str(&text).map_err(Error::from)
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
