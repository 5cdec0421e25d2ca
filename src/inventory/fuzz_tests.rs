//! Property tests: no INI or YAML inventory text, however broken, makes the parsers panic
//! (they refuse it with an error naming the file and line instead).

use std::path::Path;

use proptest::prelude::*;

use super::{Inventory, ini, yaml};

/// Lines made of the INI notation's own pieces: sections, ranges, `key=value`, children.
fn ini_text() -> impl Strategy<Value = String> {
    let line = proptest::string::string_regex(
        r#"\[[a-z_:]{0,12}(:vars|:children)?\]|[a-z0-9.\-]{1,8}(\[[0-9a-z:]{0,6}\]?)?[a-z]{0,3}( [a-z_]{1,8}=["'a-z0-9{}\[\],:]{0,10}){0,3}|#.{0,8}|[ -~]{0,20}"#,
    )
    .expect("valid regex");
    proptest::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
}

/// YAML inventory shapes: groups, hosts, children and vars nested a few levels.
fn yaml_text() -> impl Strategy<Value = String> {
    let line = proptest::string::string_regex(
        r#"( {0,8})(all|hosts|children|vars|[a-z]{1,4}(\[[0-9:]{0,5}\]?)?):( [a-z0-9{}\[\],"]{0,10})?|- [a-z]{0,5}|[ -~]{0,16}"#,
    )
    .expect("valid regex");
    proptest::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn inventory_parsers_never_panic(
        text in prop_oneof![any::<String>(), ini_text(), yaml_text()]
    ) {
        let mut inv = Inventory::default();
        let _ = ini::parse(&mut inv, Path::new("hosts.ini"), &text);
        let mut inv = Inventory::default();
        let _ = yaml::parse(&mut inv, Path::new("hosts.yml"), &text);
        // Whatever was accepted can be queried.
        let _ = inv.select("all");
        let _ = inv.select("!a:&b:c*:~x.*");
    }
}

/// Deeply nested children (YAML) and a long `children` chain (INI) are parsed without
/// exhausting the stack, and a loop anywhere in them is refused.
#[test]
fn deep_group_nesting_is_parsed_and_loops_refused() {
    let mut text = String::from("all:\n  children:\n");
    for depth in 0..60 {
        let pad = "  ".repeat(2 + depth * 2);
        text += &format!("{pad}g{depth}:\n{pad}  children:\n");
    }
    let mut inv = Inventory::default();
    yaml::parse(&mut inv, Path::new("deep.yml"), &text).unwrap();
    assert!(inv.groups["g58"].children.iter().any(|c| c == "g59"));
    let mut ini_text = String::new();
    for i in 0..500 {
        ini_text += &format!("[g{i}:children]\ng{}\n", i + 1);
    }
    let mut inv = Inventory::default();
    ini::parse(&mut inv, Path::new("chain.ini"), &ini_text).unwrap();
    ini_text += "[g500:children]\ng0\n";
    let mut inv = Inventory::default();
    let err = ini::parse(&mut inv, Path::new("chain.ini"), &ini_text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("makes a loop"), "{err}");
}
