//! Unit tests of the Python `re` layer; every expected value was checked with CPython 3.11's
//! `re` module.

use super::*;

fn found(pattern: &str, text: &str) -> Option<String> {
    PyRegex::new(pattern)
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
        .search(text)
        .map(|c| c.as_str().to_string())
}

#[test]
fn python_syntax_matches_as_python_does() {
    let cases: &[(&str, &str, Option<&str>)] = &[
        (r"^(REF) .* \1$", "REF a REF", Some("REF a REF")),
        (r"^(REF) .* \1$", "REF a REX", None),
        (r"(?P<w>\w+) (?P=w)", "say hello hello", Some("hello hello")),
        (r"foo(?=bar)", "foobaz foobar", Some("foo")),
        (r"(?<!x)y", "xy ay", Some("y")),
        (r"a{,2}", "aaa", Some("aa")),
        (r"{x}", "a{x}", Some("{x}")),
        (r"[[]", "a[", Some("[")),
        (r"\Aab\Z", "ab", Some("ab")),
        (r"\Aab\Z", "ab\n", None),
        // `$` matches at the end and before a final newline only.
        (r"OK$", "a\nOK\n", Some("OK")),
        (r"a$", "a\n\n", None),
        (r"(?m)a$", "a\nb", Some("a")),
        (r"a\ b", "a b", Some("a b")),
        (r"[\w.-]+", "a-b.c!", Some("a-b.c")),
        (r"\x41\101\u0042", "AAB", Some("AAB")),
        (r"a(?#comment)b", "ab", Some("ab")),
        (r"(?a)\w+", "abc", Some("abc")),
        (r"[a&&b]", "x&", Some("&")),
        (r"[~]", "x~", Some("~")),
        (r"\<b\>", "a<b>", Some("<b>")),
        (r"(?i)abc", "xABC", Some("ABC")),
    ];
    for (pattern, text, want) in cases {
        assert_eq!(
            found(pattern, text).as_deref(),
            *want,
            "{pattern} on {text:?}"
        );
    }
}

#[test]
fn only_backtracking_patterns_use_fancy_regex() {
    let engine = |p: &str| format!("{:?}", PyRegex::new(p).unwrap());
    assert!(engine(r"^port=(\d+)$").ends_with("via regex)"));
    assert!(engine(r"(a)\1").ends_with("via fancy-regex)"));
    assert!(engine(r"a(?!b)").ends_with("via fancy-regex)"));
}

#[test]
fn anchors_and_flags() {
    let m = |p: &str, flags: Flags, anchor: Anchor, t: &str| {
        PyRegex::with(p, flags, anchor).unwrap().is_match(t)
    };
    let none = Flags::default();
    assert!(!m("b", none, Anchor::Match, "ab"));
    assert!(m("a", none, Anchor::Match, "ab"));
    assert!(!m("a", none, Anchor::FullMatch, "ab"));
    assert!(m("a|ab", none, Anchor::FullMatch, "ab"));
    assert!(m(
        "^B$",
        Flags {
            ignorecase: true,
            multiline: true,
            dotall: false
        },
        Anchor::Search,
        "a\nb\nc"
    ));
    assert!(m(
        "a.b",
        Flags {
            dotall: true,
            ..none
        },
        Anchor::Search,
        "a\nb"
    ));
    assert!(m(r"(\w)(?=\1)", none, Anchor::Match, "aab"));
}

#[test]
fn empty_matches_iterate_as_python_37() {
    let re = PyRegex::new("x*").unwrap();
    let t = Template::new("-", &re).unwrap();
    assert_eq!(re.subn("abxd", &t, 0), ("-a-b--d-".to_string(), 5));
    assert_eq!(re.subn("abxd", &t, 2), ("-a-bxd".to_string(), 2));
    let end = PyRegex::new("$").unwrap();
    let x = Template::new("X", &end).unwrap();
    assert_eq!(end.subn("a\n", &x, 0), ("aX\nX".to_string(), 2));
    assert_eq!(
        PyRegex::new("b$")
            .unwrap()
            .search("ab\nb\n")
            .map(|c| c.start()),
        Some(3)
    );
}

#[test]
fn templates_expand_as_re_sub() {
    let re = PyRegex::new(r"(a)|b").unwrap();
    let t = Template::new(r"[\1]", &re).unwrap();
    // An unmatched group is the empty string (Python 3.5+).
    assert_eq!(re.subn("ab", &t, 0), ("[a][]".to_string(), 2));

    let re = PyRegex::new(r"(?P<k>\w+)=(\d)").unwrap();
    let t = Template::new(r"\g<k>:\g<2>\n\\\.$1", &re).unwrap();
    assert_eq!(re.subn("a=1", &t, 0).0, "a:1\n\\\\.$1");

    let re = PyRegex::new(r"(\w)(\d)?").unwrap();
    let got: Vec<(String, String)> = re
        .matches("a1b")
        .iter()
        .map(|c| {
            (
                c.get(1).unwrap_or("").to_string(),
                c.get(2).unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(got, [("a".into(), "1".into()), ("b".into(), String::new())]);
}

#[test]
fn bad_templates_and_patterns_are_explained() {
    let re = PyRegex::new("(a)").unwrap();
    let bad = |t: &str| Template::new(t, &re).unwrap_err().to_string();
    assert_eq!(bad(r"\d"), r"bad escape \d");
    assert_eq!(bad(r"\g<3>"), "invalid group reference 3");
    assert_eq!(bad(r"\2"), "invalid group reference 2");
    assert_eq!(bad(r"\g<nope>"), "unknown group name 'nope'");
    assert_eq!(bad("\\"), "bad escape (end of pattern)");
    assert!(
        PyRegex::new("(a")
            .unwrap_err()
            .to_string()
            .contains("unclosed group")
    );
    assert!(
        PyRegex::new(r"(a)\2")
            .unwrap_err()
            .to_string()
            .contains("Invalid back reference")
    );
}

#[test]
fn escape_is_pythons() {
    assert_eq!(escape("a.b c-1"), r"a\.b\ c\-1");
    let re = PyRegex::new(&escape("1+1=2 (ok)")).unwrap();
    assert!(re.is_match("so 1+1=2 (ok)"));
}
