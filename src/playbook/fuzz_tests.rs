//! Property tests: no playbook text makes the loader panic or overflow its stack; it loads or
//! is refused with an error naming the file.

use proptest::prelude::*;

use super::{Loader, LoaderOptions};

/// Playbook-shaped YAML: plays, tasks, blocks, keywords and module arguments, a few levels.
fn playbook_text() -> impl Strategy<Value = String> {
    let line = proptest::string::string_regex(
        r#"( {0,10})(- )?(hosts|tasks|block|rescue|always|when|loop|with_items|name|vars|roles|include_tasks|import_tasks|debug|command|shell|set_fact|register|tags|become|notify|handlers|msg|var|until|retries|delay)?:?( ["'a-z0-9{}\[\]|,:]{0,14})?|[ -~]{0,16}"#,
    )
    .expect("valid regex");
    proptest::collection::vec(line, 0..14).prop_map(|l| l.join("\n"))
}

fn load(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.yml");
    std::fs::write(&path, text).unwrap();
    let _ = Loader::new(LoaderOptions::default()).load_playbook(&path);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn playbook_loader_never_panics(text in prop_oneof![any::<String>(), playbook_text()]) {
        load(&text);
    }
}

/// Deep nesting, YAML anchors that expand a lot and a file importing itself are refused or
/// loaded, never a crash.
#[test]
fn nesting_aliases_and_self_imports_do_not_crash() {
    load(&format!("{}{}", "[".repeat(5000), "]".repeat(5000)));
    let mut blocks = String::from("- hosts: all\n  tasks:\n");
    for depth in 0..200 {
        blocks += &format!("{}- block:\n", "  ".repeat(depth + 2));
    }
    blocks += &format!("{}- debug: msg=x\n", "  ".repeat(203));
    load(&blocks);
    load(
        "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n\
         c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.yml");
    std::fs::write(&path, "- import_playbook: site.yml\n").unwrap();
    let err = Loader::new(LoaderOptions::default())
        .load_playbook(&path)
        .expect_err("a playbook that imports itself");
    assert!(err.to_string().contains("site.yml"), "{err}");
}
