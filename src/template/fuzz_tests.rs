//! Property tests: no template text makes the templar panic or hang, with variables that
//! template each other too; it renders or returns an error.

use proptest::prelude::*;

use super::Templar;
use crate::vars::VarMap;

/// Jinja-shaped text: expressions, filters, tests, statements and literals.
fn template_text() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        r#"([a-z ]{0,4}(\{\{ ?(a|b|c|x|[0-9]{1,3}|'s'|\[1, ?2\]|\{'k': ?1\}|range\([0-9]\))( ?[+*~%/\-] ?[a-z0-9'"]{1,3})?( ?\| ?(int|string|default\(1\)|to_json|from_json|b64encode|regex_replace\('a', ?'b'\)|join\(','\)|length|bool|list|dict2items|combine\(\{\}\)|quote|upper|first|ipaddr))* ?\}\}|\{% ?(if a|for i in [a-z]{1,2}|endif|endfor|set x = 1|else) ?%\}|\{#.{0,4}#\}|[{}%#'"]))"#,
    )
    .expect("valid regex")
    .prop_map(|s| s.repeat(2))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn templar_never_panics(text in prop_oneof![any::<String>(), template_text()]) {
        let t = Templar::new();
        let mut vars = VarMap::new();
        vars.insert("a".into(), serde_json::json!("{{ b }}"));
        vars.insert("b".into(), serde_json::json!([1, "{{ c }}"]));
        vars.insert("c".into(), serde_json::json!({"k": "v"}));
        vars.insert("x".into(), serde_json::json!(text));
        let _ = t.render_str(&text, &vars);
        let _ = t.render_str("{{ x }}", &vars);
    }
}
