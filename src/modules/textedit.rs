//! The flow `lineinfile`, `blockinfile` and `sysctl` share: read the file on the host in the
//! probe, edit the text on the controller (a pure function the module supplies), then write it
//! back through `filewrite` only if the text changed.

use super::filewrite::{self, Content, Write};
use super::posix::{Attrs, Kind};
use super::{ModuleCtx, ModuleError, ModuleResult};

/// How a text file is to be edited.
pub struct TextEdit<'a> {
    pub path: &'a str,
    /// Create the file when it is missing (otherwise that is a failure).
    pub create: bool,
    pub backup: bool,
    pub attrs: &'a Attrs,
    /// `validate`: a command with `%s` that must accept the edited file.
    pub validate: Option<&'a str>,
    /// The failure message for a missing file (`create: false`), when the module has its own.
    pub missing_msg: Option<String>,
    /// The message for a file the edit creates, when the module has its own
    /// (`blockinfile`: "File created").
    pub created_msg: Option<&'static str>,
    /// Whether the diff is headed `path (content)`, as lineinfile's and blockinfile's are.
    pub content_header: bool,
}

/// Read `e.path`, run `edit` on its text (`""` for a missing file), write the result.
/// `edit` returns the new text and a message (`"line added"`, ...).
pub async fn edit_file(
    ctx: &ModuleCtx<'_>,
    e: &TextEdit<'_>,
    edit: impl FnOnce(&str) -> (String, String),
) -> Result<ModuleResult, ModuleError> {
    let before = filewrite::probe(ctx, e.path, true).await?;
    match before.stat.kind {
        Kind::File => {}
        Kind::Absent if e.create => {}
        Kind::Absent => {
            let msg = e
                .missing_msg
                .clone()
                .unwrap_or_else(|| format!("destination `{}` does not exist", e.path));
            return Ok(ModuleResult::failed(msg).with("rc", 257));
        }
        // lineinfile, replace and blockinfile all fail so (rc 256) on a folder.
        Kind::Directory => {
            return Ok(
                ModuleResult::failed(format!("Path {} is a directory !", e.path)).with("rc", 256),
            );
        }
        _ => {
            return Ok(ModuleResult::failed(format!(
                "`{}` is not a regular file",
                e.path
            )));
        }
    }
    let old = before.text();
    let (new, mut msg) = edit(&old);
    let absent = before.stat.kind == Kind::Absent;
    if new == old && absent {
        // Nothing to write and no file: leave it absent (e.g. removing a line from nothing).
        return Ok(ModuleResult::ok());
    }
    if absent {
        if let Some(m) = e.created_msg {
            msg = m.to_string();
        }
        // `create` makes the missing folders too, as upstream's `os.makedirs`.
        let parent = super::posix::parent_of(e.path);
        if !ctx.check_mode && !parent.is_empty() {
            let out = ctx
                .run(format!(
                    "mkdir -p -- {}",
                    crate::transport::quote::sh(&parent)
                ))
                .await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "Error creating {parent} ({})",
                    out.stderr_str().trim()
                )));
            }
        }
    }
    let w = Write {
        dest: e.path,
        attrs: e.attrs,
        backup: e.backup,
        force: true,
        validate: e.validate,
    };
    let content_changed = new != old;
    let mut r = filewrite::apply(ctx, &w, Content::bytes(new.into_bytes()), &before).await?;
    if let Some(d) = r.diff.as_mut().filter(|_| e.content_header) {
        d.path = Some(format!("{} (content)", e.path));
    }
    if r.failed && r.msg.as_deref() == Some("failed to validate") {
        // lineinfile/blockinfile say it in one line, as Ansible's do.
        let rc = r.data.get("exit_status").cloned().unwrap_or_default();
        let stderr = r
            .data
            .get("stderr")
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_string();
        return Ok(ModuleResult::failed(format!(
            "failed to validate: rc:{rc} error:{stderr}"
        )));
    }
    if !r.failed {
        r.msg = Some(if content_changed {
            msg
        } else if r.changed {
            "ownership, perms or SE linux context changed".into()
        } else {
            // Unchanged: the edit's own word, usually empty ("Pattern ... did not match").
            msg
        });
    }
    Ok(r)
}

/// Split text into lines (without their `\n`); the flag says whether it ended with one.
pub fn lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(str::to_string).collect()
}

/// Join lines back into file text, every line ending in `\n`.
pub fn unlines(lines: &[String]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}
