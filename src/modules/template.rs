//! `template`: render a local Jinja file with the host's variables and put the result on the
//! host (same check-then-apply and upload path as `copy` with `content`).

use serde::Deserialize;

use super::args::boolish;
use super::command::yes;
use super::filewrite::{self, Content, Write};
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::{self, Attrs, Kind};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};
use crate::codec::Codec;

typed_module!(Template, "template", Params, run);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Local template (looked up in the role's `templates/`, then beside the playbook).
    src: String,
    /// Path of the rendered file on the host.
    #[serde(deserialize_with = "host_path::action_one")]
    dest: String,
    /// Permissions of the file (`"0644"`, `u=rw,g=r`).
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
    /// Keep a timestamped copy of the file before replacing it.
    #[serde(default, deserialize_with = "boolish")]
    backup: bool,
    /// Replace a file whose content differs (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    force: bool,
    /// Line ending of the rendered file: `\n` (default), `\r\n` or `\r`.
    newline_sequence: Option<String>,
    /// The rendered file's character encoding (default `utf-8`; empty is the default too).
    output_encoding: Option<String>,
    /// A command (with `%s` for the new file) that must accept the file before it replaces
    /// the old one (`visudo -cf %s`).
    validate: Option<String>,
    /// Remove the first newline after a block tag (`{% ... %}`); Ansible's default.
    #[serde(default = "yes", deserialize_with = "boolish")]
    trim_blocks: bool,
    /// Strip spaces and tabs before a block tag at the start of its line.
    #[serde(default, deserialize_with = "boolish")]
    lstrip_blocks: bool,
    /// Block delimiters (default `{%` and `%}`).
    block_start_string: Option<String>,
    block_end_string: Option<String>,
    /// Variable delimiters (default `{{` and `}}`).
    variable_start_string: Option<String>,
    variable_end_string: Option<String>,
    /// Comment delimiters (default `{#` and `#}`).
    comment_start_string: Option<String>,
    comment_end_string: Option<String>,
    /// When `dest` is a symbolic link, write the file it points to (default no: the link is
    /// replaced by the file).
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
    /// Set only by a `#jinja2:` line (`with_overrides`), not an argument of the module.
    #[serde(skip)]
    line_statement_prefix: Option<String>,
    #[serde(skip)]
    line_comment_prefix: Option<String>,
}

impl Params {
    /// How the template file is read.
    fn file_options(&self) -> crate::template::FileOptions {
        let pair = |s: &Option<String>, e: &Option<String>, ds: &str, de: &str| {
            (
                s.clone().unwrap_or_else(|| ds.into()),
                e.clone().unwrap_or_else(|| de.into()),
            )
        };
        let custom = [
            &self.block_start_string,
            &self.block_end_string,
            &self.variable_start_string,
            &self.variable_end_string,
            &self.comment_start_string,
            &self.comment_end_string,
            &self.line_statement_prefix,
            &self.line_comment_prefix,
        ]
        .iter()
        .any(|o| o.is_some());
        crate::template::FileOptions {
            trim_blocks: self.trim_blocks,
            lstrip_blocks: self.lstrip_blocks,
            delimiters: custom.then(|| crate::template::Delimiters {
                block: pair(&self.block_start_string, &self.block_end_string, "{%", "%}"),
                variable: pair(
                    &self.variable_start_string,
                    &self.variable_end_string,
                    "{{",
                    "}}",
                ),
                comment: pair(
                    &self.comment_start_string,
                    &self.comment_end_string,
                    "{#",
                    "#}",
                ),
                line_statement_prefix: self.line_statement_prefix.clone(),
                line_comment_prefix: self.line_comment_prefix.clone(),
            }),
        }
    }
}

/// Where the template's includes are found, as ansible-core's `template` action builds it:
/// each `ansible_search_path` entry, then the template's own folder, each one's `templates/`
/// first.
fn search_path(local: &std::path::Path, vars: &crate::vars::VarMap) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = vars
        .get("ansible_search_path")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(Into::into)
                .collect()
        })
        .unwrap_or_default();
    if let Some(dir) = local.parent() {
        dirs.push(dir.to_path_buf());
    }
    dirs.into_iter()
        .flat_map(|d| [d.join("templates"), d])
        .collect()
}

/// A template's first line beginning so sets its options: `#jinja2: trim_blocks: False,
/// variable_start_string: '[%'` (`TemplateOverrides._extract_template_overrides` in
/// ansible-core 2.19); the line itself is not part of the file.
const JINJA2_OVERRIDE: &str = "#jinja2:";

/// `p` with the options of a `#jinja2:` line (`line`, after the prefix) set: pairs
/// `key: value` separated by commas, each value a Python literal.
fn with_overrides(p: &Params, line: &str) -> Result<Params, ModuleError> {
    let fail = |msg: String| ModuleError::Failed { msg };
    let mut p = p.clone();
    for pair in line.split(',') {
        if pair.trim().is_empty() {
            return Err(fail(format!(
                "Empty '{JINJA2_OVERRIDE}' override pair not allowed."
            )));
        }
        let Some((key, value)) = pair.split_once(':') else {
            return Err(fail(format!(
                "Missing key-value separator `:` in '{JINJA2_OVERRIDE}' override pair '{pair}'."
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        let text = || {
            value
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
                .map(|v| v.replace("\\n", "\n").replace("\\r", "\r"))
                .ok_or_else(|| {
                    fail(format!(
                        "'{JINJA2_OVERRIDE}' override `{key}` needs a quoted string, got `{value}`"
                    ))
                })
        };
        let flag = || match value {
            "True" => Ok(true),
            "False" => Ok(false),
            _ => Err(fail(format!(
                "'{JINJA2_OVERRIDE}' override `{key}` needs True or False, got `{value}`"
            ))),
        };
        match key {
            "trim_blocks" => p.trim_blocks = flag()?,
            "lstrip_blocks" => p.lstrip_blocks = flag()?,
            "block_start_string" => p.block_start_string = Some(text()?),
            "block_end_string" => p.block_end_string = Some(text()?),
            "variable_start_string" => p.variable_start_string = Some(text()?),
            "variable_end_string" => p.variable_end_string = Some(text()?),
            "comment_start_string" => p.comment_start_string = Some(text()?),
            "comment_end_string" => p.comment_end_string = Some(text()?),
            "newline_sequence" => p.newline_sequence = Some(text()?),
            // kinit keeps a template's trailing newlines, as the template module does.
            "keep_trailing_newline" => {
                flag()?;
            }
            "line_statement_prefix" => p.line_statement_prefix = Some(text()?),
            "line_comment_prefix" => p.line_comment_prefix = Some(text()?),
            _ => {
                return Err(fail(format!(
                    "Invalid '{JINJA2_OVERRIDE}' override key '{key}'."
                )));
            }
        }
    }
    Ok(p)
}

/// The rendered text of the template (`run` and `kinit plan --render` alike).
fn text(
    p: &Params,
    local: &std::path::Path,
    source: std::io::Result<String>,
    render: &dyn super::Render,
    vars: &crate::vars::VarMap,
) -> Result<String, ModuleError> {
    let source = source.map_err(|e| ModuleError::Failed {
        msg: format!("cannot read template `{}`: {e}", local.display()),
    })?;
    // A vaulted template is rendered from its plaintext (Ansible reads it through
    // `DataLoader.get_real_file`, which decrypts).
    let source = crate::vault::file_text(local, source)
        .map_err(|e| ModuleError::Failed { msg: e.to_string() })?;
    let overridden;
    let (source, p) = match source.strip_prefix(JINJA2_OVERRIDE) {
        Some(rest) => {
            let (line, body) = rest.split_once('\n').ok_or_else(|| ModuleError::Failed {
                msg: format!("Missing newline after '{JINJA2_OVERRIDE}' override."),
            })?;
            overridden = with_overrides(p, line)?;
            (body.to_string(), &overridden)
        }
        None => (source, p),
    };
    let mut text = render
        .render_file(
            &source,
            &template_vars(local, &p.dest, vars.contains_key("ansible_managed")),
            &search_path(local, vars),
            &p.file_options(),
        )
        .map_err(|e| ModuleError::Failed {
            msg: format!("template `{}`: {e}", p.src),
        })?;
    // ansible-core keeps the template's trailing newlines (`preserve_trailing_newlines`): a
    // final tag that ate one (a comment under `trim_blocks`) does not shorten the file.
    let trailing = |t: &str| t.len() - t.trim_end_matches('\n').len();
    let missing = trailing(&source).saturating_sub(trailing(&text));
    text.push_str(&"\n".repeat(missing));
    // The template action takes the escaped spellings (`'\r\n'` in single quotes) for the
    // characters and refuses anything else (ansible-core `plugins/action/template.py`).
    let nl = match p.newline_sequence.as_deref() {
        None | Some("\n" | "\\n") => None,
        Some("\r" | "\\r") => Some("\r"),
        Some("\r\n" | "\\r\\n") => Some("\r\n"),
        Some(_) => {
            return Err(ModuleError::Failed {
                msg: "newline_sequence needs to be one of: \n, \r or \r\n".into(),
            });
        }
    };
    if let Some(nl) = nl {
        text = text.replace('\n', nl);
    }
    Ok(text)
}

/// The file the task would write, for `kinit plan --render`.
pub fn render(
    ctx: &super::render::RenderCtx<'_>,
    args: &serde_json::Value,
) -> Result<super::render::Rendered, ModuleError> {
    let p: Params = super::params("template", args)?;
    let local = ctx.find_local(&p.src)?;
    let text = text(
        &p,
        &local,
        std::fs::read_to_string(&local),
        ctx.render,
        ctx.vars,
    )?;
    let content = encoded(text, p.output_encoding.as_deref().unwrap_or_default())?;
    Ok(super::render::Rendered::target(vec![
        super::render::RenderedFile {
            name: super::render::host_path(&p.dest),
            content,
        },
    ]))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let local = ctx.find_local(&p.src)?;
    let source = tokio::fs::read_to_string(&local).await;
    let text = text(&p, &local, source, ctx.render, ctx.vars)?;
    // As ansible-core's `copy` action (which `template` hands the rendered file to) picks the
    // file: a `dest` ending in `/`, or an existing folder, receives the template's file name.
    let base = local
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut dest = if p.dest.ends_with('/') {
        posix::join(&p.dest, &base)
    } else if p.follow {
        filewrite::resolve_link(ctx, &p.dest).await?
    } else {
        p.dest.clone()
    };
    let mut before = filewrite::probe(ctx, &dest, ctx.diff).await?;
    if before.stat.kind == Kind::Directory {
        dest = posix::join(&dest, &base);
        before = filewrite::probe(ctx, &dest, ctx.diff).await?;
        if before.stat.kind == Kind::Directory {
            return Ok(ModuleResult::failed(format!(
                "`dest` `{dest}` is a directory"
            )));
        }
    }
    // `mode: preserve`: the template file's own mode, as ansible-core's template action
    // passes it on to `copy`.
    let mode = match p.mode {
        Some(Mode::Preserve) => Some(Mode::Octal(super::copy::local_mode(&local))),
        m => m,
    };
    let attrs = Attrs {
        mode,
        owner: p.owner,
        group: p.group,
    };
    let w = Write {
        dest: &dest,
        attrs: &attrs,
        backup: p.backup,
        force: p.force,
        validate: p.validate.as_deref(),
    };
    let bytes = encoded(text, p.output_encoding.as_deref().unwrap_or_default())?;
    let r = filewrite::apply(ctx, &w, Content::bytes(bytes), &before).await?;
    Ok(filewrite::with_file_state(r, ctx, &before).with("src", p.src.as_str()))
}

/// `text` in the `output_encoding` Python calls `encoding` (`utf-8`, `utf-16` with its byte
/// order mark, `latin-1`, and what the WHATWG encoding standard names: `windows-1252`,
/// `shift_jis`, `koi8-r`...). A character the encoding lacks fails the task, as Python's
/// strict codecs do.
fn encoded(text: String, encoding: &str) -> Result<Vec<u8>, ModuleError> {
    let Some(codec) = Codec::lookup(encoding) else {
        return Err(ModuleError::Failed {
            // ansible-core's words (Python's `LookupError`), and the argument's name.
            msg: format!("Task failed: unknown encoding: {encoding} (`output_encoding`)"),
        });
    };
    codec
        .encode(&text, encoding)
        .map_err(|e| ModuleError::Failed {
            msg: format!("Task failed: {e}"),
        })
}

/// The variables Ansible's `template` adds for the file it renders: `ansible_managed` (its
/// default text, "Ansible managed"), `template_path`/`template_fullpath` (the local file),
/// `template_destpath`, `template_host` (this machine), `template_uid` (the file's owner),
/// `template_mtime` (its modification time, local, as Python prints a datetime)
/// and `template_run_date` (now, as Python prints a datetime).
fn template_vars(local: &std::path::Path, dest: &str, user_managed: bool) -> crate::vars::VarMap {
    use std::os::unix::fs::MetadataExt;
    let full = std::path::absolute(local).unwrap_or_else(|_| local.to_path_buf());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let meta = std::fs::metadata(local).ok();
    let uid = meta.as_ref().map(|m| m.uid()).unwrap_or(0);
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .map(python_datetime)
        .unwrap_or_default();
    let owner = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|p| {
            p.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| uid.to_string());
    let mut v = crate::vars::VarMap::new();
    let s = |x: String| serde_json::Value::String(x);
    // Only where the variable is not set (upstream's `include_ansible_managed`).
    if !user_managed {
        v.insert("ansible_managed".into(), s("Ansible managed".into()));
    }
    v.insert("template_path".into(), s(full.display().to_string()));
    v.insert("template_fullpath".into(), s(full.display().to_string()));
    v.insert("template_destpath".into(), s(dest.to_string()));
    v.insert("template_host".into(), s(host));
    v.insert("template_uid".into(), s(owner));
    v.insert("template_mtime".into(), s(mtime));
    v.insert(
        "template_run_date".into(),
        s(python_datetime(std::time::SystemTime::now())),
    );
    v
}

/// A time (UTC) as `str(datetime)` prints it: `2026-11-25 21:53:07.123456`, without the
/// fraction when it is zero.
fn python_datetime(t: std::time::SystemTime) -> String {
    let now = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let fraction = match now.subsec_micros() {
        0 => String::new(),
        us => format!(".{us:06}"),
    };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}{fraction}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
    )
}
