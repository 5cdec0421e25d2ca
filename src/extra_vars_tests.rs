//! Unit tests for `extra_vars`: each Ansible form, merging order and the error texts.

use super::*;
use serde_json::json;

fn parse(args: &[&str]) -> Result<VarMap, ExtraVarsError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    parse_extra_vars(&args, Path::new("."))
}

#[test]
fn key_value_pairs_stay_strings() {
    let v = parse(&["a=1 b=true", r#"msg="hello world" path='/x y'"#]).unwrap();
    assert_eq!(
        serde_json::Value::Object(v),
        json!({"a": "1", "b": "true", "msg": "hello world", "path": "/x y"})
    );
}

#[test]
fn inline_json_and_yaml_keep_types() {
    let v = parse(&[r#"{"n": [1, 2], "on": true}"#, "{x: {y: 3}}"]).unwrap();
    assert_eq!(
        serde_json::Value::Object(v),
        json!({"n": [1, 2], "on": true, "x": {"y": 3}})
    );
}

#[test]
fn later_arguments_win_and_dicts_are_replaced() {
    let v = parse(&[
        r#"{"d": {"a": 1}, "k": "first"}"#,
        r#"{"d": {"b": 2}}"#,
        "k=second",
    ])
    .unwrap();
    assert_eq!(
        serde_json::Value::Object(v),
        json!({"d": {"b": 2}, "k": "second"})
    );
}

#[test]
fn escaped_equals_and_jinja_blocks() {
    let v = parse(&[r"eq=a\=b t='{{ x }}' j={{ a | default('q r') }}"]).unwrap();
    assert_eq!(v["eq"], json!("a=b"));
    assert_eq!(v["t"], json!("{{ x }}"));
    assert_eq!(v["j"], json!("{{ a | default('q r') }}"));
}

#[test]
fn file_is_loaded_relative_to_base_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v.yml"), "a: 1\nb: [x, y]\n").unwrap();
    let v = parse_extra_vars(&["@v.yml".to_string()], dir.path()).unwrap();
    assert_eq!(
        serde_json::Value::Object(v),
        json!({"a": 1, "b": ["x", "y"]})
    );
}

#[test]
fn file_syntax_error_has_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yml"), "a: 1\nb: [x, y\n").unwrap();
    let err = parse_extra_vars(&["@bad.yml".to_string()], dir.path()).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("extra vars #1: `bad.yml`:3:1: "), "{text}");
}

#[test]
fn errors_never_show_values() {
    let err = parse(&["password=s3cr3t oops"]).unwrap_err();
    assert_eq!(err.to_string(), "extra vars #1: `oops` is not `key=value`");
    let err = parse(&["password='s3cr3t"]).unwrap_err();
    assert_eq!(err.to_string(), "extra vars #1: unterminated ' quote");
}

#[test]
fn truthiness_follows_ansible() {
    for t in [
        json!(true),
        json!("yes"),
        json!("True"),
        json!("1"),
        json!(1),
        json!("on"),
    ] {
        assert!(is_truthy(Some(&t)), "{t}");
    }
    for f in [
        json!(false),
        json!("no"),
        json!("0"),
        json!(0),
        json!(""),
        json!(null),
    ] {
        assert!(!is_truthy(Some(&f)), "{f}");
    }
    assert!(!is_truthy(None));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(384))]
    /// No `-e` argument makes the parser panic: `key=value` forms, inline JSON/YAML and
    /// `@file` names built from the notation's pieces, and arbitrary text.
    #[test]
    fn extra_vars_parser_never_panics(
        arg in proptest::prop_oneof![
            proptest::prelude::any::<String>(),
            "([a-z_]{0,6}=[\"'a-z0-9 {}\\[\\]:,\\\\]{0,10} ?){0,3}|[{\\[][\"'a-z0-9:, {}\\[\\]]{0,20}|@[a-z./]{0,10}"
        ]
    ) {
        let _ = parse(&[arg.as_str()]);
    }
}

#[test]
fn playbook_extra_vars_keep_words_without_a_value_as_ansible_playbook_does() {
    let args = ["x: False a=1 \"q r\"".to_string()];
    let vars = parse_playbook_extra_vars(&args, Path::new(".")).unwrap();
    assert_eq!(vars["a"], "1");
    assert_eq!(vars["_raw_params"], "x: False \"q r\"");
    let err = parse_extra_vars(&args, Path::new(".")).unwrap_err();
    assert_eq!(err.to_string(), "extra vars #1: `x:` is not `key=value`");
}
