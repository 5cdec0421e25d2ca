//! `kinit playbook --junit` writes JUnit valid against the schema CI servers read
//! (`tests/fixtures/ci/junit.xsd`, checked with `xmllint --schema`), with the counts of each
//! suite matching its cases: passed, skipped and failed tasks on the local machine, and an
//! unreachable host (nothing listens on port 1) in a first play beside a reachable one,
//! counted as an error (its task never ran), not a failure. (A play whose every host fails
//! or is unreachable ends the playbook, as in ansible-playbook, so the failing play is last.)

use std::path::Path;
use std::process::Command;

use crate::support::Test;

pub fn xmllint_schema(file: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci/junit.xsd");
    let out = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(file)
        .output()
        .expect("xmllint (apt libxml2-utils) is installed by ci/test.sh");
    assert!(
        out.status.success(),
        "{} does not validate:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

const PLAY: &str = r#"- name: far away
  hosts: web
  gather_facts: false
  tasks:
    - name: unreachable
      command: echo hi
- name: local <play> & co
  hosts: localhost
  gather_facts: false
  tasks:
    - name: passes
      command: echo ok
    - name: skipped
      command: echo never
      when: false
    - name: fails but is ignored
      command: /bin/false
      ignore_errors: true
    - name: fails
      command: sh -c 'echo "bad <xml> & \"quotes\"" >&2; exit 3'
"#;

#[test]
fn playbook_junit_is_valid_against_the_schema() {
    let t = Test::new()
        .write(
            "hosts.ini",
            "localhost ansible_connection=local\n[web]\nghost ansible_host=127.0.0.1 ansible_port=1 ansible_user=nobody\n\
             near ansible_connection=local\n",
        )
        .write("site.yml", PLAY);
    let junit = t.path().join("junit.xml");
    let ran = t
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .args(["--host-key-checking", "off"])
        .args(["--junit", &junit.display().to_string()])
        .run()
        .snapshot();
    assert_ne!(ran.output.status.code(), Some(0), "{}", ran.stdout());
    let xml = std::fs::read_to_string(&junit).unwrap();
    xmllint_schema(&junit);
    let suite = |name: &str| {
        xml.lines()
            .find(|l| l.contains(&format!("<testsuite name=\"{name}\"")))
            .unwrap_or_else(|| panic!("no suite {name}:\n{xml}"))
            .to_string()
    };
    // An ignored failure passes, as with Ansible's junit callback (JUNIT_FAIL_ON_IGNORE off).
    let local = suite("local &lt;play&gt; &amp; co");
    assert!(
        local.contains("tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\""),
        "{local}"
    );
    let far = suite("far away");
    assert!(
        far.contains("tests=\"2\" failures=\"0\" errors=\"1\" skipped=\"0\""),
        "{far}"
    );
    let ghost = xml
        .split("classname=\"ghost\" name=\"unreachable\"")
        .nth(1)
        .and_then(|rest| rest.split("</testcase>").next())
        .unwrap_or_else(|| panic!("no test case for the unreachable host:\n{xml}"));
    assert!(
        ghost.contains("<error message=\"unreachable: ") && !ghost.contains("<failure"),
        "{ghost}"
    );
    assert!(xml.contains("<skipped/>"));
}
