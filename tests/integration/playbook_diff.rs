//! Differential test: the playbooks in `tests/playbooks/diff/` run under ansible-playbook
//! and under kinit against localhost, each dumps its registered results to JSON, and the
//! results must agree. Values that are inherently run-specific (times, durations, command
//! lists vs strings, file ownership) are dropped; keys only one tool returns are compared
//! only when they are part of the core result shape (`CORE`).
//!
//! ansible-core comes from the venv `ci/test.sh` builds (`KINIT_VENV`), else from PATH; the
//! test is skipped, saying why, only when neither has `ansible-playbook`. The keyword
//! playbook (`tests/playbooks/keywords`) also runs under both: its asserts must pass in each
//! and the PLAY RECAPs must be identical.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Keys that differ between any two runs, or by implementation detail, not by behaviour.
const DROP: &[&str] = &[
    "invocation",
    "delta",
    "start",
    "end",
    "cmd",
    "warnings",
    "deprecations",
    "uid",
    "gid",
    "owner",
    "group",
    "checksum",
    "md5sum",
    "src",
    "diff",
    "size",
    "secontext",
    "dest",
    "path",
    "mtime",
    "atime",
    "ctime",
    "inode",
    "dev",
    // ext4's file generation number (`lsattr -v`), new for every file.
    "version",
    "ansible_job_id",
    "results_file",
];

/// Keys whose presence must agree, not only their values.
const CORE: &[&str] = &[
    "changed",
    "failed",
    "skipped",
    "rc",
    "stdout",
    "stderr",
    "stdout_lines",
    "msg",
    "results",
    "item",
    "attempts",
    "ansible_loop_var",
    "assertion",
    "evaluated_to",
    "ansible_facts",
    "content",
    "exists",
    "skip_reason",
    "skipped_reason",
    "false_condition",
    "failed_when_result",
    "exception",
    "failed_when_suppressed_exception",
];

pub(crate) fn ansible_playbook() -> Option<PathBuf> {
    if let Some(venv) = std::env::var_os("KINIT_VENV") {
        let p = Path::new(&venv).join("bin/ansible-playbook");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ansible-playbook"))
            .find(|p| p.is_file())
    })
}

/// Whether `ansible-playbook` can load community.general (its Python has the collection).
/// ansible-playbook, or `None` after saying why it cannot run (a failure under
/// `KINIT_REQUIRE_ALL`).
fn ansible_or_say_why() -> Option<PathBuf> {
    let found = ansible_playbook();
    if found.is_none() {
        crate::support::cannot_run(
            "ansible-playbook is not on PATH and KINIT_VENV has none (ci/test.sh installs it)",
        );
    }
    found
}

/// The environment every ansible-playbook run here gets: no colour, no warnings about the
/// implicit localhost, and its home and temporary files in the test's scratch folder.
fn quiet_ansible(scratch: &Path) -> [(&'static str, std::ffi::OsString); 5] {
    [
        ("ANSIBLE_NOCOLOR", "1".into()),
        ("ANSIBLE_LOCALHOST_WARNING", "false".into()),
        ("ANSIBLE_INVENTORY_UNPARSED_WARNING", "false".into()),
        ("ANSIBLE_HOME", scratch.join("ansible-home").into()),
        ("ANSIBLE_LOCAL_TEMP", scratch.join("ansible-tmp").into()),
    ]
}

fn has_community_general(ansible: &Path) -> bool {
    let python = ansible.with_file_name("python");
    let python = if python.is_file() {
        python
    } else {
        PathBuf::from("python3")
    };
    Command::new(python)
        .args([
            "-c",
            "import importlib.util as u; assert u.find_spec('ansible_collections.community.general')",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Drop volatile keys and normalise the spellings both tools use for "nothing".
fn normalise(v: &Value, outdir: &str) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m {
                if DROP.contains(&k.as_str()) || k.starts_with("_ansible") {
                    continue;
                }
                out.insert(k.clone(), normalise(x, outdir));
            }
            if out.get("msg") == Some(&Value::from("")) {
                out.remove("msg");
            }
            for k in ["failed", "skipped"] {
                if out.get(k) == Some(&Value::Bool(false)) {
                    out.remove(k);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| normalise(x, outdir)).collect()),
        Value::String(s) => Value::String(s.replace(outdir, "OUTDIR")),
        other => other.clone(),
    }
}

fn compare(file: &str, path: &str, a: &Value, k: &Value, diffs: &mut Vec<String>) {
    match (a, k) {
        (Value::Object(am), Value::Object(km)) => {
            for key in am.keys().chain(km.keys().filter(|x| !am.contains_key(*x))) {
                let p = format!("{path}.{key}");
                match (am.get(key), km.get(key)) {
                    (Some(x), Some(y)) => compare(file, &p, x, y, diffs),
                    (Some(x), None) if CORE.contains(&key.as_str()) => {
                        diffs.push(format!("{file} {p}: only ansible has {x}"))
                    }
                    (None, Some(y)) if CORE.contains(&key.as_str()) => {
                        diffs.push(format!("{file} {p}: only kinit has {y}"))
                    }
                    _ => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                compare(file, &format!("{path}[{i}]"), x, y, diffs);
            }
        }
        _ if a != k => diffs.push(format!("{file} {path}: ansible {a} != kinit {k}")),
        _ => {}
    }
}

#[test]
fn registered_results_match_ansible_playbook() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/diff");
    let mut books: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            (n.ends_with(".yml") && n.as_bytes()[0].is_ascii_digit()).then_some(n)
        })
        .collect();
    books.sort();
    // A playbook whose first line says `# needs: community.general` uses a module Ansible
    // routes to that collection (ci/requirements.txt installs it with the `ansible` bundle).
    if !has_community_general(&ansible) {
        crate::support::cannot_run(
            "the ansible-playbook found has no community.general collection (ci/requirements.txt \
             installs it); the playbooks that need it are left out",
        );
        books.retain(|b| {
            let text = std::fs::read_to_string(dir.join(b)).unwrap();
            !text.starts_with("# needs: community.general")
        });
    }
    // `# needs: TOOL` (any other first line than community.general's): a program both tools
    // run on the host (`rpm`, `rsync`); without it the playbook is left out, saying why.
    books.retain(|b| {
        let text = std::fs::read_to_string(dir.join(b)).unwrap();
        let Some(tool) = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# needs: "))
            .filter(|t| *t != "community.general")
        else {
            return true;
        };
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            crate::support::cannot_run(format!(
                "`{tool}` is not installed (ci/deps.sh installs it); {b} is left out"
            ));
        }
        found
    });
    assert!(
        books.len() >= 15,
        "the differential set needs at least 15 playbooks"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (a_out, k_out) = (tmp.path().join("ansible"), tmp.path().join("kinit"));
    std::fs::create_dir_all(&a_out).unwrap();
    std::fs::create_dir_all(&k_out).unwrap();
    let common = |out: &Path| {
        vec![
            "-e".to_string(),
            format!("outdir={}", out.display()),
            "-e".into(),
            "ev=extra".into(),
        ]
    };

    // Both tools get the implicit localhost (no inventory), so both run locally.
    let ansible_run = Command::new(&ansible)
        .args(common(&a_out))
        .args(&books)
        .current_dir(&dir)
        .envs(quiet_ansible(tmp.path()))
        .env("ANSIBLE_PYTHON_INTERPRETER", "auto_silent")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
        .output()
        .unwrap();
    assert!(
        ansible_run.status.success(),
        "ansible-playbook failed:\n{}\n{}",
        String::from_utf8_lossy(&ansible_run.stdout),
        String::from_utf8_lossy(&ansible_run.stderr)
    );
    let kinit_run = Command::new(env!("CARGO_BIN_EXE_kinit"))
        .arg("playbook")
        .args(common(&k_out))
        .args(&books)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        kinit_run.status.success(),
        "kinit failed:\n{}\n{}",
        String::from_utf8_lossy(&kinit_run.stdout),
        String::from_utf8_lossy(&kinit_run.stderr)
    );

    let mut diffs = Vec::new();
    for book in &books {
        let name = book.replace(".yml", ".json");
        let read = |d: &Path| -> Value {
            let text = std::fs::read_to_string(d.join(&name))
                .unwrap_or_else(|e| panic!("{book} wrote no `{name}` in {}: {e}", d.display()));
            serde_json::from_str(&text).unwrap()
        };
        let a = normalise(&read(&a_out), &a_out.display().to_string());
        let k = normalise(&read(&k_out), &k_out.display().to_string());
        assert!(
            a.as_object().is_some_and(|m| !m.is_empty()),
            "{book}: empty dump"
        );
        compare(book, "", &a, &k, &mut diffs);
    }
    assert!(
        diffs.is_empty(),
        "kinit and ansible-playbook disagree:\n{}",
        diffs.join("\n")
    );
}

/// `host : ok=.. changed=..` with the spacing normalised.
fn recap_lines(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.starts_with("PLAY RECAP"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn keyword_playbook_passes_its_asserts_under_both_with_the_same_recap() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/keywords");
    let tmp = tempfile::tempdir().unwrap();
    let (a_work, k_work) = (tmp.path().join("ansible"), tmp.path().join("kinit"));
    std::fs::create_dir_all(&a_work).unwrap();
    std::fs::create_dir_all(&k_work).unwrap();
    // The hosts are local; Ansible runs its modules with the venv's own Python.
    let python = ansible.parent().unwrap().join("python");
    let a = Command::new(&ansible)
        .args(["-i", "hosts.ini", "site.yml", "-e"])
        .arg(format!("workdir={}", a_work.display()))
        .arg("-e")
        .arg(format!("ansible_python_interpreter={}", python.display()))
        .current_dir(&dir)
        .envs(quiet_ansible(tmp.path()))
        .output()
        .unwrap();
    let a_out = String::from_utf8_lossy(&a.stdout).into_owned();
    assert!(
        a.status.success(),
        "ansible-playbook failed:\n{a_out}\n{}",
        String::from_utf8_lossy(&a.stderr)
    );
    let k = Command::new(env!("CARGO_BIN_EXE_kinit"))
        .args(["playbook", "-i", "hosts.ini", "site.yml", "-e"])
        .arg(format!("workdir={}", k_work.display()))
        .current_dir(&dir)
        .output()
        .unwrap();
    let k_out = String::from_utf8_lossy(&k.stdout).into_owned();
    assert!(k.status.success(), "kinit failed:\n{k_out}");
    let (ar, kr) = (recap_lines(&a_out), recap_lines(&k_out));
    assert_eq!(ar.len(), 2, "{a_out}");
    assert_eq!(ar, kr, "recaps differ");
}

/// The lines an Ansible user reads, reduced to what both tools print alike: task banners
/// (without the row of stars), result lines up to their data (`ok: [h]`, `ok: [h] =>
/// (item=1)`), `included:` lines with the scratch folder named `DIR`, and the recap.
fn reading_lines(out: &str, dir: &Path) -> Vec<String> {
    let dir = dir.display().to_string();
    out.lines()
        .map(|l| l.trim_end_matches(['*', ' ']).replace(&dir, "DIR"))
        .filter(|l| {
            [
                "TASK [",
                "ok:",
                "changed:",
                "skipping:",
                "fatal:",
                "failed:",
                "included:",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map(|l| match l.find(" => (item=") {
            Some(i) => {
                let end = l[i..].find(')').map_or(l.len(), |e| i + e + 1);
                l[..end].to_string()
            }
            None if l.starts_with("included:") => l,
            None => l.split(" =>").next().unwrap_or_default().to_string(),
        })
        .collect()
}

/// `-v` and `-vvv` print each result as ansible-playbook does (`tests/playbooks/output/
/// verbose.yml`): the result lines and the indented JSON under them are the same, line for
/// line.
#[test]
fn verbose_results_print_as_ansible_playbook_prints_them() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/output");
    let tmp = tempfile::tempdir().unwrap();
    for verbosity in ["-v", "-vvv"] {
        let mut outputs = Vec::new();
        for tool in ["ansible", "kinit"] {
            let out = playbook_command(tool, &ansible)
                .args([verbosity, "verbose.yml"])
                .current_dir(&dir)
                .envs(quiet_ansible(tmp.path()))
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "{tool} {verbosity} failed:\n{text}");
            let results: Vec<String> = text
                .lines()
                .filter(|l| {
                    [
                        "ok:",
                        "changed:",
                        "skipping:",
                        "fatal:",
                        "failed:",
                        "    ",
                        "}",
                    ]
                    .iter()
                    .any(|p| l.starts_with(p))
                })
                // ansible-core's source excerpt under a failure (`  ^ column 7`).
                .filter(|l| !l.trim_start().starts_with('^'))
                .map(str::to_string)
                .collect();
            outputs.push(results);
        }
        assert!(outputs[0].len() > 12, "ansible's output: {:?}", outputs[0]);
        assert_eq!(outputs[0], outputs[1], "{verbosity}: the results differ");
    }
}

/// `--list-tasks`' task lines.
fn listed_tasks(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("      "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// What a run prints, read as an Ansible user reads it, matches ansible-playbook line for
/// line, and so does `--list-tasks` (`tests/playbooks/output/`): a role named by its path,
/// unnamed tasks, `included:` lines for include_tasks (with a loop, one per item), an empty
/// loop and an all-skipped loop shown as skipped, a skipped delegated task without its
/// delegate, and the recap, where an include is not counted `ok`.
#[test]
fn task_lines_read_as_ansible_playbook_prints_them() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/output");
    let tmp = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for tool in ["ansible", "kinit"] {
        let work = tmp.path().join(tool);
        let copied = Command::new("cp")
            .arg("-r")
            .arg(&src)
            .arg(&work)
            .status()
            .unwrap();
        assert!(copied.success());
        let run = |extra: &[&str]| {
            let out = playbook_command(tool, &ansible)
                .args(extra)
                .arg("site.yml")
                .current_dir(&work)
                .envs(quiet_ansible(tmp.path()))
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{tool} failed:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        let ran = run(&[]);
        let listed = run(&["--list-tasks"]);
        outputs.push((
            reading_lines(&ran, &work),
            recap_lines(&ran),
            listed_tasks(&listed),
        ));
    }
    let (a, k) = (&outputs[0], &outputs[1]);
    assert!(a.0.len() > 20 && a.2.len() == 10, "ansible's output: {a:?}");
    assert_eq!(a.0, k.0, "the lines of the run differ");
    assert_eq!(a.1, k.1, "the recaps differ");
    assert_eq!(a.2, k.2, "--list-tasks differs");
}

/// A `jsonfile` fact cache (ansible.cfg's `fact_caching`) is shared with ansible-playbook
/// 2.19: facts one tool gathered and cached (`set_fact: cacheable`) the other reads in a
/// later run, where `gathering = smart` does not gather again; `--flush-cache` starts
/// without them and `meta: clear_facts` removes the host's cache file.
#[test]
fn a_jsonfile_fact_cache_is_shared_with_ansible_playbook() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/factcache");
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("play");
    copy_files(&src, &work);
    let run = |tool: &str, args: &[&str]| -> String {
        let out = quiet_run(tool, &ansible, &work, tmp.path(), args, &[]);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{tool} {args:?} failed:\n{text}");
        text
    };
    let cache = work.join("cache/kc_s1_localhost");
    let gathered = |out: &str| out.contains("TASK [Gathering Facts]");

    let out = run("kinit", &["write.yml"]);
    assert!(gathered(&out), "nothing was cached yet:\n{out}");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert!(file["__payload__"].is_string(), "2.19's envelope: {file}");
    let out = run("ansible", &["read.yml"]);
    assert!(!gathered(&out), "ansible-playbook gathered again:\n{out}");

    std::fs::remove_dir_all(work.join("cache")).unwrap();
    run("ansible", &["write.yml"]);
    let out = run("kinit", &["read.yml"]);
    assert!(!gathered(&out), "kinit gathered again:\n{out}");

    let out = run("kinit", &["--flush-cache", "flushed.yml"]);
    assert!(gathered(&out), "--flush-cache left the facts:\n{out}");

    run("kinit", &["write.yml"]);
    run("kinit", &["clear.yml"]);
    assert!(!cache.exists(), "meta: clear_facts left the cache file");
}

/// How plays go on as ansible-playbook's strategy and executor decide it
/// (`tests/playbooks/playflow/`): `meta: refresh_inventory` (the inventory read again, `add_host`
/// and `group_by` kept, a host no longer listed leaving the play), `add_host` running once per
/// batch, a failed `run_once` task ending the playbook as `any_errors_fatal` does, and a batch
/// whose every host failed ending it too. Same exit code, task and result lines, and recap.
#[test]
fn play_flow_matches_ansible_playbook() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/playflow");
    let books = [
        ("refresh.yml", 0),
        ("fatal.yml", 2),
        ("allfail.yml", 2),
        ("nohosts.yml", 0),
    ];
    for (book, rc) in books {
        let tmp = tempfile::tempdir().unwrap();
        let mut outputs = Vec::new();
        for tool in ["ansible", "kinit"] {
            let work = tmp.path().join(tool);
            copy_files(&src, &work);
            let out = quiet_run(
                tool,
                &ansible,
                &work,
                tmp.path(),
                &["-i", "hosts.ini", book],
                &[],
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert_eq!(
                out.status.code(),
                Some(rc),
                "{tool} {book}:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Hosts finish a task in any order under ansible-playbook's forks.
            let lines = hosts_in_order(reading_lines(&text, &work));
            let unmatched: Vec<String> = String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| l.contains("Could not match supplied host pattern"))
                .map(str::to_string)
                .collect();
            outputs.push((lines, recap_lines(&text), unmatched));
        }
        let (a, k) = (&outputs[0], &outputs[1]);
        assert!(a.0.len() >= 3, "{book}: ansible's output: {a:?}");
        assert_eq!(a.0, k.0, "{book}: the lines of the run differ");
        assert_eq!(a.1, k.1, "{book}: the recaps differ");
        assert_eq!(a.2, k.2, "{book}: the host pattern warnings differ");
    }
}

/// Text that is shown rather than used, as ansible-core 2.19 renders it
/// (`tests/playbooks/markers/`): task names templated for their banners with the first host's
/// variables (play vars, host vars, facts set earlier; in a role too), a part that cannot be
/// rendered shown as `<< error N - msg >>` (with `template potentially truncated` after an
/// error that stops the template), `debug: var=` of an undefined value printed as a marker, and
/// each told in a warning quoting where the value is. Same banners, result lines, markers and
/// warnings (stderr, whole).
#[test]
fn template_markers_match_ansible_playbook() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/markers");
    let tmp = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for tool in ["ansible", "kinit"] {
        let work = tmp.path().join(tool);
        copy_files(&src, &work);
        copy_files(
            &src.join("roles/shown/tasks"),
            &work.join("roles/shown/tasks"),
        );
        let out = quiet_run(
            tool,
            &ansible,
            &work,
            tmp.path(),
            &["-i", "hosts.ini", "names.yml"],
            &[],
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let errors =
            String::from_utf8_lossy(&out.stderr).replace(&work.display().to_string(), "DIR");
        assert_eq!(out.status.code(), Some(0), "{tool}:\n{text}\n{errors}");
        // kinit's own TASK TIMING table after the recap names the tasks again.
        let markers: Vec<String> = text
            .lines()
            .take_while(|l| !l.starts_with("TASK TIMING"))
            .filter(|l| l.contains("<< error"))
            .map(|l| l.trim_end_matches(['*', ' ']).to_string())
            .collect();
        outputs.push((hosts_in_order(reading_lines(&text, &work)), markers, errors));
    }
    let (a, k) = (&outputs[0], &outputs[1]);
    assert!(
        a.0.contains(&"TASK [Install release 1.31 for alpha (hello)]".to_string()),
        "ansible's banners: {:?}",
        a.0
    );
    assert_eq!(a.1.len(), 8, "ansible's markers: {:?}", a.1);
    assert_eq!(
        a.2.matches("Encountered ").count(),
        8,
        "ansible's warnings:\n{}",
        a.2
    );
    assert_eq!(a.0, k.0, "the banners and result lines differ");
    assert_eq!(a.1, k.1, "the markers differ");
    assert_eq!(a.2, k.2, "the warnings differ");
}

/// ansible.cfg's `display_ok_hosts` and `display_skipped_hosts` (and their `ANSIBLE_*`
/// variables) hide results as ansible-core's default callback does
/// (`tests/playbooks/display/`): a result that changed nothing, or a skipped one, gets no
/// line, and a task none of whose results is shown gets no banner (kubespray's ansible.cfg
/// turns skipped hosts off). Same banners and result lines as ansible-playbook in each
/// setting.
#[test]
fn display_settings_hide_results_as_ansible_playbook_does() {
    let Some(ansible) = ansible_or_say_why() else {
        return;
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks/display");
    // What each setting is (its name, `ANSIBLE_*` variables, ansible.cfg), and a banner it
    // hides.
    type Setting<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a str>, &'a str);
    let settings: [Setting<'_>; 4] = [
        (
            "skipped off",
            &[("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "false")],
            None,
            "skipped everywhere",
        ),
        (
            "ok off",
            &[("ANSIBLE_DISPLAY_OK_HOSTS", "false")],
            None,
            "changes nothing",
        ),
        (
            "both off",
            &[
                ("ANSIBLE_DISPLAY_OK_HOSTS", "0"),
                ("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "no"),
            ],
            None,
            "included and skipped",
        ),
        (
            "ansible.cfg",
            &[],
            Some("[defaults]\ndisplay_skipped_hosts = no\n"),
            "no item runs",
        ),
    ];
    for (what, envs, cfg, hidden) in settings {
        let tmp = tempfile::tempdir().unwrap();
        let mut outputs = Vec::new();
        for tool in ["ansible", "kinit"] {
            let work = tmp.path().join(tool);
            copy_files(&src, &work);
            if let Some(cfg) = cfg {
                std::fs::write(work.join("ansible.cfg"), cfg).unwrap();
            }
            let out = quiet_run(
                tool,
                &ansible,
                &work,
                tmp.path(),
                &["-i", "hosts.ini", "site.yml"],
                envs,
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert_eq!(out.status.code(), Some(0), "{tool} {what}:\n{text}");
            outputs.push(hosts_in_order(reading_lines(&text, &work)));
        }
        let (a, k) = (&outputs[0], &outputs[1]);
        assert!(
            !a.iter().any(|l| l.contains(hidden)) && k.iter().any(|l| l.starts_with("TASK [")),
            "{what}: ansible showed `{hidden}`: {a:?}"
        );
        assert!(
            a.iter().any(|l| l.starts_with("fatal:")),
            "{what}: ansible's lines: {a:?}"
        );
        assert_eq!(a, k, "{what}: the lines differ");
    }
}

/// `tool` (`ansible` or `kinit`, see `tool_command`) run with `args` in `work`, quietly
/// (`quiet_ansible` in `scratch`), without colour, with `envs` besides.
fn quiet_run(
    tool: &str,
    ansible: &Path,
    work: &Path,
    scratch: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> std::process::Output {
    tool_command(tool, ansible)
        .args(args)
        .current_dir(work)
        .envs(quiet_ansible(scratch))
        .envs(envs.iter().copied())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The files of `src` (not its folders) copied into `dest`, created.
fn copy_files(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for f in std::fs::read_dir(src).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() {
            std::fs::copy(&f, dest.join(f.file_name().unwrap())).unwrap();
        }
    }
}

/// `kinit playbook`, or ansible-playbook.
fn playbook_command(tool: &str, ansible: &Path) -> Command {
    if tool == "kinit" {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kinit"));
        c.arg("playbook");
        c
    } else {
        Command::new(ansible)
    }
}

/// As `playbook_command`, ansible-playbook running its modules with the venv's own Python.
fn tool_command(tool: &str, ansible: &Path) -> Command {
    let mut c = playbook_command(tool, ansible);
    if tool != "kinit" {
        let python = ansible.parent().unwrap().join("python");
        c.arg("-e")
            .arg(format!("ansible_python_interpreter={}", python.display()));
    }
    c
}

/// `lines` with each task's result lines sorted, and the hosts an `included:` line names, so
/// the order hosts finished in does not count.
fn hosts_in_order(lines: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut from = 0;
    for l in lines {
        if l.starts_with("TASK [") {
            out[from..].sort();
            out.push(l);
            from = out.len();
        } else if let Some((head, hosts)) = l.split_once(" for ")
            && head.starts_with("included: ")
        {
            // ansible-playbook names the hosts of an include in the order their results came.
            let mut hosts: Vec<&str> = hosts.split(", ").collect();
            hosts.sort_unstable();
            out.push(format!("{head} for {}", hosts.join(", ")));
        } else {
            out.push(l);
        }
    }
    out[from..].sort();
    out
}
