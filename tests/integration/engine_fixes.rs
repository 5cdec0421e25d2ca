//! Regression tests for playbook-engine defects, each through the real binary on the local
//! transport: fact gathering, `hostvars` in other hosts' context, unreachable hosts leaving
//! the play, and strict undefined variables.

use crate::support::Test;

const LOCAL_INV: &str = "[nodes]\nalpha ansible_connection=local\nbeta ansible_connection=local\n";

/// Facts from the implicit gathering are variables, top-level and under `ansible_facts`,
/// and a second play reuses them instead of gathering again.
#[test]
fn gather_facts_defines_ansible_distribution() {
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let id = os_release
        .lines()
        .find_map(|l| l.strip_prefix("ID="))
        .map(|v| v.trim_matches('"').to_string());
    let playbook = "- hosts: alpha\n  tasks:\n\
        \x20   - debug:\n        msg: \"dist={{ ansible_distribution }} family={{ ansible_os_family }} \
        host={{ ansible_hostname }} same={{ ansible_facts.distribution == ansible_distribution }} \
        ip={{ ansible_default_ipv4 is mapping }}\"\n\
        - hosts: alpha\n  tasks:\n\
        \x20   - assert:\n        that: ansible_facts.hostname == ansible_hostname\n";
    let ran = Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .partial_output("the debug line shows this machine's distribution and host name, which vary; the assert task checks them");
    let out = ran.stdout();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(out.contains(&format!("host={}", hostname.trim())), "{out}");
    assert!(out.contains("same=True ip=True"), "{out}");
    assert!(!out.contains("dist= "), "{out}");
    if let Some(id) = id.filter(|i| i == "debian" || i == "ubuntu") {
        let want = if id == "debian" { "Debian" } else { "Ubuntu" };
        assert!(out.contains(&format!("dist={want} family=Debian")), "{out}");
    }
    assert_eq!(out.matches("TASK [Gathering Facts]").count(), 1, "{out}");
}

/// An explicit `setup:` task stores facts like the implicit gathering does.
#[test]
fn explicit_setup_task_stores_facts() {
    let playbook = "- hosts: alpha\n  gather_facts: false\n  tasks:\n\
        \x20   - assert:\n        that: ansible_distribution is not defined\n\
        \x20   - setup:\n        filter: ansible_distribution*\n\
        \x20   - assert:\n        that:\n          - ansible_distribution is defined\n\
        \x20         - ansible_facts.distribution == ansible_distribution\n";
    Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .snapshot();
}

/// `hostvars[other].x` renders `x` with `other`'s variables, from any task (whether or not
/// it mentions `hostvars`), from inventory variables and inside `template` files.
#[test]
fn hostvars_of_other_host_render_in_that_hosts_context() {
    let inventory = "[nodes]\nalpha ansible_connection=local tier=first\n\
        beta ansible_connection=local tier=second\n\
        [nodes:vars]\ngreeting=\"hi {{ inventory_hostname }} {{ tier }}\"\n\
        peer_greeting=\"{{ hostvars['beta'].greeting }}\"\n";
    let playbook = "- hosts: alpha\n  gather_facts: false\n  tasks:\n\
        \x20   - set_fact:\n        mine: \"{{ greeting }}\"\n\
        \x20   - debug:\n        msg: \"peer={{ peer_greeting }} mine={{ mine }}\"\n\
        \x20   - template:\n        src: t.j2\n        dest: \"{{ out }}\"\n";
    let t = Test::new()
        .write("hosts.ini", inventory)
        .write("site.yml", playbook)
        .write(
            "t.j2",
            "{{ hostvars['beta'].greeting }}|{{ hostvars['alpha'].mine }}\n",
        );
    let out_file = t.path().join("rendered.txt");
    let ran = t
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .args(["-e", &format!("out={}", out_file.display())])
        .succeeds()
        .snapshot();
    let out = ran.stdout();
    assert!(
        out.contains("peer=hi beta second mine=hi alpha first"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap(),
        "hi beta second|hi alpha first\n"
    );
}

/// A host that cannot be reached is reported once for a five-item loop and leaves the
/// play: its later tasks do not run, the reachable host finishes.
#[test]
fn unreachable_host_is_not_retried_for_every_loop_item() {
    // A port nothing listens on: bound once, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let inventory = format!(
        "[nodes]\nalpha ansible_connection=local\n\
         ghost ansible_host=127.0.0.1 ansible_port={port} ansible_user=nobody\n"
    );
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n\
        \x20   - command: 'echo {{ item }}'\n      loop: [1, 2, 3, 4, 5]\n\
        \x20   - debug:\n        msg: after the loop\n";
    let ran = Test::new()
        .write("hosts.ini", &inventory)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .partial_output("alpha runs its loop while ghost's connection attempts fail: their lines interleave by timing, and ghost's port is a free one");
    let out = ran.stdout();
    // One item tried (its line) and the task's summary line; items 2 to 5 never ran.
    assert_eq!(out.matches("UNREACHABLE! => (item=").count(), 1, "{out}");
    assert_eq!(out.matches("UNREACHABLE").count(), 2, "{out}");
    assert!(!out.contains("[ghost]: UNREACHABLE! => (item=2)"), "{out}");
    assert_eq!(
        out.matches("after the loop").count(),
        1,
        "only alpha: {out}"
    );
    let recap = out
        .lines()
        .rev()
        .find(|l| l.starts_with("ghost") && l.contains("unreachable="))
        .unwrap_or_else(|| panic!("no recap for ghost: {out}"));
    assert!(recap.contains("unreachable=1"), "{recap}");
    assert_ne!(ran.output.status.code(), Some(0), "{out}");
}

/// `delegate_to` is shown rendered (`[alpha -> beta]`), not as its template.
#[test]
fn delegate_to_is_shown_rendered() {
    let playbook = "- hosts: alpha\n  gather_facts: false\n  vars:\n    target: beta\n  tasks:\n\
        \x20   - command: 'true'\n      delegate_to: \"{{ target }}\"\n";
    let ran = Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .snapshot();
    let out = ran.stdout();
    assert!(out.contains("[alpha -> beta]"), "{out}");
    assert!(!out.contains("{{ target }}"), "{out}");
}

/// `creates`/`removes` skips say what Ansible says and register empty `stderr_lines`.
#[test]
fn command_creates_removes_messages_match_ansible() {
    let playbook = "- hosts: alpha\n  gather_facts: false\n  tasks:\n\
        \x20   - command: 'false'\n      args:\n        creates: /\n      register: c\n\
        \x20   - command: 'false'\n      args:\n        removes: /nonexistent-kinit-path\n      register: r\n\
        \x20   - assert:\n        that:\n\
        \x20         - c.msg == \"Did not run command since '/' exists\"\n\
        \x20         - r.msg == \"Did not run command since '/nonexistent-kinit-path' does not exist\"\n\
        \x20         - c.stderr_lines == [] and c.stdout_lines == ['skipped, since / exists']\n\
        \x20         - c is not changed and r.rc == 0\n";
    Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("site.yml", playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .snapshot();
}

/// `vars_files` of an imported playbook resolve beside that playbook, not the top one.
#[test]
fn vars_files_resolve_beside_the_imported_playbook() {
    Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("site.yml", "- import_playbook: sub/play.yml\n")
        .write("vars.yml", "where: top\n")
        .write("sub/vars.yml", "where: sub\n")
        .write(
            "sub/play.yml",
            "- hosts: alpha\n  gather_facts: false\n  vars_files: [vars.yml]\n  tasks:\n\
             \x20   - assert:\n        that: where == 'sub'\n",
        )
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .succeeds()
        .snapshot();
}

/// `get_url` downloads `file://` URLs and checks them against a `SHA256SUMS`-style file
/// given by URL; a wrong digest in that file fails the task.
#[test]
fn get_url_file_urls_and_checksum_file_urls() {
    use sha2::Digest;
    let body = "payload for get_url\n";
    let digest = hex::encode(sha2::Sha256::digest(body.as_bytes()));
    let t = Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("src/payload.bin", body)
        .write(
            "src/SHA256SUMS",
            &format!("{}  other.bin\n{digest} *payload.bin\n", "0".repeat(64)),
        )
        .write("src/BADSUMS", &format!("{}  payload.bin\n", "1".repeat(64)));
    let src = t.path().join("src");
    let playbook = format!(
        "- hosts: alpha\n  gather_facts: false\n  tasks:\n\
         \x20   - get_url:\n        url: file://{s}/payload.bin\n        dest: {s}/copy.bin\n\
         \x20       checksum: sha256:file://{s}/SHA256SUMS\n      register: got\n\
         \x20   - assert:\n        that: got is changed\n\
         \x20   - get_url:\n        url: file://{s}/payload.bin\n        dest: {s}/bad.bin\n\
         \x20       checksum: sha256:file://{s}/BADSUMS\n",
        s = src.display()
    );
    let ran = t
        .write("site.yml", &playbook)
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .snapshot();
    let out = ran.stdout();
    assert_eq!(
        std::fs::read_to_string(src.join("copy.bin")).unwrap(),
        body,
        "{out}"
    );
    assert!(!src.join("bad.bin").exists(), "{out}");
    assert!(
        out.contains("expected `1111"),
        "the bad digest is reported: {out}"
    );
    assert_ne!(ran.output.status.code(), Some(0), "{out}");
}

/// Every item of a loop failing with a file error (an upload into a missing folder, which
/// the transport reports) fails the host; it is not reported unreachable.
#[test]
fn loop_items_all_failed_is_failed_not_unreachable() {
    let playbook = "- hosts: alpha\n  gather_facts: false\n  tasks:\n\
        \x20   - template:\n        src: t.j2\n        dest: /nonexistent-kinit-dir/{{ item }}\n\
        \x20     loop: [a, b, c]\n";
    let ran = Test::new()
        .write("hosts.ini", LOCAL_INV)
        .write("site.yml", playbook)
        .write("t.j2", "x\n")
        .args(["playbook", "site.yml", "-i", "hosts.ini"])
        .run()
        .snapshot();
    let out = ran.stdout();
    assert!(!out.contains("UNREACHABLE"), "{out}");
    assert_eq!(out.matches("failed: [alpha] (item=").count(), 3, "{out}");
    // The items tell the failure; no summary line follows, as in ansible-playbook.
    assert!(!out.contains("One or more items failed"), "{out}");
    let recap = out
        .lines()
        .rev()
        .find(|l| l.starts_with("alpha") && l.contains("failed="))
        .unwrap();
    assert!(
        recap.contains("unreachable=0") && recap.contains("failed=1"),
        "{recap}"
    );
}
