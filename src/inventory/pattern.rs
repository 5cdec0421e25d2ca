//! Host patterns, as in `hosts:` and `--limit`: `all`, `*`, names, groups, globs, `~regex`,
//! `g1:g2` (union), `g1:&g2` (intersection), `g1:!g2` (exclusion), `web[0]`/`web[0:2]`
//! subscripts (inclusive), comma separators, and `@file` lists for `--limit`.

use std::sync::LazyLock;

use regex::Regex;

use crate::pyre::{Anchor, Flags, PyRegex};

use super::{IMPLICIT_LOCAL, Inventory, InventoryError};

static SUBSCRIPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)[:-]([0-9]*))\]$").unwrap());
static COLON_SPLIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:[^\s:\[\]]|\[[^\]]*\])+").unwrap());

/// Split a pattern string into its parts: on commas when there are any, else on colons
/// that are not inside `[...]`.
pub fn split_patterns(pattern: &str) -> Vec<String> {
    let parts: Vec<String> = if pattern.contains(',') {
        pattern.split(',').map(str::to_string).collect()
    } else {
        COLON_SPLIT
            .find_iter(pattern)
            .map(|m| m.as_str().to_string())
            .collect()
    };
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

impl Inventory {
    /// The hosts a pattern selects, in Ansible's order (union parts in order, then
    /// intersections, then exclusions), each once. May return the implicit `localhost`.
    pub fn select(&self, pattern: &str) -> Result<Vec<String>, InventoryError> {
        let parts = split_patterns(pattern);
        let (mut regular, mut and, mut not) = (Vec::new(), Vec::new(), Vec::new());
        for p in parts {
            if let Some(rest) = p.strip_prefix('!') {
                not.push(rest.to_string());
            } else if let Some(rest) = p.strip_prefix('&') {
                and.push(rest.to_string());
            } else {
                regular.push(p);
            }
        }
        if regular.is_empty() {
            regular.push("all".into());
        }
        // Sets: an inventory of tens of thousands of hosts is matched in linear time.
        let mut hosts: indexmap::IndexSet<String> = indexmap::IndexSet::new();
        for p in &regular {
            hosts.extend(self.match_one(p)?);
        }
        for p in &and {
            let that: std::collections::HashSet<String> = self.match_one(p)?.into_iter().collect();
            hosts.retain(|h| that.contains(h));
        }
        for p in &not {
            let that: std::collections::HashSet<String> = self.match_one(p)?.into_iter().collect();
            hosts.retain(|h| !that.contains(h));
        }
        Ok(hosts.into_iter().collect())
    }

    /// `select(pattern)` restricted by a `--limit` pattern (`@file` reads one name per line).
    pub fn select_limited(
        &self,
        pattern: &str,
        limit: Option<&str>,
    ) -> Result<Vec<String>, InventoryError> {
        let hosts = self.select(pattern)?;
        let Some(limit) = limit else {
            return Ok(hosts);
        };
        let limit = match limit.strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|source| InventoryError::Read {
                    path: file.into(),
                    source,
                })?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(","),
            None => limit.to_string(),
        };
        let allowed: std::collections::HashSet<String> = self.select(&limit)?.into_iter().collect();
        Ok(hosts.into_iter().filter(|h| allowed.contains(h)).collect())
    }

    fn match_one(&self, pattern: &str) -> Result<Vec<String>, InventoryError> {
        if self.hosts.contains_key(pattern) {
            return Ok(vec![pattern.to_string()]);
        }
        let (expr, subscript) = match SUBSCRIPT.captures(pattern) {
            Some(c) if !pattern.starts_with('~') => {
                let expr = c.get(1).map_or("", |m| m.as_str());
                let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<i64>().ok());
                let sub = match num(2) {
                    Some(idx) => (idx, None),
                    None => (num(3).unwrap_or(0), Some(num(4).unwrap_or(-1))),
                };
                (expr, Some(sub))
            }
            _ => (pattern, None),
        };
        let hosts = self.enumerate(expr)?;
        // Nothing to subscript is nothing (ansible-core's `_apply_subscript`).
        let Some((start, end)) = subscript.filter(|_| !hosts.is_empty()) else {
            return Ok(hosts);
        };
        let len = hosts.len() as i64;
        let out_of_range = || InventoryError::Pattern {
            pattern: pattern.to_string(),
            reason: format!("No hosts matched the subscripted pattern '{pattern}'"),
        };
        match end {
            None => {
                let i = if start < 0 { len + start } else { start };
                let h = usize::try_from(i).ok().and_then(|i| hosts.get(i));
                Ok(vec![h.ok_or_else(out_of_range)?.clone()])
            }
            Some(end) => {
                let end = if end == -1 { len - 1 } else { end.min(len - 1) };
                if start > end {
                    return Ok(Vec::new());
                }
                Ok(hosts[start as usize..=end as usize].to_vec())
            }
        }
    }

    /// The words of `pattern` that name no group and no host (`all` always matches), each
    /// once: ansible-core warns `Could not match supplied host pattern, ignoring: <word>`.
    pub fn unmatched_words(&self, pattern: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for part in split_patterns(pattern) {
            let word = part.trim_start_matches(['!', '&']);
            let word = match SUBSCRIPT.captures(word) {
                Some(c) if !word.starts_with('~') => c.get(1).map_or(word, |m| m.as_str()),
                _ => word,
            };
            let Ok(matcher) = Matcher::new(word) else {
                continue;
            };
            let matched = word == "all"
                || self.hosts.contains_key(word)
                || IMPLICIT_LOCAL.contains(&word)
                || self.groups.keys().any(|g| matcher.is_match(g))
                || self.hosts.keys().any(|h| matcher.is_match(h));
            if !matched && !out.iter().any(|w| w == word) {
                out.push(word.to_string());
            }
        }
        out
    }

    /// Groups and hosts matching one pattern word (no operators, no subscript).
    fn enumerate(&self, pattern: &str) -> Result<Vec<String>, InventoryError> {
        let matcher = Matcher::new(pattern)?;
        let mut out: indexmap::IndexSet<String> = indexmap::IndexSet::new();
        let mut any_group = false;
        for g in self.groups.keys() {
            if matcher.is_match(g) {
                any_group = true;
                out.extend(self.hosts_of_group(g));
            }
        }
        let special = pattern.starts_with('~') || pattern.contains(['.', '?', '*', '[']);
        if !any_group || special {
            out.extend(self.hosts.keys().filter(|h| matcher.is_match(h)).cloned());
        }
        if out.is_empty() && IMPLICIT_LOCAL.contains(&pattern) {
            out.insert(pattern.to_string());
        }
        Ok(out.into_iter().collect())
    }
}

enum Matcher {
    Glob(globset::GlobMatcher),
    Regex(PyRegex),
}

impl Matcher {
    fn new(pattern: &str) -> Result<Self, InventoryError> {
        let err = |reason: String| InventoryError::Pattern {
            pattern: pattern.to_string(),
            reason,
        };
        if let Some(re) = pattern.strip_prefix('~') {
            // Python's `re.match`: anchored at the start only.
            return PyRegex::with(re, Flags::default(), Anchor::Match)
                .map(Matcher::Regex)
                .map_err(|e| err(e.to_string()));
        }
        globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map(|g| Matcher::Glob(g.compile_matcher()))
            .map_err(|e| err(e.to_string()))
    }

    fn is_match(&self, name: &str) -> bool {
        match self {
            Matcher::Glob(g) => g.is_match(name),
            Matcher::Regex(r) => r.is_match(name),
        }
    }
}
