//! Table-driven templating tests: every line of `tests/fixtures/templating/cases.txt` is
//! rendered with the variables of `vars.json` and compared with what ansible-core 2.19
//! produced for the same line (`expected.json`, made by `ansible_render.py` there; the
//! integration suite re-checks that file against the ansible-core in `KINIT_VENV`).
//! Cases Ansible answers with an error must fail here too, naming what `KINIT_ERRORS` says.

use std::sync::Arc;

use serde_json::Value;

use super::Templar;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/templating/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// For cases Ansible rejects: a piece of text kinit's error message must contain.
const KINIT_ERRORS: &[(&str, &str)] = &[
    ("{{ u }}", "`u` is undefined"),
    ("{{ d.zz }}", "`d.zz` is undefined"),
    ("{{ d.zz }}", "object of type 'dict' has no attribute 'zz'"),
    ("{{ u.v }}", "`u.v` is undefined"),
    ("{{ u | mandatory }}", "mandatory"),
    ("{{ x + }}", "syntax error"),
    ("{{ u ~ 'x' }}", "`u` is undefined"),
    ("{{ u | upper }}", "`u` is undefined"),
    ("{{ d.zz is match('a') }}", "`d.zz` is undefined"),
    (
        "{{ [{'name': 1}, {'x': 2}] | map(attribute='name') | list }}",
        "object of type 'dict' has no attribute 'name'",
    ),
    ("{{ u + 1 }}", "`u` is undefined"),
    ("{{ 'pre ' ~ u.v.w ~ ' post' }}", "`u"),
    ("{{ 'yes' if u else 'no' }}", "`u` is undefined"),
    ("{{ u == 1 }}", "`u` is undefined"),
    ("{{ [u, 1] }}", "`u` is undefined"),
    ("{{ {'k': u} }}", "`u` is undefined"),
    ("{{ [x, [u]] }}", "`u` is undefined"),
    ("{{ 'x' ~ [u] }}", "`u` is undefined"),
    (
        "{{ 2.0 * 'ab' }}",
        "can't multiply sequence by non-int of type `float`",
    ),
    (
        "{{ 'ab' * 2.0 }}",
        "can't multiply sequence by non-int of type `float`",
    ),
    (
        "{{ 2.0 * [1] }}",
        "can't multiply sequence by non-int of type `float`",
    ),
    (
        "{{ (x / 5) * s }}",
        "can't multiply sequence by non-int of type `float`",
    ),
    (
        "{{ '10' < 5 }}",
        "`<` not supported between instances of `str` and `int`",
    ),
    (
        "{{ 'a' > 1 }}",
        "`>` not supported between instances of `str` and `int`",
    ),
    (
        "{{ 5 >= '3' }}",
        "`>=` not supported between instances of `int` and `str`",
    ),
    (
        "{{ 1.5 <= '2' }}",
        "`<=` not supported between instances of `float` and `str`",
    ),
    (
        "{{ intstr > 40 }}",
        "`>` not supported between instances of `str` and `int`",
    ),
    (
        "{{ s < 5 }}",
        "`<` not supported between instances of `str` and `int`",
    ),
    (
        "{{ [1, 'a'] < [1, 2] }}",
        "`<` not supported between instances of `str` and `int`",
    ),
    (
        "{{ none < 1 }}",
        "`<` not supported between instances of `NoneType` and `int`",
    ),
];

#[test]
fn filters_and_tests_match_ansible() {
    let vars: Value = serde_json::from_str(&fixture("vars.json")).unwrap();
    let Value::Object(vars) = vars else {
        panic!("vars.json is not a mapping")
    };
    let expected: Vec<Value> = serde_json::from_str(&fixture("expected.json")).unwrap();
    let scope = Templar::new().scope(Arc::new(vars));
    let mut failures = Vec::new();
    for case in &expected {
        let template = case["t"].as_str().unwrap();
        let got = scope.render_value(&Value::String(template.to_string()));
        match (case.get("ok"), got) {
            (Some(want), Ok(got)) if *want == got => {}
            (Some(want), got) => {
                failures.push(format!("{template}\n  want {want}\n  got  {got:?}"))
            }
            (None, Ok(got)) => failures.push(format!("{template}\n  want an error\n  got  {got}")),
            (None, Err(e)) => {
                let needle = KINIT_ERRORS
                    .iter()
                    .find(|(t, _)| *t == template)
                    .map(|(_, n)| *n)
                    .unwrap_or_else(|| panic!("no KINIT_ERRORS entry for `{template}`"));
                if !e.to_string().contains(needle) {
                    failures.push(format!(
                        "{template}\n  want error with {needle}\n  got  {e}"
                    ));
                }
            }
        }
    }
    assert!(expected.len() >= 150, "only {} cases", expected.len());
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from ansible-core:\n{}",
        failures.len(),
        expected.len(),
        failures.join("\n")
    );
}
