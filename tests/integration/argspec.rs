//! Role argument specs (`meta/argument_specs.yml`, else `argument_specs` in `meta/main.yml`)
//! as `kinit playbook --list-tasks` shows them: the validation task first among a role's
//! tasks, named after the entry point (and its `short_description`), tagged `always` besides
//! the inherited tags, and absent when the entry point has no spec, its spec is empty, or
//! `rolespec_validate: false`. The same project listed by ansible-playbook (when the venv
//! has it) must give the same text. What the task checks is compared with ansible-playbook
//! by differential playbook 44 (`tests/playbooks/diff/44-argument-specs.yml`).

use std::process::Command;

use crate::support::Test;

const FILES: &[(&str, &str)] = &[
    (
        "roles/spec/meta/argument_specs.yml",
        "argument_specs:\n  main:\n    short_description: The spec role\n    options:\n      who: {type: str, required: true}\n  other:\n    options:\n      size: {type: int}\n  empty: {}\n",
    ),
    (
        "roles/spec/tasks/main.yml",
        "- name: spec main task\n  debug: {msg: main}\n",
    ),
    (
        "roles/spec/tasks/other.yml",
        "- name: spec other task\n  debug: {msg: other}\n",
    ),
    (
        "roles/spec/tasks/empty.yml",
        "- name: spec empty task\n  debug: {msg: empty}\n",
    ),
    (
        "roles/metaspec/meta/main.yml",
        "argument_specs:\n  main:\n    short_description: From meta/main.yml\n    options:\n      level: {type: int}\n",
    ),
    (
        "roles/metaspec/tasks/main.yml",
        "- name: metaspec task\n  debug: {msg: meta}\n",
    ),
    (
        "roles/plain/tasks/main.yml",
        "- name: plain task\n  debug: {msg: plain}\n",
    ),
    (
        "roles/notasks/meta/argument_specs.yml",
        "argument_specs:\n  main:\n    options:\n      x: {type: str}\n",
    ),
    (
        "roles/both/meta/main.yml",
        "argument_specs:\n  main:\n    short_description: Not used, the spec file wins\n    options: {}\n",
    ),
    (
        "roles/both/meta/argument_specs.yml",
        "argument_specs:\n  other:\n    options: {}\n",
    ),
    (
        "roles/both/tasks/main.yml",
        "- name: both task\n  debug: {msg: both}\n",
    ),
    (
        "site.yml",
        "- hosts: localhost
  gather_facts: false
  roles:
    - role: spec
      tags: [zeta, alpha]
    - plain
    - metaspec
    - notasks
    - both
  tasks:
    - name: import other
      import_role: {name: spec, tasks_from: other}
    - name: import empty entry
      import_role: {name: spec, tasks_from: empty}
    - name: import unchecked
      import_role: {name: spec, rolespec_validate: false}
",
    ),
];

const LISTED: &str = "
playbook: site.yml

  play #1 (localhost): localhost\tTAGS: []
    tasks:
      spec : Validating arguments against arg spec 'main' - The spec role\tTAGS: [alpha, always, zeta]
      spec : spec main task\tTAGS: [alpha, zeta]
      plain : plain task\tTAGS: []
      metaspec : Validating arguments against arg spec 'main' - From meta/main.yml\tTAGS: [always]
      metaspec : metaspec task\tTAGS: []
      notasks : Validating arguments against arg spec 'main'\tTAGS: [always]
      both : both task\tTAGS: []
      spec : Validating arguments against arg spec 'other'\tTAGS: [always]
      spec : spec other task\tTAGS: []
      spec : spec empty task\tTAGS: []
      spec : spec main task\tTAGS: []
";

/// `--skip-tags always` leaves the validation tasks out.
const LISTED_SKIPPING_ALWAYS: &str = "
playbook: site.yml

  play #1 (localhost): localhost\tTAGS: []
    tasks:
      spec : spec main task\tTAGS: [alpha, zeta]
      plain : plain task\tTAGS: []
      metaspec : metaspec task\tTAGS: []
      both : both task\tTAGS: []
      spec : spec other task\tTAGS: []
      spec : spec empty task\tTAGS: []
      spec : spec main task\tTAGS: []
";

fn project() -> Test {
    FILES
        .iter()
        .fold(Test::new(), |t, (path, text)| t.write(path, text))
}

#[test]
fn list_tasks_shows_the_argument_spec_validation_task_as_ansible_playbook_does() {
    let cases: [(&[&str], &str); 2] = [
        (&[], LISTED),
        (&["--skip-tags", "always"], LISTED_SKIPPING_ALWAYS),
    ];
    for (extra, expected) in cases {
        project()
            .args(["playbook", "--list-tasks"])
            .args(extra.iter().copied())
            .args(["site.yml"])
            .succeeds()
            .stdout_is(expected)
            .stderr_is("");
    }
    let Some(ansible) = crate::playbook_diff::ansible_playbook() else {
        crate::support::cannot_run(
            "ansible-playbook is not on PATH and KINIT_VENV has none (ci/test.sh installs it); \
             kinit's listing was checked against the text ansible-core 2.19 prints",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in FILES {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    for (extra, expected) in cases {
        let out = Command::new(&ansible)
            .arg("--list-tasks")
            .args(extra)
            .arg("site.yml")
            .current_dir(dir.path())
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_LOCALHOST_WARNING", "false")
            .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "false")
            .env("ANSIBLE_HOME", dir.path().join(".ansible-home"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{extra:?}");
    }
}

/// A failing check fails the host before the role's own tasks run, with Ansible's message; the
/// value of a `no_log` option never reaches the output, even where an error text quotes it.
/// Defaults of the spec are not variables: the role's task sees `count` undefined.
#[test]
fn a_failing_check_stops_the_role_and_masks_no_log_values() {
    let spec = "argument_specs:\n  main:\n    options:\n      token: {type: str, no_log: true, choices: [letmein]}\n      count: {type: int, default: 3}\n";
    let tasks =
        "- name: role task\n  debug: {msg: \"count is {{ count | default('undefined') }}\"}\n";
    let site = "- hosts: localhost
  gather_facts: false
  tasks:
    - name: good token
      include_role: {name: guarded}
      vars: {token: letmein}
    - name: bad token
      include_role: {name: guarded}
      vars: {token: hunter2-secret}
";
    project()
        .write("roles/guarded/meta/argument_specs.yml", spec)
        .write("roles/guarded/tasks/main.yml", tasks)
        .write("run.yml", site)
        .args(["playbook", "run.yml"])
        .fails_with(2)
        .stdout_is(
            "
PLAY [localhost]

TASK [good token]
included: guarded for localhost

TASK [guarded : Validating arguments against arg spec 'main']
ok: [localhost]

TASK [guarded : role task]
ok: [localhost] => {
    \"msg\": \"count is undefined\"
}

TASK [bad token]
included: guarded for localhost

TASK [guarded : Validating arguments against arg spec 'main']
[ERROR]: Task failed: Action failed: Validation of arguments failed:
value of token must be one of: ********, got: ********
Origin: [DIR]/roles/guarded/meta/argument_specs.yml:3:5

1 argument_specs:
2   main:
3     options:
      ^ column 5

fatal: [localhost]: FAILED! => Validation of arguments failed:
value of token must be one of: ********, got: ********

PLAY RECAP
localhost            : ok=4    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0
...
",
        )
        .stderr_is("");
}
