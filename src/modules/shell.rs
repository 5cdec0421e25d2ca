//! `shell`: run text through a shell on the host (`/bin/sh`, or `executable`), with pipes,
//! redirections and variables working as the user wrote them.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::boolish;
use super::command::{Common, run_script, yes};
use super::host_path;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Shell, "shell", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The shell text (free-form).
    #[serde(rename = "_raw_params")]
    raw_params: Option<String>,
    /// The shell text, as in the free-form.
    cmd: Option<String>,
    /// The shell to run the text with (default `/bin/sh`).
    executable: Option<String>,
    /// `command`'s option, refused when the task runs as ansible-core's `shell` action
    /// refuses it (`plugins/action/shell.py`): the shell itself expands variables.
    #[serde(default)]
    expand_argument_vars: Option<serde_json::Value>,
    /// Change into this directory before running.
    #[serde(default, deserialize_with = "host_path::opt")]
    chdir: Option<String>,
    /// Do not run when this path exists on the host.
    #[serde(default, deserialize_with = "host_path::opt")]
    creates: Option<String>,
    /// Do not run when this path does not exist on the host.
    #[serde(default, deserialize_with = "host_path::opt")]
    removes: Option<String>,
    /// Text written to the command's standard input.
    stdin: Option<String>,
    /// Add a newline after `stdin` (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    stdin_add_newline: bool,
    /// Remove trailing empty lines from stdout/stderr (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    strip_empty_ends: bool,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if p.expand_argument_vars.is_some() {
        return Err(ModuleError::Failed {
            msg: "Unsupported parameters for (shell) module: expand_argument_vars".into(),
        });
    }
    let text = p.cmd.or(p.raw_params).ok_or_else(|| ModuleError::BadArgs {
        module: "shell",
        detail: "no command given (expected free-form text or `cmd`)".into(),
    })?;
    let script = match &p.executable {
        Some(exe) => format!("{} -c {}", sh(exe), sh(&text)),
        None => text.clone(),
    };
    let common = Common {
        cmd: serde_json::Value::from(text.clone()),
        chdir: p.chdir,
        creates: p.creates,
        removes: p.removes,
        stdin: p.stdin,
        stdin_add_newline: p.stdin_add_newline,
        strip_empty_ends: p.strip_empty_ends,
    };
    // `cmd` is the text as given, also with `executable` (which ansible-core passes to
    // `run_command` beside it, not inside it).
    run_script(ctx, &script, &common).await
}
