//! Python requirement strings for the `pip` module: the name list rebuilt as ansible-core's
//! `pip` rebuilds it (`_recover_package_name`), each requirement written back in the
//! canonical form `packaging.requirements.Requirement` gives it (`str(Requirement(..))`, which
//! is what pip then echoes), and PEP 440 version matching for check mode's "is it already
//! installed" (`SpecifierSet.contains(v, prereleases=True)`).
//!
//! A string `packaging` would not parse (a path, a VCS URL, a bad version) is kept as it is
//! and never counts as installed, as upstream's `Package` does.

use std::cmp::Ordering;

/// The version operators, longest first so `===` is not read as `==`.
const OPS: &[&str] = &["===", "~=", "==", "!=", "<=", ">=", "<", ">"];

/// One requested package.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// The name as PEP 503 canonicalizes it, or the whole string when it is no requirement.
    pub name: String,
    /// The parsed requirement; `None` for strings that are no requirement.
    req: Option<Requirement>,
    raw: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    name: String,
    extras: Vec<String>,
    specs: Vec<(String, String)>,
    url: Option<String>,
    marker: Option<String>,
}

impl Package {
    pub fn parse(text: &str) -> Package {
        match parse_requirement(text) {
            Some(req) => Package {
                name: canonical(&req.name),
                req: Some(req),
                raw: text.to_string(),
            },
            None => Package {
                name: text.to_string(),
                req: None,
                raw: text.to_string(),
            },
        }
    }

    /// The package with the `version` argument added (`name==1.0`, or `name >=1.0` for a
    /// version that starts with an operator), as upstream joins them.
    pub fn with_version(&self, version: &str) -> Package {
        let v = version.trim_start();
        let sep = if v.starts_with(|c: char| c.is_ascii_digit()) {
            "=="
        } else {
            " "
        };
        Package::parse(&format!("{self}{sep}{v}"))
    }

    pub fn has_version_specifier(&self) -> bool {
        self.req.as_ref().is_some_and(|r| !r.specs.is_empty())
    }

    /// Whether an installed `version` satisfies the requirement (pre-releases allowed).
    pub fn is_satisfied_by(&self, version: &str) -> bool {
        let Some(req) = &self.req else {
            return false;
        };
        let Some(v) = Version::parse(version) else {
            return req.specs.is_empty();
        };
        req.specs
            .iter()
            .all(|(op, spec)| spec_contains(op, spec, &v, version))
    }
}

impl std::fmt::Display for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(r) = &self.req else {
            return f.write_str(&self.raw);
        };
        f.write_str(&r.name)?;
        if !r.extras.is_empty() {
            write!(f, "[{}]", r.extras.join(","))?;
        }
        let mut specs: Vec<String> = r.specs.iter().map(|(o, v)| format!("{o}{v}")).collect();
        specs.sort();
        f.write_str(&specs.join(","))?;
        if let Some(url) = &r.url {
            write!(f, " @ {url}")?;
            if r.marker.is_some() {
                f.write_str(" ")?;
            }
        }
        if let Some(m) = &r.marker {
            write!(f, "; {m}")?;
        }
        Ok(())
    }
}

/// PEP 503: runs of `-_.` become one `-`, lowercased.
pub fn canonical(name: &str) -> String {
    let mut out = String::new();
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep {
                out.push('-');
                sep = false;
            }
            out.extend(c.to_lowercase());
        }
    }
    if sep {
        out.push('-');
    }
    out
}

/// Upstream's `_recover_package_name`: the names split at every comma, then the pieces that
/// start with a version operator glued back to the name before them (and `[extras]` kept
/// whole), so `['a>1', '<2', 'b']` and `['a>1,<2,b']` both give `['a>1,<2', 'b']`.
pub fn recover_names(names: &[String]) -> Vec<String> {
    let pieces: Vec<&str> = names.iter().flat_map(|n| n.split(',')).collect();
    let mut out = Vec::new();
    let mut parts: Vec<&str> = Vec::new();
    let mut in_brackets = false;
    for piece in pieces {
        let is_name = !OPS
            .iter()
            .filter(|o| **o != "===")
            .any(|o| piece.trim_start().starts_with(o));
        if is_name && !in_brackets {
            if !parts.is_empty() {
                out.push(parts.join(","));
            }
            parts.clear();
        }
        if piece.contains('[') {
            in_brackets = true;
        }
        if in_brackets && piece.contains(']') {
            in_brackets = false;
        }
        parts.push(piece);
    }
    out.push(parts.join(","));
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')
}

fn parse_requirement(text: &str) -> Option<Requirement> {
    let s = text.trim();
    let end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    let name = &s[..end];
    if name.is_empty()
        || !name.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !name.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        return None;
    }
    let mut rest = s[end..].trim_start();
    let mut extras = Vec::new();
    if let Some(r) = rest.strip_prefix('[') {
        let (inside, after) = r.split_once(']')?;
        for e in inside.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if !e.chars().all(is_name_char) {
                return None;
            }
            extras.push(e.to_string());
        }
        extras.sort();
        extras.dedup();
        rest = after.trim_start();
    }
    let (body, marker) = match rest.split_once(';') {
        Some((b, m)) => (b.trim(), Some(normalise_marker(m)?)),
        None => (rest.trim(), None),
    };
    let mut url = None;
    let mut specs = Vec::new();
    if let Some(u) = body.strip_prefix('@') {
        let u = u.trim();
        if u.is_empty() || u.contains(char::is_whitespace) {
            return None;
        }
        url = Some(u.to_string());
    } else if !body.is_empty() {
        let body = match body.strip_prefix('(') {
            Some(b) => b.strip_suffix(')')?,
            None => body,
        };
        for spec in body.split(',') {
            let spec = spec.trim();
            let op = OPS.iter().find(|o| spec.starts_with(**o))?;
            let version: String = spec[op.len()..]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            let valid = match *op {
                "===" => !version.is_empty(),
                "==" | "!=" => {
                    Version::parse(version.strip_suffix(".*").unwrap_or(&version)).is_some()
                }
                _ => Version::parse(&version).is_some(),
            };
            if !valid {
                return None;
            }
            specs.push((op.to_string(), version));
        }
    }
    Some(Requirement {
        name: name.to_string(),
        extras,
        specs,
        url,
        marker,
    })
}

/// A marker the way `packaging` writes it back: one space between tokens, values in double
/// quotes (`python_version>'3'` is `python_version > "3"`).
fn normalise_marker(m: &str) -> Option<String> {
    let mut tokens: Vec<String> = Vec::new();
    let mut chars = m.trim().chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' || c == '\'' {
            chars.next();
            let value: String = chars.by_ref().take_while(|x| *x != c).collect();
            tokens.push(format!("\"{value}\""));
        } else if c == '(' || c == ')' {
            chars.next();
            tokens.push(c.to_string());
        } else if "<>=!~".contains(c) {
            let mut op = String::new();
            while let Some(&x) = chars.peek().filter(|x| "<>=!~".contains(**x)) {
                op.push(x);
                chars.next();
            }
            tokens.push(op);
        } else {
            let mut word = String::new();
            while let Some(&x) = chars
                .peek()
                .filter(|x| !x.is_whitespace() && !"<>=!~()'\"".contains(**x))
            {
                word.push(x);
                chars.next();
            }
            tokens.push(word);
        }
    }
    if tokens.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 && t != ")" && tokens[i - 1] != "(" {
            out.push(' ');
        }
        out.push_str(t);
    }
    Some(out)
}

/// A PEP 440 version, enough of it to order and match releases.
#[derive(Debug, Clone, PartialEq)]
struct Version {
    epoch: u64,
    release: Vec<u64>,
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    local: Option<String>,
}

/// Epoch, release (trailing zeros dropped), pre-release, post-release, dev-release.
type SortKey = (u64, Vec<u64>, (i8, u8, u64), (i8, u64), (i8, u64));

impl Version {
    fn parse(text: &str) -> Option<Version> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_prefix('v').unwrap_or(&t);
        let (t, local) = match t.split_once('+') {
            Some((a, l)) if !l.is_empty() => (a, Some(l.replace(['-', '_'], "."))),
            Some(_) => return None,
            None => (t, None),
        };
        let (epoch, t) = match t.split_once('!') {
            Some((e, r)) => (e.parse().ok()?, r),
            None => (0, t),
        };
        let rel_end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let release: Vec<u64> = t[..rel_end]
            .trim_end_matches('.')
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        let mut rest = &t[rel_end..];
        if t[..rel_end].ends_with('.') {
            rest = &t[rel_end - 1..];
        }
        let mut v = Version {
            epoch,
            release,
            pre: None,
            post: None,
            dev: None,
            local,
        };
        // Each suffix: an optional separator, a word, an optional separator, a number.
        let mut seen_pre = false;
        while !rest.is_empty() {
            rest = rest.trim_start_matches(['.', '-', '_']);
            let word_end = rest
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(rest.len());
            let word = &rest[..word_end];
            let after = rest[word_end..].trim_start_matches(['.', '-', '_']);
            let num_end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            let n: u64 = after[..num_end].parse().unwrap_or(0);
            rest = &after[num_end..];
            match word {
                "a" | "alpha" if !seen_pre => v.pre = Some((0, n)),
                "b" | "beta" if !seen_pre => v.pre = Some((1, n)),
                "c" | "rc" | "pre" | "preview" if !seen_pre => v.pre = Some((2, n)),
                "post" | "rev" | "r" if v.post.is_none() => v.post = Some(n),
                "" if num_end > 0 && v.post.is_none() => v.post = Some(n),
                "dev" if v.dev.is_none() => v.dev = Some(n),
                _ => return None,
            }
            seen_pre = true;
        }
        Some(v)
    }

    fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    fn public(&self) -> Version {
        Version {
            local: None,
            ..self.clone()
        }
    }

    fn base(&self) -> Version {
        Version {
            epoch: self.epoch,
            release: self.release.clone(),
            pre: None,
            post: None,
            dev: None,
            local: None,
        }
    }

    fn cmp_key(&self) -> SortKey {
        let mut release = self.release.clone();
        while release.last() == Some(&0) && release.len() > 1 {
            release.pop();
        }
        // PEP 440 order: .devN before aN before bN before rcN before the release before .postN.
        let pre = match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (-1, 0, 0),
            (Some((k, n)), _, _) => (0, k, n),
            (None, _, _) => (1, 0, 0),
        };
        let post = self.post.map_or((-1, 0), |n| (0, n));
        let dev = self.dev.map_or((1, 0), |n| (0, n));
        (self.epoch, release, pre, post, dev)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(
            self.cmp_key()
                .cmp(&other.cmp_key())
                .then_with(|| self.local.cmp(&other.local)),
        )
    }
}

/// Whether `v` (given as `text`) matches one specifier, as `packaging.specifiers.Specifier`
/// decides with pre-releases allowed.
fn spec_contains(op: &str, spec: &str, v: &Version, text: &str) -> bool {
    if op == "===" {
        return text.trim().eq_ignore_ascii_case(spec);
    }
    if op == "==" || op == "!=" {
        let equal = match spec.strip_suffix(".*") {
            Some(prefix) => Version::parse(prefix).is_some_and(|p| {
                let mut padded = v.release.clone();
                padded.resize(padded.len().max(p.release.len()), 0);
                p.epoch == v.epoch && padded.starts_with(&p.release)
            }),
            None => Version::parse(spec).is_some_and(|s| {
                let cand = if s.local.is_none() {
                    v.public()
                } else {
                    v.clone()
                };
                cand.partial_cmp(&s) == Some(Ordering::Equal)
            }),
        };
        return equal == (op == "==");
    }
    let Some(s) = Version::parse(spec) else {
        return false;
    };
    let cand = v.public();
    match op {
        ">=" => cand >= s,
        "<=" => cand <= s,
        "<" => cand < s && !(!s.is_prerelease() && cand.is_prerelease() && cand.base() == s.base()),
        ">" => {
            cand > s
                && !(s.post.is_none() && cand.post.is_some() && cand.base() == s.base())
                && !(v.local.is_some() && cand.base() == s.base())
        }
        "~=" => {
            let mut prefix = s.release.clone();
            if prefix.len() > 1 {
                prefix.pop();
            }
            let mut padded = cand.release.clone();
            padded.resize(padded.len().max(prefix.len()), 0);
            cand >= s && cand.epoch == s.epoch && padded.starts_with(&prefix)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        recover_names(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn names_are_rebuilt_as_upstream_does() {
        // The examples of upstream's `_recover_package_name` docstring.
        assert_eq!(
            names(&[
                "django>1.11.1",
                "<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0",
                "<2.0.0"
            ]),
            [
                "django>1.11.1,<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ]
        );
        assert_eq!(
            names(&[
                "django>1.11.1,<1.11.3,ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ]),
            [
                "django>1.11.1,<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ]
        );
        assert_eq!(names(&["a[x", "y]>1", "b"]), ["a[x,y]>1", "b"]);
    }

    #[test]
    fn requirements_print_as_packaging_prints_them() {
        let p = |s: &str| Package::parse(s).to_string();
        assert_eq!(p("kinitdemo >= 1.0 , < 2.0"), "kinitdemo<2.0,>=1.0");
        assert_eq!(p("Kinit_Demo[b,a] (>=1.0)"), "Kinit_Demo[a,b]>=1.0");
        assert_eq!(p("x @ file:///tmp/x.whl"), "x @ file:///tmp/x.whl");
        assert_eq!(p("x; python_version>'3'"), "x; python_version > \"3\"");
        assert_eq!(
            p("x>=1.0;python_version>=\"3\""),
            "x>=1.0; python_version >= \"3\""
        );
        assert_eq!(p("./dir"), "./dir");
        assert_eq!(p("x==foo"), "x==foo");
        assert!(Package::parse("x==foo").req.is_none());
        assert_eq!(Package::parse("Kinit_Demo.x").name, "kinit-demo-x");
        assert_eq!(
            Package::parse("a").with_version("1.0").to_string(),
            "a==1.0"
        );
        assert_eq!(
            Package::parse("a").with_version(">=1.0").to_string(),
            "a>=1.0"
        );
        assert!(Package::parse("a>=1").has_version_specifier());
        assert!(!Package::parse("a").has_version_specifier());
    }

    #[test]
    fn versions_match_specifiers_as_pep_440_says() {
        let sat = |req: &str, v: &str| Package::parse(req).is_satisfied_by(v);
        assert!(sat("a", "1.0"));
        assert!(sat("a==1.0", "1.0.0"));
        assert!(!sat("a==1.0", "1.0.1"));
        assert!(sat("a==1.*", "1.9"));
        assert!(!sat("a!=1.*", "1.9"));
        assert!(sat("a>=1.0,<2.0", "1.5"));
        assert!(!sat("a>=1.0,<2.0", "2.0"));
        assert!(!sat("a<2.0", "2.0rc1"));
        assert!(!sat("a<2.0", "2.0.dev1"));
        assert!(sat("a>=2.0rc1", "2.0"));
        assert!(sat("a~=1.4", "1.9"));
        assert!(!sat("a~=1.4.2", "1.5"));
        assert!(!sat("a>1.0", "1.0.post1"));
        assert!(sat("a>1.0", "1.1a1"));
        assert!(sat("a==1.0", "1.0+local"));
        assert!(!sat("./dir", "1.0"));
        let v = |s: &str| Version::parse(s).unwrap();
        assert!(v("1.0.dev1") < v("1.0a1"));
        assert!(v("1.0a1") < v("1.0"));
        assert!(v("1.0") < v("1.0.post1"));
        assert!(v("1!0.1") > v("9.0"));
    }
}
