//! Documents read as ansible-core 2.19.4's `AnsibleLoader(text).get_single_data()` reads them
//! (each expectation was taken from it).

use super::*;
use serde_json::json;

fn value(text: &str) -> Value {
    parse(text, Path::new("t.yml"), None).unwrap().value
}

#[test]
fn yaml_1_1_scalars_in_a_document() {
    let text = "a: no\nb: yes\nc: 0644\nd: 1_000\ne: 1e3\nf: On\ng: 0o17\nh: 1:30\n\
                i: 2001-12-14\nj: \"no\"\nk: 0x1F\nl: .5\nm: 'yes'\nn: |\n  no\n";
    assert_eq!(
        value(text),
        json!({"a": false, "b": true, "c": 420, "d": 1000, "e": "1e3", "f": true, "g": "0o17",
               "h": 90, "i": "2001-12-14", "j": "no", "k": 31, "l": 0.5, "m": "yes", "n": "no\n"})
    );
}

#[test]
fn merge_keys_apply_with_own_keys_winning() {
    let text = "base: &b {x: 1, y: 2}\nother: &o {y: 5, z: 6}\n\
                one:\n  <<: *b\n  y: 3\n\
                many:\n  w: 0\n  <<: [*b, *o]\n";
    let p = parse(text, Path::new("t.yml"), None).unwrap();
    assert_eq!(p.value["one"], json!({"x": 1, "y": 3}));
    // PyYAML 6.0.4 under ansible-core 2.19.4, with keys longer than one character (PyYAML
    // compares key objects by identity, and CPython shares one-character strings): the later
    // mapping of a `<<` list wins; a key keeps its first place; merged keys come first.
    assert_eq!(p.value["many"], json!({"x": 1, "y": 5, "z": 6, "w": 0}));
    assert_eq!(
        p.value["many"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["x", "y", "z", "w"]
    );
    // `y: 3` overrides a merged key, and `y: 5` a merged `y: 2`: Ansible warns about each.
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("t.yml:5") && p.warnings[0].contains("'y'"));
}

#[test]
fn a_key_given_twice_keeps_the_last_value_with_a_warning() {
    let p = parse("a: 1\nb: 2\na: 3\n", Path::new("t.yml"), None).unwrap();
    assert_eq!(p.value, json!({"a": 3, "b": 2}));
    assert_eq!(
        p.warnings,
        ["t.yml:3: Found duplicate mapping key 'a'. Using last defined value only."]
    );
}

#[test]
fn explicit_tags() {
    let text = "c: !!int 0x1f\nd: !!bool Yes\ne: !!float 1\ni: !!null foo\nj: !!str yes\n\
                k: !unsafe '{{ x }}'\nl: !unsafe ['{{y}}']\nm: ! 12\ns: !!set {a, b}\n";
    assert_eq!(
        value(text),
        json!({"c": 31, "d": true, "e": 1.0, "i": null, "j": "yes",
               "k": "{{ '{{ x }}' }}", "l": ["{{ '{{y}}' }}"], "m": "12",
               "s": {"a": null, "b": null}})
    );
}

#[test]
fn refusals_name_the_line_as_pyyaml_does() {
    let err = |t: &str| parse(t, Path::new("t.yml"), None).unwrap_err();
    let e = err("x: 1\na: !foo x\n");
    assert_eq!(e.line(), 2);
    assert_eq!(
        e.detail(),
        "could not determine a constructor for the tag '!foo'"
    );
    assert_eq!(
        err("a: =\n").detail(),
        "could not determine a constructor for the tag 'tag:yaml.org,2002:value'"
    );
    let e = err("a: 1\n---\nb: 2\n");
    assert!(matches!(e, YamlError::SecondDocument { line: 2 }), "{e}");
    let e = err("a: !!bool y\n");
    assert_eq!(e.line(), 1);
    let e = err("a:\n  <<: 3\n");
    assert!(
        e.detail()
            .contains("expected a mapping or list of mappings for merging")
    );
    let e = err("- a: 1\n  b: [\n");
    assert!(
        matches!(e, YamlError::Syntax { line, .. } if line >= 2),
        "{e}"
    );
}

#[test]
fn positions_follow_merges_and_aliases() {
    let text = "base: &b\n  x: 1\n  y: 2\nm:\n  z: 0\n  <<: *b\nl: *b\n";
    let p = parse(text, Path::new("t.yml"), None).unwrap();
    let m = &p.pos.children[1];
    // Keys of m: x, y (merged, lines 2 and 3), then z (line 5).
    assert_eq!(
        m.children.iter().map(|c| c.line).collect::<Vec<_>>(),
        [2, 3, 5]
    );
    assert_eq!(p.pos.children[2].children.len(), 2);
}

#[test]
fn empty_text_and_empty_documents_are_null() {
    assert_eq!(value(""), Value::Null);
    assert_eq!(value("# only a comment\n"), Value::Null);
    assert_eq!(value("---\n"), Value::Null);
    assert_eq!(value("a: 1\n...\n"), json!({"a": 1}));
    assert_eq!(value("a:\nb: ~\n"), json!({"a": null, "b": null}));
}

/// `ansible-vault encrypt_string --vault-id dev@pw short` (password `kinit-vault-pw`).
const DOC: &str = "plain: 1
list:
  - x
  - secret: !vault |
          $ANSIBLE_VAULT;1.2;AES256;dev
          62653137656566326634323061313863373633636532303866353438346561343833316137313061
          3339396234363831353937356666323633633433646336300a336337323966393966303238613134
          34643137303361363137333636373431646265343339653330396331633737396333356363373031
          6263333863356430660a616633363335333262353563356564343561356664386537383466316530
          3638
";

fn load_vaulted(text: &str, pw: &str) -> Result<Value, YamlError> {
    let vault = Vault::new(vec![("dev".into(), crate::secret::Secret::new(pw))]);
    parse(text, Path::new("v.yml"), Some(&vault)).map(|p| p.value)
}

#[test]
fn a_vault_tag_becomes_its_plaintext() {
    let v = load_vaulted(DOC, "kinit-vault-pw").unwrap();
    assert_eq!(v["list"][1]["secret"], json!("short"));
    assert_eq!(v["plain"], json!(1));
}

/// What rendering `v` (a loaded value) gives: `Err` with the message when it fails.
fn rendered(v: &Value) -> Result<String, String> {
    crate::template::Templar::new()
        .render_str(v.as_str().unwrap(), &crate::vars::VarMap::new())
        .map_err(|e| e.to_string())
}

#[test]
fn an_undecryptable_vault_value_fails_where_it_is_used_naming_file_and_line() {
    // A wrong password, no secret at all, a damaged envelope: loading succeeds (a play that
    // never reads the value runs, as in ansible-core 2.19); rendering the value fails.
    let wrong = load_vaulted(DOC, "wrong").unwrap();
    let none = parse(DOC, Path::new("v.yml"), None).unwrap().value;
    let damaged = parse(
        "p: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n",
        Path::new("d.yml"),
        None,
    )
    .unwrap()
    .value;
    for (v, what) in [
        (&wrong["list"][1]["secret"], "v.yml:4: Decryption failed"),
        (
            &none["list"][1]["secret"],
            "v.yml:4: Attempting to decrypt but no vault secrets",
        ),
        (
            &damaged["p"],
            "d.yml:1: Attempting to decrypt but no vault secrets",
        ),
    ] {
        let e = rendered(v).unwrap_err();
        assert!(
            e.contains("Attempt to use undecryptable variable") && e.contains(what),
            "{e}"
        );
        assert!(
            !e.contains("6265") && !e.contains("6162"),
            "no ciphertext: {e}"
        );
    }
    assert_eq!(none["plain"], json!(1));
}

#[test]
fn decrypted_text_is_not_a_template() {
    // The plaintext of DOC is "short"; a plaintext holding `{{` renders as itself.
    let v = load_vaulted(DOC, "kinit-vault-pw").unwrap();
    assert_eq!(rendered(&v["list"][1]["secret"]).unwrap(), "short");
    assert_eq!(
        rendered(&untemplated(json!("{{ 'it''s' }}"))).unwrap(),
        "{{ 'it''s' }}"
    );
}

#[test]
fn a_text_the_parser_stops_on_is_an_error() {
    // libyaml-safer 0.3 panics on a tag followed by `,` in a flow sequence.
    let e = parse("a: 1\nb: [!,\n", Path::new("t.yml"), None).unwrap_err();
    assert!(e.detail().contains("cannot read this text"), "{e}");
}

#[test]
fn nesting_and_alias_bombs_are_refused() {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let e = parse(&deep, Path::new("t.yml"), None).unwrap_err();
    assert!(e.detail().contains("nested more than 256"), "{e}");
    let deep: String = (0..300)
        .map(|d| format!("{}- \n", "  ".repeat(d)))
        .collect();
    let e = parse(&deep, Path::new("t.yml"), None).unwrap_err();
    assert!(e.detail().contains("nested more than 256"), "{e}");
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        bomb += &format!("a{i}: &a{i} [{}]\n", vec![format!("*a{p}"); 10].join(", "));
    }
    let e = parse(&bomb, Path::new("t.yml"), None).unwrap_err();
    assert!(e.detail().contains("aliases expand to more than"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

    /// Text made of YAML's indicators, quotes, escapes and breaks is read or refused, never a
    /// panic in the parser or the builder.
    #[test]
    fn yaml_text_never_panics(text in "[-\"'\\\\:\\[\\]{}!&*#|>%@`?,<=~ \\n\\ta0xyn.]{0,40}") {
        let _ = parse(&text, Path::new("t.yml"), None);
        let _ = parse_all(&text);
    }
}

#[test]
fn a_block_scalar_ending_the_text_without_a_line_break_reads_as_pyyaml_reads_it() {
    // Each value as PyYAML 6 (ansible-core's loader) gives it for the same text.
    let cases: &[(&str, Value)] = &[
        ("a: >\n  x", json!({"a": "x"})),
        ("a: |\n  x\n  y", json!({"a": "x\ny"})),
        ("a: |+\n  x", json!({"a": "x"})),
        ("a: |-\n  x", json!({"a": "x"})),
        ("- a: >\n    x\n    y=z", json!([{"a": "x y=z"}])),
        ("a: |\n  x\\", json!({"a": "x\\"})),
        ("a: |\n  x\n\n", json!({"a": "x\n"})),
        ("a: |+\n  x\n\n", json!({"a": "x\n\n"})),
        ("a: |\n  x\nb: y", json!({"a": "x\n", "b": "y"})),
        ("a: |\n  x\n  ", json!({"a": "x\n"})),
        ("a: |+\n  x\n  ", json!({"a": "x\n"})),
        ("a: \"x\\\\\"", json!({"a": "x\\"})),
        ("a: |\n  x\n# end", json!({"a": "x\n"})),
    ];
    for (text, want) in cases {
        assert_eq!(&value(text), want, "{text:?}");
    }
}
