//! Path filters that are Python's `os.path`/`ntpath` functions in ansible-core
//! (`plugins/filter/core.py`): `normpath`, `expandvars`, `fileglob`, and the Windows forms
//! `win_basename`, `win_dirname`, `win_splitdrive`. They run on the controller, as there.

use minijinja::{Error, ErrorKind, Value};

use crate::template::pyrepr;

/// Python's `posixpath.normpath`: `.` and doubled slashes dropped, `..` taken back where it
/// can be; exactly two leading slashes are kept; an empty result is `.`.
pub fn normpath_text(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else {
        usize::from(path.starts_with('/'))
    };
    let mut comps: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." if (initial > 0 || !comps.is_empty()) && comps.last() != Some(&"..") => {
                comps.pop();
            }
            c => comps.push(c),
        }
    }
    let out = format!("{}{}", "/".repeat(initial), comps.join("/"));
    if out.is_empty() { ".".into() } else { out }
}

pub fn normpath(value: Value) -> Result<String, Error> {
    Ok(normpath_text(&pyrepr::to_str(&value)?))
}

/// Python's `posixpath.expandvars`: `$name` (ASCII word characters) and `${anything}`; a
/// variable that is not set stays as written. `var` answers `None` when it does not know yet,
/// `Some(None)` for an unset variable; then the whole answer is `None`.
pub fn expand_vars(
    text: &str,
    var: &mut impl FnMut(&str) -> Option<Option<String>>,
) -> Option<String> {
    if !text.contains('$') {
        return Some(text.to_string());
    }
    let mut out = String::new();
    let mut rest = text;
    let mut complete = true;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if len == 0 || (name.is_empty() && !after.starts_with('{')) {
            out.push('$');
            rest = after;
            continue;
        }
        match var(name) {
            Some(Some(value)) => out.push_str(&value),
            Some(None) => out.push_str(&rest[at..at + 1 + len]),
            None => complete = false,
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    complete.then_some(out)
}

/// `expandvars`: the controller's environment variables in the text.
pub fn expandvars(value: Value) -> Result<String, Error> {
    let text = pyrepr::to_str(&value)?;
    Ok(expand_vars(&text, &mut |name| Some(std::env::var(name).ok())).unwrap_or(text))
}

/// The regular files in `dir` whose names match the shell pattern `file_pat`, as Python's
/// `glob` matches them (a leading dot only by a pattern that starts with one), sorted.
pub fn glob_files(dir: &std::path::Path, file_pat: &str) -> Result<Vec<std::path::PathBuf>, Error> {
    let glob = globset::Glob::new(file_pat)
        .map_err(|e| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("invalid glob `{file_pat}`: {e}"),
            )
        })?
        .compile_matcher();
    let hidden_ok = file_pat.starts_with('.');
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            p.file_name().is_some_and(|f| {
                glob.is_match(f) && (hidden_ok || !f.to_string_lossy().starts_with('.'))
            })
        })
        .collect();
    found.sort();
    Ok(found)
}

/// `fileglob`: the regular files matching the pattern, from the controller's working folder
/// for a relative one (Python's `glob.glob`, without wildcards in the folder part).
pub fn fileglob(value: Value) -> Result<Value, Error> {
    let pattern = pyrepr::to_str(&value)?;
    let (dir, file_pat) = match pattern.rsplit_once('/') {
        Some(("", f)) => ("/".to_string(), f.to_string()),
        Some((d, f)) => (d.to_string(), f.to_string()),
        None => (String::new(), pattern.clone()),
    };
    let base = if dir.is_empty() { "." } else { dir.as_str() };
    let found = glob_files(std::path::Path::new(base), &file_pat)?;
    Ok(Value::from(
        found
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                if dir.is_empty() {
                    name.into_owned()
                } else if dir == "/" {
                    format!("/{name}")
                } else {
                    format!("{dir}/{name}")
                }
            })
            .collect::<Vec<_>>(),
    ))
}

fn is_sep(c: char) -> bool {
    c == '/' || c == '\\'
}

/// Python's `ntpath.splitdrive`: `C:` or a UNC `\\server\share`, and the rest.
fn split_drive(p: &str) -> (&str, &str) {
    let norm: Vec<char> = p.chars().map(|c| if c == '/' { '\\' } else { c }).collect();
    if norm.len() >= 2 && norm[0] == '\\' && norm[1] == '\\' && norm.get(2) != Some(&'\\') {
        let find = |from: usize| (from..norm.len()).find(|&i| norm[i] == '\\');
        let Some(first) = find(2) else {
            return ("", p);
        };
        let second = find(first + 1);
        if second == Some(first + 1) {
            return ("", p);
        }
        let end = second.unwrap_or(norm.len());
        let byte = p.char_indices().nth(end).map_or(p.len(), |(i, _)| i);
        return p.split_at(byte);
    }
    if norm.get(1) == Some(&':') {
        let byte = p.char_indices().nth(2).map_or(p.len(), |(i, _)| i);
        return p.split_at(byte);
    }
    ("", p)
}

/// Python's `ntpath.split`: drive and folder, last part.
fn split_win(p: &str) -> (String, String) {
    let (drive, rest) = split_drive(p);
    let cut = rest.rfind(is_sep).map_or(0, |i| i + 1);
    let (head, tail) = rest.split_at(cut);
    let trimmed = head.trim_end_matches(is_sep);
    let head = if trimmed.is_empty() { head } else { trimmed };
    (format!("{drive}{head}"), tail.to_string())
}

pub fn win_basename(value: Value) -> Result<String, Error> {
    Ok(split_win(&pyrepr::to_str(&value)?).1)
}

pub fn win_dirname(value: Value) -> Result<String, Error> {
    Ok(split_win(&pyrepr::to_str(&value)?).0)
}

pub fn win_splitdrive(value: Value) -> Result<Value, Error> {
    let text = pyrepr::to_str(&value)?;
    let (drive, rest) = split_drive(&text);
    Ok(Value::from(vec![drive.to_string(), rest.to_string()]))
}
