//! What a user sees when kinit refuses its input: the `error:` line and its `caused by:`
//! chain, for each kind of bad input, compared whole with a snapshot. Every message must
//! name the value, what was expected and where (file:line for YAML); a change of wording
//! shows up here for review.

use crate::support::Test;

/// A command line and the files it needs, run in a scratch folder.
struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    args: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "playbook file missing",
        files: &[],
        args: &["playbook", "missing.yml"],
    },
    Case {
        name: "playbook YAML broken",
        files: &[(
            "site.yml",
            "- hosts: all\n  tasks:\n    - debug: msg=hi\n   - ping:\n",
        )],
        args: &["playbook", "site.yml"],
    },
    Case {
        name: "module misspelt",
        files: &[(
            "site.yml",
            "- hosts: localhost\n  tasks:\n    - cpoy:\n        src: a\n        dest: /tmp/b\n",
        )],
        args: &["playbook", "site.yml"],
    },
    Case {
        name: "meta action misspelt",
        files: &[(
            "site.yml",
            "- hosts: localhost\n  tasks:\n    - meta: end_plays\n",
        )],
        args: &["playbook", "site.yml"],
    },
    Case {
        name: "inventory missing",
        files: &[
            ("site.yml", "- hosts: all\n  tasks: []\n"),
            (
                "ansible.cfg",
                "[inventory]\nany_unparsed_is_failed = true\n",
            ),
        ],
        args: &["playbook", "-i", "nowhere.ini", "site.yml"],
    },
    Case {
        name: "extra vars file missing",
        files: &[("site.yml", "- hosts: all\n  tasks: []\n")],
        args: &["playbook", "-e", "@nowhere.yml", "site.yml"],
    },
    Case {
        name: "ansible.cfg value bad",
        files: &[
            ("site.yml", "- hosts: all\n  tasks: []\n"),
            ("ansible.cfg", "[defaults]\nforks = many\n"),
        ],
        args: &["playbook", "site.yml"],
    },
    Case {
        name: "forks zero",
        files: &[("site.yml", "- hosts: all\n  tasks: []\n")],
        args: &["playbook", "--forks", "0", "site.yml"],
    },
    Case {
        name: "spec short",
        files: &[],
        args: &["plan", "--spec", "k8s-libvirt-1-1"],
    },
    Case {
        name: "phase unknown",
        files: &[],
        args: &[
            "run",
            "--spec",
            "k8s-libvirt-1-1-1",
            "--stop-after",
            "deploy-clusters",
        ],
    },
];

#[test]
fn error_chains_snapshot() {
    let mut shown = String::new();
    for case in CASES {
        let mut t = Test::new();
        for (path, text) in case.files {
            t = t.write(path, text);
        }
        let dir = t.path().display().to_string();
        let ran = t
            .args(case.args.iter().copied())
            .run()
            .stdout_is("")
            .partial_output(
                "stderr is compared whole below, in the error_chains snapshot of every case",
            );
        let code = ran.output.status.code();
        assert!(
            matches!(code, Some(c) if c != 0),
            "{}: bad input must fail, got {code:?}",
            case.name
        );
        let stderr = ran.stderr().replace(&dir, "[dir]");
        assert!(
            stderr.contains("error: "),
            "{}: no error line:\n{stderr}",
            case.name
        );
        shown.push_str(&format!(
            "## {} (kinit {}) exit {}\n{stderr}\n",
            case.name,
            case.args.join(" "),
            code.unwrap_or(-1)
        ));
    }
    insta::assert_snapshot!("error_chains", shown);
}
