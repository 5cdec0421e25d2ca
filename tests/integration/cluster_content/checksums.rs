//! Supply chain: every download the deployment makes is pinned to a checksum. Checked on the
//! repository's files: each `*_url` variable of the role defaults and playbook variables has
//! its checksum variable beside it (`*_checksum` or `*_sha256`; a `url:` inside a mapping has
//! a `checksum:` beside it), every `get_url` task passes `checksum:`, and every download of
//! start.ps1 (`Get-Download`, parsed with the PowerShell grammar) passes `-Sha256`.

use serde_json::Value;

use super::fixture::{files_under, read, yaml};
use super::powershell::parse;

/// Variable files that name download URLs.
fn variable_files() -> Vec<String> {
    let mut files = files_under("roles", "defaults/main.yml");
    files.extend(files_under("playbooks/vars", ".yml"));
    files
}

/// `*_url` variables (and `url:` keys in mappings) without a checksum beside them.
fn unpinned(vars: &serde_json::Map<String, Value>, all: &[String], path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in vars {
        if let Some(prefix) = name.strip_suffix("_url") {
            let pinned = [format!("{prefix}_checksum"), format!("{prefix}_sha256")]
                .iter()
                .any(|c| all.contains(c));
            if !pinned {
                out.push(format!("{path}{name}"));
            }
        }
        if name == "url" && !vars.contains_key("checksum") {
            out.push(format!("{path}{name}"));
        }
        if let Value::Object(inner) = value {
            out.extend(unpinned(inner, all, &format!("{path}{name}.")));
        }
    }
    out
}

#[test]
fn every_download_url_variable_has_a_checksum_variable() {
    let mut all = Vec::new();
    let mut maps = Vec::new();
    for f in variable_files() {
        if let Value::Object(m) = yaml(&f) {
            all.extend(m.keys().cloned());
            maps.push((f, m));
        }
    }
    let mut missing = Vec::new();
    let mut urls = 0;
    for (f, m) in &maps {
        urls += m.keys().filter(|k| k.ends_with("_url")).count();
        missing.extend(
            unpinned(m, &all, "")
                .into_iter()
                .map(|v| format!("{f}: {v}")),
        );
    }
    assert!(
        urls >= 4,
        "the ISO, virtio, nssm and flannel manifest URLs are seen"
    );
    assert!(
        missing.is_empty(),
        "download URLs without a checksum: {missing:#?}"
    );
    // The lint itself: an unpinned URL is caught.
    let bad = serde_json::json!({"x_url": "https://e/x", "imgs": {"a": {"url": "https://e/a"}}});
    assert_eq!(
        unpinned(bad.as_object().unwrap(), &[], ""),
        ["x_url", "imgs.a.url"]
    );
}

/// `get_url` tasks not pinned yet, each with its reason (outside the Windows path this
/// check was written for; listed so that no new one goes unnoticed).
const UNPINNED_GET_URL: &[&str] = &[
    // The Linux nodes' apt repository keys (Docker's, and pkgs.k8s.io's, one per minor
    // release): the keys apt checks the packages with. Pinning them is the Linux path's own
    // supply-chain change.
    "Docker repository key (containerd.io)",
    "Kubernetes repository key (pkgs.k8s.io, one repository per minor release)",
];

#[test]
fn every_get_url_task_passes_a_checksum() {
    let mut seen = 0;
    for f in files_under("roles", ".yml") {
        if !f.contains("/tasks/") {
            continue;
        }
        let Value::Array(tasks) = yaml(&f) else {
            continue;
        };
        for t in tasks {
            if let Some(args) = t.get("get_url") {
                if UNPINNED_GET_URL.contains(&t["name"].as_str().unwrap_or_default()) {
                    continue;
                }
                seen += 1;
                assert!(
                    args.get("checksum").is_some(),
                    "{f}: `{}` downloads without a checksum",
                    t["name"]
                );
            }
        }
    }
    assert!(seen >= 3, "the images, ISOs and flannel manifest downloads");
}

/// Every `Get-Download` call in `source`: (line, passes `-Sha256`).
fn get_download_calls(source: &str) -> Vec<(usize, bool)> {
    let tree = parse(source);
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
        if node.kind() != "command" {
            continue;
        }
        let name = node
            .child_by_field_name("command_name")
            .and_then(|n| n.utf8_text(source.as_bytes()).ok())
            .unwrap_or_default();
        if !name.eq_ignore_ascii_case("Get-Download") {
            continue;
        }
        let text = node.utf8_text(source.as_bytes()).unwrap_or_default();
        let sha = text
            .split_whitespace()
            .any(|w| w.eq_ignore_ascii_case("-Sha256"));
        out.push((node.start_position().row + 1, sha));
    }
    out.sort();
    out
}

#[test]
fn every_download_of_start_ps1_passes_a_sha256() {
    let source = read("roles/kinit_windows_node/files/start.ps1");
    let calls = get_download_calls(&source);
    // containerd, kubelet/kubeadm/kube-proxy/kubectl (one loop), flanneld, the three CNI
    // archives, nssm.
    assert_eq!(calls.len(), 7, "{calls:?}");
    let unpinned: Vec<usize> = calls.iter().filter(|c| !c.1).map(|c| c.0).collect();
    assert!(
        unpinned.is_empty(),
        "Get-Download without -Sha256 at lines {unpinned:?}"
    );
    // The check sees a call without it.
    let bad = "if (Get-Download $u $d) { }\nGet-Download $u $d -Sha256 $s\n";
    assert_eq!(get_download_calls(bad), [(1, false), (2, true)]);
    // The function checks the hash before the file is moved into place, and says so.
    let body = &source[source.find("function Get-Download").unwrap()..];
    let body = &body[..body.find("\n}\n").unwrap()];
    let hash = body
        .find("Get-FileHash -Algorithm SHA256")
        .expect("hashes the download");
    let moved = body.find("Move-Item").unwrap();
    assert!(hash < moved, "{body}");
    assert!(
        body.contains(
            "throw \"checksum of $Url is $actual, expected $($expected.ToLowerInvariant())\""
        ),
        "{body}"
    );
    assert!(body.contains("[Parameter(Mandatory = $true)][string]$Sha256"));
}

/// `role` of the repository run by the real `kinit playbook` on this machine (`local`), with
/// the repository's variables, a scratch `kinit_config_dir` and `-e` values `extra`.
fn role_on_localhost(role: &str, extra: &[&str]) -> crate::support::Ran {
    let test = crate::support::Test::new();
    let repo = super::fixture::repo();
    std::os::unix::fs::symlink(repo.join("roles"), test.path().join("roles")).unwrap();
    std::os::unix::fs::symlink(repo.join("playbooks/vars"), test.path().join("vars")).unwrap();
    let config = test.path().join("config").display().to_string();
    let mut test = test
        .write(
            "site.yml",
            &format!(
                "- hosts: localhost\n  gather_facts: false\n  vars_files: [vars/cluster.yml]\n\
                 \x20 roles: [{role}]\n"
            ),
        )
        .write(
            "hosts.yml",
            "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n",
        )
        .args(["playbook", "site.yml", "-i", "hosts.yml", "-e"])
        .args([format!("kinit_config_dir={config}")]);
    for e in extra {
        test = test.args(["-e", e]);
    }
    test.run().snapshot()
}

/// A digest no upstream publishes and kinit could not pin: unset, the download goes ahead
/// unverified after a warning naming it; with `kinit_require_pinned_downloads` the role stops
/// at its first task, naming the variable, the file and how to pin it, and nothing is
/// downloaded. Run by the real `kinit playbook` on this machine (`local`), with the
/// repository's roles and variables.
#[test]
fn unset_digests_warn_by_default_and_stop_the_play_when_pins_are_required() {
    // Without `kinit_require_pinned_downloads`, the manifest is fetched unverified after a
    // warning that names it (the URL points at a closed local port: the download fails at
    // once, and the warning came first).
    let ran = role_on_localhost(
        "kinit_network",
        &["flannel_manifest_url=http://127.0.0.1:9/kube-flannel.yml"],
    );
    let out = ran.stdout();
    let warned = out
        .find("WARNING: http://127.0.0.1:9/kube-flannel.yml is downloaded without a checksum")
        .unwrap_or_else(|| panic!("no warning: {out}"));
    let tried = out
        .find("Upstream flannel manifest")
        .unwrap_or_else(|| panic!("no download: {out}"));
    assert!(warned < tried, "{out}");
    assert!(!out.contains("is not set"), "{out}");

    // With pins required, the play stops at its first task instead.
    let ran = role_on_localhost("kinit_network", &["kinit_require_pinned_downloads=true"]);
    let out = ran.stdout();
    assert_eq!(ran.output.status.code(), Some(2), "{out}");
    assert!(
        out.contains(
            "flannel_manifest_checksum is not set: flannel publishes no digest for \
             https://github.com/flannel-io/flannel/releases/download/v0.27.4/kube-flannel.yml"
        ),
        "{out}"
    );
    assert!(
        !out.contains("Upstream flannel manifest"),
        "nothing downloaded: {out}"
    );

    // The Windows worker's pinned downloads, on their own.
    let ran = role_on_localhost(
        "kinit_windows_node",
        &[
            "windows_flanneld_sha256=abc",
            "kinit_require_pinned_downloads=true",
        ],
    );
    let out = ran.stdout();
    assert_eq!(ran.output.status.code(), Some(2), "{out}");
    assert!(
        out.contains(
            "flannel_cni_plugin_sha256 is not set: https://github.com/flannel-io/cni-plugin/\
             releases/download/v1.7.1-flannel2/cni-plugin-flannel-windows-amd64-v1.7.1-flannel2.tgz \
             has no published checksum"
        ),
        "{out}"
    );
    assert!(!out.contains("windows_flanneld_sha256 is not set"), "{out}");
    assert!(
        !out.contains("Containers feature"),
        "the play stopped first: {out}"
    );
}
