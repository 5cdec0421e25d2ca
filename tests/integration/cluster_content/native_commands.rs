//! The PowerShell the Windows node role runs calls every native program (kubeadm, kubectl,
//! nssm, containerd, tar, host-local, ...) through start.ps1's `Invoke-Native`, read from the
//! scripts' syntax trees (tree-sitter's PowerShell grammar).
//!
//! Why: Server 2022 runs the scripts in Windows PowerShell 5.1, where a native program's
//! stderr lines become error records that `$ErrorActionPreference = "Stop"` turns into the end
//! of the script (issue 18, point 3; start.ps1 cites Microsoft's documentation). `Invoke-Native`
//! runs the program with the preference at `Continue` and decides by the exit code. No Windows
//! host can run the scripts here, so this is a static audit: a command is native unless it is
//! a function the script defines or a cmdlet (`Verb-Noun` with a PowerShell verb), and every
//! use of the call operator `&` runs whatever its operand names, so it counts as native too,
//! except the few listed in [`SCRIPT_BLOCK_CALLS`].

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::fixture::{Compute, backends, context, files_under, inventory, read, task};
use super::network::start_ps1_args;
use super::powershell::{errors, parse};

/// The one function allowed to start native programs.
const WRAPPER: &str = "invoke-native";

/// Call-operator uses that run a script block, not a program: (enclosing function, operand).
const SCRIPT_BLOCK_CALLS: &[(&str, &str)] = &[("wait-until", "$Condition")];

/// Verbs of the cmdlets these scripts use (PowerShell's approved verbs, plus the
/// `Where-Object`/`ForEach-Object` pair). A `kube-proxy` or `nssm` is not among them.
const VERBS: &[&str] = &[
    "add",
    "clear",
    "compare",
    "convertfrom",
    "convertto",
    "copy",
    "disable",
    "enable",
    "expand",
    "export",
    "foreach",
    "format",
    "get",
    "import",
    "install",
    "invoke",
    "join",
    "measure",
    "move",
    "new",
    "out",
    "read",
    "register",
    "remove",
    "rename",
    "resolve",
    "restart",
    "select",
    "set",
    "sort",
    "split",
    "start",
    "stop",
    "test",
    "uninstall",
    "unregister",
    "update",
    "wait",
    "where",
    "write",
];

/// Cmdlets that run a command line themselves, so they would bypass the wrapper as well.
const RUNS_COMMAND_LINES: &[&str] = &["invoke-expression"];

fn text<'a>(node: Node<'_>, source: &'a str) -> &'a str {
    &source[node.byte_range()]
}

/// Names of the functions `source` defines, lowercased.
fn functions(node: Node<'_>, source: &str, out: &mut BTreeSet<String>) {
    if node.kind() == "function_name" {
        out.insert(text(node, source).to_ascii_lowercase());
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        functions(child, source, out);
    }
}

/// The function whose body holds `node`, lowercased.
fn enclosing_function(node: Node<'_>, source: &str) -> Option<String> {
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind() == "function_statement" {
            let mut cursor = n.walk();
            return n
                .children(&mut cursor)
                .find(|c| c.kind() == "function_name")
                .map(|c| text(c, source).to_ascii_lowercase());
        }
        at = n.parent();
    }
    None
}

fn is_cmdlet(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    match lower.split_once('-') {
        Some((verb, noun)) => {
            VERBS.contains(&verb)
                && !noun.is_empty()
                && noun.chars().all(|c| c.is_ascii_alphanumeric())
                && !RUNS_COMMAND_LINES.contains(&lower.as_str())
        }
        None => false,
    }
}

/// Every command in `source` that starts a native program outside the wrapper, as
/// `line: text`. `scripts_are_powershell`: a call operator whose operand is a quoted `.ps1`
/// path runs a PowerShell script (the role's `& 'C:\k\start.ps1' ...` line), not a program.
fn unwrapped_native_calls(source: &str, scripts_are_powershell: bool) -> Vec<String> {
    let tree = parse(source);
    let mut defined = BTreeSet::new();
    functions(tree.root_node(), source, &mut defined);
    let mut found = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
        if node.kind() != "command" {
            continue;
        }
        let within = enclosing_function(node, source);
        if within.as_deref() == Some(WRAPPER) {
            continue;
        }
        let name = node
            .child_by_field_name("command_name")
            .map(|n| text(n, source).trim())
            .unwrap_or_default();
        let mut c = node.walk();
        let call_operator = node
            .children(&mut c)
            .any(|n| n.kind() == "command_invokation_operator");
        let allowed = if call_operator {
            let script = name.trim_matches(['\'', '"']);
            SCRIPT_BLOCK_CALLS
                .iter()
                .any(|(f, operand)| within.as_deref() == Some(*f) && name == *operand)
                || (scripts_are_powershell
                    && name.starts_with(['\'', '"'])
                    && script.to_ascii_lowercase().ends_with(".ps1"))
        } else {
            defined.contains(&name.to_ascii_lowercase()) || is_cmdlet(name)
        };
        if !allowed {
            let line = node.start_position().row + 1;
            let call: String = text(node, source).chars().take(80).collect();
            found.push((line, format!("{line}: {call}")));
        }
    }
    found.sort();
    found.into_iter().map(|(_, call)| call).collect()
}

/// The `-FilePath` texts of the wrapper's calls in `source`.
fn wrapped_programs(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| Some(l.split_once("Invoke-Native -FilePath ")?.1))
        .map(|rest| rest.split_once(" -ArgumentList").map_or(rest, |(p, _)| p))
        .map(str::to_string)
        .collect()
}

#[test]
fn native_command_audit_catches_an_unwrapped_kubectl() {
    // The audit below is only worth something if it flags the call that ended start.ps1.
    let script = r#"
function Invoke-Native([string]$FilePath, [string[]]$ArgumentList) {
    $ErrorActionPreference = "Continue"
    & $FilePath @ArgumentList 2>&1
}
function Wait-Until([scriptblock]$Condition) {
    while (-not (& $Condition)) { Start-Sleep -Seconds 5 }
}
$kubectl = "C:\k\kubectl.exe"
Get-Service -Name kubelet | Out-Null
Wait-Until { (Invoke-Native -FilePath $kubectl -ArgumentList @("get", "nodes")).ExitCode -eq 0 }
kubectl get nodes 2>$null
Wait-Until { (& $kubectl get nodes 2>$null) -ne $null }
C:\k\nssm.exe set kubelet Start SERVICE_AUTO_START
kube-proxy --version
& $Condition
Invoke-Expression "C:\k\kubeadm.exe join"
"#;
    assert_eq!(
        unwrapped_native_calls(script, false),
        [
            "12: kubectl get nodes 2>$null",
            "13: & $kubectl get nodes 2>$null",
            "14: C:\\k\\nssm.exe set kubelet Start SERVICE_AUTO_START",
            "15: kube-proxy --version",
            "16: & $Condition",
            "17: Invoke-Expression \"C:\\k\\kubeadm.exe join\"",
        ]
    );
}

#[test]
fn windows_node_scripts_run_native_commands_only_through_invoke_native() {
    let scripts = files_under("roles/kinit_windows_node", ".ps1");
    assert!(
        scripts.contains(&"roles/kinit_windows_node/files/start.ps1".to_string()),
        "{scripts:?}"
    );
    for rel in &scripts {
        let source = read(rel);
        assert_eq!(
            unwrapped_native_calls(&source, false),
            Vec::<String>::new(),
            "{rel} starts these native programs outside Invoke-Native"
        );
    }

    // The wrapper is start.ps1's own, keeps "Stop" out of its scope and checks exit codes, and
    // the programs the join needs really go through it.
    let source = read("roles/kinit_windows_node/files/start.ps1");
    let mut defined = BTreeSet::new();
    functions(parse(&source).root_node(), &source, &mut defined);
    assert!(defined.contains(WRAPPER), "{defined:?}");
    let wrapper = &source[source.find("function Invoke-Native").unwrap()..];
    let wrapper = &wrapper[..wrapper.find("\n}\n").unwrap()];
    for needle in [
        "$ErrorActionPreference = \"Continue\"",
        "2>&1",
        "$global:LASTEXITCODE",
    ] {
        assert!(wrapper.contains(needle), "Invoke-Native lacks {needle}");
    }
    let programs = wrapped_programs(&source).join("\n");
    for program in [
        "$Nssm",
        "\"kubeadm.exe\"",
        "$kubectl",
        "$containerdExe",
        "\"tar.exe\"",
        "\"host-local.exe\"",
    ] {
        assert!(
            programs.contains(program),
            "{program} not run through Invoke-Native:\n{programs}"
        );
    }
}

#[test]
fn the_roles_inline_powershell_only_runs_start_ps1() {
    let inv = inventory(Compute::Windows);
    for (_, extra) in backends() {
        let vars = context(&inv, "compute-01", "kinit_windows_node", &extra);
        let (line, _) = start_ps1_args(&vars);
        assert_eq!(unwrapped_native_calls(&line, true), Vec::<String>::new());
        assert_eq!(
            unwrapped_native_calls("& 'C:\\k\\nssm.exe' restart kubelet", true),
            ["1: & 'C:\\k\\nssm.exe' restart kubelet"]
        );
    }
}

/// Regression (issue 18): nssm 2.24 prints `nssm get` as UTF-16, which Windows PowerShell reads
/// with the OEM code page, so comparing it with the wanted settings never matched and every
/// run rewrote the settings and restarted kubelet, flanneld and kube-proxy. start.ps1 reads
/// the settings from the registry nssm keeps them in instead.
#[test]
fn start_ps1_reads_nssm_settings_from_the_registry_not_nssm_get() {
    let source = read("roles/kinit_windows_node/files/start.ps1");
    let nssm_calls: Vec<&str> = source
        .lines()
        .filter(|l| l.contains("$Nssm") && !l.trim_start().starts_with("$Nssm ="))
        .collect();
    assert!(!nssm_calls.is_empty());
    for call in &nssm_calls {
        assert!(
            !call.contains(" get ") && !call.contains("\"get\""),
            "nssm get output is compared: {call}"
        );
    }
    assert!(
        source.contains(r"HKLM:\SYSTEM\CurrentControlSet\Services\$Name\Parameters"),
        "Set-NssmService does not read nssm's registry key"
    );
}

/// The role's own scripts around start.ps1 (the scheduled task with its runner, the polling of
/// its result, the token expiry check) parse with the PowerShell grammar and start no native
/// program: the task's action names powershell.exe as a string, and the runner's start.ps1
/// call sits in a here-string.
#[test]
fn the_roles_scheduling_polling_and_token_scripts_parse_and_run_no_native_program() {
    let inv = inventory(Compute::Windows);
    for (_, extra) in backends() {
        let mut vars = context(&inv, "compute-01", "kinit_windows_node", &extra);
        let (line, _) = start_ps1_args(&vars);
        vars.insert("start_ps1_command".into(), serde_json::json!(line));
        for name in [
            "Node components and kubeadm join (start.ps1, started as a scheduled task)",
            "Node components and kubeadm join (start.ps1 result)",
            "Service account tokens due for renewal",
        ] {
            let t = task("roles/kinit_windows_node/tasks/main.yml", name);
            let script = kinit::template::Templar::new()
                .render_str(t["win_shell"].as_str().unwrap(), &vars)
                .unwrap();
            assert_eq!(
                errors(&parse(&script), &script),
                Vec::<String>::new(),
                "{script}"
            );
            assert_eq!(
                unwrapped_native_calls(&script, true),
                Vec::<String>::new(),
                "{name}"
            );
        }
    }
}
