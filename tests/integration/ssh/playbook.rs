//! `kinit playbook` end to end over SSH: the real binary, an inventory with
//! `ansible_host`/`ansible_port`/`ansible_user`/`ansible_ssh_private_key_file`, real sshd
//! hosts (one behind a jump host), and one connection per host for the whole run.

use crate::fixtures::netns::is_root;
use crate::fixtures::sshd::SshLab;
use crate::support::{Ran, Test};

#[test]
fn playbook_over_ssh_with_a_jump_host_one_connection_per_host() {
    let lab = SshLab::jump_topology(1);
    let hv = &lab.hosts[0];
    let g = &lab.guests[0];
    let key = lab.client_key.display().to_string();
    let inventory = format!(
        "[hypervisors]\nhv ansible_host={} ansible_port={}\n\
         [guests]\nguest ansible_host={} ansible_port={} \
         ansible_ssh_common_args='-o ProxyJump={}@{}:{}'\n\
         [all:vars]\nansible_user={}\nansible_ssh_private_key_file={key}\n",
        hv.address, hv.port, g.address, g.port, lab.user, hv.address, hv.port, lab.user,
    );
    let become_task = if is_root() {
        "    - name: become root\n      command: id -un\n      become: true\n      register: who\n\
         \x20   - assert:\n        that: who.stdout == 'root'\n"
    } else {
        ""
    };
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n\
         \x20   - name: trivial\n      command: 'true'\n      loop: [1, 2, 3, 4, 5]\n\
         \x20   - name: write a file\n      copy:\n        content: \"hello {{{{ inventory_hostname }}}}\\n\"\n        dest: /tmp/kinit-e2e-{{{{ inventory_hostname }}}}-{}\n\
         \x20   - name: read it back\n      command: cat /tmp/kinit-e2e-{{{{ inventory_hostname }}}}-{}\n      register: back\n\
         \x20   - assert:\n        that: back.stdout == 'hello ' ~ inventory_hostname\n{become_task}",
        std::process::id(),
        std::process::id(),
    );
    let test = Test::new()
        .write("hosts.ini", &inventory)
        .write("site.yml", &playbook)
        .write(
            ".home/.ssh/known_hosts",
            &std::fs::read_to_string(&lab.known_hosts).unwrap(),
        );
    let home = test.path().join(".home").display().to_string();
    let ran = test
        .env("HOME", &home)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .partial_output("hv and guest report in parallel: the order of their lines varies");
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        ran.stdout(),
        ran.stderr()
    );
    let out = ran.stdout();
    assert!(out.contains("hv") && out.contains("guest"), "{out}");
    assert!(!out.contains("unreachable=1"), "{out}");
    let want_ok = if is_root() { "ok=6" } else { "ok=4" };
    assert_eq!(out.matches(want_ok).count(), 2, "{out}");
    assert_eq!(
        hv.accepted_logins(),
        2,
        "hv: its own connection and the guest's jump"
    );
    assert_eq!(g.accepted_logins(), 1, "{}", g.log());
}

fn inventory(lab: &SshLab) -> String {
    let mut inv = String::from("[all]\n");
    for h in &lab.hosts {
        inv.push_str(&format!(
            "{} ansible_host={} ansible_port={}\n",
            h.name, h.address, h.port
        ));
    }
    inv.push_str(&format!(
        "[all:vars]\nansible_user={}\nansible_ssh_private_key_file={}\n",
        lab.user,
        lab.client_key.display()
    ));
    inv
}

/// `site.yml` (`playbook`) over the lab's hosts (`hosts.ini`), ready to `run`.
fn site(lab: &SshLab, playbook: &str) -> Test {
    with_known_hosts(Test::new(), lab)
        .write("hosts.ini", &inventory(lab))
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
}

/// `ran`, which must have exited 0.
fn succeeded(ran: Ran) -> Ran {
    assert_eq!(
        ran.output.status.code(),
        Some(0),
        "{}\n{}",
        ran.stdout(),
        ran.stderr()
    );
    ran
}

fn with_known_hosts(test: Test, lab: &SshLab) -> Test {
    let test = test.write(
        ".home/.ssh/known_hosts",
        &std::fs::read_to_string(&lab.known_hosts).unwrap(),
    );
    let home = test.path().join(".home").display().to_string();
    test.env("HOME", &home)
}

/// 20 hosts × 50 tasks through the real binary: every host sees one SSH connection.
#[test]
fn playbook_twenty_hosts_fifty_tasks_one_connection_per_host() {
    let lab = SshLab::new(20);
    let mut playbook = String::from("- hosts: all\n  gather_facts: false\n  tasks:\n");
    for i in 0..50 {
        playbook.push_str(&format!("    - name: task {i}\n      command: 'true'\n"));
    }
    let ran = succeeded(
        site(&lab, &playbook)
            .run()
            .partial_output("twenty hosts report in parallel: the order of their lines varies"),
    );
    let out = ran.stdout();
    assert_eq!(out.matches("ok=50 ").count(), 20, "{out}");
    for h in &lab.hosts {
        assert_eq!(h.connections(), 1, "{}: {}", h.name, h.log());
        assert_eq!(h.accepted_logins(), 1, "{}", h.name);
    }
}

/// sshd killed while a playbook runs: that host ends unreachable in the recap, the others
/// finish every task.
#[test]
fn playbook_host_killed_mid_run_is_unreachable_in_recap() {
    let mut lab = SshLab::new(3);
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
                    \x20   - command: 'true'\n\
                    \x20   - command: \"sleep {{ 8 if inventory_hostname == 'host1' else 2 }}\"\n\
                    \x20   - command: 'true'\n";
    let test = with_known_hosts(Test::new(), &lab)
        .write("hosts.ini", &inventory(&lab))
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"]);
    let runner = std::thread::spawn(move || {
        test.run().partial_output(
            "three hosts report in parallel and one is killed at a moment the machine's load picks",
        )
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while lab.hosts[1].accepted_logins() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "host1 never logged in"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Inside the second task: host1's sleep is long, so a loaded machine cannot let it end
    // before the kill.
    std::thread::sleep(std::time::Duration::from_millis(700));
    lab.hosts[1].kill();
    let ran = runner.join().unwrap();
    let out = ran.stdout();
    let recap = |host: &str| {
        out.lines()
            .rev()
            .find(|l| l.starts_with(host) && l.contains("unreachable="))
            .unwrap_or_else(|| panic!("no recap line for {host}: {out}"))
            .to_string()
    };
    assert!(recap("host1").contains("unreachable=1"), "{out}");
    for h in ["host0", "host2"] {
        let line = recap(h);
        assert!(
            line.contains("ok=3") && line.contains("unreachable=0"),
            "{out}"
        );
    }
    assert_ne!(ran.output.status.code(), Some(0), "{out}");
}

/// Fact gathering over SSH: `ansible_distribution` and friends are defined on the host.
#[test]
fn gather_facts_defines_ansible_distribution_over_ssh() {
    let lab = SshLab::new(1);
    let playbook = "- hosts: all\n  tasks:\n\
        \x20   - assert:\n        that:\n          - ansible_distribution is string\n\
        \x20         - ansible_distribution | length > 0\n\
        \x20         - ansible_os_family | length > 0\n\
        \x20         - ansible_hostname == ansible_facts.hostname\n\
        \x20         - ansible_facts.distribution == ansible_distribution\n";
    let ran = succeeded(site(&lab, playbook).run().snapshot());
    assert!(ran.stdout().contains("Gathering Facts"), "{}", ran.stdout());
}

/// One sshd host reached as the password user (no key, host keys not checked), and a play
/// that becomes root and says so. `None` (after `cannot_run`) unless the tests run as root:
/// the password user is created only then.
fn password_user_lab() -> Option<(SshLab, Test)> {
    use crate::fixtures::sshd::PW_USER;
    if !is_root() {
        crate::support::cannot_run("needs root: the password user is created only then");
        return None;
    }
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let test = Test::new()
        .write(
            "hosts.ini",
            &format!(
                "h ansible_host={} ansible_port={} ansible_user={PW_USER} \
                 ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n",
                h.address, h.port
            ),
        )
        .write(
            "site.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n\
             \x20   - command: id -un\n      become: true\n      register: who\n\
             \x20   - debug: msg=\"became {{ who.stdout }}\"\n",
        );
    Some((lab, test))
}

/// sshd accepted the password user by password (not by a key).
fn assert_password_login(h: &crate::fixtures::sshd::SshdHost) {
    let log = h.log();
    assert!(
        log.contains(&format!(
            "Accepted password for {}",
            crate::fixtures::sshd::PW_USER
        )),
        "{log}"
    );
}

/// `-k` and `-K` as ansible-playbook asks them (`CLI.ask_passwords`): `SSH password: `, then
/// `BECOME password[defaults to SSH password]: ` where an empty answer reuses the SSH
/// password. The typed password logs in (sshd says `Accepted password`), sudo takes it, and it
/// shows nowhere. (The password user exists only when the tests run as root.)
#[test]
fn ask_pass_and_ask_become_pass_log_in_and_become_with_the_typed_password() {
    use crate::fixtures::sshd::PW_USER_PASSWORD;
    let Some((lab, test)) = password_user_lab() else {
        return;
    };
    let h = &lab.hosts[0];
    let Some((prompted, status, out)) = crate::support::on_terminal(
        test.path(),
        "playbook -i hosts.ini site.yml -k -K",
        &[
            ("SSH password: ", PW_USER_PASSWORD),
            ("BECOME password[defaults to SSH password]: ", ""),
        ],
    ) else {
        return;
    };
    assert!(prompted, "a question never came:\n{out}");
    assert!(status.success(), "{out}");
    // A terminal ends its lines with CR LF.
    assert!(
        out.replace("\r\n", "\n")
            .contains("ok: [h] => {\n    \"msg\": \"became root\"\n}"),
        "{out}"
    );
    assert!(
        !out.contains(PW_USER_PASSWORD),
        "the password showed:\n{out}"
    );
    assert_password_login(h);
}

/// Without a terminal, `-k` fails at once, saying what it could not ask.
#[test]
fn ask_pass_without_a_terminal_fails_at_once() {
    Test::new()
        .write("site.yml", "- hosts: localhost\n  tasks: []\n")
        .args(["playbook", "site.yml", "-k"])
        .fails_with(1)
        .stdout_is("")
        .stderr_is(
            "error: cannot ask for the SSH password (-k); give it in the inventory instead\n  \
             caused by: no terminal to ask on\n",
        );
}

/// `--connection-password-file` (a plain file, trailing newline dropped) and
/// `--become-password-file` (an executable, run for its output), as ansible-playbook reads
/// them: the login is by password and sudo takes the script's answer.
#[test]
fn password_files_log_in_and_become() {
    use crate::fixtures::sshd::PW_USER_PASSWORD;
    let Some((lab, test)) = password_user_lab() else {
        return;
    };
    let h = &lab.hosts[0];
    let test = test
        .write("conn.pw", &format!("{PW_USER_PASSWORD}\n"))
        .write(
            "become.sh",
            &format!("#!/bin/sh\necho '{PW_USER_PASSWORD}'\n"),
        );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        test.path().join("become.sh"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let ran = test
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .args(["--connection-password-file", "conn.pw"])
        .args(["--become-pass-file", "become.sh"])
        .succeeds()
        .stdout_is(
            "\nPLAY [all]\n\nTASK [command]\nchanged: [h]\n\nTASK [debug]\nok: [h] => {\n    \"msg\": \"became root\"\n}\n...\n",
        )
        .stderr_is("");
    assert!(!ran.stdout().contains(PW_USER_PASSWORD));
    assert_password_login(h);
}

/// A password file that gives nothing is refused with ansible-playbook's words (the path made
/// absolute, as its `unfrack_path` makes it), and `-k` together with a connection password
/// file is a usage error.
#[test]
fn password_file_errors_say_what_is_wrong() {
    use std::os::unix::fs::PermissionsExt;
    let run = |args: &[&str]| {
        let t = Test::new()
            .write("site.yml", "- hosts: localhost\n  tasks: []\n")
            .write("empty.pw", "\n")
            .write("fails.sh", "#!/bin/sh\necho broken >&2\nexit 3\n");
        std::fs::set_permissions(
            t.path().join("fails.sh"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        t.args(["playbook", "site.yml"]).args(args.iter().copied())
    };
    run(&["--connection-password-file", "nope.pw"])
        .fails_with(1)
        .stdout_is("")
        .stderr_is("error: The password file [DIR]/nope.pw was not found\n");
    run(&["--become-password-file", "empty.pw"])
        .fails_with(1)
        .stdout_is("")
        .stderr_is("error: Empty password was provided from file ([DIR]/empty.pw)\n");
    run(&["--conn-pass-file", "fails.sh"])
        .fails_with(1)
        .stdout_is("")
        .stderr_is("error: The password script [DIR]/fails.sh returned an error (rc=3): broken\n");
    run(&["-k", "--connection-password-file", "x"])
        .fails_with(2)
        .stdout_is("")
        .stderr_is(
            "error: the argument '--ask-pass' cannot be used with '--connection-password-file <FILE>'\n...\n",
        );
}

/// `synchronize` delegated to localhost for an SSH host pushes from the controller to that
/// host (upstream's most common use): rsync's ssh is built from the inventory host's own
/// connection variables, and a second run is ok.
#[test]
fn synchronize_delegated_to_localhost_pushes_to_the_inventory_host() {
    let rsync = std::process::Command::new("sh")
        .args(["-c", "command -v rsync"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !rsync {
        crate::support::cannot_run("`rsync` is not installed (ci/deps.sh installs it)");
        return;
    }
    let lab = SshLab::new(1);
    let dest = format!("/tmp/kinit-sync-{}", std::process::id());
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n\
         \x20   - synchronize: {{src: \"{{{{ playbook_dir }}}}/files/\", dest: {dest}/}}\n      delegate_to: localhost\n      register: pushed\n\
         \x20   - synchronize: {{src: \"{{{{ playbook_dir }}}}/files/\", dest: {dest}/}}\n      delegate_to: localhost\n      register: again\n\
         \x20   - command: cat {dest}/a.txt\n      register: back\n\
         \x20   - file: {{path: {dest}, state: absent}}\n\
         \x20   - assert:\n        that:\n\
         \x20         - pushed.changed and not again.changed\n\
         \x20         - back.stdout == 'pushed'\n\
         \x20         - \"(ansible_user ~ '@' ~ ansible_host ~ ':{dest}/') in pushed.cmd\"\n"
    );
    let test = with_known_hosts(Test::new(), &lab)
        .write("hosts.ini", &inventory(&lab))
        .write("files/a.txt", "pushed")
        .write("site.yml", &playbook);
    let ran = succeeded(
        test.args(["playbook", "site.yml", "-i", "hosts.ini"])
            .run()
            .partial_output("the recap is checked; task lines carry timings and temp paths"),
    );
    assert!(ran.stdout().contains("ok=5 "), "{}", ran.stdout());
}

/// `async` with `poll: 0` over SSH: the job runs on in the background after its task has
/// returned, while the same connection serves the next tasks; `async_status` sees it running,
/// then its result; `mode: cleanup` removes its files. Still one login.
#[test]
fn fire_and_forget_job_runs_on_after_its_task_over_ssh() {
    let lab = SshLab::new(1);
    let playbook = "- hosts: all\n  gather_facts: false\n  vars:\n    ansible_async_dir: /tmp/kinit-async-{{ inventory_hostname }}-PID\n  tasks:\n\
                    \x20   - shell: sleep 3; echo finished; echo late >&2\n      async: 30\n      poll: 0\n      register: job\n\
                    \x20   - async_status:\n        jid: '{{ job.ansible_job_id }}'\n      register: early\n\
                    \x20   - assert:\n        that: [job.started, not job.finished, job is changed, early.started, not early.finished]\n\
                    \x20   - async_status:\n        jid: '{{ job.ansible_job_id }}'\n      register: late\n      until: late.finished\n      retries: 30\n      delay: 1\n\
                    \x20   - assert:\n        that:\n          - late.rc == 0\n          - late.stdout == 'finished'\n          - late.stderr == 'late'\n          - late.results_file == ansible_async_dir ~ '/' ~ job.ansible_job_id\n\
                    \x20   - async_status:\n        jid: '{{ job.ansible_job_id }}'\n        mode: cleanup\n\
                    \x20   - stat:\n        path: '{{ job.results_file }}'\n      register: gone\n\
                    \x20   - assert:\n        that: not gone.stat.exists\n\
                    \x20   - file:\n        path: '{{ ansible_async_dir }}'\n        state: absent\n"
        .replace("PID", &std::process::id().to_string());
    let ran = succeeded(
        site(&lab, &playbook)
            .run()
            .partial_output("how many times async_status polls depends on the machine's speed"),
    );
    assert_eq!(ran.stderr(), "");
    assert!(ran.stdout().contains("ok=9 "), "{}", ran.stdout());
    assert_eq!(lab.hosts[0].accepted_logins(), 1, "{}", lab.hosts[0].log());
}

/// A job started with `become` lives in the become user's async folder: `async_status` of the
/// same play reads it as that user (ansible-core's async_status runs with the task's become).
#[test]
fn fire_and_forget_job_with_become_is_read_as_the_become_user() {
    if !is_root() {
        crate::support::cannot_run("become in the SSH lab needs the tests to run as root");
        return;
    }
    let lab = SshLab::new(1);
    let playbook = "- hosts: all\n  gather_facts: false\n  become: true\n  tasks:\n\
                    \x20   - command: id -un\n      async: 30\n      poll: 0\n      register: job\n\
                    \x20   - async_status:\n        jid: '{{ job.ansible_job_id }}'\n      register: done\n      until: done.finished\n      retries: 30\n      delay: 1\n\
                    \x20   - assert:\n        that: [done.rc == 0, done.stdout == 'root']\n\
                    \x20   - async_status:\n        jid: '{{ job.ansible_job_id }}'\n        mode: cleanup\n";
    let ran = succeeded(
        site(&lab, playbook)
            .run()
            .partial_output("how many times async_status polls depends on the machine's speed"),
    );
    assert_eq!(ran.stderr(), "");
    assert!(ran.stdout().contains("ok=4 "), "{}", ran.stdout());
}

/// A custom Python module (`library/`) runs over SSH as the login user and, with become, as
/// the become user: the runner and the module go on the host Python's stdin after sudo's
/// password line, in the one session.
#[test]
fn custom_python_module_runs_over_ssh_as_the_login_and_the_become_user() {
    if !is_root() {
        crate::support::cannot_run("become in the SSH lab needs the tests to run as root");
        return;
    }
    let lab = SshLab::new(1);
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n\
         \x20   - who77: {{}}\n      register: plain\n\
         \x20   - who77: {{}}\n      become: true\n      become_user: nobody\n      register: other\n\
         \x20   - assert:\n        that: [plain.user == '{}', other.user == 'nobody', not other.changed]\n",
        lab.user
    );
    let ran = succeeded(
        site(&lab, &playbook)
            .write(
                "library/who77.py",
                "import getpass\nfrom ansible.module_utils.basic import AnsibleModule\n\
                 m = AnsibleModule({})\nm.exit_json(user=getpass.getuser())\n",
            )
            .run()
            .partial_output("the recap and assertion are what this test checks"),
    );
    assert_eq!(ran.stderr(), "");
    assert!(ran.stdout().contains("ok=3 "), "{}", ran.stdout());
}

/// `become_method: su` over SSH: the key user becomes the password user with that user's
/// password (su reads it from its stdin, as util-linux su does without a terminal), the
/// command still gets the task's own stdin, su's `Password:` prompt shows nowhere, and a
/// wrong password fails the task with su's words. A method kinit lacks fails only the task
/// that becomes with it. (The users exist only when the tests run as root.)
#[test]
fn become_method_su_becomes_with_a_password_and_keeps_stdin() {
    use crate::fixtures::sshd::{PW_USER, PW_USER_PASSWORD};
    if !is_root() {
        crate::support::cannot_run("needs root: the password user is created only then");
        return;
    }
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  become_method: su\n  become_user: {PW_USER}\n\
         \x20 tasks:\n\
         \x20   - shell: id -un; cat; echo to-stderr >&2\n      args:\n        stdin: fed-in\n\
         \x20     become: true\n      register: who\n\
         \x20   - assert:\n        that:\n          - who.stdout_lines == ['{PW_USER}', 'fed-in']\n\
         \x20         - who.stderr == 'to-stderr'\n\
         \x20   - command: id -un\n      become: true\n      vars:\n        ansible_become_password: wrong\n\
         \x20     register: refused\n      ignore_errors: true\n\
         \x20   - command: id -un\n      become: true\n      become_method: doas\n\
         \x20     register: lacking\n      ignore_errors: true\n\
         \x20   - assert:\n        that:\n          - \"refused.stderr == 'su: Authentication failure'\"\n\
         \x20         - lacking.msg is search('become_method `doas` is not available')\n"
    );
    let ran = Test::new()
        .write(
            "hosts.ini",
            &format!(
                "h ansible_host={} ansible_port={} ansible_user={} \
                 ansible_ssh_private_key_file={} ansible_become_password={PW_USER_PASSWORD}\n",
                h.address,
                h.port,
                lab.user,
                lab.client_key.display()
            ),
        )
        .write("site.yml", &playbook)
        .write(
            ".home/.ssh/known_hosts",
            &std::fs::read_to_string(&lab.known_hosts).unwrap(),
        );
    let home = ran.path().join(".home").display().to_string();
    let ran = ran
        .env("HOME", &home)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .partial_output("checked by the play's own asserts and the recap");
    let out = ran.stdout();
    assert_eq!(ran.output.status.code(), Some(0), "{out}\n{}", ran.stderr());
    assert!(
        out.contains(
            "ok=5    changed=2    unreachable=0    failed=0    skipped=0    rescued=0    ignored=2"
        ),
        "{out}"
    );
    assert!(
        !out.contains("Password:") && !out.contains(PW_USER_PASSWORD),
        "{out}"
    );
}
