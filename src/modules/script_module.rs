//! Custom modules in a language other than Python (a `library/` file with a `#!` line for
//! `sh`, `bash`, `perl`..., or a compiled program), run as ansible-core runs them
//! (`executor/module_common.py` `_find_module_utils`, `plugins/action/__init__.py`
//! `_execute_module`): the module and an arguments file are put on the host, and the module's
//! interpreter runs `<module> <arguments file>`. The arguments file is JSON for a program and
//! for a file that says `WANT_JSON`; for any other ("old style") it is `key=value` pairs,
//! each value quoted for `sh` (so an `sh` module can source it). `ansible_<name>_interpreter`
//! replaces the `#!` line's interpreter, as in Ansible. The JSON the module prints is the
//! task's result, read as for a Python module. Both files are removed in the same command.

use std::path::Path;

use serde_json::Value;

use crate::transport::Source;
use crate::transport::quote::{sh, sh_join};

use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult};

/// One module file in another language: its name in the task and its file.
pub struct ScriptModule<'p> {
    pub name: &'p str,
    pub path: &'p Path,
}

/// How ansible-core passes the arguments to a module that is not new-style Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// `key=value ` pairs (`old`).
    Old,
    /// A JSON file (`non_native_want_json`).
    WantJson,
    /// A compiled program (`binary`): JSON, and the file runs itself.
    Binary,
}

/// ansible-core's `_is_binary` sniff of a module's first KiB: bytes outside the text set.
fn is_binary(data: &[u8]) -> bool {
    let head = &data[..data.len().min(1024)];
    head.iter()
        .any(|b| !matches!(b, 7 | 8 | 9 | 10 | 12 | 13 | 27 | 0x20..=0x7E | 0x80..=0xFF))
}

fn style(data: &[u8]) -> Style {
    if is_binary(data) {
        Style::Binary
    } else if data.windows(9).any(|w| w == b"WANT_JSON") {
        Style::WantJson
    } else {
        Style::Old
    }
}

/// A value as Python's `str()` writes it (what ansible-core puts after `key=`).
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => {
            let v = minijinja::Value::from_serialize(other);
            crate::template::pyrepr::to_repr(&v).unwrap_or_else(|_| other.to_string())
        }
    }
}

/// The interpreter words of the `#!` line, with `ansible_<name>_interpreter` in place of
/// the program when the host sets it.
fn interpreter(data: &[u8], ctx: &ModuleCtx<'_>) -> Option<Vec<String>> {
    let first = data.split(|b| *b == b'\n').next()?;
    let line = String::from_utf8_lossy(first.strip_prefix(b"#!")?)
        .trim()
        .to_string();
    let mut words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    let program = words.first()?.clone();
    // `#!/usr/bin/env bash` names the interpreter in its argument.
    let name_of = if program.ends_with("/env") {
        words.get(1).cloned().unwrap_or_default()
    } else {
        program.rsplit('/').next().unwrap_or_default().to_string()
    };
    if let Some(set) = ctx
        .vars
        .get(&format!("ansible_{name_of}_interpreter"))
        .and_then(Value::as_str)
        .and_then(|v| ctx.render.render(v).ok())
        .filter(|v| !v.trim().is_empty())
    {
        let skip = if program.ends_with("/env") { 2 } else { 1 };
        words = std::iter::once(set)
            .chain(words.into_iter().skip(skip))
            .collect();
    }
    Some(words)
}

impl Module for ScriptModule<'_> {
    fn validate(&self, _args: &Value) -> Result<(), ModuleError> {
        // The module checks its own arguments on the host, as in Ansible.
        Ok(())
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(run(self, ctx, args))
    }
}

async fn run(
    m: &ScriptModule<'_>,
    ctx: &ModuleCtx<'_>,
    args: Value,
) -> Result<ModuleResult, ModuleError> {
    if let Some(refusal) = super::posix_only(m.name, ctx) {
        return Ok(refusal);
    }
    let data = std::fs::read(m.path).map_err(|e| ModuleError::Failed {
        msg: format!("cannot read custom module `{}`: {e}", m.path.display()),
    })?;
    let params = match super::pymodule::module_params(m.name, args, ctx) {
        Ok(p) => p,
        Err(refusal) => return Ok(*refusal),
    };
    let style = style(&data);
    let args_text = match style {
        Style::Old => params
            .iter()
            .map(|(k, v)| format!("{k}={} ", sh(&python_str(v))))
            .collect::<String>(),
        Style::WantJson | Style::Binary => Value::Object(params).to_string(),
    };
    let command = match (style, interpreter(&data, ctx)) {
        (Style::Binary, _) => Vec::new(),
        (_, Some(words)) => words,
        (_, None) => {
            return Ok(ModuleResult::failed(format!(
                "module `{}` ({}) has no `#!` line naming its interpreter, so kinit cannot \
                 run it",
                m.name,
                m.path.display()
            )));
        }
    };
    let module = super::script::unique_temp_path("module");
    let args_file = super::script::unique_temp_path("args");
    ctx.conn
        .put(&Source::File(m.path.to_path_buf()), &module, Some(0o700))
        .await?;
    ctx.conn
        .put(
            &Source::Bytes(args_text.into_bytes()),
            &args_file,
            Some(0o600),
        )
        .await?;
    let mut argv = command;
    argv.push(module.clone());
    argv.push(args_file.clone());
    let script = format!(
        "{}\nrc=$?\nrm -f -- {} {}\nexit $rc",
        sh_join(&argv),
        sh(&module),
        sh(&args_file)
    );
    let out = ctx.run(script).await?;
    Ok(super::pymodule::result_of(
        &out.stdout_str(),
        &out.stderr_str(),
        out.rc,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn styles_as_ansible_core_tells_them() {
        assert_eq!(style(b"#!/bin/sh\necho '{}'\n"), Style::Old);
        assert_eq!(style(b"#!/bin/sh\n# WANT_JSON\n"), Style::WantJson);
        assert_eq!(style(b"\x7fELF\x02\x01\x01\x00\x00"), Style::Binary);
    }

    #[test]
    fn old_style_values_are_pythons_str() {
        assert_eq!(python_str(&json!(true)), "True");
        assert_eq!(python_str(&json!(null)), "None");
        assert_eq!(python_str(&json!(1.5)), "1.5");
        assert_eq!(python_str(&json!("a b")), "a b");
        assert_eq!(python_str(&json!(["x", 1])), "['x', 1]");
        assert_eq!(sh(&python_str(&json!("a b"))), "'a b'");
    }
}
