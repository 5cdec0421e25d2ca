//! Ansible content as people write it, run unchanged: modules kinit lacks in branches that do
//! not run, the `remote_user`/`port`/`connection` keywords, `import_playbook` by its full
//! name, `gather_subset`, and load errors that suggest only close names. (The behaviours that
//! ansible-playbook can be compared with directly are in `tests/playbooks/diff/`, run by
//! `playbook_diff`.)

use crate::fixtures::sshd::SshLab;
use crate::support::Test;

/// A module Ansible knows and kinit does not implement, and that is not installed where
/// kinit finds modules to run (a collection, the controller's ansible-core), loads with a
/// warning, is skipped where its `when` is false, and fails (saying why) on a host that
/// reaches it. A name nobody knows is still refused at load time, naming file and line.
/// The controller's `python3` here is the system one, which has no ansible-core and no
/// collections (with them, these modules run: differential playbook 82).
#[test]
fn ansible_modules_kinit_lacks_fail_only_where_they_run() {
    let site = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - name: only on RedHat\n      community.general.npm:\n        name: left-pad\n      when: false\n\
                \x20   - name: reached\n      iptables:\n        chain: INPUT\n";
    let syntax = Test::new()
        .write("site.yml", site)
        .env("PATH", "/usr/bin:/bin")
        .args(["playbook", "--syntax-check", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        syntax.stderr().contains(
            "[WARNING]: site.yml:8: module `iptables` is not implemented by kinit nor found in \
             the controller Python's ansible-core; the task fails on any host that reaches it"
        ),
        "{}",
        syntax.stderr()
    );
    let ran = Test::new()
        .write("site.yml", site)
        .env("PATH", "/usr/bin:/bin")
        .args(["playbook", "site.yml"])
        .fails_with(2)
        .snapshot();
    let out = ran.stdout();
    assert!(
        out.contains("TASK [only on RedHat]\nskipping: [localhost]"),
        "{out}"
    );
    assert!(
        out.contains("module `iptables` is not implemented by kinit, so this task cannot run here"),
        "{out}"
    );

    let typo = Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  tasks:\n    - rpm_kee:\n        key: x\n",
        )
        .args(["playbook", "--syntax-check", "site.yml"])
        .fails_with(4)
        .snapshot();
    assert!(
        typo.stderr().contains("site.yml:3") && typo.stderr().contains("rpm_kee"),
        "{}",
        typo.stderr()
    );
}

/// "Did you mean" offers only close names: a short unknown word gets no far-fetched match.
#[test]
fn suggestions_are_close_names_only() {
    let ran = Test::new()
        .write("site.yml", "- hosts: localhost\n  tasks:\n    - npn: {}\n")
        .args(["playbook", "--syntax-check", "site.yml"])
        .fails_with(4)
        .snapshot();
    assert!(!ran.stderr().contains("did you mean"), "{}", ran.stderr());
    let ran = Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  tasks:\n    - shel: echo hi\n",
        )
        .args(["playbook", "--syntax-check", "site.yml"])
        .fails_with(4)
        .snapshot();
    assert!(
        ran.stderr().contains("did you mean `shell`"),
        "{}",
        ran.stderr()
    );
}

/// `remote_user` and `port` on a play reach a host whose inventory entry names neither (the
/// lab's sshd listens on a high port, for a user other than root); `connection: local` on a
/// task runs it on this machine although the host's address answers nothing.
#[test]
fn remote_user_port_and_connection_keywords() {
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let inventory = format!(
        "lab ansible_host={} ansible_ssh_private_key_file={}\nghost ansible_host=192.0.2.1\n",
        h.address,
        lab.client_key.display()
    );
    let site = format!(
        "- hosts: lab\n  gather_facts: false\n  remote_user: {user}\n  port: {port}\n  tasks:\n\
         \x20   - command: id -un\n      register: who\n\
         \x20   - assert:\n        that: who.stdout == '{user}'\n\
         - hosts: ghost\n  gather_facts: false\n  tasks:\n\
         \x20   - command: echo local\n      connection: local\n      register: here\n\
         \x20   - assert:\n        that: here.stdout == 'local'\n",
        user = lab.user,
        port = h.port
    );
    let test = Test::new()
        .write("hosts.ini", &inventory)
        .write("site.yml", &site)
        .home_knowing(&lab.known_hosts);
    test.args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds()
        .snapshot();
    assert_eq!(h.accepted_logins(), 1, "{}", h.log());
}

/// `ansible.builtin.import_playbook` imports like `import_playbook`; `gather_subset` (and
/// the other fact-gathering play keywords) load.
#[test]
fn import_playbook_by_full_name_and_gather_subset() {
    Test::new()
        .write(
            "site.yml",
            "- ansible.builtin.import_playbook: inner.yml\n",
        )
        .write(
            "inner.yml",
            "- hosts: localhost\n  gather_facts: true\n  gather_subset: [min]\n  gather_timeout: 10\n  tasks:\n    - debug: msg=inner-ran\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds().snapshot()
        .stdout_has("inner-ran");
}

/// ansible-playbook's connection flags: `-u` and `--private-key` reach a host whose inventory
/// names neither; `-c local` runs a host whose address answers nothing on this machine; `-l`
/// given twice keeps the last pattern; `--flush-cache` is accepted.
#[test]
fn connection_flags_as_in_ansible_playbook() {
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let test = Test::new()
        .write(
            "hosts.ini",
            &format!(
                "lab ansible_host={} ansible_port={}\nghost ansible_host=192.0.2.1\n",
                h.address, h.port
            ),
        )
        .write(
            "site.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: id -un\n      register: who\n    - debug: msg=\"user={{ who.stdout }}\"\n",
        )
        .home_knowing(&lab.known_hosts);
    let key = lab.client_key.display().to_string();
    let ran = test
        .env("SSH_AUTH_SOCK", "")
        .args(["playbook", "-i", "hosts.ini", "site.yml", "-u", &lab.user])
        .args([
            "--private-key",
            &key,
            "-l",
            "ghost",
            "-l",
            "lab",
            "--flush-cache",
        ])
        .succeeds()
        .snapshot();
    let out = ran.stdout();
    assert!(out.contains(&format!("user={}", lab.user)), "{out}");
    assert!(!out.contains("ghost"), "-l lab replaced -l ghost:\n{out}");

    Test::new()
        .write("hosts.ini", "ghost ansible_host=192.0.2.1\n")
        .write(
            "site.yml",
            "- hosts: ghost\n  gather_facts: false\n  tasks:\n    - command: echo here\n",
        )
        .args([
            "playbook",
            "-i",
            "hosts.ini",
            "site.yml",
            "-c",
            "local",
            "-T",
            "5",
        ])
        .succeeds()
        .snapshot();
}

/// `--list-tags` prints each play's task tags as ansible-playbook does.
#[test]
fn list_tags_like_ansible_playbook() {
    let ran = Test::new()
        .write(
            "t.yml",
            "- hosts: localhost\n  gather_facts: false\n  tags: [p]\n  tasks:\n    - debug: msg=a\n      tags: [x, always]\n    - debug: msg=b\n",
        )
        .args(["playbook", "--list-tags", "t.yml"])
        .succeeds().snapshot();
    assert_eq!(
        ran.stdout(),
        "\nplaybook: t.yml\n\n  play #1 (localhost): localhost\tTAGS: [p]\n      TASK TAGS: [always, p, x]\n"
    );
}

/// The inventory habit `ansible_ssh_common_args='-o StrictHostKeyChecking=no -o
/// UserKnownHostsFile=/dev/null'` connects to a host nobody has recorded, as OpenSSH would;
/// `-o User=`/`-o Port=` fill in what no variable sets; an option kinit's client has no use
/// for is named once in a warning. Without those options the same host is refused as unknown.
#[test]
fn ssh_common_args_are_honoured() {
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let key = lab.client_key.display().to_string();
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: 'true'\n    - command: 'true'\n";
    let args = format!(
        "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o User={} -o Port={} -o ControlMaster=auto",
        lab.user, h.port
    );
    let test = Test::new()
        .write(
            "hosts.ini",
            &format!(
                "lab ansible_host={} ansible_ssh_private_key_file={key} ansible_ssh_common_args='{args}'\n",
                h.address
            ),
        )
        .write("site.yml", site);
    let home = test.path().join(".home").display().to_string();
    let ran = test
        .env("HOME", &home)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds()
        .snapshot();
    let (out, err) = (ran.stdout(), ran.stderr());
    let warning = "kinit's SSH client ignores these options of ansible_ssh_args/ansible_ssh_common_args/ansible_ssh_extra_args: ControlMaster=auto";
    assert_eq!(
        out.matches(warning).count() + err.matches(warning).count(),
        1,
        "{out}\n{err}"
    );

    let strict = Test::new()
        .write(
            "hosts.ini",
            &format!(
                "lab ansible_host={} ansible_port={} ansible_user={} ansible_ssh_private_key_file={key}\n",
                h.address, h.port, lab.user
            ),
        )
        .write("site.yml", site);
    let home = strict.path().join(".home").display().to_string();
    strict
        .env("HOME", &home)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .fails_with(4)
        .redact(h.address.to_string(), "[ADDR]")
        .stdout_is(
            "
PLAY [all]

TASK [command]
fatal: [lab]: UNREACHABLE! => host key of `lab` rejected: `[ADDR]` is not a known host: it offered ssh-ed25519 SHA256:[..], which is in none of `[DIR]/.home/.ssh/known_hosts`; add it (ssh-keyscan) or use --host-key-checking accept-new

PLAY RECAP
lab                  : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0

TASK TIMING
command (site.yml:4)     0.00s
",
        )
        .stderr_is("");
}

/// A failure reads at a glance without `-v`: which assertion failed; a command's rc, cmd and
/// the end of its stderr (the last 10 lines, saying how many came before).
#[test]
fn failures_show_the_assertion_and_the_commands_rc_and_stderr() {
    let ran = Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
             \x20   - assert:\n        that: [1 == 1, 2 == 3]\n      ignore_errors: true\n\
             \x20   - shell: for i in $(seq 1 12); do echo line$i >&2; done; exit 3\n",
        )
        .args(["playbook", "site.yml"])
        .fails_with(2)
        .snapshot();
    let out = ran.stdout();
    assert!(
        out.contains("FAILED! => Assertion failed (assertion: 2 == 3)"),
        "{out}"
    );
    assert!(out.contains("\n    rc: 3\n    cmd: for i in"), "{out}");
    assert!(
        out.contains("    stderr| ... (2 earlier lines; -v shows all)\n    stderr| line3\n"),
        "{out}"
    );
    assert!(out.contains("    stderr| line12\n"), "{out}");
}

/// `ansible.cfg` in the working folder is found and used as Ansible uses it: its inventory
/// (relative to the file), `remote_user`, `private_key_file`, `host_key_checking = False`,
/// `gathering = explicit`; a setting kinit has no use for is named once; `-i` and
/// ANSIBLE_* variables win over the file.
#[test]
fn ansible_cfg_in_the_working_folder() {
    let lab = SshLab::new(1);
    let h = &lab.hosts[0];
    let cfg = format!(
        "[defaults]\ninventory = inv/hosts.ini\nremote_user = {}\nprivate_key_file = {}\n\
         host_key_checking = False\ngathering = explicit\nstdout_callback = yaml\n",
        lab.user,
        lab.client_key.display()
    );
    let test = Test::new()
        .write("ansible.cfg", &cfg)
        .write(
            "inv/hosts.ini",
            &format!("lab ansible_host={} ansible_port={}\n", h.address, h.port),
        )
        .write(
            "site.yml",
            "- hosts: all\n  tasks:\n    - command: id -un\n      register: who\n\
             \x20   - debug: msg=\"user={{ who.stdout }} facts={{ ansible_facts.hostname is defined }}\"\n",
        );
    // No known_hosts at all: `host_key_checking = False` is what lets the host in.
    let home = test.path().join(".home").display().to_string();
    let ran = test
        .env("HOME", &home)
        .env("SSH_AUTH_SOCK", "")
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    let (out, err) = (ran.stdout(), ran.stderr());
    assert!(
        out.contains(&format!("user={} facts=False", lab.user)),
        "gathering = explicit: no facts without gather_facts\n{out}"
    );
    assert!(
        err.contains("ansible.cfg: kinit does not use these settings: defaults.stdout_callback"),
        "{err}"
    );

    // ANSIBLE_GATHERING beats the file.
    let again = Test::new()
        .write("ansible.cfg", &cfg)
        .write(
            "inv/hosts.ini",
            &format!("lab ansible_host={} ansible_port={}\n", h.address, h.port),
        )
        .write(
            "site.yml",
            "- hosts: all\n  tasks:\n    - debug: msg=\"facts={{ ansible_facts.hostname is defined }}\"\n",
        );
    let home = again.path().join(".home").display().to_string();
    again
        .env("HOME", &home)
        .env("SSH_AUTH_SOCK", "")
        .env("ANSIBLE_GATHERING", "implicit")
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot()
        .stdout_has("facts=True");
}

/// A templated keyword whose value is no boolean fails the task, naming the keyword and value
/// in ansible-core's words; a literal that is no boolean (`diff: yes.`) fails the task the same
/// way rather than the whole load, and `ignore_errors`/`register` apply to it.
#[test]
fn a_templated_keyword_with_a_bad_value_fails_clearly() {
    let ran = Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  vars:\n    maybe: perhaps\n  tasks:\n\
             \x20   - command: 'true'\n      ignore_errors: \"{{ maybe }}\"\n",
        )
        .args(["playbook", "site.yml"])
        .fails_with(2)
        .snapshot();
    assert!(
        ran.stdout().contains(
            "Task failed: Error processing keyword 'ignore_errors': The value 'perhaps' could \
             not be converted to 'bool'."
        ),
        "{}",
        ran.stdout()
    );
    Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=x\n      diff: yes.\n      ignore_errors: true\n      register: r\n\
             \x20   - debug: msg=\"{{ r.failed }} {{ r.msg }}\"\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .partial_output("the registered failure is the point")
        .stdout_has(
            "ok: [localhost] => {\n    \"msg\": \"True Task failed: Error processing keyword \
             'diff': The value 'yes.' could not be converted to 'bool'.\"\n}",
        );
}

/// A custom Python module in a role's `library/` folder runs on the host by its Python (its
/// `AnsibleModule` from kinit's runner); a custom module in another language (a shell script
/// beside the playbook) runs by its `#!` interpreter with ansible-core's `key=value`
/// arguments file, which it sources; a PowerShell module loads like a module kinit lacks:
/// named in a warning, failing only where reached. Diff playbook 77 compares custom modules
/// with ansible-playbook.
#[test]
fn custom_modules_in_python_and_sh_run_and_powershell_loads_with_a_warning() {
    let ran = Test::new()
        .write(
            "roles/r/library/shout.py",
            "from ansible.module_utils.basic import AnsibleModule\n\
             m = AnsibleModule(dict(text=dict(type='str', required=True)))\n\
             m.exit_json(changed=True, msg=m.params['text'].upper())\n",
        )
        .write(
            "roles/r/tasks/main.yml",
            "- shout: {text: hi}\n  register: s\n- debug: var=s.msg\n",
        )
        .write(
            "library/kube",
            "#!/bin/sh\n. \"$1\"\necho \"{\\\"changed\\\": false, \\\"msg\\\": \\\"$name in check mode: $_ansible_check_mode\\\"}\"\n",
        )
        .write("library/win_thing.ps1", "#!powershell\n")
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  roles: [r]\n  tasks:\n\
             \x20   - kube:\n        name: a b\n      register: k\n    - debug: var=k.msg\n\
             \x20   - win_thing:\n        name: x\n      when: false\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        ran.stdout()
            .contains("\"k.msg\": \"a b in check mode: False\""),
        "{}",
        ran.stdout()
    );
    assert!(
        ran.stderr()
            .contains("module `win_thing` (a custom module, `")
            && ran
                .stderr()
                .contains("library/win_thing.ps1`) is not implemented by kinit"),
        "{}",
        ran.stderr()
    );
}

/// A role's `action_plugins/` Python plugin is an action kinit cannot run: the playbook loads
/// with a warning naming the file, and the task fails only on the host that reaches it.
#[test]
fn custom_action_plugins_load_with_a_warning_and_fail_where_reached() {
    let ran = Test::new()
        .write(
            "roles/r/action_plugins/shout.py",
            "# a custom Ansible action plugin\n",
        )
        .write(
            "roles/r/tasks/main.yml",
            "- shout:\n    msg: hi\n  ignore_errors: true\n- debug: msg=after\n",
        )
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  roles: [r]\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        ran.stderr()
            .contains("(a custom action plugin, `roles/r/action_plugins/shout.py`)"),
        "{}",
        ran.stderr()
    );
}

/// The `action:` form of a task naming a custom action plugin loads as the key form does: with
/// a warning, failing where reached (it was refused as an unknown module).
#[test]
fn an_action_plugin_named_by_action_loads_with_a_warning() {
    let ran = Test::new()
        .write(
            "action_plugins/shout.py",
            "# a custom Ansible action plugin\n",
        )
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
             \x20   - action: shout msg=hi\n      ignore_errors: true\n\
             \x20   - debug: msg=after\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        ran.stderr().contains(
            "site.yml:4: module `shout` (a custom action plugin, `action_plugins/shout.py`)"
        ),
        "{}",
        ran.stderr()
    );
}

/// A module's `deprecations` are shown as ansible-playbook shows them, on stderr: who removes
/// the feature and when (checked against ansible-core 2.19.4's output for the same module).
#[test]
fn module_deprecations_are_shown_in_ansible_words() {
    let ran = Test::new()
        .write(
            "library/olden.py",
            "from ansible.module_utils.basic import AnsibleModule\n\
             m = AnsibleModule(argument_spec={})\n\
             m.deprecate('old thing', version='2.0', collection_name='ns.col')\n\
             m.deprecate('dated thing', date='2030-01-01', collection_name='ns.col')\n\
             m.deprecate('bare thing')\n\
             m.exit_json(changed=False)\n",
        )
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - olden:\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    for line in [
        "[DEPRECATION WARNING]: old thing. This feature will be removed from collection \
         'ns.col' version 2.0.",
        "[DEPRECATION WARNING]: dated thing. This feature will be removed from collection \
         'ns.col' in a release after 2030-01-01.",
        "[DEPRECATION WARNING]: bare thing. This feature will be removed from module 'olden' \
         in collection 'ansible.legacy' in a future release.",
    ] {
        assert!(ran.stderr().contains(line), "{line}\n{}", ran.stderr());
    }
}

/// An action plugin that only re-exports a builtin action (`from ansible.plugins.action.debug
/// import ActionModule`) runs as that action; one with a class of its own still warns.
#[test]
fn an_action_plugin_that_re_exports_a_builtin_runs_as_it() {
    let ran = Test::new()
        .write(
            "action_plugins/say.py",
            "from __future__ import annotations\n\n\
             from ansible.plugins.action.debug import ActionModule\n\nassert ActionModule\n",
        )
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - say: {msg: through the alias}\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        ran.stdout()
            .contains("ok: [localhost] => {\n    \"msg\": \"through the alias\"\n}")
            && !ran.stderr().contains("not implemented"),
        "{}\n{}",
        ran.stdout(),
        ran.stderr()
    );
}

/// Variables named like a keyword or a template global are warned about as ansible-core 2.19
/// warns (`Found variable using reserved name 'q'.` and where), first on stderr; a variable
/// `q` hides the `q()` function, so the task using it fails.
#[test]
fn variables_with_reserved_names_are_warned_about_with_their_origin() {
    let ran = Test::new()
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ q('pipe', 'pwd') }}\"\n      vars:\n        q: hidden\n      ignore_errors: true\n    - set_fact: {lookup: 1}\n    - debug: {msg: fine}\n      vars: {web_port: 1}\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
    assert!(
        ran.stderr().starts_with(
            "[WARNING]: Found variable using reserved name 'q'.\nOrigin: site.yml:4\n"
        ) && ran.stderr().contains(
            "[WARNING]: Found variable using reserved name 'lookup'.\nOrigin: site.yml:8"
        ) && !ran.stderr().contains("'web_port'"),
        "{}",
        ran.stderr()
    );
    assert!(ran.stdout().contains("ignored=1"), "{}", ran.stdout());
}

/// Custom filters in Python (`filter_plugins/` in a role and beside the playbook) run on the
/// controller; a plugin that cannot be imported is named in a warning and its filters stay
/// unknown, failing only the task that uses one.
#[test]
fn python_filter_plugins_run_and_a_broken_one_is_named() {
    Test::new()
        .write(
            "roles/r/filter_plugins/rolef.py",
            "class FilterModule:\n    def filters(self):\n        return {'from_role': lambda v, pre='role': '%s:%s' % (pre, v)}\n",
        )
        .write("roles/r/tasks/main.yml", "- debug: msg=\"{{ 3 | from_role(pre='r') }}\"\n")
        .write(
            "filter_plugins/broken.py",
            "raise RuntimeError('not today')\n",
        )
        .write(
            "site.yml",
            "- hosts: localhost\n  gather_facts: false\n  roles: [r]\n  tasks:\n    - debug: msg=\"{{ 'x' | from_role }}\"\n    - debug: msg=\"{{ 1 | b64decode_strict }}\"\n      ignore_errors: true\n",
        )
        .args(["playbook", "site.yml"])
        .succeeds()
        .snapshot();
}

/// `serial` as a template is rendered with the play's variables when the play starts.
#[test]
fn templated_serial() {
    let ran = Test::new()
        .write(
            "hosts.ini",
            "[all:vars]\nansible_connection=local\n[web]\na\nb\nc\n",
        )
        .write(
            "site.yml",
            "- hosts: web\n  gather_facts: false\n  serial: \"{{ size }}\"\n  vars:\n    size: 2\n  tasks:\n\
             \x20   - debug: msg=\"batch={{ ansible_play_batch | join(',') }}\"\n",
        )
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds().partial_output("a and b of the first batch report in parallel: their order varies");
    let out = ran.stdout();
    assert!(
        out.contains("ok: [a] => {\n    \"msg\": \"batch=a,b\"\n}"),
        "{out}"
    );
    assert!(
        out.contains("ok: [c] => {\n    \"msg\": \"batch=c\"\n}"),
        "{out}"
    );
}

/// `vars_prompt` on a terminal: each question as Ansible words it (`prompt [default]: `),
/// `confirm` asks twice, an empty answer takes the default, `encrypt` hashes the answer
/// (the expected value is glibc crypt(3)'s, from Python's `crypt.crypt('hashme',
/// '$6$abcdefghijklmnop')`), and a private answer is neither echoed nor printed by a task.
/// Without a terminal nothing is asked: `tests/playbooks/diff/34-vars-prompt.yml` compares
/// that case with ansible-playbook.
#[test]
fn vars_prompt_asks_on_a_terminal() {
    let test = Test::new().write(
        "site.yml",
        "- hosts: localhost\n  gather_facts: false\n  vars_prompt:\n\
         \x20   - name: visible\n      prompt: Your name\n      private: false\n\
         \x20   - name: pw\n      prompt: Password\n      confirm: true\n\
         \x20   - name: dflt\n      prompt: Keep default\n      default: kept\n      private: false\n\
         \x20   - name: hashed\n      prompt: Hash me\n      encrypt: sha512_crypt\n      salt: abcdefghijklmnop\n\
         \x20 tasks:\n    - debug:\n        msg: \"{{ [visible, pw, dflt, hashed] }}\"\n",
    );
    let Some((prompted, status, out)) = crate::support::on_terminal(
        test.path(),
        "playbook site.yml",
        &[
            ("Your name: ", "alice"),
            ("Password: ", "pr0mpted-Secret"),
            ("confirm Password: ", "pr0mpted-Secret"),
            ("Keep default [kept]: ", ""),
            ("Hash me: ", "hashme"),
        ],
    ) else {
        return;
    };
    assert!(prompted, "a question never came:\n{out}");
    assert!(status.success(), "{out}");
    // The terminal ends lines with CR LF; each answer is one line of the debug block.
    for line in [
        "\"alice\",",
        "\"********\",",
        "\"kept\",",
        "\"$6$abcdefghijklmnop$jaLYx99pJXe7Rnb0uRaJlO4H7h1BfHx64E91L9bhVMHaCP9V30qEdhxA6Hko5aGXfyz2\
         g7IbhUs9r26qkHNo71\"",
    ] {
        assert!(
            out.lines().any(|l| l.trim_end_matches('\r').trim() == line),
            "no line `{line}` in:\n{out}"
        );
    }
    assert!(
        !out.contains("pr0mpted-Secret"),
        "the private answer showed:\n{out}"
    );
}

/// `force_handlers` (the play keyword, `--force-handlers`, ANSIBLE_FORCE_HANDLERS): a host
/// that failed still runs the handlers it was notified of, and stays failed. The outputs and
/// recaps are the ones ansible-playbook 2.19 gives for the same playbook (run side by side
/// when this was written): without it only `b` runs the handler.
#[test]
fn force_handlers_run_the_handlers_of_failed_hosts() {
    let site = |force: &str| {
        format!(
            "- hosts: web\n  gather_facts: false\n{force}  tasks:\n\
             \x20   - command: \"true\"\n      notify: h\n\
             \x20   - fail: msg=boom\n      when: inventory_hostname == 'a'\n\
             \x20 handlers:\n    - name: h\n      debug: msg=\"handler on {{{{ inventory_hostname }}}}\"\n"
        )
    };
    let hosts = "[all:vars]\nansible_connection=local\n[web]\na\nb\n";
    let run = |book: String, flags: &[&str], env: Option<(&str, &str)>| {
        let mut t = Test::new()
            .write("hosts.ini", hosts)
            .write("site.yml", &book);
        if let Some((k, v)) = env {
            t = t.env(k, v);
        }
        let mut args = vec!["playbook", "-i", "hosts.ini"];
        args.extend_from_slice(flags);
        args.push("site.yml");
        t.args(args)
            .fails_with(2)
            .partial_output("a and b report in parallel: their order varies")
            .stdout()
    };
    let plain = run(site(""), &[], None);
    assert!(
        plain.contains("ok: [b] => {\n    \"msg\": \"handler on b\"\n}"),
        "{plain}"
    );
    assert!(!plain.contains("handler on a"), "{plain}");
    for out in [
        run(site("  force_handlers: true\n"), &[], None),
        run(site(""), &["--force-handlers"], None),
        run(site(""), &[], Some(("ANSIBLE_FORCE_HANDLERS", "1"))),
    ] {
        assert!(
            out.contains("ok: [a] => {\n    \"msg\": \"handler on a\"\n}"),
            "{out}"
        );
        assert!(
            out.contains("ok: [b] => {\n    \"msg\": \"handler on b\"\n}"),
            "{out}"
        );
        assert!(
            out.contains("a                    : ok=2    changed=1    unreachable=0    failed=1"),
            "a stays failed\n{out}"
        );
    }
    // The play's keyword wins over the command line.
    let off = run(
        site("  force_handlers: false\n"),
        &["--force-handlers"],
        None,
    );
    assert!(!off.contains("handler on a"), "{off}");
}

/// `group_vars/` and `host_vars/` beside the playbook are read as well as the inventory's and
/// win over them (ansible-core's `VARIABLE_PRECEDENCE`: the playbook's `group_vars/all` over
/// the inventory's, its `host_vars` over everything from the inventory). ansible-playbook 2.19
/// prints `from_pb_host from_pb_group inv` for the same files.
#[test]
fn group_and_host_vars_beside_the_playbook() {
    let ran = Test::new()
        .write("inv/hosts", "h1 ansible_connection=local\n")
        .write("inv/group_vars/all.yml", "y: from_inv_group\nz: inv\n")
        .write("inv/host_vars/h1.yml", "x: from_inv_host\n")
        .write("pb/host_vars/h1.yml", "x: from_pb_host\n")
        .write("pb/group_vars/all.yml", "y: from_pb_group\n")
        .write(
            "pb/site.yml",
            "- hosts: h1\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=\"{{ x }} {{ y }} {{ z }}\"\n",
        )
        .args(["playbook", "-i", "inv/hosts", "pb/site.yml"])
        .succeeds()
        .partial_output("one line tells the precedence");
    ran.stdout_has("ok: [h1] => {\n    \"msg\": \"from_pb_host from_pb_group inv\"\n}");
}

/// `hash_behaviour = merge` (ansible.cfg or `ANSIBLE_HASH_BEHAVIOUR`): a mapping defined in
/// several places merges key by key, all the way down, in precedence order (ansible-core's
/// `combine_vars` wherever variable sources combine), while successive `set_fact`s of a name
/// still replace it. ansible-playbook 2.19 printed these same two lines for this playbook.
#[test]
fn hash_behaviour_merge_combines_mappings_from_every_source() {
    let t = || {
        Test::new()
            .write("inv/hosts", "h1 ansible_connection=local\n")
            .write("inv/group_vars/all.yml", "d:\n  group: 1\n  deep: {g: 1}\n")
            .write("vf.yml", "d:\n  vars_file: 1\n")
            .write("iv.yml", "d:\n  include_vars: 1\n  deep: {i: 1}\n")
            .write("roles/r/defaults/main.yml", "d:\n  role_default: 1\n")
            .write("roles/r/vars/main.yml", "d:\n  role_var: 1\n")
            .write(
                "roles/r/tasks/main.yml",
                "- include_vars: iv.yml\n- set_fact:\n    e: {fact: 1}\n\
                 - set_fact:\n    e: {fact2: 1}\n\
                 - debug: msg=\"{{ d | to_json }} {{ e | to_json }}\"\n",
            )
            .write(
                "site.yml",
                "- hosts: h1\n  gather_facts: false\n  vars_files: [vf.yml]\n  vars:\n\
                 \x20   d: {play: 1, deep: {p: 1}}\n  roles:\n    - role: r\n      d: {param: 1}\n",
            )
    };
    let args = [
        "playbook",
        "-i",
        "inv/hosts",
        "site.yml",
        "-e",
        r#"{"d": {"extra": 1}}"#,
        "-e",
        r#"{"d": {"extra2": 1}}"#,
    ];
    t().env("ANSIBLE_HASH_BEHAVIOUR", "merge")
        .args(args)
        .succeeds()
        .partial_output("one line tells the merge")
        .stdout_has(
            r#"    "msg": "{\"role_default\": 1, \"group\": 1, \"deep\": {\"g\": 1, \"p\": 1, \"i\": 1}, \"play\": 1, \"vars_file\": 1, \"role_var\": 1, \"include_vars\": 1, \"param\": 1, \"extra\": 1, \"extra2\": 1} {\"fact2\": 1}""#,
        );
    t().write("ansible.cfg", "[defaults]\nhash_behaviour = replace\n")
        .args(args)
        .succeeds()
        .partial_output("one line tells the replacement")
        .stdout_has(r#"    "msg": "{\"extra2\": 1} {\"fact2\": 1}""#);
    t().write("ansible.cfg", "[defaults]\nhash_behaviour = merge\n")
        .args(args)
        .succeeds()
        .partial_output("the same merge, set in ansible.cfg")
        .stdout_has(r#"\"play\": 1, \"vars_file\": 1"#);
    t().env("ANSIBLE_HASH_BEHAVIOUR", "deep")
        .args(args)
        .fails_with(1)
        .stdout_is("")
        .stderr_is("error: `ANSIBLE_HASH_BEHAVIOUR` = `deep`: expected replace or merge\n");
}

/// Groups and hosts made while the playbook runs (`group_by` with `parents`, `add_host`)
/// get their `group_vars/`/`host_vars/` files beside the inventory, as ansible-core's
/// `host_group_vars` plugin reads them when asked for their variables. ansible-playbook 2.19
/// printed these two lines for this playbook.
#[test]
fn group_by_and_add_host_read_the_new_names_vars_files() {
    Test::new()
        .write("inv/hosts", "h1 ansible_connection=local\n")
        .write("inv/group_vars/runtime.yml", "from_group: runtime\n")
        .write(
            "inv/group_vars/rparent.yml",
            "from_parent: rparent\nfrom_group: parent\n",
        )
        .write("inv/host_vars/newhost.yml", "from_host: newhost\n")
        .write("inv/group_vars/added.yml", "from_added: added\n")
        .write(
            "site.yml",
            "- hosts: h1\n  gather_facts: false\n  tasks:\n\
             \x20   - group_by: {key: runtime, parents: [rparent]}\n\
             \x20   - add_host: {name: newhost, groups: added, ansible_connection: local}\n\
             - hosts: runtime\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=\"{{ from_group }} {{ from_parent }} {{ group_names }}\"\n\
             - hosts: newhost\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=\"{{ from_host }} {{ from_added }}\"\n",
        )
        .args(["playbook", "-i", "inv/hosts", "site.yml"])
        .succeeds()
        .partial_output("two lines tell which files were read")
        .stdout_has("ok: [h1] => {\n    \"msg\": \"runtime rparent ['rparent', 'runtime']\"\n}")
        .stdout_has("ok: [newhost] => {\n    \"msg\": \"newhost added\"\n}");
}

/// The options of the include and import actions are checked when the playbook loads, in
/// ansible-core's words (`TaskInclude.check_options`, `IncludeRole.load`), naming file and
/// line; ansible-playbook 2.19 refuses the same four playbooks with the same messages (it
/// names the type of a YAML list by its own tagged class).
#[test]
fn include_and_import_options_are_checked_at_load() {
    for (task, message) in [
        (
            "import_tasks: {file: t.yml, apply: {tags: [x]}}",
            "Invalid options for import_tasks: apply",
        ),
        (
            "include_tasks: {file: t.yml, colour: red}",
            "Invalid options for include_tasks: colour",
        ),
        (
            "include_role: {name: r, vars_from: [a.yml]}",
            "Expected a string for vars_from but got <class 'list'> instead",
        ),
        (
            "include_role: {name: r, apply: [x]}",
            "Expected a dict for apply but got <class 'list'> instead",
        ),
    ] {
        Test::new()
            .write("t.yml", "- debug: msg=x\n")
            .write(
                "p.yml",
                &format!("- hosts: localhost\n  gather_facts: false\n  tasks:\n    - {task}\n"),
            )
            .args(["playbook", "p.yml"])
            .fails_with(4)
            .stdout_is("")
            .stderr_is(&format!("error: p.yml:4: {message}\n"));
    }
}

/// A malformed play is refused at load in ansible-core's words, with file and line: an empty
/// playbook, an empty `hosts` list (which used to run the play on every host), a task section
/// or `roles` that is no list, an old-style `'a,b'` role, a `vars_prompt` entry without
/// `name`, both `user` and `remote_user`, a `register` that is no variable name.
/// ansible-playbook 2.19 refuses the same playbooks
/// with the same messages (naming YAML ints by its own tagged class). `user` alone is the old
/// name of `remote_user`.
#[test]
fn malformed_plays_are_refused_in_ansible_words() {
    for (book, message) in [
        (
            "[]\n",
            "e.yml:1: A playbook must contain at least one play: [..]e.yml",
        ),
        (
            "- hosts: []\n  tasks: []\n",
            "e.yml:1: Hosts list cannot be empty. Please check your playbook",
        ),
        (
            "- hosts: [localhost, null]\n",
            "e.yml:1: Hosts list cannot contain values of 'None'. Please check your playbook",
        ),
        (
            "- hosts: localhost\n  tasks: 123\n",
            "e.yml:2: A malformed block was encountered while loading tasks: 123 should be a \
             list or None but is <class 'int'>",
        ),
        (
            "- hosts: localhost\n  roles: 123\n",
            "e.yml:2: A malformed role declaration was encountered: ds (123) should be a list \
             but was a <class 'int'>",
        ),
        (
            "- hosts: localhost\n  roles: ['foo,bar']\n",
            "e.yml:2: Invalid old style role requirement: foo,bar",
        ),
        (
            "- hosts: localhost\n  vars_prompt:\n    - foo: bar\n",
            "e.yml:3: Invalid vars_prompt data structure, missing 'name' key",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - debug: msg=x\n      register: 200\n",
            "e.yml:4: Invalid 'register' specified: Invalid variable name '200' of type 'int'.",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - debug: msg=x\n      register: my-var\n",
            "e.yml:4: Invalid 'register' specified: Invalid variable name 'my-var'.",
        ),
        // `vars` names are checked at load time (`_validate_variable_keys`); a key YAML 1.1
        // reads as a boolean or number is named with its Python type.
        (
            "- hosts: localhost\n  vars:\n    on: 1\n",
            "e.yml:3: Invalid variable name 'True' of type 'bool'.",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - debug: msg=x\n      vars:\n        my-var: 1\n",
            "e.yml:5: Invalid variable name 'my-var'.",
        ),
        (
            "- hosts: localhost\n  tasks:\n    - block: []\n      vars:\n        2: x\n",
            "e.yml:5: Invalid variable name '2' of type 'int'.",
        ),
        // ansible-core 2.16 removed the `include` action; 2.19 refuses it while loading.
        (
            "- hosts: localhost\n  tasks:\n    - include: t.yml\n",
            "e.yml:3: The 'ansible.builtin.include' action plugin has been removed. Use \
             include_tasks or import_tasks instead. This feature was removed from ansible-core \
             in a release after 2023-05-16.",
        ),
        (
            "- hosts: localhost\n  user: a\n  remote_user: b\n",
            "e.yml:1: both 'user' and 'remote_user' are set for this play. The use of 'user' \
             is deprecated, and should be removed",
        ),
    ] {
        Test::new()
            .write("e.yml", book)
            .args(["playbook", "e.yml"])
            .fails_with(4)
            .stdout_is("")
            .stderr_is(&format!("error: {message}\n"));
    }
    Test::new()
        .write(
            "u.yml",
            "- hosts: localhost\n  gather_facts: false\n  user: someone\n  tasks:\n\
             \x20   - debug: msg=\"{{ ansible_user | default('-') }}\"\n",
        )
        .args(["playbook", "u.yml", "--list-tasks"])
        .succeeds()
        .partial_output("loading is the point")
        .stdout_has("debug");
}

/// A templated `hosts` that gives a list (from `-e` JSON or the play's vars) is a list of
/// patterns, as a written list is; ansible-playbook 2.19 runs these plays on the same hosts.
#[test]
fn templated_hosts_may_give_a_list_of_patterns() {
    let ran = Test::new()
        .write(
            "hosts.ini",
            "[all:vars]\nansible_connection=local\n[web]\na\nb\n[db]\nc\n",
        )
        .write(
            "site.yml",
            "- hosts: \"{{ targets }}\"\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=from-extra-vars\n\
             - hosts: \"{{ mine }}\"\n  gather_facts: false\n  vars:\n    mine: [c]\n  tasks:\n\
             \x20   - debug: msg=from-play-vars\n",
        )
        .args([
            "playbook",
            "-i",
            "hosts.ini",
            "site.yml",
            "-e",
            r#"{"targets": ["a", "db"]}"#,
        ])
        .succeeds()
        .partial_output("hosts report in parallel: their order varies");
    let out = ran.stdout();
    for line in [
        "ok: [a] => {\n    \"msg\": \"from-extra-vars\"\n}",
        "ok: [c] => {\n    \"msg\": \"from-extra-vars\"\n}",
        "ok: [c] => {\n    \"msg\": \"from-play-vars\"\n}",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert!(!out.contains("ok: [b]"), "b is in neither list\n{out}");
}

/// `meta: clear_host_errors` clears unreachable hosts as well as failed ones (they are tried
/// again in the next play), and a later play's `ansible_play_hosts_all` still lists the hosts
/// that failed or were unreachable before, while its batch leaves them out. ansible-playbook
/// 2.19 printed the same two lines and the same recap for this playbook (`down` refuses SSH).
#[test]
fn clear_host_errors_retries_unreachable_hosts_and_play_hosts_all_keeps_them() {
    let ran = Test::new()
        .write(
            "sv.ini",
            "ok1 ansible_connection=local\nbad ansible_connection=local\n\
             down ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1\n",
        )
        .write(
            "sv.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n\
             \x20   - ping:\n      failed_when: inventory_hostname == 'bad'\n\
             \x20   - meta: clear_host_errors\n\
             - hosts: all\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=\"{{ ansible_play_batch | length }} {{ ansible_play_hosts_all | length }}\"\n\
             \x20     run_once: true\n\
             \x20   - ping:\n      failed_when: inventory_hostname == 'bad'\n\
             - hosts: all\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=\"{{ ansible_play_batch }} {{ ansible_play_hosts }} {{ ansible_play_hosts_all | length }}\"\n",
        )
        .args(["playbook", "-i", "sv.ini", "sv.yml"])
        .fails_with(2)
        .partial_output("three hosts report in parallel: their order varies");
    let out = ran.stdout();
    for line in [
        "ok: [ok1] => {\n    \"msg\": \"3 3\"\n}",
        "ok: [ok1] => {\n    \"msg\": \"['ok1'] ['ok1'] 3\"\n}",
        "bad                  : ok=0    changed=0    unreachable=0    failed=2",
        "down                 : ok=0    changed=0    unreachable=2    failed=0",
        "ok1                  : ok=4    changed=0    unreachable=0    failed=0",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

/// Meta tasks show their header as ansible-playbook 2.19 shows it, say what they did at
/// `-vv` (`META: ...`, ansible-core's `_execute_meta` words), and one skipped by `when` gets
/// the usual skipping line. ansible-playbook printed these lines for the same playbook.
#[test]
fn meta_tasks_show_their_header_and_say_what_they_did_at_vv() {
    let playbook = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                    \x20   - meta: noop\n\
                    \x20   - name: named meta\n      meta: refresh_inventory\n\
                    \x20   - meta: end_host\n      when: false\n\
                    \x20   - meta: flush_handlers\n\
                    \x20   - meta: end_play\n\
                    \x20   - debug: msg=never\n";
    let t = Test::new()
        .write("m.yml", playbook)
        .args(["playbook", "-i", "localhost,", "m.yml", "-vv"])
        .succeeds()
        .partial_output("the -vv lines carry timings and paths");
    let out = t.stdout();
    let expected = "TASK [meta]\nMETA: noop\n\nTASK [named meta]\n\
                    META: inventory successfully refreshed\n\nTASK [meta]\n\
                    META: end_host conditional evaluated to False, continuing execution for localhost\n\
                    skipping: [localhost] => {\"msg\": \"end_host conditional evaluated to false, \
                    continuing execution for localhost\", \"skip_reason\": \"end_host conditional \
                    evaluated to False, continuing execution for localhost\"}\n\nTASK [meta]\n\
                    META: triggered running handlers for localhost\n\nTASK [meta]\n\
                    META: ending play\n";
    assert!(out.contains(expected), "{out}");
    assert!(!out.contains("never"), "end_play ends the play\n{out}");
    let quiet = Test::new()
        .write("m.yml", playbook)
        .args(["playbook", "-i", "localhost,", "m.yml"])
        .succeeds()
        .partial_output("the recap's timings vary");
    let out = quiet.stdout();
    assert!(
        out.contains("TASK [named meta]\n\nTASK [meta]\nskipping: [localhost]\n"),
        "{out}"
    );
    assert!(!out.contains("META:"), "META lines are for -vv\n{out}");
}

/// `throttle` bounds how many hosts run a task at once, under both strategies, inherited from
/// a block as other keywords are (the task's own wins); a template that gives no integer fails
/// in ansible-core's words (`StrategyBase._queue_task`). Each host's shell records how many
/// hosts were inside the task with it.
#[test]
fn throttle_bounds_the_hosts_running_a_task_at_once() {
    // Under `free` a host may be in the next task while others are still in this one: each
    // task counts in its own folder.
    let probe = "sh -c 'mkdir -p in.{{ tag }}; touch in.{{ tag }}/{{ inventory_hostname }}; \
                 ls in.{{ tag }} | wc -l >> seen.{{ tag }}; sleep 0.3; \
                 rm in.{{ tag }}/{{ inventory_hostname }}'";
    let mut inventory = String::from("[all:vars]\nansible_connection=local\n[all]\n");
    for i in 0..6 {
        inventory.push_str(&format!("h{i}\n"));
    }
    for strategy in ["linear", "free"] {
        let t = Test::new()
            .write("hosts.ini", &inventory)
            .write(
                "t.yml",
                &format!(
                    "- hosts: all\n  gather_facts: false\n  strategy: {strategy}\n  tasks:\n\
                     \x20   - command: {probe}\n      args:\n        chdir: \"{{{{ playbook_dir }}}}\"\n\
                     \x20     vars:\n        tag: task\n      throttle: 2\n\
                     \x20   - block:\n\
                     \x20       - command: {probe}\n          args:\n            chdir: \"{{{{ playbook_dir }}}}\"\n\
                     \x20         vars:\n            tag: block\n\
                     \x20     throttle: \"{{{{ 1 + 2 }}}}\"\n"
                ),
            );
        let dir = t.path().to_path_buf();
        // The folder lives as long as the run's result.
        let _ran = t
            .args(["playbook", "-i", "hosts.ini", "t.yml", "--forks", "6"])
            .succeeds()
            .partial_output("six hosts report in parallel: their order varies");
        for (tag, bound) in [("task", 2), ("block", 3)] {
            let seen = std::fs::read_to_string(dir.join(format!("seen.{tag}"))).unwrap();
            let counts: Vec<usize> = seen.lines().map(|l| l.trim().parse().unwrap()).collect();
            assert_eq!(counts.len(), 6, "{strategy} {tag}: {seen}");
            assert!(
                counts.iter().all(|&c| (1..=bound).contains(&c)),
                "{strategy} {tag}: more than {bound} hosts at once: {counts:?}"
            );
        }
    }
    let t = Test::new()
        .write(
            "bad.yml",
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
             \x20   - debug: msg=x\n      throttle: \"{{ 'nope' }}\"\n",
        )
        .args(["playbook", "-i", "localhost,", "bad.yml"])
        .fails_with(2)
        .partial_output("the recap's timings vary");
    let out = t.stdout();
    assert!(
        out.contains(
            "fatal: [localhost]: FAILED! => Task failed: Failed to convert the throttle value to \
             an integer: invalid literal for int() with base 10: 'nope'"
        ),
        "{out}"
    );
}

/// Handlers are tasks, never blocks inside blocks or roles: ansible-core's
/// `load_list_of_tasks` refuses a nested block, a block in a task file a handler imports, and
/// `include_role`/`import_role`, with these words.
#[test]
fn handlers_may_not_be_nested_blocks_or_roles() {
    let cases = [
        (
            "  handlers:\n    - name: h\n      block:\n        - debug:\n        - block:\n\
             \x20           - debug:\n",
            "nested.yml:9: Using a block as a handler is not supported.",
        ),
        (
            "  handlers:\n    - name: h\n      import_tasks: blocky.yml\n",
            "blocky.yml:1: Using a block as a handler is not supported.",
        ),
        (
            "  handlers:\n    - name: h\n      include_role:\n        name: r\n",
            "nested.yml:6: Using 'include_role' as a handler is not supported.",
        ),
    ];
    for (handlers, message) in cases {
        let t = Test::new()
            .write("blocky.yml", "- name: h\n  block:\n    - debug:\n")
            .write(
                "nested.yml",
                &format!(
                    "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug:\n{handlers}"
                ),
            )
            .args(["playbook", "-i", "localhost,", "nested.yml"])
            .fails_with(4)
            .partial_output("the error names a temporary folder");
        let err = t.stderr();
        assert!(err.contains(message), "{message}\n{err}");
    }
}

/// A handler whose templated name cannot be rendered is unusable and said so once per flush,
/// in ansible-core's words, while the others still answer (ansible-playbook 2.19 printed the
/// same warning and ran `plain` alone).
#[test]
fn a_handler_name_that_does_not_render_is_warned_about() {
    let t = local_playbook(
        "h.yml",
        "- hosts: localhost\n  gather_facts: false\n  handlers:\n\
             \x20   - name: \"restart {{ undefined_service }}\"\n      debug: msg=templated\n\
             \x20   - name: plain\n      debug: msg=plain-ran\n  tasks:\n\
             \x20   - command: echo\n      notify: plain\n",
    )
    .succeeds()
    .partial_output("the recap's timings vary");
    let (out, err) = (t.stdout(), t.stderr());
    let all = format!("{out}{err}");
    assert!(
        all.contains(
            "[WARNING]: Handler 'restart {{ undefined_service }}' is unusable because it has no \
             listen topics and the name could not be templated (host-specific variables are not \
             supported in handler names). The error: "
        ),
        "{all}"
    );
    assert!(out.contains("RUNNING HANDLER [plain]"), "{out}");
    assert!(
        !out.contains("msg=templated") && !out.contains("=> templated"),
        "{out}"
    );
}

/// An include that cannot be loaded fails its host as a failed task does, so under
/// `any_errors_fatal` it ends the play for every host (ansible-playbook 2.19 ended it there
/// too, exit 2; it counts no `ok` for the include, where kinit counts the include line).
#[test]
fn an_include_that_cannot_load_is_fatal_under_any_errors_fatal() {
    for include in [
        "include_tasks: missing.yml",
        "include_role:\n        name: missing",
    ] {
        let t = Test::new()
            .write(
                "aef.yml",
                &format!(
                    "- hosts: a,b\n  gather_facts: false\n  any_errors_fatal: true\n  tasks:\n\
                     \x20   - {include}\n      when: inventory_hostname == 'b'\n\
                     \x20   - debug: msg=never-reached\n"
                ),
            )
            .args(["playbook", "-i", "a,b", "-c", "local", "aef.yml"])
            .fails_with(2)
            .partial_output("the failure names a temporary folder");
        let out = t.stdout();
        assert!(!out.contains("never-reached"), "{include}\n{out}");
        for line in [
            "a                    : ok=0    changed=0    unreachable=0    failed=0    skipped=1",
            "unreachable=0    failed=1    skipped=0    rescued=0",
        ] {
            assert!(out.contains(line), "{include}: {line}\n{out}");
        }
    }
}

/// `force_handlers` runs the notified handlers after an `any_errors_fatal` stop too, and the
/// play stays stopped (ansible-playbook 2.19 ran `handler1` once and not `after`).
#[test]
fn force_handlers_run_after_an_any_errors_fatal_stop() {
    let t = local_playbook(
        "f.yml",
        "- hosts: localhost\n  gather_facts: false\n  any_errors_fatal: true\n\
             \x20 force_handlers: true\n  tasks:\n\
             \x20   - command: echo\n      notify: handler1\n\
             \x20   - fail:\n\
             \x20   - debug: msg=after\n\
             \x20 handlers:\n    - name: handler1\n      debug:\n        msg: handler1 ran\n",
    )
    .fails_with(2)
    .partial_output("the recap's timings vary");
    let out = t.stdout();
    assert_eq!(out.matches("\"msg\": \"handler1 ran\"").count(), 1, "{out}");
    assert!(!out.contains("after"), "{out}");
}

/// Under `any_errors_fatal` a failure inside a block with `rescue` sends every host of the
/// block to the rescue (ansible-core marks them all failed), and only the host that failed
/// counts as rescued: ansible-playbook 2.19 printed these recap lines for this playbook.
#[test]
fn any_errors_fatal_sends_every_host_of_the_block_to_its_rescue() {
    let t = Test::new()
        .write(
            "r.yml",
            "- hosts: a,b\n  gather_facts: false\n  any_errors_fatal: true\n  tasks:\n\
             \x20   - block:\n        - fail:\n          when: inventory_hostname == 'a'\n\
             \x20       - debug: msg=never-reached\n      rescue:\n\
             \x20       - debug: msg=rescued-here\n\
             \x20   - debug: msg=recovered\n",
        )
        .args(["playbook", "-i", "a,b", "-c", "local", "r.yml"])
        .succeeds()
        .partial_output("two hosts report in parallel: their order varies");
    let out = t.stdout();
    assert!(!out.contains("never-reached"), "{out}");
    assert_eq!(out.matches("\"msg\": \"rescued-here\"").count(), 2, "{out}");
    assert_eq!(out.matches("\"msg\": \"recovered\"").count(), 2, "{out}");
    for line in [
        "a                    : ok=2    changed=0    unreachable=0    failed=0    skipped=0    rescued=1",
        "b                    : ok=2    changed=0    unreachable=0    failed=0    skipped=1    rescued=0",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

/// A notification no handler answers ends the run with an error, as ansible-core's
/// `error_on_missing_handler` (on by default) has it: exit 1, `[ERROR]: ...`, no task after;
/// ansible.cfg or ANSIBLE_ERROR_ON_MISSING_HANDLER turn it into a warning.
#[test]
fn a_notification_no_handler_answers_ends_the_run() {
    let play = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - command: echo\n      notify: no such handler\n\
                \x20   - debug: msg=after-the-notification\n\
                \x20 handlers:\n    - name: a handler\n      debug: msg=x\n";
    let message = "The requested handler 'no such handler' was not found in either the main \
                   handlers list nor in the listening handlers list";
    let t = local_playbook("h.yml", play)
        .fails_with(1)
        .partial_output("the recap's timings vary");
    assert!(
        t.stderr().contains(&format!("[ERROR]: h.yml:4: {message}")),
        "{}",
        t.stderr()
    );
    assert!(
        !t.stdout().contains("after-the-notification"),
        "{}",
        t.stdout()
    );
    let warned = |t: crate::support::Ran| {
        assert!(
            t.stderr()
                .contains(&format!("[WARNING]: h.yml:4: {message}")),
            "{}",
            t.stderr()
        );
        assert!(
            t.stdout().contains("after-the-notification"),
            "{}",
            t.stdout()
        );
    };
    warned(
        local_playbook("h.yml", play)
            .env("ANSIBLE_ERROR_ON_MISSING_HANDLER", "false")
            .succeeds()
            .partial_output("the recap's timings vary"),
    );
    warned(
        local_playbook("h.yml", play)
            .write("ansible.cfg", "[defaults]\nerror_on_missing_handler = no\n")
            .succeeds()
            .partial_output("the recap's timings vary"),
    );
}

/// A conditional must give a boolean, as in ansible-core 2.19 (`tests/playbooks/diff/94-...`
/// compares the failures); `allow_broken_conditionals` (ansible.cfg or
/// ANSIBLE_ALLOW_BROKEN_CONDITIONALS) takes a value by its truth again, with 2.19's
/// deprecation warning.
#[test]
fn allow_broken_conditionals_takes_a_value_by_its_truth() {
    let play = "- hosts: localhost\n  gather_facts: false\n  vars: {text: hello, empty: ''}\n\
                \x20 tasks:\n    - debug: msg=ran-on-text\n      when: text\n\
                \x20   - debug: msg=ran-on-empty\n      when: empty\n";
    let strict = local_playbook("c.yml", play)
        .fails_with(2)
        .partial_output("the recap's timings vary");
    assert!(
        strict.stdout().contains(
            "FAILED! => Task failed: Conditional result (True) was derived from value of type \
             'str'. Conditionals must have a boolean result."
        ),
        "{}",
        strict.stdout()
    );
    let relaxed = |t: crate::support::Ran| {
        let (out, err) = (t.stdout(), t.stderr());
        assert!(out.contains("\"msg\": \"ran-on-text\""), "{out}");
        assert!(!out.contains("ran-on-empty"), "{out}");
        assert!(
            err.contains("[DEPRECATION WARNING]: Conditional result (False) was derived from value of type 'str'."),
            "{err}"
        );
    };
    relaxed(
        local_playbook("c.yml", play)
            .env("ANSIBLE_ALLOW_BROKEN_CONDITIONALS", "true")
            .succeeds()
            .partial_output("the recap's timings vary"),
    );
    relaxed(
        local_playbook("c.yml", play)
            .write(
                "ansible.cfg",
                "[defaults]\nallow_broken_conditionals = yes\n",
            )
            .succeeds()
            .partial_output("the recap's timings vary"),
    );
}

/// `meta: end_play` ends the play, the `serial` batches after this one too (ansible-core
/// raises `AnsibleEndPlay` out of its batch loop); `end_batch` ends the batch alone. A
/// templated play name is shown rendered.
#[test]
fn end_play_ends_the_later_serial_batches_too() {
    let play = |meta: &str| {
        format!(
            "- name: ends with {{{{ meta }}}}\n  hosts: a,b\n  gather_facts: false\n  serial: 1\n\
             \x20 vars: {{meta: {meta}}}\n  tasks:\n\
             \x20   - debug: msg=on-{{{{ inventory_hostname }}}}\n\
             \x20   - meta: {meta}\n\
             \x20   - debug: msg=never\n"
        )
    };
    let run = |meta: &str| {
        Test::new()
            .write("p.yml", &play(meta))
            .args(["playbook", "-i", "a,b", "-c", "local", "p.yml"])
            .succeeds()
            .partial_output("the recap's timings vary")
            .stdout()
    };
    let ended = run("end_play");
    // The banner shows a templated play name rendered, as ansible-playbook's does.
    assert!(ended.contains("PLAY [ends with end_play]"), "{ended}");
    assert!(
        ended.contains("\"msg\": \"on-a\"") && !ended.contains("on-b"),
        "{ended}"
    );
    let batch = run("end_batch");
    assert!(
        batch.contains("\"msg\": \"on-a\"") && batch.contains("\"msg\": \"on-b\""),
        "{batch}"
    );
    assert!(!ended.contains("never") && !batch.contains("never"));
}

/// `meta: flush_handlers` as a handler ends the run with ansible-core's error (exit 1): no
/// task after the handlers ran (flushed here in the middle of the tasks) runs.
#[test]
fn flush_handlers_as_a_handler_ends_the_run() {
    let play = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - command: echo\n      notify: flusher\n\
                \x20   - meta: flush_handlers\n\
                \x20   - debug: msg=after-the-handlers\n\
                \x20 handlers:\n    - name: flusher\n      meta: flush_handlers\n";
    let t = local_playbook("h.yml", play)
        .fails_with(1)
        .partial_output("the recap's timings vary");
    assert!(
        t.stderr()
            .contains("[ERROR]: flush_handlers cannot be used as a handler"),
        "{}",
        t.stderr()
    );
    assert!(!t.stdout().contains("after-the-handlers"), "{}", t.stdout());
}

/// A play name that cannot be templated ends the run before that play starts, in
/// ansible-core's words, with its exit code for a playbook error (4); the plays before it ran.
#[test]
fn a_play_name_that_cannot_be_templated_ends_the_run() {
    let book = "- name: first\n  hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - debug: msg=first-play-ran\n\
                - name: \"play {{ nope }}\"\n  hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - debug: msg=second-play-ran\n";
    let t = local_playbook("p.yml", book)
        .fails_with(4)
        .partial_output("the recap's timings vary");
    assert!(
        t.stderr()
            .contains("[ERROR]: p.yml:6: Error processing keyword 'name': 'nope' is undefined"),
        "{}",
        t.stderr()
    );
    assert!(t.stdout().contains("first-play-ran"), "{}", t.stdout());
    assert!(!t.stdout().contains("second-play-ran"), "{}", t.stdout());
}

/// The `[ERROR]` block quotes the failed task's source with the two lines before it; a
/// secret-named variable there (a play's `vars` just above its first task) is masked.
#[test]
fn a_failures_source_excerpt_masks_secret_named_values() {
    let book = "- hosts: localhost\n  gather_facts: false\n  vars:\n\
                \x20   db_password: Planted-Secret-4711\n  tasks:\n\
                \x20   - command: /bin/false\n";
    let t = local_playbook("p.yml", book)
        .fails_with(2)
        .partial_output("the recap's timings vary");
    let out = t.stdout();
    assert!(out.contains("Origin: "), "{out}");
    assert!(out.contains("4     db_password: ********"), "{out}");
    assert!(!out.contains("Planted-Secret-4711"), "{out}");
}

/// `kinit playbook -i localhost, -c local NAME` over the playbook `book` written as NAME.
fn local_playbook(name: &str, book: &str) -> Test {
    Test::new()
        .write(name, book)
        .args(["playbook", "-i", "localhost,", "-c", "local", name])
}

/// `max_fail_percentage`, as ansible-core 2.19's linear strategy and `PlaybookExecutor` apply
/// it (each expectation below is ansible-playbook's output for the same playbook): a template
/// rendered when the play starts (`40%` too); the hosts that failed in this batch over the
/// batch's size, hosts that failed in an earlier play counted in that size; past it the
/// batch's other hosts stop without a count in the recap, the play's later batches still run
/// and no later play does.
#[test]
fn max_fail_percentage_counts_as_ansible_core() {
    let inv = "[all:vars]\nansible_connection=local\n[g]\na\nb\nc\n";
    let fail_on = |h: &str| {
        format!(
            "  tasks:\n    - fail: msg=boom\n      when: inventory_hostname == '{h}'\n\
             \x20   - debug: msg=second-{{{{ inventory_hostname }}}}\n"
        )
    };
    let templated = format!(
        "- hosts: g\n  gather_facts: false\n  max_fail_percentage: >-\n    {{{{ pct | default(50) }}}}\n{}\
         - hosts: g\n  gather_facts: false\n  max_fail_percentage: \"{{{{ '40%' }}}}\"\n{}",
        fail_on("a"),
        fail_on("b")
    );
    let run = |book: &str, extra: &[&str]| {
        let mut args = vec!["playbook", "-i", "inv.ini", "p.yml"];
        args.extend(extra);
        Test::new()
            .write("inv.ini", inv)
            .write("p.yml", book)
            .args(args)
            .fails_with(2)
            .partial_output("the timing table varies")
            .stdout()
    };
    let recap = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with(['a', 'b', 'c']) && l.contains("ok="))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    // Both the 50% run and the serial one end so: a and b failed, c ran everything.
    let a_b_failed = [
        "a : ok=0 changed=0 unreachable=0 failed=1 skipped=0 rescued=0 ignored=0",
        "b : ok=1 changed=0 unreachable=0 failed=1 skipped=1 rescued=0 ignored=0",
        "c : ok=2 changed=0 unreachable=0 failed=0 skipped=2 rescued=0 ignored=0",
    ];
    // 50%: a fails (1 of 3) and the play goes on; the second play's batch is a, b and c, so
    // b failing is 1 of 3, under 40%, and c goes on.
    let out = run(&templated, &[]);
    assert_eq!(recap(&out), a_b_failed, "{out}");
    // 20%: a failing is past it; b and c stop without a failure counted, and the second
    // play does not run.
    let out = run(&templated, &["-e", "pct=20"]);
    assert_eq!(out.matches("PLAY [g]").count(), 1, "{out}");
    assert_eq!(
        recap(&out),
        [
            "a : ok=0 changed=0 unreachable=0 failed=1 skipped=0 rescued=0 ignored=0",
            "b : ok=0 changed=0 unreachable=0 failed=0 skipped=1 rescued=0 ignored=0",
            "c : ok=0 changed=0 unreachable=0 failed=0 skipped=1 rescued=0 ignored=0",
        ],
        "{out}"
    );
    // serial 2: the batches are a+b and c (a failed in the first play still counts); b
    // failing is 1 of 2, past 40%, yet the play's next batch runs, with its banner again.
    let serial = format!(
        "- hosts: g\n  gather_facts: false\n{}\
         - hosts: g\n  gather_facts: false\n  serial: 2\n  max_fail_percentage: 40\n{}\
         - hosts: g\n  gather_facts: false\n  tasks:\n    - debug: msg=never\n",
        fail_on("a"),
        fail_on("b")
    );
    let out = run(&serial, &[]);
    assert_eq!(out.matches("PLAY [g]").count(), 3, "{out}");
    assert!(
        out.contains("\"msg\": \"second-c\"") && !out.contains("never"),
        "{out}"
    );
    assert_eq!(recap(&out), a_b_failed, "{out}");
}

/// An unnamed task is titled by its action as the task writes it (`Task.get_name` shows
/// `self.action`): `ansible.builtin.debug` stays so in the listing and the banners, an
/// unnamed `include_role` lists as its action alone and runs as `<action> : <role>`, and
/// `yum` loads as ansible-core 2.19's redirect to `dnf` (no "not implemented" warning). The
/// listing and banners below are ansible-playbook 2.19.4's for the same playbook.
#[test]
fn unnamed_tasks_are_titled_by_their_action_as_written() {
    let book = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - ansible.builtin.debug: msg=a\n\
                \x20   - debug: msg=b\n\
                \x20   - action: ansible.builtin.debug msg=c\n\
                \x20   - ansible.builtin.include_role: {name: rr}\n\
                \x20   - include_role: {name: rr}\n\
                \x20   - ansible.builtin.set_fact: {x: 1}\n\
                \x20   - yum: name=x\n      when: false\n";
    let role = "- ansible.builtin.debug: msg=in-rr\n";
    let listed = local_playbook("n.yml", book)
        .write("roles/rr/tasks/main.yml", role)
        .args(["--list-tasks"])
        .succeeds()
        .partial_output("the task names are the point")
        .stdout();
    let names: Vec<&str> = listed
        .lines()
        .filter(|l| l.starts_with("      "))
        .filter_map(|l| l.strip_suffix("\tTAGS: []"))
        .map(str::trim)
        .collect();
    assert_eq!(
        names,
        [
            "ansible.builtin.debug",
            "debug",
            "ansible.builtin.debug",
            "ansible.builtin.include_role",
            "include_role",
            "ansible.builtin.set_fact",
            "yum",
        ],
        "{listed}"
    );
    let ran = local_playbook("n.yml", book)
        .write("roles/rr/tasks/main.yml", role)
        .succeeds()
        .partial_output("the timing table varies");
    let out = ran.stdout();
    let banners: Vec<&str> = out.lines().filter(|l| l.starts_with("TASK [")).collect();
    assert_eq!(
        banners,
        [
            "TASK [ansible.builtin.debug]",
            "TASK [debug]",
            "TASK [ansible.builtin.debug]",
            "TASK [ansible.builtin.include_role : rr]",
            "TASK [rr : ansible.builtin.debug]",
            "TASK [include_role : rr]",
            "TASK [rr : ansible.builtin.debug]",
            "TASK [ansible.builtin.set_fact]",
            "TASK [yum]",
        ],
        "{out}"
    );
    assert!(
        !ran.stderr().contains("not implemented"),
        "{}",
        ran.stderr()
    );
}

/// A role named by a relative path is found as ansible-core's `RoleDefinition._load_role_path`
/// finds it: from the folder of the playbook naming it, also when another playbook imports
/// that one, and with `..` resolved by name (`default/roles/../..` holds though `roles` does
/// not exist), as `unfrackpath` does (kubespray's molecule `verify.yml` playbooks). The
/// listing is ansible-playbook 2.19.4's for the same tree.
#[test]
fn roles_named_by_relative_paths_are_found_as_ansible_core_finds_them() {
    Test::new()
        .write("r/tasks/main.yml", "- debug: msg=from-r\n")
        .write(
            "top/molecule/default/site.yml",
            "- import_playbook: ../../../other/molecule/imp.yml\n\
             - hosts: localhost\n  gather_facts: false\n  roles:\n    - role: ../../../../r\n",
        )
        .write(
            "other/molecule/imp.yml",
            "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: ../../r\n",
        )
        .args([
            "playbook",
            "-i",
            "localhost,",
            "top/molecule/default/site.yml",
            "--list-tasks",
        ])
        .succeeds()
        .stderr_is("")
        .stdout_is(
            "\nplaybook: top/molecule/default/site.yml\n\n\
             \x20 play #1 (localhost): localhost\tTAGS: []\n    tasks:\n      debug\tTAGS: []\n\n\
             \x20 play #2 (localhost): localhost\tTAGS: []\n    tasks:\n      debug\tTAGS: []\n",
        );
}

/// A play's `hosts` list and its tags as ansible-playbook 2.19.4 shows them: the listing
/// joins the (templated) items with `,`, an unnamed play is named by them joined likewise and
/// shown as written, and the play's own tags are joined with `,` alone (`cli/playbook.py`),
/// its tasks' with `, ` (kolla-ansible's `hosts: [rabbitmq, "&enable_rabbitmq_{{ ... }}"]`).
#[test]
fn play_hosts_lists_and_tags_are_listed_as_ansible_playbook_lists_them() {
    let book = "- hosts: [web, \"&enable_{{ flag | bool }}\"]\n  gather_facts: false\n\
                \x20 vars: {flag: yes}\n  tags: [common, extra]\n  tasks:\n\
                \x20   - debug: msg=x\n      tags: [b, a]\n";
    Test::new()
        .write("h.yml", book)
        .args(["playbook", "-i", "localhost,", "h.yml", "--list-tasks"])
        .succeeds()
        .stderr_is("")
        .stdout_is(
            "\nplaybook: h.yml\n\n\
             \x20 play #1 (web,&enable_True): web,&enable_{{ flag | bool }}\tTAGS: [common,extra]\n\
             \x20   tasks:\n      debug\tTAGS: [a, b, common, extra]\n",
        );
    Test::new()
        .write("h.yml", book)
        .args(["playbook", "-i", "localhost,", "h.yml"])
        .succeeds()
        .partial_output("only the banner is the point")
        .stdout_has("PLAY [web,&enable_{{ flag | bool }}]");
}

/// A static `import_role` name is templated with the enclosing role's defaults too, as
/// ansible-core's `get_vars(play, task)` gives them before any host runs (the openstack.kolla
/// collection's `import_role: name: openstack.kolla.{{ container_engine }}` with
/// `container_engine` a default of the role holding the task).
#[test]
fn a_static_import_role_name_may_use_the_enclosing_roles_defaults() {
    Test::new()
        .write("roles/outer/defaults/main.yml", "engine: docker\n")
        .write(
            "roles/outer/tasks/main.yml",
            "- import_role:\n    name: \"inner_{{ engine }}\"\n",
        )
        .write("roles/inner_docker/tasks/main.yml", "- debug: msg=docker\n")
        .write(
            "p.yml",
            "- hosts: localhost\n  gather_facts: false\n  roles: [outer]\n",
        )
        .args(["playbook", "-i", "localhost,", "p.yml", "--list-tasks"])
        .succeeds()
        .stderr_is("")
        .stdout_is(
            "\nplaybook: p.yml\n\n  play #1 (localhost): localhost\tTAGS: []\n    tasks:\n\
             \x20     debug\tTAGS: []\n",
        );
}

/// `tags` given as a template are rendered with the play's vars and `-e` when the playbook
/// loads, so `--list-tasks` shows them and `--tags` selects by them as ansible-playbook 2.19.4
/// does (its `tags` integration target: `tags: "{{ the_tags }}"` lists as `[tag3]`; the
/// listing and the selection below are ansible-playbook's for the same playbook).
#[test]
fn templated_tags_are_listed_and_selected_rendered() {
    let book = "- hosts: localhost\n  gather_facts: false\n  vars:\n    the_tags: [tag3]\n\
                \x20 tasks:\n\
                \x20   - name: templated\n      debug: msg=templated\n      tags: \"{{ the_tags }}\"\n\
                \x20   - name: plain\n      debug: msg=plain\n      tags: other\n";
    Test::new()
        .write("t.yml", book)
        .args(["playbook", "-i", "localhost,", "t.yml", "--list-tasks"])
        .succeeds()
        .stderr_is("")
        .stdout_is(
            "\nplaybook: t.yml\n\n  play #1 (localhost): localhost\tTAGS: []\n    tasks:\n\
             \x20     templated\tTAGS: [tag3]\n      plain\tTAGS: [other]\n",
        );
    let ran = Test::new()
        .write("t.yml", book)
        .args([
            "playbook",
            "-i",
            "localhost,",
            "-c",
            "local",
            "t.yml",
            "--tags",
            "tag3",
        ])
        .succeeds()
        .partial_output("the timing table varies")
        .stdout();
    assert!(
        ran.contains("\"msg\": \"templated\"") && !ran.contains("\"msg\": \"plain\""),
        "{ran}"
    );
}

/// A failure a rescue section takes counts as rescued whatever the rescue then does, and a
/// task failing in the rescue counts as a failure of its own (ansible-core's strategy counts
/// `rescued` when a task fails inside a block with a rescue; its `blocks` target, issue
/// 79711). The recaps are ansible-playbook 2.19.4's for the same playbooks.
#[test]
fn a_rescue_that_fails_still_counts_the_rescued_failure() {
    let book = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - block:\n        - fail: msg=a\n      rescue:\n        - debug: msg=ok\n\
                \x20   - block:\n        - fail: msg=b\n      rescue:\n        - fail: msg=c\n\
                \x20     always:\n        - debug: msg=always\n";
    let out = local_playbook("r.yml", book)
        .fails_with(2)
        .partial_output("the recap is the point")
        .stdout();
    let recap: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("localhost ") && l.contains("ok="))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        recap,
        ["localhost : ok=2 changed=0 unreachable=0 failed=1 skipped=0 rescued=2 ignored=0"],
        "{out}"
    );
}

/// With no inventory source at all, ansible-playbook says so and that only the implicit
/// localhost is left, which `all` does not match; an inventory without hosts gets the second
/// warning alone; `ANSIBLE_INVENTORY_UNPARSED_WARNING` and `ANSIBLE_LOCALHOST_WARNING` silence
/// them (the test harness sets both off; they are set back on here, as unset means on). The
/// warnings are ansible-playbook 2.19.4's for the same playbook.
#[test]
fn an_empty_inventory_is_warned_of_as_ansible_playbook_warns() {
    let book = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=x\n";
    let unparsed = "[WARNING]: No inventory was parsed, only implicit localhost is available\n";
    let empty = "[WARNING]: provided hosts list is empty, only localhost is available. Note that \
                 the implicit localhost does not match 'all'\n";
    Test::new()
        .write("t.yml", book)
        .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "true")
        .env("ANSIBLE_LOCALHOST_WARNING", "yes")
        .args(["playbook", "t.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about")
        .stderr_is(&format!("{unparsed}{empty}"));
    Test::new()
        .write("t.yml", book)
        .write("hosts.ini", "[nobody]\n")
        .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "true")
        .env("ANSIBLE_LOCALHOST_WARNING", "yes")
        .args(["playbook", "-i", "hosts.ini", "t.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about")
        .stderr_is(empty);
    Test::new()
        .write("t.yml", book)
        .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "false")
        .env("ANSIBLE_LOCALHOST_WARNING", "no")
        .args(["playbook", "t.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about")
        .stderr_is("");
}

/// A module's facts cannot set connection variables, interpreters or `ansible_facts` itself:
/// ansible-core's `clean_facts` keeps them out of the top-level variables with `Removed
/// restricted key from module data: ...`, and the `ansible_` prefix comes off a fact's name
/// inside `ansible_facts` only (so a nested `ansible_facts` is `ansible_facts.facts`). The
/// module is a shell script in `library/`; the output is ansible-playbook 2.19.4's.
#[test]
fn facts_a_module_returns_cannot_set_restricted_variables() {
    let module = "#!/bin/sh\necho '{\"changed\": false, \"ansible_facts\": {\
                  \"ansible_facts\": {\"discovered_interpreter_python\": \"/bin/evil\"}, \
                  \"ansible_python_interpreter\": \"/bin/evil\", \"ansible_host\": \"evil\", \
                  \"ansible_ssh_host_key_x_public\": \"kept\", \"mine\": 1}}'\n";
    let book = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - action: bogus_facts\n\
                \x20   - assert:\n        that:\n\
                \x20         - discovered_interpreter_python is undefined\n\
                \x20         - ansible_facts.discovered_interpreter_python is undefined\n\
                \x20         - ansible_facts.facts.discovered_interpreter_python == '/bin/evil'\n\
                \x20         - ansible_python_interpreter != '/bin/evil'\n\
                \x20         - ansible_host | default('') != 'evil'\n\
                \x20         - ansible_ssh_host_key_x_public == 'kept'\n\
                \x20         - mine == 1\n";
    let ran = Test::new()
        .write("p.yml", book)
        .write("library/bogus_facts", module)
        .args(["playbook", "p.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about");
    let (out, err) = (ran.stdout(), ran.stderr());
    assert!(out.contains("ok=2 "), "{out}");
    // ansible-core warns in the order of a Python set; kinit in the module's.
    let mut warnings: Vec<&str> = err.lines().collect();
    warnings.sort();
    assert_eq!(
        warnings,
        [
            "[WARNING]: Removed restricted key from module data: ansible_facts",
            "[WARNING]: Removed restricted key from module data: ansible_host",
            "[WARNING]: Removed restricted key from module data: ansible_python_interpreter",
        ],
        "{out}"
    );
}

/// `ignore_unreachable`: an unreachable host is still told `UNREACHABLE!` (then `...ignoring`)
/// and counted ok and ignored, and a role it could not run is run for it again where the play
/// names it again, while a host that ran it is not (ansible-core marks a role run on a host
/// only for results that are not unreachable or skipped). ansible-playbook 2.19.4 prints the
/// same lines and recap for this playbook (port 1 of 127.0.0.1 refuses the connection).
#[test]
fn an_ignored_unreachable_host_is_told_unreachable_and_runs_its_role_again() {
    let book = "- hosts: all\n  gather_facts: false\n  ignore_unreachable: true\n  roles:\n\
                \x20   - probe\n    - probe\n";
    let out = Test::new()
        .write(
            "hosts",
            "down ansible_host=127.0.0.1 ansible_port=1 ansible_user=nobody\n\
             up ansible_connection=local\n",
        )
        .write(
            "roles/probe/tasks/main.yml",
            "- ping:\n    data: reachable\n",
        )
        .write("p.yml", book)
        .args(["playbook", "-i", "hosts", "p.yml"])
        .succeeds()
        .partial_output("the connection error's wording and the timing are not compared")
        .stdout();
    // Hosts are told in the order they finish.
    let mut told: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("ok: [") || l.starts_with("fatal: ["))
        .map(|l| l.split(" =>").next().unwrap_or(l))
        .collect();
    told.sort();
    assert_eq!(
        told,
        [
            "fatal: [down]: UNREACHABLE!",
            "fatal: [down]: UNREACHABLE!",
            "ok: [up]"
        ],
        "{out}"
    );
    assert!(
        out.contains("down                 : ok=2    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=2"),
        "{out}"
    );
}

/// A source that is neither a file, a folder nor a host list is warned of and skipped, as
/// ansible-playbook 2.19.4 does (`InventoryManager.parse_source`): the run goes on with the
/// other sources, or the implicit localhost alone; `[inventory] unparsed_is_failed` and
/// `any_unparsed_is_failed` make it an error. Each expectation is ansible-playbook's output
/// for the same files.
#[test]
fn a_missing_inventory_source_is_warned_of_and_skipped() {
    let book = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=x\n";
    let missing = "[WARNING]: Unable to parse [DIR]/nowhere.ini as an inventory source\n";
    let out = Test::new()
        .write("t.yml", book)
        .write("hosts.ini", "h1 ansible_connection=local\n")
        .args(["playbook", "-i", "nowhere.ini", "-i", "hosts.ini", "t.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about")
        .stderr_is(missing)
        .stdout();
    assert!(out.contains("ok: [h1]"), "{out}");
    Test::new()
        .write("t.yml", book)
        .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "true")
        .args(["playbook", "-i", "nowhere.ini", "t.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about")
        .stderr_is(&format!(
            "{missing}[WARNING]: No inventory was parsed, only implicit localhost is available\n"
        ));
    Test::new()
        .write("t.yml", book)
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
        .args(["playbook", "-i", "nowhere.ini", "t.yml"])
        .fails_with(1)
        .stdout_is("")
        .stderr_is(&format!(
            "{missing}error: No inventory was parsed, please check your configuration and options.\n"
        ));
}

/// The implicit localhost reads `host_vars/localhost` and `group_vars/all` beside the playbook,
/// as ansible-playbook 2.19.4 reads them for it (`1 2` there for this playbook), and has the
/// controller's Python as its `ansible_python_interpreter` (`_create_implicit_localhost`).
#[test]
fn the_implicit_localhost_reads_host_vars_beside_the_playbook() {
    let book = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - debug: msg=\"{{ a | default('none') }} {{ b | default('none') }}\"\n\
                \x20   - assert:\n        that: ansible_python_interpreter is search('python')\n";
    let out = Test::new()
        .write("p.yml", book)
        .write("host_vars/localhost", "a: 1\n")
        .write("group_vars/all.yml", "b: 2\n")
        .args(["playbook", "p.yml"])
        .succeeds()
        .partial_output("the recap and timing are not what this test is about")
        .stdout();
    assert!(out.contains("\"msg\": \"1 2\""), "{out}");
    assert!(out.contains("ok=2 "), "{out}");
}

/// A play's `run_once` does not reach its fact gathering: every host gathers its own facts
/// (ansible-core's setup block sets `run_once = False`; issue 39453). ansible-playbook 2.19.4
/// prints `True True` for this playbook.
#[test]
fn a_run_once_play_still_gathers_every_hosts_facts() {
    let book = "- hosts: all\n  run_once: true\n  tasks:\n\
                \x20   - debug: msg=\"{{ hostvars.h1.ansible_system is defined }} {{ hostvars.h2.ansible_system is defined }}\"\n";
    let out = Test::new()
        .write("p.yml", book)
        .write(
            "hosts",
            "h1 ansible_connection=local\nh2 ansible_connection=local\n",
        )
        .args(["playbook", "-i", "hosts", "p.yml"])
        .succeeds()
        .partial_output("gathering's result lines come in the order the hosts finish")
        .stdout();
    assert!(out.contains("\"msg\": \"True True\""), "{out}");
}

/// `cmd` as ansible-core's command module reports it: the argument list for `command` (also
/// with `argv`, words unexpanded, and for a fire-and-forget job read by `async_status`), the
/// text for `shell`; a command that did not run (check mode, `creates`) still has its `cmd`,
/// `rc` 0, empty output and `start`/`end`/`delta` null. ansible-playbook 2.19.4 passes the
/// same assertions on this playbook (kinit reported the text of its own wrapper script).
#[test]
fn command_results_report_cmd_as_ansible_does() {
    let book = r#"- hosts: localhost
  gather_facts: false
  tasks:
    - command: echo "a b" c
      check_mode: true
      register: a
    - command: echo x
      args: {creates: /}
      register: b
    - shell: echo x
      check_mode: true
      register: d
    - command:
        argv: [echo, '$HOME']
      register: e
    - command: echo moo
      async: 10
      poll: 0
      register: f
    - async_status: {jid: "{{ f.ansible_job_id }}"}
      register: s
      until: s is finished
      retries: 20
      delay: 1
    - assert:
        that:
          - a.cmd == ['echo', 'a b', 'c']
          - a.start is none and a.end is none and a.delta is none
          - a.stdout == '' and a.stderr_lines == [] and a.rc == 0 and a is skipped
          - b.cmd == ['echo', 'x'] and b.stdout == 'skipped, since / exists' and b.start is none
          - d.cmd == 'echo x' and d.stdout == '' and d.delta is none
          - e.cmd == ['echo', '$HOME'] and e.stdout == lookup('env', 'HOME')
          - s.cmd == ['echo', 'moo'] and s.stdout == 'moo'
"#;
    let out = Test::new()
        .write("p.yml", book)
        .args(["playbook", "p.yml"])
        .succeeds()
        .partial_output("the assertions are the test; retries of async_status depend on timing")
        .stdout();
    assert!(
        out.contains("ok=5    changed=3    unreachable=0    failed=0    skipped=2"),
        "{out}"
    );
    assert!(out.contains("All assertions passed"), "{out}");
}

/// An `async` task with `poll` says how it is getting on as ansible-playbook does: an `ASYNC
/// POLL` line each `poll` seconds it is still running, then `ASYNC OK` (or `ASYNC FAILED`)
/// with the job id its result carries, before the result line. ansible-playbook 2.19.4 prints
/// these lines for the same playbook (two polls for a three-second job at `poll: 1`; how many
/// depends on timing, so the test counts at least one).
#[test]
fn polled_async_tasks_print_async_poll_and_ok_lines() {
    let book = "- hosts: localhost\n  gather_facts: false\n  tasks:\n\
                \x20   - command: sleep 3\n      async: 10\n      poll: 1\n      register: r\n\
                \x20   - command: 'false'\n      async: 10\n      poll: 1\n      ignore_errors: true\n\
                \x20   - debug: msg=jid={{ r.ansible_job_id }}\n";
    let out = Test::new()
        .write("p.yml", book)
        .args(["playbook", "p.yml"])
        .succeeds()
        .partial_output("job ids are random and the number of polls depends on timing")
        .stdout();
    let jid = out
        .split("\"msg\": \"jid=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no job id in:\n{out}"));
    let first = out.split("TASK [command]").nth(1).unwrap_or_default();
    let polls = first
        .matches(&format!(
            "ASYNC POLL on localhost: jid={jid} started=True finished=False\n"
        ))
        .count();
    assert!(polls >= 1, "{out}");
    assert!(
        first.contains(&format!(
            "ASYNC OK on localhost: jid={jid}\nchanged: [localhost]"
        )),
        "{out}"
    );
    assert!(out.contains("ASYNC FAILED on localhost: jid=j"), "{out}");
}

/// Keywords are rendered per host and per loop item, as ansible-core's task executor
/// post-validates the task for each (`ignore_errors: "{{ fail_ok }}"` differs by host,
/// `no_log: "{{ item.secret }}"` by item; kinit rendered them once, with the first host's
/// variables, and refused `become: "{{ item }}"`). Also as ansible-playbook 2.19.4 prints them
/// for this playbook: `ansible_facts` is defined and empty before facts are gathered, an item
/// is labelled with Python's `str()` of it, a censored item `(censored due to no_log)`, and a
/// censored `debug` shows no body below `-v`.
#[test]
fn keywords_render_per_host_and_item_and_items_are_labelled_as_ansible_does() {
    let book = r#"- hosts: a,b
  gather_facts: false
  tasks:
    - debug: msg="{{ ansible_facts == {} }}"
    - command: "false"
      ignore_errors: "{{ fail_ok }}"
    - command: "echo {{ item.n }}"
      no_log: "{{ item.secret }}"
      loop: [{n: shown, secret: false}, {n: hidden, secret: true}]
    - command: "echo {{ item }}"
      become: "{{ item }}"
      loop: [false]
    - debug: msg=x
      no_log: true
      loop: [1.5]
"#;
    let out = Test::new()
        .write(
            "hosts",
            "a ansible_connection=local fail_ok=true\nb ansible_connection=local fail_ok=false\n",
        )
        .write("p.yml", book)
        .args(["playbook", "-i", "hosts", "p.yml"])
        .fails_with(2)
        .partial_output("the failures' details and the timing are not what this test is about")
        .stdout();
    for line in [
        "ok: [a] => {\n    \"msg\": true\n}\nok: [b] => {\n    \"msg\": true\n}",
        "changed: [a] => (item={'n': 'shown', 'secret': False})\n\
         changed: [a] => (item=(censored due to no_log))\n",
        "changed: [a] => (item=False)\n",
        "ok: [a] => (item=(censored due to no_log))\n\nPLAY RECAP",
        "a                    : ok=5    changed=3    unreachable=0    failed=0    skipped=0    rescued=0    ignored=1",
        "b                    : ok=1    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    assert_eq!(out.matches("...ignoring").count(), 1, "{out}");
}

/// `set_stats` returns `ansible_stats`, and with `show_custom_stats` the run ends with
/// ansible-playbook's CUSTOM STATS: each host's (`per_host`), then the run's, added up across
/// tasks and hosts (mappings merged, numbers summed, texts and lists joined) unless
/// `aggregate: no` replaces a value. ansible-playbook 2.19.4 prints the same three lines for
/// this playbook (`ANSIBLE_SHOW_CUSTOM_STATS=yes`); a `data` that is no mapping fails in its
/// words.
#[test]
fn set_stats_adds_up_custom_stats_shown_after_the_recap() {
    let book = r#"- hosts: a,b
  gather_facts: false
  tasks:
    - set_stats:
        data: {my_int: 10, l: [1], d: {x: 1}, s: "ab"}
      register: r
    - set_stats:
        data: {my_int: 15, l: [2], d: {y: 2}, s: "cd", f: 1.5}
    - set_stats:
        data: {ph: "{{ inventory_hostname }}"}
        per_host: yes
    - set_stats:
        data: {my_int: 1.5, other: 1}
        aggregate: no
      when: inventory_hostname == 'b'
    - assert:
        that:
          - "r.ansible_stats == {'data': {'my_int': 10, 'l': [1], 'd': {'x': 1}, 's': 'ab'}, 'per_host': false, 'aggregate': true}"
          - r is not changed
    - set_stats:
        data: "{{ [1] }}"
      ignore_errors: true
      register: bad
    - assert:
        that: bad.msg == "The 'data' option needs to be a dictionary/hash"
"#;
    let out = Test::new()
        .write(
            "hosts",
            "a ansible_connection=local\nb ansible_connection=local\n",
        )
        .write("p.yml", book)
        .env("ANSIBLE_SHOW_CUSTOM_STATS", "yes")
        .args(["playbook", "-i", "hosts", "p.yml"])
        .succeeds()
        .partial_output("the tasks' lines and the timing are not what this test is about")
        .stdout();
    assert!(
        out.contains(
            "CUSTOM STATS:\n\ta: { \"ph\": \"a\"}\n\tb: { \"ph\": \"b\"}\n\n\tRUN: { \"d\": {  \"x\": 1,  \
             \"y\": 2 }, \"f\": 3.0, \"l\": [  1,  1,  2,  2 ], \"my_int\": 1.5, \"other\": 1, \
             \"s\": \"ababcdcd\"}\n"
        ),
        "{out}"
    );
}

/// Words that are not `key=value` in a module's free-form arguments are its `_raw_params`, as
/// ansible-core's `parse_kv` keeps them: the playbook loads, a module or action that takes
/// none fails where a host reaches it, in ansible-core's words, and `set_fact` (which takes
/// them) sets `_raw_params`. kinit refused the whole playbook at load time, so a handler
/// written `debug: msg=handler ran` stopped runs that never notified it. ansible-playbook
/// 2.19.4 gives the same results for this playbook.
#[test]
fn stray_free_form_words_fail_only_the_task_that_runs_them() {
    let book = "- hosts: localhost\n  gather_facts: false\n  handlers:\n\
                \x20   - name: never\n      debug: msg=handler never ran\n  tasks:\n\
                \x20   - file: path=x state=touch extra words\n      ignore_errors: true\n      register: f\n\
                \x20   - debug: msg=hello there\n      ignore_errors: true\n      register: d\n\
                \x20   - set_fact: a=1 b\n\
                \x20   - assert:\n        that:\n\
                \x20         - f.msg is search(\"^Task failed. Action 'ansible.builtin.file' does not support raw params[.]$\")\n\
                \x20         - d.msg is search(\"^Task failed. Action 'ansible.builtin.debug' does not support raw params[.]$\")\n\
                \x20         - a == '1' and _raw_params == 'b'\n";
    let ran = Test::new()
        .write("p.yml", book)
        .args(["playbook", "p.yml"])
        .succeeds()
        .partial_output("the two failures' origins and the timing are not what this test is about");
    let out = ran.stdout();
    assert!(
        out.contains(
            "ok=4    changed=0    unreachable=0    failed=0    skipped=0    rescued=0    ignored=2"
        ),
        "{out}"
    );
    assert!(
        !ran.dir.join("x").exists(),
        "the file task must not have run"
    );
}

/// A loop's failure is told by its items alone, as ansible-playbook 2.19.4's default callback
/// tells it (`_process_items`); only a `debug` loop, whose `results` the callback's
/// `_clean_results` drops, ends with `fatal: ... One or more items failed`.
#[test]
fn a_failed_loop_gets_no_summary_line_but_a_failed_debug_loop_does() {
    let run = |task: &str| {
        Test::new()
            .write(
                "p.yml",
                &format!("- hosts: localhost\n  gather_facts: false\n  tasks:\n{task}"),
            )
            .args(["playbook", "p.yml"])
            .fails_with(2)
            .partial_output("the error block is not what this test is about")
            .stdout()
    };
    let out = run("    - shell: exit {{ item }}\n      loop: [0, 1]\n");
    assert!(
        out.contains("failed: [localhost] (item=1) => non-zero return code"),
        "{out}"
    );
    assert!(!out.contains("One or more items failed"), "{out}");
    let out = run("    - debug: msg={{ item.x }}\n      loop: [1]\n");
    assert!(out.contains("failed: [localhost] (item=1) => "), "{out}");
    assert!(
        out.contains("fatal: [localhost]: FAILED! => One or more items failed"),
        "{out}"
    );
}
