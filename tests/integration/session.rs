//! One session per command: the phases of `kinit run` (and the playbooks of one `kinit
//! playbook`) share their connections, facts, `set_fact` values and `add_host` hosts, as one
//! ansible-playbook run does. Checked against a real sshd hypervisor whose log counts logins.

use crate::fixtures::sshd::SshLab;
use crate::support::{Test, this_host_name};

/// A `site.yml` with two phases: the first gathers facts, sets a fact and adds a host; the
/// second (a later phase, with fact gathering off) reads all three.
const SITE: &str = r#"
- name: gather-facts
  hosts: hypervisors
  tags: [gather-facts]
  gather_facts: true
  tasks:
    - set_fact:
        phase_one_value: "seen-{{ ansible_facts.hostname }}"
    - add_host:
        name: added-in-phase-one
        groups: added
        marker: from-phase-one
- name: prepare-hypervisors
  hosts: hypervisors
  tags: [prepare-hypervisors]
  gather_facts: false
  tasks:
    - name: facts and set_fact of phase one
      assert:
        that:
          - ansible_facts.hostname is defined
          - phase_one_value == 'seen-' ~ ansible_facts.hostname
    - name: add_host of phase one
      assert:
        that:
          - groups['added'] == ['added-in-phase-one']
          - hostvars['added-in-phase-one'].marker == 'from-phase-one'
    - name: a command over the same connection
      command: echo {{ phase_one_value }}
      register: echoed
    - debug:
        msg: "phase two read {{ echoed.stdout }}"
"#;

#[test]
fn run_phases_share_facts_set_fact_add_host_and_one_login() {
    let lab = SshLab::new(1);
    let hv = &lab.hosts[0];
    let test = Test::new().write("playbooks/site.yml", SITE).write(
        ".home/.ssh/known_hosts",
        &std::fs::read_to_string(&lab.known_hosts).unwrap(),
    );
    let home = test.path().join(".home");
    std::fs::copy(&lab.client_key, home.join(".ssh/id_ed25519")).unwrap();
    let playbooks = test.path().join("playbooks").display().to_string();
    let hosts_spec = format!(
        "[[ansible_host={},ssh_port={},ssh_user={}]]",
        hv.address, hv.port, lab.user
    );
    let ran = test
        .env("HOME", home.to_str().unwrap())
        .env("SSH_AUTH_SOCK", "")
        .args(["run", "--spec", "k8s-libvirt-1-1-1", "--playbook-dir"])
        .args([playbooks.as_str(), "--stop-after", "prepare-hypervisors"])
        .args(["--hypervisor-hosts-spec", hosts_spec.as_str()])
        .succeeds()
        .redact(format!("seen-{}", this_host_name()), "seen-[HOSTNAME]")
        .snapshot();
    let out = ran.stdout();
    assert!(out.contains("phase two read seen-"), "{out}");
    assert!(
        out.contains("prepare-hypervisors") && out.contains("gather-facts"),
        "{out}"
    );
    assert_eq!(
        hv.accepted_logins(),
        1,
        "one login for the whole run, both phases:\n{}",
        hv.log()
    );
}

/// Two playbooks on one command line: the second sees the first's `set_fact` and reuses its
/// connection.
#[test]
fn playbooks_of_one_command_share_state_and_connection() {
    let lab = SshLab::new(1);
    let hv = &lab.hosts[0];
    let inventory = format!(
        "h ansible_host={} ansible_port={} ansible_user={} ansible_ssh_private_key_file={}\n",
        hv.address,
        hv.port,
        lab.user,
        lab.client_key.display()
    );
    let test = Test::new()
        .write("hosts.ini", &inventory)
        .write(
            "one.yml",
            "- hosts: h\n  gather_facts: false\n  tasks:\n    - command: echo one\n      register: first\n",
        )
        .write(
            "two.yml",
            "- hosts: h\n  gather_facts: false\n  tasks:\n    - assert:\n        that: first.stdout == 'one'\n",
        )
        .home_knowing(&lab.known_hosts);
    test.args(["playbook", "-i", "hosts.ini", "one.yml", "two.yml"])
        .succeeds()
        .snapshot();
    assert_eq!(hv.accepted_logins(), 1, "{}", hv.log());
}
