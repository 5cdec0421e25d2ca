//! The layering DESIGN.md describes, checked on the source: a module imports only the layers
//! below it (`crate::x` paths in non-test code), and the files of one folder do not import each
//! other in a cycle (`super::x` and `crate::folder::x` between sibling files; `mod.rs`, the
//! folder's root, is left out). Test files (`tests.rs`, `*_tests.rs`, `#[cfg(test)]` modules)
//! may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules from the bottom layer up: each may import only those before it.
const LAYERS: &[&str] = &[
    "pyre",
    "codec",
    "configparser",
    "atomic",
    "secret",
    "vault",
    "yaml",
    "vars",
    "interrupt",
    "report",
    "transport",
    "extra_vars",
    "ansible_cfg",
    "inventory",
    "template",
    "provider",
    "spec",
    "cluster",
    "modules",
    "playbook",
    "exec",
    "cli",
    "config",
    "deploy",
    "ci",
    "commands",
    "error",
    "lib",
    "main",
];

/// The files that may name `crate::cli`: the handlers, the settings they validate, and the
/// dispatch in `lib`.
const CLI_USERS: &[&str] = &["config", "commands", "lib", "main"];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The non-test code of a source file (test modules sit at the end of their file).
fn code(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return None;
    }
    let text = std::fs::read_to_string(path).unwrap();
    Some(match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    })
}

/// Every `<prefix>name` in `text` (identifier after the prefix), outside `//` comments.
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap();
        let mut rest = line;
        while let Some(i) = rest.find(prefix) {
            let before_ok = i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric();
            rest = &rest[i + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if before_ok && !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn modules_import_only_lower_layers_and_folders_have_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    files.sort();
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut upward = Vec::new();
    let mut cli_users = Vec::new();
    // folder -> file -> sibling files it imports
    let mut folders: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &files {
        let Some(text) = code(f) else { continue };
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let me = rank(&top).unwrap_or_else(|| {
            panic!("`src/{top}` is in no layer: add it to LAYERS in tests/integration/layers.rs")
        });
        for used in names_after(&text, "crate::") {
            if used == top {
                continue;
            }
            // Command-line types stay at the edge: the layers below the handlers take
            // validated settings (`config`), never clap's types.
            if used == "cli" && !CLI_USERS.contains(&top.as_str()) {
                cli_users.push(format!("src/{} names `crate::cli`", rel.display()));
            }
            match rank(&used) {
                Some(r) if r < me => {}
                Some(_) => upward.push(format!("src/{} imports `crate::{used}`", rel.display())),
                None => {}
            }
        }
        let folder = rel.parent().unwrap();
        let stem = rel.file_stem().unwrap().to_str().unwrap().to_string();
        if folder.as_os_str().is_empty() || stem == "mod" {
            continue;
        }
        let module_path = folder.to_str().unwrap().replace('/', "::");
        let mut siblings = names_after(&text, "super::");
        siblings.extend(names_after(&text, &format!("crate::{module_path}::")));
        folders
            .entry(folder.display().to_string())
            .or_default()
            .insert(stem, siblings);
    }
    assert!(
        upward.is_empty(),
        "imports of a higher layer (order, lowest first: {}):\n{}",
        LAYERS.join(" < "),
        upward.join("\n")
    );

    assert!(
        cli_users.is_empty(),
        "only {} may use the command-line types:\n{}",
        CLI_USERS.join(", "),
        cli_users.join("\n")
    );

    let mut cycles = Vec::new();
    for (folder, graph) in &folders {
        let edges: BTreeMap<&str, Vec<&str>> = graph
            .iter()
            .map(|(f, deps)| {
                let to = deps
                    .iter()
                    .map(String::as_str)
                    .filter(|d| graph.contains_key(*d) && d != f)
                    .collect();
                (f.as_str(), to)
            })
            .collect();
        // Depth-first search; a back edge closes a cycle.
        fn visit<'a>(
            n: &'a str,
            edges: &BTreeMap<&'a str, Vec<&'a str>>,
            state: &mut BTreeMap<&'a str, u8>,
            path: &mut Vec<&'a str>,
            found: &mut Vec<String>,
        ) {
            state.insert(n, 1);
            path.push(n);
            for &m in &edges[n] {
                match state.get(m).copied().unwrap_or(0) {
                    0 => visit(m, edges, state, path, found),
                    1 => {
                        let start = path.iter().position(|p| *p == m).unwrap();
                        let mut cycle = path[start..].to_vec();
                        cycle.push(m);
                        found.push(cycle.join(" -> "));
                    }
                    _ => {}
                }
            }
            path.pop();
            state.insert(n, 2);
        }
        let mut state = BTreeMap::new();
        let mut found = Vec::new();
        for &n in edges.keys() {
            if !state.contains_key(n) {
                visit(n, &edges, &mut state, &mut Vec::new(), &mut found);
            }
        }
        cycles.extend(found.into_iter().map(|c| format!("src/{folder}: {c}")));
    }
    assert!(
        cycles.is_empty(),
        "files of one folder importing each other in a cycle:\n{}",
        cycles.join("\n")
    );
}

/// The check itself finds what it looks for (so a pass above means something).
#[test]
fn the_layer_check_sees_imports() {
    let text = "use crate::exec::Executor;\n// crate::cli in a comment\nlet x = super::walk::f();";
    assert_eq!(
        names_after(text, "crate::"),
        BTreeSet::from(["exec".to_string()])
    );
    assert_eq!(
        names_after(text, "super::"),
        BTreeSet::from(["walk".to_string()])
    );
}
