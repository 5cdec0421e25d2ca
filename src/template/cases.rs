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

/// For cases Ansible rejects, kinit's error must contain Ansible's message (its exception
/// class left off). The exceptions, where kinit's words
/// differ, give the piece of text kinit's error must contain instead.
const KINIT_ERRORS: &[(&str, &str)] = &[
    // Jinja2's parser and minijinja's word a syntax error differently.
    ("{{ x + }}", "syntax error"),
    // Ansible names its own string subclass; kinit says `str`, as Python does for a string.
    (
        "{{ intstr > 40 }}",
        "'>' not supported between instances of 'str' and 'int'",
    ),
    (
        "{{ s < 5 }}",
        "'<' not supported between instances of 'str' and 'int'",
    ),
    // Python's json module and serde_json word a parse error differently.
    (
        "{{ 'x' | from_json }}",
        "The filter plugin 'ansible.builtin.from_json' failed: invalid JSON: expected value at \
         line 1 column 1",
    ),
    // Ansible names its lazy container classes; kinit names the plain Python type.
    (
        "{{ [{'foo': 'bar'}] | unique(case_sensitive=False) }}",
        "The filter plugin 'ansible.builtin.unique' failed: Jinja2's unique filter failed and we \
         cannot fall back to Ansible's version as it does not support the parameters supplied: \
         unhashable type: 'dict'",
    ),
    (
        "{{ [{'foo': {'a': 1}}] | unique(attribute='foo') }}",
        "The filter plugin 'ansible.builtin.unique' failed: Jinja2's unique filter failed and we \
         cannot fall back to Ansible's version as it does not support the parameters supplied: \
         unhashable type: 'dict'",
    ),
];

/// Ansible's message for a case it rejects, without the exception class.
fn ansible_message(err: &str) -> &str {
    err.split_once(": ").map_or(err, |(_, m)| m)
}

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
                    .unwrap_or_else(|| ansible_message(case["err"].as_str().unwrap_or_default()));
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
