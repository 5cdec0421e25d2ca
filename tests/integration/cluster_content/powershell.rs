//! Every PowerShell script kinit ships or renders parses without errors (tree-sitter's
//! PowerShell grammar), and the start.ps1 command line only passes parameters the script
//! declares, including every mandatory one. No Windows host can run them here.

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser, Tree};

use super::fixture::{Compute, backends, context, inventory, read};
use super::network::start_ps1_args;

pub(super) fn parse(source: &str) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_powershell::LANGUAGE.into())
        .unwrap();
    parser.parse(source, None).unwrap()
}

/// Line/column and text of every syntax error in `tree`.
pub(super) fn errors(tree: &Tree, source: &str) -> Vec<String> {
    fn walk(node: Node<'_>, source: &str, out: &mut Vec<String>) {
        if node.is_error() || node.is_missing() {
            let p = node.start_position();
            let text: String = source[node.byte_range()].chars().take(60).collect();
            out.push(format!(
                "{}:{}: {} `{text}`",
                p.row + 1,
                p.column + 1,
                node.kind()
            ));
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            walk(child, source, out);
        }
    }
    let mut out = Vec::new();
    walk(tree.root_node(), source, &mut out);
    out
}

/// Parameter names declared by the script's param block, and which are mandatory.
fn parameters(tree: &Tree, source: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let root = tree.root_node();
    let mut cursor = root.walk();
    let block = root
        .children(&mut cursor)
        .find(|n| n.kind() == "param_block")
        .expect("start.ps1 has a param block");
    let (mut all, mut mandatory) = (BTreeSet::new(), BTreeSet::new());
    fn collect(
        node: Node<'_>,
        source: &str,
        all: &mut BTreeSet<String>,
        mandatory: &mut BTreeSet<String>,
    ) {
        if node.kind() == "script_parameter" {
            let text = &source[node.byte_range()];
            let mut c = node.walk();
            let var = node
                .children(&mut c)
                .find(|n| n.kind() == "variable")
                .expect("parameter variable");
            let name = source[var.byte_range()].trim_start_matches('$').to_string();
            if text.contains("Mandatory = $true") {
                mandatory.insert(name.clone());
            }
            all.insert(name);
            return;
        }
        let mut c = node.walk();
        for child in node.children(&mut c) {
            collect(child, source, all, mandatory);
        }
    }
    collect(block, source, &mut all, &mut mandatory);
    (all, mandatory)
}

#[test]
fn tree_sitter_reports_errors_in_broken_powershell() {
    // The check below is only worth something if the parser does flag bad scripts.
    let bad = "param([string]$A\nif ($A -eq { Write-Output \"x\" \n";
    assert!(!errors(&parse(bad), bad).is_empty());
}

#[test]
fn start_ps1_parses() {
    let source = read("roles/kinit_windows_node/files/start.ps1");
    let tree = parse(&source);
    assert_eq!(errors(&tree, &source), Vec::<String>::new());
    let (params, mandatory) = parameters(&tree, &source);
    for p in [
        "ManagementIP",
        "ClusterCIDR",
        "ServiceCIDR",
        "KubeDnsServiceIP",
        "NetworkMode",
        "KubernetesVersion",
    ] {
        assert!(params.contains(p), "start.ps1 lacks -{p}: {params:?}");
    }
    // The digests of the downloads that publish none are mandatory too (no default pin
    // lives in the script; the role passes them).
    assert_eq!(
        mandatory,
        BTreeSet::from(
            [
                "ManagementIP",
                "KubernetesVersion",
                "NssmSha256",
                "WindowsCniSha256",
                "FlanneldSha256",
                "FlannelCniSha256",
            ]
            .map(String::from)
        )
    );
}

#[test]
fn start_ps1_command_line_parses_and_matches_the_param_block() {
    let source = read("roles/kinit_windows_node/files/start.ps1");
    let (params, mandatory) = parameters(&parse(&source), &source);
    let inv = inventory(Compute::Windows);
    for (_, mut extra) in backends() {
        // The digests the role requires (its first task stops the play without them).
        extra["windows_flanneld_sha256"] = "1".repeat(64).into();
        extra["flannel_cni_plugin_sha256"] = "2".repeat(64).into();
        let vars = context(&inv, "compute-01", "kinit_windows_node", &extra);
        let (line, args) = start_ps1_args(&vars);
        assert_eq!(errors(&parse(&line), &line), Vec::<String>::new(), "{line}");
        for name in args.keys() {
            assert!(params.contains(name), "start.ps1 declares no -{name}");
        }
        for name in &mandatory {
            assert!(
                args.contains_key(name),
                "mandatory -{name} missing from {line}"
            );
        }
    }
}
