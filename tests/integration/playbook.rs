//! `kinit playbook` end to end on the local transport: every keyword with asserted results
//! (in the playbook and in the JSON event log), plain output and recap snapshots, `no_log`
//! redaction in every sink, load errors with file:line, and Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Test;

fn playbooks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playbooks")
}

/// Events of a `--log-json` file.
fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("json log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect()
}

fn results<'a>(ev: &'a [Value], task: &str) -> Vec<&'a Value> {
    ev.iter()
        .filter(|e| e["event"] == "task_result" && e["task"] == task)
        .collect()
}

#[test]
fn every_keyword_runs_with_the_expected_results() {
    let dir = playbooks().join("keywords");
    let t = Test::new();
    let work = t.path().to_path_buf();
    let log = work.join("events.json");
    let ran = t
        .args(["playbook", "-i"])
        .args([dir.join("hosts.ini").display().to_string()])
        .args([dir.join("site.yml").display().to_string()])
        .args(["-e", &format!("workdir={}", work.display())])
        .args(["--log-json", &log.display().to_string()])
        .succeeds()
        .partial_output("alpha and beta report in parallel: the order of their lines varies");
    let out = ran.stdout();
    for host in ["alpha", "beta"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(host) && l.contains("ok="))
            .unwrap_or_else(|| panic!("no recap line for {host}:\n{out}"));
        assert!(
            line.contains("failed=0 ") && line.contains("rescued=1 "),
            "{line}"
        );
    }
    let ev = events(&log);
    // The final assert ran and passed on both hosts.
    let last = results(&ev, "check handlers and tags");
    assert_eq!(last.len(), 2);
    assert!(
        last.iter()
            .all(|e| e["status"] == "ok" && e["result"]["msg"] == "all keywords behaved")
    );
    // Loop items were reported one by one, with their registered values.
    let items: Vec<&Value> = ev
        .iter()
        .filter(|e| e["event"] == "item_result" && e["task"] == "loop with register")
        .collect();
    assert_eq!(items.len(), 6);
    assert!(
        items
            .iter()
            .any(|e| e["host"] == "beta" && e["result"]["stdout"] == "c-beta")
    );
    // The block's failure was rescued on each host.
    assert_eq!(ev.iter().filter(|e| e["event"] == "rescued").count(), 2);
    assert_eq!(results(&ev, "not reached").len(), 0);
    // until took two attempts.
    assert!(
        results(&ev, "until counter")
            .iter()
            .all(|e| e["result"]["attempts"] == 2)
    );
    // run_once ran on the first host only; delegation went to localhost.
    let once = results(&ev, "run once");
    assert_eq!(once.len(), 1);
    assert_eq!(once[0]["host"], "alpha");
    assert!(
        results(&ev, "delegate to localhost")
            .iter()
            .all(|e| e["delegated_to"] == "localhost")
    );
    // `when` skipped beta; the `never` tag kept its task out; each handler ran once per host.
    let when: Vec<_> = results(&ev, "when on one host")
        .iter()
        .map(|e| (e["host"].clone(), e["status"].clone()))
        .collect();
    assert!(when.contains(&("beta".into(), "skipped".into())));
    assert_eq!(results(&ev, "tagged never").len(), 0);
    assert_eq!(results(&ev, "bump").len(), 2);
    assert_eq!(results(&ev, "topic handler").len(), 2);
}

#[test]
fn tags_select_tasks_and_always_runs() {
    let dir = playbooks().join("keywords");
    let t = Test::new();
    let log = t.path().join("events.json");
    let _ran = t
        .args(["playbook", "-i"])
        .args([dir.join("hosts.ini").display().to_string()])
        .args([dir.join("site.yml").display().to_string()])
        .args(["-e", "workdir=/nonexistent", "--tags", "selected"])
        .args(["--log-json", &log.display().to_string()])
        .succeeds()
        .partial_output("alpha and beta report in parallel: the order of their lines varies");
    let ev = events(&log);
    let ran: Vec<&str> = ev
        .iter()
        .filter(|e| e["event"] == "task_result")
        .filter_map(|e| e["task"].as_str())
        .collect();
    assert_eq!(ran, ["tagged selected", "tagged selected"]);
}

const SNAPSHOT_PLAY: &str = r#"
- name: snapshot play
  hosts: localhost
  gather_facts: false
  tasks:
    - name: say hello
      debug:
        msg: hello
    - name: change something
      command: echo changed
    - name: skipped task
      command: echo never
      when: false
    - name: ignored failure
      fail:
        msg: ignored on purpose
      ignore_errors: true
    - name: loop
      debug:
        msg: "item {{ item }}"
      loop: [1, 2]
    - block:
        - name: fails in block
          fail:
            msg: boom
      rescue:
        - name: rescued
          debug:
            msg: recovered
"#;

#[test]
fn plain_output_and_recap_snapshot() {
    Test::new()
        .write("site.yml", SNAPSHOT_PLAY)
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
}

#[test]
fn failed_host_exits_2_with_recap_snapshot() {
    Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - command: echo ok\n    - name: boom\n      command: /bin/false\n    - debug: msg=unreached\n",
        )
        .args(["playbook", "site.yml"])
        .fails_with(2)
        .snapshot();
}

#[test]
fn no_log_secret_appears_in_no_output_log_or_report() {
    const SECRET: &str = "s3cr3t-Value-9f81";
    let play = format!(
        r#"
- hosts: localhost
  gather_facts: false
  vars:
    password: "{SECRET}"
  tasks:
    - name: uses the secret
      command: "echo {{{{ password }}}}"
      no_log: true
      register: out
    - name: fails with the secret
      fail:
        msg: "bad {{{{ password }}}}"
      no_log: true
      ignore_errors: true
    - name: loops over the secret
      debug:
        msg: "{{{{ item }}}}"
      loop: ["{{{{ password }}}}"]
      no_log: true
    - name: prints the registered result later
      debug:
        var: out.stdout
"#
    );
    let t = Test::new().write("site.yml", &play);
    let (log, junit) = (t.path().join("log.json"), t.path().join("junit.xml"));
    let ran = t
        .args(["playbook", "site.yml", "-v"])
        .args(["--log-json", &log.display().to_string()])
        .args(["--junit", &junit.display().to_string()])
        .succeeds()
        .snapshot();
    let log_text = std::fs::read_to_string(&log).unwrap();
    let junit_text = std::fs::read_to_string(&junit).unwrap();
    assert!(log_text.contains("uses the secret") && junit_text.contains("uses the secret"));
    for (name, text) in [
        ("stdout", ran.stdout()),
        ("stderr", ran.stderr()),
        ("json log", log_text),
        ("junit", junit_text),
    ] {
        assert!(!text.contains(SECRET), "secret leaked into {name}:\n{text}");
    }
}

#[test]
fn load_errors_name_file_and_line() {
    let cases = [
        (
            "- hosts: localhost\n  tasks:\n    - name: typo\n      debgu: msg=x\n",
            "site.yml:3: unknown module `debgu` (did you mean `debug`?)",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - debug: msg=x\n      regsiter: out\n",
            "site.yml:4: unknown keyword `regsiter` in a task (did you mean `register`?)",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - debug: msg=x\n  hanlders: []\n",
            "site.yml:4: 'hanlders' is not a valid attribute for a Play (did you mean `handlers`?)",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - debug:\n        msg: [unclosed\n",
            "site.yml:5: YAML syntax error",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - meta: flush_handler\n",
            "site.yml:3: bad arguments for module `meta`: unknown meta action `flush_handler` (did you mean `flush_handlers`?)",
        ),
    ];
    for (play, expected) in cases {
        for extra in [None, Some("--syntax-check")] {
            let ran = Test::new()
                .write("site.yml", play)
                .args(["playbook", "site.yml"])
                .args(extra)
                .fails_with(4)
                .snapshot();
            assert!(
                ran.stderr().contains(expected),
                "want {expected:?}, got:\n{}",
                ran.stderr()
            );
        }
    }
}

/// Module arguments are checked when the playbook loads, but as ansible-playbook checks them
/// only when a host runs the task, a wrong one is a warning there and a failure (in
/// ansible-core's words) only on a host that reaches it.
#[test]
fn bad_module_arguments_warn_at_load_and_fail_where_reached() {
    let play = "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - copy:\n        dst: /nowhere\n      when: false\n    - file:\n        state: directory\n";
    Test::new()
        .write("site.yml", play)
        .args(["playbook", "--syntax-check", "site.yml"])
        .succeeds()
        .stdout_is("\nplaybook: site.yml\n")
        .stderr_is(
            "[WARNING]: site.yml:4: bad arguments for module `copy`: unknown argument `dst`, did you mean `dest`? (valid arguments: `src`, `content`, `dest`, `mode`, `directory_mode`, `owner`, `group`, `backup`, `force`, `remote_src`, `validate`, `decrypt`, `follow`, `local_follow`, `checksum`); the task fails on any host that reaches it\n\
             [WARNING]: site.yml:7: bad arguments for module `file`: missing required argument `path`; the task fails on any host that reaches it\n",
        );
    Test::new()
        .write("site.yml", play)
        .args(["playbook", "site.yml"])
        .fails_with(2)
        .stdout_is(
            "\nPLAY [localhost]\n\nTASK [copy]\nskipping: [localhost]\n\nTASK [file]\n\
             [ERROR]: Task failed: Module failed: missing required arguments: path\n\
             Origin: [DIR]/site.yml:7:7\n\n\
             5         dst: /nowhere\n6       when: false\n7     - file:\n        ^ column 7\n\n\
             fatal: [localhost]: FAILED! => missing required arguments: path\n...",
        )
        .partial_output("the warnings are compared whole in the syntax check above");
}

#[test]
fn syntax_check_and_list_tasks() {
    let dir = playbooks().join("keywords");
    let site = dir.join("site.yml").display().to_string();
    Test::new()
        .args(["playbook", "--syntax-check", &site])
        .succeeds()
        .snapshot()
        .stdout_has("playbook: ");
    let ran = Test::new()
        .args(["playbook", "--list-tasks", &site])
        .succeeds()
        .snapshot();
    let out = ran.stdout();
    assert!(out.contains("common : role task\tTAGS: []"), "{out}");
    assert!(out.contains("tagged selected\tTAGS: [selected]"), "{out}");
    assert!(!out.contains("tagged never"), "{out}");
}

#[test]
fn unreachable_host_exits_4() {
    let ran = Test::new()
        .write(
            "hosts.ini",
            "[web]\nghost ansible_host=127.0.0.1 ansible_port=1 ansible_user=nobody\n",
        )
        .write(
            "site.yml",
            "- hosts: web\n  gather_facts: false\n  tasks:\n    - command: echo hi\n",
        )
        .args([
            "playbook",
            "-i",
            "hosts.ini",
            "site.yml",
            "--host-key-checking",
            "off",
        ])
        .fails_with(4)
        .snapshot();
    assert!(ran.stdout().contains("unreachable=1"), "{}", ran.stdout());
}

#[test]
fn ctrl_c_stops_cleanly_with_exit_130() {
    let t = Test::new().write(
        "site.yml",
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: long\n      command: sleep 37.25\n    - debug: msg=never\n",
    );
    let dir = t.path().to_path_buf();
    let log = dir.join("log.json");
    let child = Command::new(env!("CARGO_BIN_EXE_kinit"))
        .args(["playbook", "site.yml", "--log-json"])
        .arg(&log)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the long task is running.
    let start = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("host_task")
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "task never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let sent = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("[interrupted]") && stdout.contains("PLAY RECAP"),
        "{stdout}"
    );
    assert!(!stdout.contains("never"), "{stdout}");
    // The in-flight command was killed, and nothing but the playbook and the log is left.
    let ps = Command::new("sh")
        .args(["-c", "ps -eo args | grep -c '^sleep 37.25' || true"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ps.stdout).trim(),
        "0",
        "sleep still running"
    );
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".state")
        .collect();
    left.sort();
    assert_eq!(left, ["log.json", "site.yml"]);
}

#[test]
fn readme_playbook_example_runs_as_written() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let after = readme
        .split("<!-- playbook-example -->")
        .nth(1)
        .expect("README has the playbook example marker");
    let body = after
        .split("```yaml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a yaml block after the marker");
    let ran = Test::new()
        .write("hello.yml", body)
        .args(["playbook", "hello.yml"])
        .succeeds()
        .snapshot();
    assert!(ran.stdout().contains("ok=2 "), "{}", ran.stdout());
}

#[test]
fn run_control_serial_free_end_host_end_play_runtime_inventory() {
    let dir = playbooks().join("flow");
    let t = Test::new();
    let work = t.path().to_path_buf();
    let log = work.join("events.json");
    // h3 fails (any_errors_fatal), so the run ends with failed hosts.
    let _ran = t
        .args(["playbook", "-i"])
        .args([dir.join("hosts.ini").display().to_string()])
        .args([dir.join("site.yml").display().to_string()])
        .args(["-e", &format!("workdir={}", work.display())])
        .args(["--log-json", &log.display().to_string()])
        .fails_with(2)
        .partial_output("h2, h3 and h4 report in parallel in the second batch and the any_errors_fatal play: their order varies");
    let ev = events(&log);
    // serial: [1, 3] makes batches h1, then h2..h4.
    let batches: Vec<&str> = results(&ev, "batch member")
        .iter()
        .filter_map(|e| e["result"]["msg"].as_str())
        .collect();
    assert_eq!(batches, ["h1", "h2,h3,h4", "h2,h3,h4", "h2,h3,h4"]);
    // end_host stopped h2 only.
    let after: Vec<&str> = results(&ev, "after end_host")
        .iter()
        .filter_map(|e| e["host"].as_str())
        .collect();
    assert_eq!(after.len(), 3);
    assert!(!after.contains(&"h2"));
    assert!(results(&ev, "check runtime results")[0]["result"]["msg"] == "runtime ok");
    let added = results(&ev, "added host vars");
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["host"], "extra1");
    assert!(
        !work.join("never-written").exists(),
        "check_mode wrote a file"
    );
    assert!(results(&ev, "after end_play").is_empty());
    assert!(results(&ev, "nobody gets here").is_empty());
    assert_eq!(
        results(&ev, "one host fails")
            .iter()
            .filter(|e| e["status"] == "failed")
            .count(),
        1
    );
}

#[test]
fn start_at_task_and_limit() {
    let dir = playbooks().join("keywords");
    let t = Test::new();
    let log = t.path().join("events.json");
    let _ran = t
        .args(["playbook", "-i"])
        .args([dir.join("hosts.ini").display().to_string()])
        .args([dir.join("site.yml").display().to_string()])
        .args(["-e", "workdir=/nonexistent", "--limit", "beta"])
        .args(["--start-at-task", "tagged selected"])
        .args(["--log-json", &log.display().to_string()])
        // The final assert needs facts from the skipped tasks, so the run itself fails.
        .fails_with(2)
        .snapshot();
    let ev = events(&log);
    let ran: Vec<(&str, &str)> = ev
        .iter()
        .filter(|e| e["event"] == "task_result")
        .map(|e| (e["host"].as_str().unwrap(), e["task"].as_str().unwrap()))
        .collect();
    assert_eq!(ran.first(), Some(&("beta", "tagged selected")), "{ran:?}");
    assert!(ran.iter().all(|(h, _)| *h == "beta"));
}

/// The JSON event log and the JUnit report of the snapshot play, with durations frozen and
/// the command results' wall-clock fields (`start`, `end`, `delta`) left out.
#[test]
fn json_log_and_junit_snapshots() {
    let ran = Test::new()
        .write("site.yml", SNAPSHOT_PLAY)
        .args([
            "playbook",
            "site.yml",
            "--log-json",
            "log.jsonl",
            "--junit",
            "junit.xml",
        ])
        .succeeds()
        .snapshot();
    let log = std::fs::read_to_string(ran.dir.join("log.jsonl")).unwrap();
    let events: Vec<Value> = log
        .lines()
        .map(|l| {
            let mut ev: Value = serde_json::from_str(l).unwrap();
            // Every line is a kinit::report::Event: the log reads back through the same type.
            serde_json::from_value::<kinit::report::Event>(ev.clone())
                .unwrap_or_else(|e| panic!("not an Event: {l}: {e}"));
            if let Some(r) = ev.get_mut("result").and_then(Value::as_object_mut) {
                for k in ["start", "end", "delta"] {
                    r.remove(k);
                }
            }
            ev
        })
        .collect();
    insta::assert_json_snapshot!("playbook_json_log", events);
    let junit = std::fs::read_to_string(ran.dir.join("junit.xml")).unwrap();
    insta::assert_snapshot!("playbook_junit", junit);
}
