//! Loader tests on real files: static imports and roles, FQCN and free-form arguments, and
//! the errors a typo or a loop in the includes produces (each with file and line).

use serde_json::json;

use super::{Action, LoadError, Loader, LoaderOptions, Playbook, actions};

fn load(files: &[(&str, &str)]) -> Result<Playbook, LoadError> {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let loader = Loader::new(LoaderOptions::default());
    let pb = loader.load_playbook(&dir.path().join("site.yml"));
    // Keep the folder alive until loading is done.
    drop(dir);
    pb
}

/// A multi-line script keeps its lines: `_raw_params` is the text as written (Ansible's
/// parse_kv with check_raw gives `'# c\n$a = 1\nforeach ...'`), not its words joined.
#[test]
fn free_form_script_keeps_its_lines() {
    let pb = load(&[(
        "site.yml",
        "- hosts: all\n  tasks:\n    - win_shell: |\n        # c\n        $a = 1\n        foreach ($x in @(1)) {\n            \"v=$x\"\n        }\n",
    )])
    .unwrap();
    let Action::Module { args, .. } = &pb.plays[0].tasks[0].action else {
        panic!()
    };
    assert_eq!(
        args,
        &json!({"_raw_params": "# c\n$a = 1\nforeach ($x in @(1)) {\n    \"v=$x\"\n}\n"})
    );
}

#[test]
fn fqcn_and_free_form_arguments() {
    let pb = load(&[(
        "site.yml",
        "- hosts: all\n  tasks:\n    - ansible.builtin.command: chdir=/tmp echo 'a b'\n    - ansible.builtin.debug: msg=\"x y\" verbosity=1\n",
    )])
    .unwrap();
    let tasks = &pb.plays[0].tasks;
    let Action::Module { name, args } = &tasks[0].action else {
        panic!()
    };
    assert_eq!(name, "command");
    assert_eq!(args, &json!({"chdir": "/tmp", "_raw_params": "echo 'a b'"}));
    let Action::Exec(exec) = &tasks[1].action else {
        panic!("not an executor action: {:?}", tasks[1].action)
    };
    let actions::ExecAction::Debug(debug) = exec.as_ref() else {
        panic!("not a debug action: {exec:?}")
    };
    assert_eq!(
        debug,
        &actions::DebugArgs {
            msg: Some(json!("x y")),
            var: None,
            verbosity: Some(json!("1")),
        }
    );
    assert_eq!(tasks[1].loc.line, 4);
}

/// A role's dependency is also looked for beside the role (Ansible's `role_basedir`), as
/// kubespray's `kubernetes-apps/policy_controller` depends on `policy_controller/calico`.
#[test]
fn a_dependency_is_found_beside_the_role_that_needs_it() {
    let pb = load(&[
        ("site.yml", "- hosts: all\n  roles:\n    - apps/policy\n"),
        (
            "roles/apps/policy/meta/main.yml",
            "dependencies:\n  - policy/calico\n",
        ),
        ("roles/apps/policy/tasks/main.yml", "- debug: msg=policy\n"),
        (
            "roles/apps/policy/calico/tasks/main.yml",
            "- debug: msg=calico\n",
        ),
    ])
    .unwrap();
    let Action::Block { block, .. } = &pb.plays[0].tasks[0].action else {
        panic!("the role is not a block")
    };
    // Named as written, as ansible-playbook names a role found on its search path
    // (`--list-tasks` shows `policy/calico : ...`).
    assert_eq!(
        block[0].role.as_ref().map(|r| r.name.as_str()),
        Some("policy/calico"),
        "the dependency runs first"
    );
}

#[test]
fn roles_expand_with_dependencies_and_handlers() {
    let pb = load(&[
        ("site.yml", "- hosts: all\n  roles:\n    - web\n"),
        ("roles/web/meta/main.yml", "dependencies:\n  - base\n"),
        ("roles/web/tasks/main.yml", "- debug: msg=web\n"),
        (
            "roles/web/handlers/main.yml",
            "- name: restart\n  debug: msg=r\n",
        ),
        ("roles/web/defaults/main.yml", "port: 80\n"),
        ("roles/base/tasks/main.yml", "- debug: msg=base\n"),
    ])
    .unwrap();
    let play = &pb.plays[0];
    let Action::Block { block, .. } = &play.tasks[0].action else {
        panic!()
    };
    let role = play.tasks[0].role.as_ref().unwrap();
    assert_eq!(role.name, "web");
    assert_eq!(role.defaults.get("port"), Some(&json!(80)));
    // The dependency's wrapper block comes first.
    assert_eq!(block[0].role.as_ref().unwrap().name, "base");
    assert_eq!(play.handlers[0].name.as_deref(), Some("restart"));
    assert_eq!(play.handlers[0].role.as_ref().unwrap().name, "web");
}

#[test]
fn import_cycle_is_reported_where_it_closes() {
    let err = load(&[
        (
            "site.yml",
            "- hosts: all\n  tasks:\n    - import_tasks: a.yml\n",
        ),
        ("a.yml", "- debug: msg=a\n- import_tasks: b.yml\n"),
        ("b.yml", "- import_tasks: a.yml\n"),
    ])
    .unwrap_err();
    assert!(matches!(err, LoadError::Cycle { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("b.yml:1"), "{err}");
}

#[test]
fn a_role_may_import_itself_for_another_file_but_not_the_same_one() {
    let pb = load(&[
        ("site.yml", "- hosts: all\n  roles: [r]\n"),
        (
            "roles/r/tasks/main.yml",
            "- import_role: {name: r, tasks_from: other.yml}\n",
        ),
        ("roles/r/tasks/other.yml", "- debug: msg=other\n"),
    ]);
    assert!(pb.is_ok(), "{:?}", pb.err());
    let err = load(&[
        ("site.yml", "- hosts: all\n  roles: [r]\n"),
        ("roles/r/tasks/main.yml", "- import_role: {name: r}\n"),
    ])
    .unwrap_err();
    assert!(matches!(err, LoadError::Cycle { line: 1, .. }), "{err}");
    // Two roles depending on each other are still a cycle.
    let err = load(&[
        ("site.yml", "- hosts: all\n  roles: [a]\n"),
        ("roles/a/meta/main.yml", "dependencies: [b]\n"),
        ("roles/b/meta/main.yml", "dependencies: [a]\n"),
        ("roles/a/tasks/main.yml", "- debug: msg=a\n"),
        ("roles/b/tasks/main.yml", "- debug: msg=b\n"),
    ])
    .unwrap_err();
    assert!(matches!(err, LoadError::Cycle { .. }), "{err}");
}

#[test]
fn missing_role_and_block_loop_are_load_errors() {
    let err = load(&[("site.yml", "- hosts: all\n  roles:\n    - nope\n")]).unwrap_err();
    assert!(
        matches!(&err, LoadError::RoleNotFound { line: 3, name, .. } if name == "nope"),
        "{err}"
    );
    let err = load(&[(
        "site.yml",
        "- hosts: all\n  tasks:\n    - block:\n        - debug: msg=x\n      loop: [1]\n",
    )])
    .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("site.yml:3: a block cannot have a loop"),
        "{err}"
    );
}

/// A role with an argument spec gets the validation task after its dependencies and before
/// its own tasks; its `provided_arguments` are the role parameters, not `vars:` nor the
/// `name` a role entry may carry beside `role`.
#[test]
fn argument_spec_task_follows_dependencies_and_gets_the_role_parameters() {
    let pb = load(&[
        (
            "site.yml",
            "- hosts: all\n  roles:\n    - role: r\n      name: ignored\n      who: me\n      vars: {v: 1}\n",
        ),
        (
            "roles/r/meta/main.yml",
            "dependencies: [d]\nargument_specs:\n  main:\n    options:\n      who: {type: str}\n",
        ),
        ("roles/r/tasks/main.yml", "- name: own task\n  debug: {}\n"),
        ("roles/d/tasks/main.yml", "- name: dep task\n  debug: {}\n"),
    ])
    .unwrap();
    let Action::Block { block, .. } = &pb.plays[0].tasks[0].action else {
        panic!("a role is a block")
    };
    let names: Vec<String> = block.iter().map(|t| t.display_name()).collect();
    assert_eq!(
        names,
        [
            "role d",
            "Validating arguments against arg spec 'main'",
            "own task"
        ]
    );
    assert_eq!(block[1].kw.tags, ["always"]);
    let Action::Exec(exec) = &block[1].action else {
        panic!("not an executor action")
    };
    let actions::ExecAction::ValidateArgumentSpec(a) = exec.as_ref() else {
        panic!("not validate_argument_spec: {exec:?}")
    };
    assert_eq!(a.argument_spec, Some(json!({"who": {"type": "str"}})));
    assert_eq!(a.provided_arguments, Some(json!({"who": "me"})));
    assert_eq!(a.validate_args_context.as_ref().unwrap()["name"], "r");
}

/// A `collections` keyword that is not a list of names is refused, naming the keyword, the
/// value and the line.
#[test]
fn a_collections_keyword_that_is_no_list_is_refused() {
    let err = load(&[(
        "site.yml",
        "- hosts: all\n  collections: {a: 1}\n  tasks: []\n",
    )])
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("site.yml:2")
            && err.contains("`collections` must be a list of collection names")
            && err.contains(r#"{"a":1}"#),
        "{err}"
    );
}

#[test]
fn a_module_given_a_boolean_or_number_is_refused_as_ansible_core_refuses_it() {
    for (args, class) in [("false", "bool"), ("5", "int"), ("1.5", "float")] {
        let err = load(&[(
            "site.yml",
            &format!("- hosts: all\n  tasks:\n    - command: {args}\n"),
        )])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(&format!(
                "site.yml:3: unexpected parameter type in action: <class '{class}'>"
            )),
            "{err}"
        );
    }
}
