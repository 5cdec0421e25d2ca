//! `deb822_repository`: an apt repository as a deb822 `.sources` file in
//! `/etc/apt/sources.list.d`, as ansible-core 2.19's `deb822_repository`
//! (lib/ansible/modules/deb822_repository.py) writes it: one field per set option, in the
//! order of the option names, booleans as `yes`/`no`, lists joined by spaces, a value of
//! several lines (an inline key) continued on lines indented by four spaces with `.` for an
//! empty one. The file is named after `name` made a slug. A `signed_by` URL is fetched on the
//! host into `/etc/apt/keyrings/<slug>.asc` (armored) or `.gpg`; a path to a file on the host
//! is kept as it is; anything else is written inline.

use serde::Deserialize;
use serde_json::Value;

use super::args::{list, opt_boolish, opt_u64ish};
use super::filewrite::{self, Content, Write};
use super::lineinfile::State;
use super::mode::{Mode, opt_mode};
use super::posix::{Attrs, Kind};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, http, path_info, typed_module};
use crate::transport::quote::sh;

typed_module!(Deb822Repository, "deb822_repository", Params, run);

const KEYRINGS_DIR: &str = "/etc/apt/keyrings";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The repository's name (`X-Repolib-Name`); its slug names the files.
    name: String,
    /// `deb` and/or `deb-src` (default `deb`).
    #[serde(default, deserialize_with = "list")]
    types: Vec<String>,
    /// The repository's base URIs.
    #[serde(default, deserialize_with = "opt_list")]
    uris: Option<Vec<String>>,
    /// Suites (releases, or an exact path ending in `/`).
    #[serde(default, deserialize_with = "opt_list")]
    suites: Option<Vec<String>>,
    /// Components (empty with an exact-path suite).
    #[serde(default, deserialize_with = "opt_list")]
    components: Option<Vec<String>>,
    /// The key: a URL (fetched into `/etc/apt/keyrings`), a key file's path, or the key text.
    signed_by: Option<String>,
    /// `Enabled:` yes/no.
    #[serde(default, deserialize_with = "opt_boolish")]
    enabled: Option<bool>,
    /// `Architectures:`.
    #[serde(default, deserialize_with = "opt_list")]
    architectures: Option<Vec<String>>,
    /// `Trusted:` yes/no (skip signature checks).
    #[serde(default, deserialize_with = "opt_boolish")]
    trusted: Option<bool>,
    /// `Allow-Downgrade-To-Insecure:`.
    #[serde(default, deserialize_with = "opt_boolish")]
    allow_downgrade_to_insecure: Option<bool>,
    /// `Allow-Insecure:`.
    #[serde(default, deserialize_with = "opt_boolish")]
    allow_insecure: Option<bool>,
    /// `Allow-Weak:`.
    #[serde(default, deserialize_with = "opt_boolish")]
    allow_weak: Option<bool>,
    /// `Languages:`.
    #[serde(default, deserialize_with = "opt_list")]
    languages: Option<Vec<String>>,
    /// `Targets:`.
    #[serde(default, deserialize_with = "opt_list")]
    targets: Option<Vec<String>>,
    /// `PDiffs:` yes/no.
    #[serde(default, deserialize_with = "opt_boolish")]
    pdiffs: Option<bool>,
    /// `By-Hash:` yes/no.
    #[serde(default, deserialize_with = "opt_boolish")]
    by_hash: Option<bool>,
    /// `Inrelease-Path:`.
    inrelease_path: Option<String>,
    /// `Check-Date:` yes/no.
    #[serde(default, deserialize_with = "opt_boolish")]
    check_date: Option<bool>,
    /// `Check-Valid-Until:` yes/no.
    #[serde(default, deserialize_with = "opt_boolish")]
    check_valid_until: Option<bool>,
    /// `Date-Max-Future:` seconds.
    #[serde(default, deserialize_with = "opt_u64ish")]
    date_max_future: Option<u64>,
    /// The `.sources` file's mode (default 0644).
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// `present` (default) or `absent` (the file and a fetched key removed).
    #[serde(default)]
    state: State,
}

fn opt_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    list(d).map(Some)
}

/// The slug of a repository name (lower case, runs of `_` and blanks made `-`, anything but
/// `a-z0-9-` dropped), as upstream makes it.
pub fn slug(name: &str) -> String {
    let lower = name.to_lowercase();
    let mut dashed = String::new();
    let mut in_run = false;
    for c in lower.chars() {
        if c == '_' || c.is_whitespace() {
            if !in_run {
                dashed.push('-');
            }
            in_run = true;
        } else {
            dashed.push(c);
            in_run = false;
        }
    }
    dashed
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect()
}

/// A field name as upstream spells it: `name` is `X-Repolib-Name`, `uris` is `URIs`, others
/// are title-cased with `_` made `-` (Python's `str.title`).
fn field_name(option: &str) -> String {
    match option {
        "name" => "X-Repolib-Name".into(),
        "uris" => "URIs".into(),
        _ => {
            let mut out = String::new();
            let mut start = true;
            for c in option.replace('_', "-").chars() {
                out.extend(if start {
                    c.to_uppercase().collect::<Vec<_>>()
                } else {
                    c.to_lowercase().collect()
                });
                start = !c.is_alphabetic();
            }
            out
        }
    }
}

/// A value of several lines as deb822 continues it (upstream's `format_multiline`).
fn multiline(v: &str) -> String {
    let lines: Vec<String> = v
        .trim()
        .lines()
        .map(|l| match l.trim() {
            "" => "    .".to_string(),
            t => format!("    {t}"),
        })
        .collect();
    format!("\n{}", lines.join("\n"))
}

/// The `.sources` text for these fields (option name, value), as `Deb822.dump` writes them:
/// `Field: value`, or `Field:` directly followed by a value that starts on its own line.
pub fn render(fields: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = fields.iter().collect();
    sorted.sort_by_key(|(k, _)| *k);
    let mut out = String::new();
    for (k, v) in sorted {
        let v = if v.contains('\n') {
            multiline(v)
        } else {
            v.clone()
        };
        let name = field_name(k);
        if v.is_empty() || v.starts_with('\n') {
            out.push_str(&format!("{name}:{v}\n"));
        } else {
            out.push_str(&format!("{name}: {v}\n"));
        }
    }
    out
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// The option fields set in `p`, `signed_by` left out (it depends on the host).
fn fields(p: &Params) -> Vec<(&'static str, String)> {
    let mut f: Vec<(&'static str, String)> = Vec::new();
    let bools = [
        ("allow_downgrade_to_insecure", p.allow_downgrade_to_insecure),
        ("allow_insecure", p.allow_insecure),
        ("allow_weak", p.allow_weak),
        ("by_hash", p.by_hash),
        ("check_date", p.check_date),
        ("check_valid_until", p.check_valid_until),
        ("enabled", p.enabled),
        ("pdiffs", p.pdiffs),
        ("trusted", p.trusted),
    ];
    f.extend(
        bools
            .into_iter()
            .filter_map(|(k, v)| v.map(|b| (k, yes_no(b)))),
    );
    let lists = [
        ("architectures", &p.architectures),
        ("components", &p.components),
        ("languages", &p.languages),
        ("suites", &p.suites),
        ("targets", &p.targets),
        ("uris", &p.uris),
    ];
    f.extend(
        lists
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|l| (k, l.join(" ")))),
    );
    let types = if p.types.is_empty() {
        vec!["deb".to_string()]
    } else {
        p.types.clone()
    };
    f.push(("types", types.join(" ")));
    if let Some(n) = p.date_max_future {
        f.push(("date_max_future", n.to_string()));
    }
    if let Some(s) = &p.inrelease_path {
        f.push(("inrelease_path", s.clone()));
    }
    f.push(("name", p.name.clone()));
    f
}

/// Whether `v` parses as a URL with a scheme (Python's `urlparse(v).scheme`).
fn has_scheme(v: &str) -> bool {
    regex::Regex::new(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
        .expect("valid")
        .is_match(v)
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if let Some(t) = p.types.iter().find(|t| *t != "deb" && *t != "deb-src") {
        return Ok(ModuleResult::failed(format!(
            "value of types must be one or more of: deb, deb-src. Got no match for: {t}"
        )));
    }
    let slug = slug(&p.name);
    let dest = format!("/etc/apt/sources.list.d/{slug}.sources");
    if p.state == State::Absent {
        return absent(ctx, &slug, &dest).await;
    }
    let mut changed = false;
    let mut fields = fields(&p);
    let mut key_filename = Value::Null;
    if let Some(v) = &p.signed_by {
        let is_file = ctx.run(format!("[ -f {} ]", sh(v))).await?.success();
        if is_file {
            key_filename = Value::from(v.as_str());
            fields.push(("signed_by", v.clone()));
        } else if has_scheme(v) {
            let data = match http::get(ctx, v, true).await? {
                Ok(d) => d,
                Err(e) => {
                    return Ok(ModuleResult::failed(format!(
                        "Could not fetch signed_by key: {e}"
                    )));
                }
            };
            if data.is_empty() {
                key_filename = Value::from(v.as_str());
                fields.push(("signed_by", v.clone()));
            } else {
                let armored =
                    String::from_utf8_lossy(&data).contains("-----BEGIN PGP PUBLIC KEY BLOCK-----");
                let file = format!(
                    "{KEYRINGS_DIR}/{slug}.{}",
                    if armored { "asc" } else { "gpg" }
                );
                match write_key(ctx, &file, data).await? {
                    Ok(c) => changed |= c,
                    Err(failed) => return Ok(failed),
                }
                key_filename = Value::from(file.clone());
                fields.push(("signed_by", file));
            }
        } else {
            fields.push(("signed_by", v.clone()));
        }
    }
    let repo = render(&fields);
    let before = filewrite::probe(ctx, &dest, ctx.diff).await?;
    let attrs = Attrs {
        mode: Some(p.mode.clone().unwrap_or(Mode::Octal(0o644))),
        ..Attrs::default()
    };
    let w = Write {
        dest: &dest,
        attrs: &attrs,
        backup: false,
        force: true,
        validate: None,
    };
    let wrote =
        filewrite::apply(ctx, &w, Content::bytes(repo.clone().into_bytes()), &before).await?;
    if wrote.failed {
        return Ok(wrote);
    }
    let mut r = ModuleResult {
        changed: changed || wrote.changed,
        ..ModuleResult::ok()
    }
    .with("repo", repo.as_str())
    .with("dest", dest.as_str())
    .with("key_filename", key_filename);
    if ctx.diff && wrote.changed {
        r.diff = wrote.diff.or(Some(Diff {
            path: Some(dest.clone()),
            before: before.text().into_owned().into(),
            after: repo.into(),
        }));
    }
    path_info::add(ctx, r, &dest).await
}

/// Put a fetched key at `file` (0644, in a root-owned 0755 keyrings folder) unless it is
/// there already; `Ok(true)` when something changed (or would, in check mode).
async fn write_key(
    ctx: &ModuleCtx<'_>,
    file: &str,
    data: Vec<u8>,
) -> Result<Result<bool, ModuleResult>, ModuleError> {
    let before = filewrite::probe(ctx, file, false).await?;
    let content = Content::bytes(data);
    let mut changed = false;
    if before.stat.checksum.as_deref() != Some(content.sha256.as_str()) {
        let dir = ctx
            .run(format!(
                "[ -d {d} ] && [ \"$(stat -c %U:%G:%a {d})\" = root:root:755 ]",
                d = sh(KEYRINGS_DIR)
            ))
            .await?;
        if !dir.success() {
            changed = true;
            if !ctx.check_mode {
                let out = ctx
                    .run(format!(
                        "mkdir -p {d} && chown root:root {d} && chmod 0755 {d}",
                        d = sh(KEYRINGS_DIR)
                    ))
                    .await?;
                if !out.success() {
                    return Ok(Err(ModuleResult::failed(format!(
                        "cannot create `{KEYRINGS_DIR}`: {}",
                        out.stderr_str().trim()
                    ))));
                }
            }
        }
    }
    let attrs = Attrs {
        mode: Some(Mode::Octal(0o644)),
        ..Attrs::default()
    };
    let w = Write {
        dest: file,
        attrs: &attrs,
        backup: false,
        force: true,
        validate: None,
    };
    let wrote = filewrite::apply(ctx, &w, content, &before).await?;
    if wrote.failed {
        return Ok(Err(wrote));
    }
    Ok(Ok(changed || wrote.changed))
}

/// Remove the `.sources` file and a key fetched for it.
async fn absent(ctx: &ModuleCtx<'_>, slug: &str, dest: &str) -> Result<ModuleResult, ModuleError> {
    let asc = format!("{KEYRINGS_DIR}/{slug}.asc");
    let gpg = format!("{KEYRINGS_DIR}/{slug}.gpg");
    let mut changed = false;
    for f in [dest, asc.as_str(), gpg.as_str()] {
        let st = filewrite::probe(ctx, f, false).await?;
        if st.stat.kind == Kind::Absent {
            continue;
        }
        changed = true;
        if !ctx.check_mode {
            let out = ctx.run(format!("rm -f -- {}", sh(f))).await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "cannot remove `{f}`: {}",
                    out.stderr_str().trim()
                )));
            }
        }
    }
    // Upstream reports the `.gpg` name here whichever key file there was.
    let r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("repo", Value::Null)
    .with("dest", dest)
    .with("key_filename", gpg.as_str());
    path_info::add(ctx, r, dest).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_field_names_as_upstream() {
        assert_eq!(slug("My  Repo_x!"), "my-repo-x");
        assert_eq!(field_name("by_hash"), "By-Hash");
        assert_eq!(
            field_name("allow_downgrade_to_insecure"),
            "Allow-Downgrade-To-Insecure"
        );
        assert_eq!(field_name("pdiffs"), "Pdiffs");
        assert_eq!(field_name("uris"), "URIs");
    }

    #[test]
    fn fields_sorted_and_inline_key_continued() {
        let text = render(&[
            ("uris", "https://x/".into()),
            ("types", "deb".into()),
            ("name", "x".into()),
            (
                "signed_by",
                "-----BEGIN PGP-----\n\nabc\n-----END-----\n".into(),
            ),
            ("components", String::new()),
        ]);
        assert_eq!(
            text,
            "Components:\nX-Repolib-Name: x\nSigned-By:\n    -----BEGIN PGP-----\n    .\n    \
             abc\n    -----END-----\nTypes: deb\nURIs: https://x/\n"
        );
    }
}
