//! `kinit playbook` end to end over SSH: the real binary, an inventory with
//! `ansible_host`/`ansible_port`/`ansible_user`/`ansible_ssh_private_key_file`, real sshd
//! hosts (one behind a jump host), and one connection per host for the whole run.

use crate::fixtures::netns::is_root;
use crate::fixtures::sshd::SshLab;
use crate::support::Test;

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
        .run();
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
