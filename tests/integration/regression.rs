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
