//! The content loads: every YAML file parses, the entry playbook imports one playbook per
//! phase in DESIGN.md's order with the phase as tag, and every role, tasks file, template and
//! file a task names exists.

use std::path::Path;

use serde_json::Value;

use super::fixture::{files_under, read, repo, yaml};

const PHASES: [&str; 11] = [
    "gather-facts",
    "prepare-hypervisors",
    "prepare-environment",
    "cleanup-hypervisors",
    "run-validations",
    "create-network",
    "create-services",
    "prepare-cluster",
    "download-images",
    "deploy-cluster",
    "post-deployment",
];

/// Task keywords that are not the module.
const KEYWORDS: [&str; 23] = [
    "name",
    "when",
    "loop",
    "register",
    "vars",
    "tags",
    "notify",
    "delegate_to",
    "run_once",
    "no_log",
    "changed_when",
    "failed_when",
    "args",
    "retries",
    "delay",
    "until",
    "become",
    "ignore_errors",
    "loop_control",
    "environment",
    "check_mode",
    "async",
    "poll",
];

#[test]
fn every_yaml_file_parses() {
    let files: Vec<String> = ["playbooks", "roles"]
        .iter()
        .flat_map(|d| files_under(d, ".yml"))
        .collect();
    assert!(files.len() > 30, "found only {} YAML files", files.len());
    for f in &files {
        let v = yaml(f);
        if f.contains("/defaults/") || f.starts_with("playbooks/vars/") {
            assert!(v.is_object(), "{f}: variables file must be a mapping");
        } else {
            let items = v
                .as_array()
                .unwrap_or_else(|| panic!("{f}: must be a list"));
            for item in items {
                assert!(
                    item.get("name").is_some() || item.get("import_playbook").is_some(),
                    "{f}: unnamed item {item}"
                );
            }
        }
    }
}

#[test]
fn site_imports_every_phase_in_order_with_its_tag() {
    let site = yaml("playbooks/site.yml");
    let imported: Vec<&str> = site
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["import_playbook"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = PHASES.iter().map(|p| format!("{p}.yml")).collect();
    assert_eq!(imported, expected);
    for phase in PHASES {
        let plays = yaml(&format!("playbooks/{phase}.yml"));
        for play in plays.as_array().unwrap() {
            // deploy-cluster's plays after the guests also carry `kinit run --skip-tags
            // kubernetes`'s tag; every other play has its phase tag only.
            let name = play["name"].as_str().unwrap();
            let k8s = phase == "deploy-cluster" && name != "deploy-cluster (guests)";
            let tags = if k8s {
                serde_json::json!([phase, "kubernetes"])
            } else {
                serde_json::json!([phase])
            };
            assert_eq!(play["tags"], tags, "play `{name}` of {phase}");
            assert!(
                play["name"].as_str().unwrap().starts_with(phase),
                "play name `{}` must start with {phase}",
                play["name"]
            );
            assert!(play["hosts"].is_string(), "{phase}: play without hosts");
            assert_eq!(
                play["vars_files"],
                serde_json::json!(["vars/cluster.yml"]),
                "{phase}: cluster vars"
            );
        }
    }
}

/// The playbook files (variables files excluded).
fn playbooks() -> Vec<String> {
    files_under("playbooks", ".yml")
        .into_iter()
        .filter(|f| !f.starts_with("playbooks/vars/"))
        .collect()
}

/// Every task list of the repository: (file, task) pairs, blocks flattened.
fn all_tasks() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut push = |file: &str, tasks: &Value| {
        fn flatten(file: &str, tasks: &Value, out: &mut Vec<(String, Value)>) {
            for t in tasks.as_array().into_iter().flatten() {
                if let Some(block) = t.get("block") {
                    flatten(file, block, out);
                } else {
                    out.push((file.to_string(), t.clone()));
                }
            }
        }
        flatten(file, tasks, &mut out);
    };
    for f in files_under("roles", ".yml") {
        if f.contains("/tasks/") || f.contains("/handlers/") {
            push(&f, &yaml(&f));
        }
    }
    for f in playbooks() {
        for play in yaml(&f).as_array().unwrap() {
            for section in ["pre_tasks", "tasks"] {
                if let Some(tasks) = play.get(section) {
                    push(&f, tasks);
                }
            }
        }
    }
    out
}

fn module_of(task: &Value) -> String {
    let modules: Vec<&String> = task
        .as_object()
        .unwrap_or_else(|| panic!("task is not a mapping: {task}"))
        .keys()
        .filter(|k| !KEYWORDS.contains(&k.as_str()))
        .collect();
    assert_eq!(
        modules.len(),
        1,
        "task `{}` names {modules:?}",
        task["name"]
    );
    modules[0].clone()
}

#[test]
fn every_task_names_one_known_module() {
    let known = [
        "command",
        "shell",
        "copy",
        "template",
        "file",
        "lineinfile",
        "apt",
        "dnf",
        "package",
        "service",
        "systemd",
        "sysctl",
        "modprobe",
        "get_url",
        "wait_for",
        "uri",
        "stat",
        "set_fact",
        "assert",
        "debug",
        "fail",
        "include_role",
        "import_tasks",
        "include_tasks",
        "virt_network",
        "virt_pool",
        "virt_volume",
        "virt_guest",
        "virt_config_iso",
        "virt_install_wait",
        "win_feature",
        "win_reboot",
        "win_file",
        "win_copy",
        "win_stat",
        "win_shell",
    ];
    for (file, task) in all_tasks() {
        let m = module_of(&task);
        assert!(
            known.contains(&m.as_str()),
            "{file}: task `{}` uses unknown module `{m}`",
            task["name"]
        );
    }
}

#[test]
fn every_role_tasks_file_template_and_file_named_exists() {
    let roles = repo().join("roles");
    let role_of = |file: &str| file.split('/').nth(1).unwrap().to_string();
    for f in playbooks() {
        for play in yaml(&f).as_array().unwrap() {
            for r in play["roles"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap();
                assert!(
                    roles.join(r).join("tasks/main.yml").exists(),
                    "{f}: role {r} has no tasks/main.yml"
                );
            }
        }
    }
    for (file, task) in all_tasks() {
        let m = module_of(&task);
        let args = &task[&m];
        let here = if file.starts_with("roles/") {
            Some(role_of(&file))
        } else {
            None
        };
        match m.as_str() {
            "include_role" => {
                let role = args["name"].as_str().unwrap();
                let tasks = args["tasks_from"].as_str().unwrap_or("main.yml");
                assert!(
                    roles.join(role).join("tasks").join(tasks).exists(),
                    "{file}: {role}/tasks/{tasks} missing"
                );
            }
            "import_tasks" | "include_tasks" => {
                let dir = repo().join(Path::new(&file).parent().unwrap());
                assert!(
                    dir.join(args.as_str().unwrap()).exists(),
                    "{file}: {args} missing"
                );
            }
            "template" => {
                let src = args["src"].as_str().unwrap();
                if src.contains("{{") {
                    continue;
                }
                let role = here.clone().expect("templates are used from roles");
                let path = roles.join(&role).join("templates").join(src);
                assert!(path.exists(), "{file}: template {} missing", path.display());
            }
            "copy" | "win_copy"
                if args.get("src").is_some() && args.get("remote_src").is_none() =>
            {
                let role = here.clone().expect("files are used from roles");
                let path = roles
                    .join(&role)
                    .join("files")
                    .join(args["src"].as_str().unwrap());
                assert!(path.exists(), "{file}: file {} missing", path.display());
            }
            _ => {}
        }
        // `lookup('template', 'x.j2')` (how Windows files are rendered) finds the file the
        // same way, in the role's templates/.
        let text = task.to_string();
        for (i, _) in text.match_indices("lookup('template', '") {
            let rest = &text[i + "lookup('template', '".len()..];
            let src = &rest[..rest.find('\'').unwrap()];
            let role = here.clone().expect("template lookups are used from roles");
            let path = roles.join(&role).join("templates").join(src);
            assert!(path.exists(), "{file}: template {} missing", path.display());
        }
    }
}

/// Differential check against the reference implementation: ansible-playbook accepts the
/// same playbook. The modules outside ansible-core (virt_*, win_*, modprobe, sysctl) are
/// given as empty stand-ins so only the language is checked. Needs ansible-core from the
/// venv ci/test.sh creates; skipped (and saying so) without it.
#[test]
fn ansible_playbook_syntax_check_accepts_site() {
    let Some(venv) = std::env::var_os("KINIT_VENV") else {
        crate::support::cannot_run(
            "KINIT_VENV is not set (ci/test.sh sets it to the venv with ansible-core)",
        );
        return;
    };
    let ansible = Path::new(&venv).join("bin/ansible-playbook");
    assert!(ansible.exists(), "{} missing", ansible.display());
    let scratch = tempfile::tempdir().unwrap();
    let library = scratch.path().join("library");
    std::fs::create_dir(&library).unwrap();
    for m in [
        "virt_network",
        "virt_pool",
        "virt_volume",
        "virt_guest",
        "virt_config_iso",
        "virt_install_wait",
        "win_feature",
        "win_reboot",
        "win_file",
        "win_copy",
        "win_stat",
        "win_shell",
        "modprobe",
        "sysctl",
    ] {
        std::fs::write(library.join(format!("{m}.py")), "#!/usr/bin/python\n").unwrap();
    }
    let inventory = scratch.path().join("hosts.ini");
    std::fs::write(
        &inventory,
        "[hypervisors]\nhypervisor-01\n[controller_nodes]\ncontroller-01\n[compute_nodes]\ncompute-01\n\
         [service_nodes]\nservice\n[windows_nodes]\ncompute-01\n[linux_nodes]\ncontroller-01\nservice\n\
         [cluster_nodes:children]\ncontroller_nodes\ncompute_nodes\n",
    )
    .unwrap();
    let out = std::process::Command::new(ansible)
        .arg("--syntax-check")
        .arg("-i")
        .arg(&inventory)
        .arg(repo().join("playbooks/site.yml"))
        .env("ANSIBLE_LIBRARY", &library)
        .env("ANSIBLE_ROLES_PATH", repo().join("roles"))
        .env("ANSIBLE_LOCAL_TEMP", scratch.path())
        .env("ANSIBLE_HOME", scratch.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ansible-playbook --syntax-check failed:\n{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("playbook:"),
        "{}",
        read("playbooks/site.yml")
    );
}
