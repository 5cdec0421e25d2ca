//! Load-time errors: every one names the file and line it comes from.

use std::path::PathBuf;

use serde_json::Value;

use super::yaml::Node;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Vault(#[from] crate::vault::DecryptError),
    #[error("{}:{line}: YAML syntax error: {detail}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("{}:{line}: {detail}", file.display())]
    Invalid {
        file: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("{}:{line}: {}{}", file.display(), unknown_keyword(what, key), suggest(suggestion))]
    UnknownKeyword {
        file: PathBuf,
        line: usize,
        what: &'static str,
        key: String,
        suggestion: Option<String>,
    },
    #[error("{}:{line}: unknown module `{name}`{}", file.display(), suggest(suggestion))]
    UnknownModule {
        file: PathBuf,
        line: usize,
        name: String,
        suggestion: Option<String>,
    },
    #[error("{}:{line}: bad arguments for module `{module}`: {detail}", file.display())]
    ModuleArgs {
        file: PathBuf,
        line: usize,
        module: String,
        detail: String,
    },
    #[error("{}:{line}: role `{name}` not found (looked in {searched})", file.display())]
    RoleNotFound {
        file: PathBuf,
        line: usize,
        name: String,
        searched: String,
    },
    #[error("{}:{line}: `{target}` includes itself (include cycle)", file.display())]
    Cycle {
        file: PathBuf,
        line: usize,
        target: String,
    },
}

/// An unknown key: on a play in ansible-core's words (`'x' is not a valid attribute for a
/// Play`, which scripts look for), elsewhere naming what it was found in.
fn unknown_keyword(what: &str, key: &str) -> String {
    match what {
        "a play" => format!("'{key}' is not a valid attribute for a Play"),
        _ => format!("unknown keyword `{key}` in {what}"),
    }
}

fn suggest(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    }
}

/// The closest candidate to `word` by edit distance, when it is close enough to be a typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let word_l = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (distance(&word_l, &c.to_lowercase()), c))
        // Short words get short distances: `npm` is not a misspelt `name`, nor `git` `apt`.
        .filter(|(d, _)| {
            *d <= match word.chars().count() {
                0..=4 => 1,
                5..=8 => 2,
                _ => 3,
            }
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A load error at `node`'s file and line.
pub fn invalid(node: &Node<'_>, detail: impl Into<String>) -> LoadError {
    LoadError::Invalid {
        file: node.file.to_path_buf(),
        line: node.line(),
        detail: detail.into(),
    }
}

/// `n` as text: strings, numbers and booleans; null is empty.
pub fn scalar_string(n: &Node<'_>) -> Result<String, LoadError> {
    match n.value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(x) => Ok(x.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok(String::new()),
        _ => Err(invalid(n, "expected a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            did_you_mean("debgu", ["debug", "fail"]).as_deref(),
            Some("debug")
        );
        assert_eq!(
            did_you_mean("regsiter", ["register", "retries"]).as_deref(),
            Some("register")
        );
        assert_eq!(did_you_mean("zzzzzz", ["debug", "fail"]), None);
    }
}
