//! Regression tests, each named after the defect it pins down, through the real binary on
//! the local transport.

use crate::support::Test;

const INV: &str = "[web]\na ansible_connection=local\nb ansible_connection=local\n";
const SITE: &str = "- hosts: web\n  gather_facts: false\n  tasks:\n    - debug: msg=hi\n";

/// `--list-hosts`, `--list-tasks` and `--syntax-check` print only their listing, like
/// ansible-playbook: no play recap or task timing after it.
#[test]
fn list_hosts_prints_no_recap() {
    let run = |flag: &str| {
        Test::new()
            .write("hosts.ini", INV)
            .write("site.yml", SITE)
            .args(["playbook", "-i", "hosts.ini", "site.yml", flag])
            .succeeds()
            .snapshot()
            .stdout()
    };
    assert_eq!(
        run("--list-hosts"),
        "\nplaybook: site.yml\n\n  play #1 (web): web\tTAGS: []\n    pattern: ['web']\n    \
         hosts (2):\n      a\n      b\n"
    );
    assert_eq!(
        run("--list-tasks"),
        "\nplaybook: site.yml\n\n  play #1 (web): web\tTAGS: []\n    tasks:\n      debug\tTAGS: []\n"
    );
    assert_eq!(run("--syntax-check"), "\nplaybook: site.yml\n");
}

/// `kinit run` with the capacity margins as `-e key=value` (strings, as Ansible passes them):
/// the validation role treats them as numbers, and a value that is not a number is refused
/// up front, naming the variable, the value and what was expected. The phases run against
/// libvirt's test driver with the local machine as the hypervisor, as in `deploy.rs`.
#[test]
fn capacity_margins_as_key_value_strings() {
    let dir = tempfile::tempdir().unwrap();
    let run = |margins: [&str; 2]| {
        let mut args = vec![
            "run".to_string(),
            "--spec".into(),
            "k8s-libvirt-1-1-1".into(),
            "--stop-after".into(),
            "run-validations".into(),
        ];
        let pool = format!("libvirt_pool_path={}", dir.path().join("pool").display());
        for var in [
            "libvirt_uri=test:///default",
            "kinit_hypervisor_prepared=true",
            "kinit_hosted_deployment=true",
            margins[0],
            margins[1],
            &pool,
        ] {
            args.push("-e".into());
            args.push(var.into());
        }
        std::process::Command::new(env!("CARGO_BIN_EXE_kinit"))
            .args(&args)
            .current_dir(dir.path())
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("KINIT_PLAYBOOK_DIR")
            .output()
            .unwrap()
    };
    let ok = run(["capacity_headroom=0", "vcpus_per_core=64"]);
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("run-validations") && l.contains(" ok ")),
        "{out}"
    );
    let bad = run(["capacity_headroom=lots", "vcpus_per_core=64"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        err.contains("extra vars: `capacity_headroom` is `lots`; expected a number >= 0"),
        "{err}"
    );
}

/// `set_fact` in a loop builds up a list: each item sees the facts the items before it set
/// (it used to see only the value from before the loop, keeping just the last item).
#[test]
fn set_fact_in_a_loop_accumulates() {
    let site = "- hosts: a\n  gather_facts: false\n  tasks:\n\
                \x20   - set_fact: {seen: []}\n\
                \x20   - set_fact:\n        seen: \"{{ seen + [item] }}\"\n      loop: [x, y, z]\n\
                \x20   - debug: {msg: \"seen={{ seen | join(',') }}\"}\n";
    let out = Test::new()
        .write("hosts.ini", INV)
        .write("site.yml", site)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds()
        .snapshot()
        .stdout();
    assert!(out.contains("seen=x,y,z"), "{out}");
}

/// prepare-hypervisors on a hypervisor that is not marked prepared asks `virsh` on the
/// hypervisor whether libvirt answers; that task read `libvirt_uri`, which only the
/// kinit_libvirt and kinit_cleanup roles define, so every real `kinit run` stopped there
/// with "`libvirt_uri` is undefined" unless `-e libvirt_uri=...` was given. Run in check
/// mode on the local machine (nothing installed or started), with guests small enough for
/// any machine. Also pins what check mode and the checks before any package step say:
/// where KVM is not usable the phase refuses without `kinit_hosted_deployment`, names the
/// fix and touches no package; with it, it warns about software emulation, then lists the
/// packages it would install (or, with all of them installed, finds libvirt). The guests'
/// disks are 512 MiB: the capacity check before the package step compares them with this
/// machine's free disk, which a busy build machine may have little of.
#[test]
fn prepare_hypervisors_needs_no_libvirt_uri() {
    let kvm = std::path::Path::new("/dev/kvm").exists()
        && std::fs::read_to_string("/proc/cpuinfo")
            .unwrap_or_default()
            .split_whitespace()
            .any(|flag| flag == "vmx" || flag == "svm");
    let run = |hosted: bool| {
        Test::new()
            .args(["run", "--spec", "k8s-libvirt-1-1-1", "--check"])
            .args(["--stop-after", "prepare-hypervisors"])
            .args([
                "--cluster-nodes-spec",
                "[[vcpus=1,maxvcpus=1,ram=1GiB,disk=512MiB]]",
            ])
            .args(["-e", &format!("kinit_hosted_deployment={hosted}")])
            .run()
            .partial_output("the hypervisor checks read this machine's /dev/kvm, cores, memory and disk: which of them run, skip or warn varies")
    };
    let defaults: serde_json::Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("roles/kinit_hypervisor/defaults/main.yml"),
        )
        .unwrap(),
    )
    .unwrap();
    let missing: Vec<String> = defaults["hypervisor_packages"]["Debian"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .filter(|p| {
            let q = std::process::Command::new("dpkg-query")
                .args(["-W", "-f", "${db:Status-Abbrev}", p])
                .output();
            !q.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with("ii"))
        })
        .collect();
    let hosted = run(true);
    let out = hosted.stdout();
    assert!(!out.contains("is undefined"), "{out}");
    if missing.is_empty() {
        assert!(
            out.contains("TASK [kinit_hypervisor : libvirt daemons found]\nok: [hypervisor-01]"),
            "{out}"
        );
    } else {
        let line = out
            .lines()
            .find(|l| l.contains("hypervisor-01 would install:"))
            .unwrap_or_else(|| panic!("no package list in check mode:\n{out}"));
        for p in &missing {
            assert!(line.contains(p.as_str()), "`{p}` missing from: {line}");
        }
        assert!(
            out.contains(
                "TASK [kinit_hypervisor : libvirt daemons found]\nskipping: [hypervisor-01]"
            ),
            "{out}"
        );
    }
    let hosted = hosted.code(0);
    if kvm {
        println!("this machine has KVM: the software emulation refusal is not exercised");
        return;
    }
    assert!(
        hosted.stdout().contains(
            "WARNING: hypervisor-01 runs guests with QEMU software emulation (TCG), not KVM"
        ),
        "{}",
        hosted.stdout()
    );
    let refused = run(false).code(2);
    let out = refused.stdout();
    assert!(
        out.contains("hypervisor-01 cannot use KVM")
            && out.contains("-e kinit_hosted_deployment=true"),
        "{out}"
    );
    assert!(
        !out.contains("Virtualization packages"),
        "the KVM check comes before any package step:\n{out}"
    );
}

const LOCAL: &str = "[all]\nlocalhost ansible_connection=local\n";

/// A playbook whose one task includes `file`, with the given extra files.
fn recursion_run(files: &[(&str, &str)], task: &str) -> crate::support::Ran {
    let site = format!("- hosts: all\n  gather_facts: false\n  tasks:\n    - {task}\n");
    let mut t = Test::new()
        .write("hosts.ini", LOCAL)
        .write("site.yml", &site);
    for (path, text) in files {
        t = t.write(path, text);
    }
    t.args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .snapshot()
}

/// A task file that includes itself with nothing to stop it aborted kinit with a stack
/// overflow (exit 134, no message); it is a task failure naming the include.
#[test]
fn include_tasks_of_itself_is_a_recursion_error_not_a_stack_overflow() {
    let run = recursion_run(
        &[(
            "self.yml",
            "- debug: msg=again\n- include_tasks: self.yml\n",
        )],
        "include_tasks: self.yml",
    )
    .code(2);
    let out = run.stdout();
    assert!(
        out.contains(
            "includes nest deeper than 64 levels, most likely a file or role that includes itself"
        ),
        "{out}"
    );
    assert!(
        out.contains("self.yml (") && out.contains("self.yml:2"),
        "{out}"
    );
    assert!(out.contains("failed=1"), "{out}");
}

/// The same with a role that `include_role`s itself.
#[test]
fn include_role_of_itself_is_a_recursion_error_not_a_stack_overflow() {
    let run = recursion_run(
        &[("roles/r/tasks/main.yml", "- include_role: {name: r}\n")],
        "include_role: {name: r}",
    )
    .code(2);
    let out = run.stdout();
    assert!(
        out.contains("includes nest deeper than 64 levels") && out.contains("role `r` ("),
        "{out}"
    );
}

/// An include's `vars` that refer to themselves (`depth: "{{ depth | int + 1 }}"`) are a
/// cycle, reported as Ansible does, not a crash.
#[test]
fn include_vars_that_refer_to_themselves_are_a_recursive_loop_error() {
    let run = recursion_run(
        &[("inc.yml", "- debug: msg=\"{{ depth }}\"\n")],
        "include_tasks: inc.yml\n      vars:\n        depth: \"{{ depth | int + 1 }}\"",
    )
    .code(2);
    let out = run.stdout();
    assert!(
        out.contains("recursive loop detected in template: variable `depth` refers to itself"),
        "{out}"
    );
}

/// A chain of 1,400 variables each templating the next overflowed the stack while the
/// first was rendered; past 200 levels it is refused with the ends of the chain named, and
/// a chain of 150 still renders.
#[test]
fn a_chain_of_1400_variables_is_refused_not_a_stack_overflow() {
    let chain = |n: usize| {
        let mut vars = String::new();
        for i in 0..n {
            vars += &format!("    v{i}: \"{{{{ v{} }}}}\"\n", i + 1);
        }
        vars += &format!("    v{n}: end\n");
        format!(
            "- hosts: all\n  gather_facts: false\n  vars:\n{vars}  tasks:\n    - debug: msg=\"{{{{ v0 }}}}\"\n"
        )
    };
    let run = Test::new()
        .write("hosts.ini", LOCAL)
        .write("site.yml", &chain(1400))
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .snapshot()
        .code(2);
    let out = run.stdout();
    assert!(
        out.contains(
            "variables refer to variables more than 200 levels deep: v0 -> v1 -> v2 -> ... ->"
        ),
        "{out}"
    );
    let fine = Test::new()
        .write("hosts.ini", LOCAL)
        .write("site.yml", &chain(150))
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        fine.stdout()
            .contains("ok: [localhost] => {\n    \"msg\": \"end\"\n}"),
        "{}",
        fine.stdout()
    );
}

/// `--log-json /dev/full` exited 0 with nothing written; a log that cannot be written is an
/// error after the recap, naming the file and the cause.
#[test]
fn log_json_to_dev_full_fails_naming_the_file() {
    let run = Test::new()
        .write("hosts.ini", LOCAL)
        .write(
            "site.yml",
            SITE.replace("hosts: web", "hosts: all").as_str(),
        )
        .args([
            "playbook",
            "-i",
            "hosts.ini",
            "site.yml",
            "--log-json",
            "/dev/full",
        ])
        .run()
        .snapshot();
    assert_ne!(run.output.status.code(), Some(0), "{}", run.stdout());
    let err = run.stderr();
    assert!(
        err.contains("cannot write report `/dev/full`") && err.contains("No space left on device"),
        "{err}"
    );
    assert!(
        run.stdout().contains("PLAY RECAP"),
        "the recap is still shown"
    );
}

/// On a full disk the JSON log was cut at 64 KiB and the run exited 0: here a 64 KiB tmpfs
/// (in a private mount namespace) fills up during a run that logs more than that.
#[test]
fn log_json_on_a_full_disk_fails_instead_of_cutting_the_log() {
    if !crate::fixtures::netns::is_root() {
        crate::support::cannot_run("mounting a small tmpfs needs root");
        return;
    }
    let t = Test::new().write("hosts.ini", LOCAL).write(
        "site.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ 'x' * 2000 }} {{ item }}\"\n      loop: \"{{ range(100) | list }}\"\n",
    );
    let dir = t.path().to_path_buf();
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=64k kinit-small {s} && exec {kinit} playbook -i hosts.ini site.yml --log-json {s}/events.jsonl",
        s = small.display(),
        kinit = env!("CARGO_BIN_EXE_kinit"),
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("events.jsonl`") && err.contains("No space left on device"),
        "{err}"
    );
}

/// A variable chain ending in an undefined variable re-rendered the chain on every read,
/// doubling the work per level: 20 levels took over a minute, 22 over four. Each variable is
/// now rendered once per scope, its error included; 30 levels fail at once, naming the
/// innermost variable.
#[test]
fn a_chain_of_variables_ending_undefined_fails_at_once() {
    let mut vars = String::new();
    for i in 0..30 {
        vars += &format!("    v{i}: \"{{{{ v{} }}}}\"\n", i + 1);
    }
    vars += "    v30: \"{{ nope }}\"\n";
    let site = format!(
        "- hosts: all\n  gather_facts: false\n  vars:\n{vars}  tasks:\n    - debug: msg=\"{{{{ v0 }}}}\"\n"
    );
    let run = Test::new()
        .write("hosts.ini", LOCAL)
        .write("site.yml", &site)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .snapshot()
        .code(2);
    // ansible-core's words in the message; the variable it was met in beside it.
    assert!(
        run.stdout().contains("'nope' is undefined")
            && run
                .stdout()
                .contains("origin: site.yml:36 (while templating variable `v30`)"),
        "{}",
        run.stdout()
    );
}

/// Group cycles through `children` were accepted (INI and YAML); Ansible refuses them ("creates
/// a recursive dependency loop"), and so does kinit, naming the file, line and the loop.
#[test]
fn group_cycles_through_children_are_refused() {
    let ini = "[a:children]\nb\n[b:children]\na\n[b]\nh1 ansible_connection=local\n";
    let run = Test::new()
        .write("hosts.ini", ini)
        .write(
            "site.yml",
            "- hosts: all\n  gather_facts: false\n  tasks: []\n",
        )
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .snapshot();
    assert_ne!(run.output.status.code(), Some(0));
    let err = run.stderr();
    assert!(
        err.contains(
            "hosts.ini:4: adding group `a` as a child of `b` makes a loop: `a` -> `b` -> `a`"
        ),
        "{err}"
    );
    let yaml = "all:\n  children:\n    a:\n      children:\n        b:\n          children:\n            a: {}\n";
    let run = Test::new()
        .write("hosts.yml", yaml)
        .write(
            "site.yml",
            "- hosts: all\n  gather_facts: false\n  tasks: []\n",
        )
        .args(["playbook", "-i", "hosts.yml", "site.yml"])
        .run()
        .snapshot();
    assert_ne!(run.output.status.code(), Some(0));
    assert!(
        run.stderr().contains("makes a loop: `a` -> `b` -> `a`"),
        "{}",
        run.stderr()
    );
}

/// `h[1:` became a host name, and `web[0]` too; Ansible refuses both.
#[test]
fn unclosed_or_rangeless_brackets_in_host_names_are_refused() {
    for (name, why) in [
        ("h[1:", "the `[` is never closed"),
        ("web[0]", "expected `[start:end]` or `[start:end:step]`"),
    ] {
        let run = Test::new()
            .write("hosts.ini", &format!("[g]\n{name}\n"))
            .write(
                "site.yml",
                "- hosts: all\n  gather_facts: false\n  tasks: []\n",
            )
            .args(["playbook", "-i", "hosts.ini", "site.yml"])
            .run()
            .snapshot();
        assert_ne!(run.output.status.code(), Some(0), "{name}");
        assert!(
            run.stderr()
                .contains(&format!("invalid host range `{name}`: {why}")),
            "{}",
            run.stderr()
        );
    }
}

/// `retries: many` and `delay: soon` silently became 3 and 5; they fail the task, naming the
/// field and the value, as in Ansible.
#[test]
fn retries_and_delay_that_are_not_numbers_fail_the_task() {
    for (field, value) in [
        ("retries", "many"),
        ("delay", "soon"),
        ("retries", "{{ 'x' }}"),
    ] {
        let site = format!(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: 'true'\n      register: r\n      until: r is success\n      {field}: \"{value}\"\n"
        );
        let run = Test::new()
            .write("hosts.ini", LOCAL)
            .write("site.yml", &site)
            .args(["playbook", "-i", "hosts.ini", "site.yml"])
            .run()
            .snapshot()
            .code(2);
        let shown = if value.starts_with("{{") { "x" } else { value };
        assert!(
            run.stdout().contains(&format!(
                "the field `{field}` has an invalid value (`{shown}`)"
            )),
            "{}",
            run.stdout()
        );
    }
}

/// `'99999999999999999999999' | int` saturated to i64::MAX; Python's int is exact, and so
/// is kinit's up to 128 bits (past that, an error instead of a wrong number).
#[test]
fn int_of_a_huge_number_is_exact_not_saturated() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ '99999999999999999999999' | int }} {{ ('99999999999999999999999' | int) + 1 }}\"\n    - debug: msg=\"{{ ('9' * 50) | int }}\"\n";
    let run = Test::new()
        .write("hosts.ini", LOCAL)
        .write("site.yml", site)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .snapshot();
    let out = run.stdout();
    assert!(
        out.contains("ok: [localhost] => {\n    \"msg\": \"99999999999999999999999 100000000000000000000000\"\n}"),
        "{out}"
    );
    assert!(out.contains("does not fit a 128-bit integer"), "{out}");
}

/// With `-v` a managed host's terminal escape sequences (window title, clear screen) reached
/// the user's terminal; they are shown escaped.
#[test]
fn escape_sequences_from_a_host_do_not_reach_the_terminal() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: printf '\\033]0;owned\\007\\033[2Jdone'\n";
    let run = Test::new()
        .write("hosts.ini", LOCAL)
        .write("site.yml", site)
        .args(["playbook", "-i", "hosts.ini", "site.yml", "-v"])
        .succeeds()
        .partial_output("the -v result carries its timings");
    let out = run.stdout();
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    // From `-v` on the result is printed as JSON, which escapes them as ansible-playbook does.
    assert!(
        out.contains("\\u001b]0;owned\\u0007\\u001b[2Jdone"),
        "{out}"
    );
}

/// Every connect failure said `cannot connect ... after 3 attempt(s)` without why; the cause
/// follows now (here: a refused port and a name that does not resolve).
#[test]
fn connect_failures_name_their_cause() {
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = refused.local_addr().unwrap().port();
    drop(refused);
    let inv = format!(
        "[all]\nrefused ansible_host=127.0.0.1 ansible_port={port} ansible_connection=ssh\n\
         nodns ansible_host=kinit-no-such-host.invalid ansible_connection=ssh\n"
    );
    let run = Test::new()
        .write("hosts.ini", &inv)
        .write(
            "site.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n",
        )
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .partial_output("both hosts fail at their own pace (a refused port, a failed DNS lookup): their order varies")
        .code(4);
    let out = run.stdout();
    assert!(
        out.contains(&format!(
            "fatal: [refused]: UNREACHABLE! => cannot connect to `refused` (root@127.0.0.1:{port}) after 3 attempt(s): Connection refused"
        )),
        "{out}"
    );
    assert!(
        out.contains("fatal: [nodns]: UNREACHABLE! => cannot connect to `nodns`")
            && out.contains("failed to lookup address information"),
        "{out}"
    );
}

/// A server that accepts the connection and never speaks SSH took three connect timeouts
/// (30 s) and said only "timed out"; one timeout is waited, and the message says what was
/// seen and which variable sets the wait.
#[test]
fn a_silent_server_is_given_up_after_one_timeout_and_described() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for c in silent.incoming().take(3) {
            conns.push(c);
        }
        std::thread::sleep(std::time::Duration::from_secs(5));
    });
    let inv = format!(
        "[all]\nsilent ansible_host=127.0.0.1 ansible_port={port} ansible_connection=ssh ansible_timeout=2\n"
    );
    let run = Test::new()
        .write("hosts.ini", &inv)
        .write(
            "site.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n",
        )
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .run()
        .redact(format!("127.0.0.1:{port}"), "127.0.0.1:[PORT]")
        .snapshot()
        .code(4);
    let out = run.stdout();
    assert!(
        out.contains("after 1 attempt(s): the connection was accepted but no SSH handshake completed within 2s")
            && out.contains("`ansible_timeout` sets the wait"),
        "{out}"
    );
    drop(held);
}

/// A password with a backslash, a quote, an accent or a tab leaked through `to_json` (once
/// to three times, into stdout and `--log-json`, which escape it once more) and through
/// base64; every spelling is masked.
#[test]
fn secrets_escaped_twice_or_encoded_do_not_leak() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    \
        - command: echo {{ ansible_password | to_json }}\n      register: o\n    \
        - debug: var=o.stdout\n    \
        - debug: msg=\"{{ ansible_password | to_json | to_json }}\"\n    \
        - debug: msg=\"{{ ansible_password | to_json | to_json | to_json }}\"\n    \
        - debug: msg=\"{{ ansible_password | b64encode }}\"\n    \
        - debug: msg=\"x{{ ansible_password | b64encode }}\"\n";
    for (inventory_value, password) in [
        ("'Pw8\\back$slash'", "Pw8\\back$slash"),
        ("'Pw\"quote'", "Pw\"quote"),
        ("'Pwé-accent'", "Pwé-accent"),
    ] {
        let inv = format!(
            "[all]\nlocalhost ansible_connection=local ansible_password={inventory_value}\n"
        );
        let run = Test::new()
            .write("hosts.ini", &inv)
            .write("site.yml", site)
            .args([
                "playbook",
                "-i",
                "hosts.ini",
                "site.yml",
                "--log-json",
                "log.jsonl",
            ])
            .succeeds()
            .snapshot();
        let log = std::fs::read_to_string(run.dir.join("log.jsonl")).unwrap();
        // The password JSON-escaped once to four times: `to_json` three times, then the
        // `debug` message printed as JSON (a fourth in the JSON log).
        let mut escaped = vec![password.to_string()];
        for _ in 0..4 {
            let s = serde_json::to_string(escaped.last().unwrap()).unwrap();
            escaped.push(s[1..s.len() - 1].to_string());
        }
        let b64 = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(password)
        };
        for text in [run.stdout(), log] {
            for form in escaped
                .iter()
                .cloned()
                .chain([b64[..b64.len() - 4].to_string()])
            {
                assert!(
                    !text.contains(&form),
                    "{password:?} as {form:?} in:\n{text}"
                );
            }
        }
    }
}

/// A `no_log` loop registered the name of its loop variable (`item`) as a secret, so the word
/// was masked in every later line: `(********=None)`, and `(********=1)` for the next loop.
/// The censored item is labelled and shown as ansible-playbook 2.19.4 shows it.
#[test]
fn a_no_log_loop_masks_its_values_not_the_word_item() {
    Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg={{ item }}\n      loop: [hidden-value]\n      no_log: true\n\
             \x20   - debug: msg=shown-{{ item }}\n      loop: [1]\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .stdout_is(
            r#"
PLAY [localhost]

TASK [debug]
ok: [localhost] => (item=(censored due to no_log))

TASK [debug]
ok: [localhost] => (item=1) => {
    "msg": "shown-1"
}

PLAY RECAP
localhost            : ok=2    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0

TASK TIMING
debug (site.yml:4)     0.00s
debug (site.yml:7)     0.00s
"#,
        )
        .stderr_is("");
}

/// A `no_log` task hides its own data from later output, but not the words of a module's
/// vocabulary it used (`state: directory`, `mode`): these masked every later `directory`.
#[test]
fn a_no_log_task_masks_its_data_not_its_modules_words() {
    let dir = "made";
    Test::new().write(
        "site.yml",
        &format!(
            "- hosts: localhost\n  gather_facts: false\n  vars:\n    token: s3cret-token\n  tasks:\n\
             \x20   - file: {{path: {dir}, state: directory, mode: u+rwx}}\n      no_log: true\n\
             \x20   - copy: {{content: \"{{{{ token }}}}\", dest: {dir}/t}}\n      no_log: true\n\
             \x20   - name: the directory is there, in mode u+rwx\n\
             \x20     debug: msg=\"state directory, token s3cret-token\"\n",
        ),
    )
    .args(["playbook", "site.yml"])
    .succeeds()
    .stdout_is(
        r#"
PLAY [localhost]

TASK [file]
changed: [localhost]

TASK [copy]
changed: [localhost]

TASK [the directory is there, in mode u+rwx]
ok: [localhost] => {
    "msg": "state directory, token ********"
}

PLAY RECAP
localhost            : ok=3    changed=2    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0

TASK TIMING
...
"#,
    )
    .stderr_is("");
}

/// `vars_files` belong to their play: a later play (or playbook) in the same run does not see
/// an earlier play's, so its own `vars` are what its tasks read, as in ansible-playbook.
#[test]
fn vars_files_do_not_leak_into_the_next_play() {
    Test::new()
        .write("v.yml", "a: from-vars-file\n")
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  vars_files: [v.yml]\n  tasks:\n\
             \x20   - debug: var=a\n\
             - hosts: localhost\n  gather_facts: false\n  vars:\n    a: from-vars\n  tasks:\n\
             \x20   - debug: msg=\"{{ a }}\"\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .stdout_is(
            r#"
PLAY [localhost]

TASK [debug]
ok: [localhost] => {
    "a": "from-vars-file"
}

PLAY [localhost]

TASK [debug]
ok: [localhost] => {
    "msg": "from-vars"
}
...
"#,
        )
        .stderr_is("");
}
