//! `package_facts`: `ansible_facts.packages`, the installed packages as ansible-core's
//! `package_facts` lists them: name -> a list of installed versions, each
//! `{name, version, arch, source, ...}`.
//!
//! Managers kinit reads, through their command-line tools (upstream uses the Python
//! libraries for apt and rpm, which kinit cannot load on the host):
//! - `apt`: `dpkg-query` over the installed packages: `name`, `version`, `arch`,
//!   `category` (the section), `source: apt`. python-apt's `origin` (the repository's
//!   Origin) is not known to dpkg and left out. A foreign-architecture package is named
//!   `name:arch`, as python-apt names it.
//! - `rpm` (also `dnf`, `dnf5`, `yum`, `zypper`): `rpm -qa`: `name`, `version`, `release`,
//!   `epoch` (`None` when unset, as upstream prints it), `arch`, `source: rpm`.
//! - `apk`: `apk info -v`: `name`, `version`, `release`, `source: apk`.
//!
//! `manager: auto` tries every manager; `strategy: first` (default) stops at the first that
//! finds packages, `all` merges them. Other upstream managers (pacman, pkg, pkg_info,
//! portage) are refused when named. Read-only: check mode runs the same.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::args::list;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(PackageFacts, "package_facts", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Stop at the first manager that finds packages (default).
    #[default]
    First,
    /// Merge the packages of every manager found.
    All,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Managers to read (`auto`, `apt`, `rpm`, `apk`, ...); default `auto`.
    #[serde(default, deserialize_with = "list")]
    manager: Vec<String>,
    /// `first` or `all`.
    #[serde(default)]
    strategy: Strategy,
}

/// Upstream's manager names (sorted, as `auto` tries them) and aliases.
const UPSTREAM: &[&str] = &["apk", "apt", "pacman", "pkg", "pkg_info", "portage", "rpm"];
const ALIASES: &[(&str, &str)] = &[
    ("dnf", "rpm"),
    ("dnf5", "rpm"),
    ("yum", "rpm"),
    ("zypper", "rpm"),
    ("pkg5", "pkg"),
    ("pkgng", "pkg"),
    ("openbsd_pkg", "pkg_info"),
];

/// The sh text that lists one manager's packages, one per line, tab-separated.
fn lister(manager: &str) -> Option<&'static str> {
    Some(match manager {
        "apt" => {
            "command -v dpkg-query >/dev/null 2>&1 && { a=$(dpkg --print-architecture 2>/dev/null); \
             dpkg-query -W -f='${db:Status-Status}\\t${Package}\\t${Version}\\t${Architecture}\\t${Section}\\n' \
             | awk -F '\\t' -v a=\"$a\" '$1 == \"installed\" { n = $2; if ($4 != a && $4 != \"all\" && a != \"\") n = n \":\" $4; print n \"\\t\" $3 \"\\t\" $4 \"\\t\" $5 }'; }"
        }
        "rpm" => {
            "command -v rpm >/dev/null 2>&1 && rpm -qa --qf '%{NAME}\\t%{VERSION}\\t%{RELEASE}\\t%{EPOCH}\\t%{ARCH}\\n'"
        }
        "apk" => "command -v apk >/dev/null 2>&1 && apk info -v",
        _ => return None,
    })
}

/// One listed line as upstream's package dict (without `source`).
pub fn details(manager: &str, line: &str) -> Option<Value> {
    let f: Vec<&str> = line.split('\t').collect();
    Some(match (manager, f.as_slice()) {
        ("apt", [name, version, arch, section]) => {
            json!({"name": name, "version": version, "arch": arch, "category": section})
        }
        ("rpm", [name, version, release, epoch, arch]) => {
            let epoch = if *epoch == "(none)" { "None" } else { epoch };
            json!({"name": name, "version": version, "release": release, "epoch": epoch, "arch": arch})
        }
        ("apk", [nvr]) => {
            let parts: Vec<&str> = nvr.rsplitn(3, '-').collect();
            match parts.as_slice() {
                [release, version, name] => {
                    json!({"name": name, "version": version, "release": release})
                }
                _ => json!({"name": nvr, "version": "", "release": ""}),
            }
        }
        _ => return None,
    })
}

const MARK: &str = "kinit-pkg-";

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let asked: Vec<String> = if p.manager.is_empty() {
        vec!["auto".into()]
    } else {
        p.manager.iter().map(|m| m.to_lowercase()).collect()
    };
    let mut managers: Vec<String> = asked.iter().filter(|m| *m != "auto").cloned().collect();
    let auto = asked.iter().any(|m| m == "auto");
    if auto {
        managers.extend(UPSTREAM.iter().map(|s| s.to_string()));
        managers.extend(ALIASES.iter().map(|(a, _)| a.to_string()));
    }
    let known = |m: &str| UPSTREAM.contains(&m) || ALIASES.iter().any(|(a, _)| *a == m);
    let unsupported: Vec<&str> = managers
        .iter()
        .map(String::as_str)
        .filter(|m| !known(m))
        .collect();
    if !unsupported.is_empty() {
        return Ok(ModuleResult::failed(format!(
            "Unsupported package managers requested: {}",
            unsupported.join(", ")
        )));
    }
    let mut order: Vec<&str> = Vec::new();
    for m in &managers {
        let real = ALIASES
            .iter()
            .find(|(a, _)| a == m)
            .map_or(m.as_str(), |(_, r)| r);
        if !order.contains(&real) {
            order.push(real);
        }
    }
    let named: Vec<&&str> = order
        .iter()
        .filter(|m| lister(m).is_none() && asked.iter().any(|a| a == *m))
        .collect();
    if let Some(m) = named.first() {
        return Ok(ModuleResult::failed(format!(
            "package manager `{m}` is not supported by kinit's package_facts (it reads apt, \
             rpm and apk)"
        )));
    }
    let script: String = order
        .iter()
        .filter_map(|m| lister(m).map(|l| format!("echo {MARK}{m}\n{l}\n")))
        .collect::<String>()
        + "exit 0\n";
    let out = ctx.run(format!("export LC_ALL=C\n{script}")).await?;
    let text = out.stdout_str();
    let mut packages: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut found = 0;
    let mut warnings = Vec::new();
    let mut current: Option<&str> = None;
    let mut per: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for line in text.lines() {
        if let Some(m) = line.strip_prefix(MARK) {
            current = order.iter().copied().find(|o| *o == m);
            per.entry(m).or_default();
            continue;
        }
        if let (Some(m), Some(mut d)) = (current, current.and_then(|m| details(m, line))) {
            d["source"] = m.into();
            per.entry(m).or_default().push(d);
        }
    }
    for m in &order {
        if p.strategy == Strategy::First && found > 0 {
            break;
        }
        let Some(list) = per.remove(m) else { continue };
        if list.is_empty() {
            warnings.push(format!("Found \"{m}\" but no associated packages"));
            continue;
        }
        found += 1;
        for d in list {
            let name = d["name"].as_str().unwrap_or_default().to_string();
            packages.entry(name).or_default().push(d);
        }
    }
    if found == 0 {
        let listed: Vec<String> = managers.iter().map(|m| format!("'{m}'")).collect();
        return Ok(ModuleResult::failed(format!(
            "Could not detect a supported package manager from the following list: [{}], or \
             the required Python library is not installed. Check warnings for details.",
            listed.join(", ")
        )));
    }
    let mut r = ModuleResult::ok().with("ansible_facts", json!({ "packages": packages }));
    if !warnings.is_empty() {
        r = r.with("warnings", warnings);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_upstream_dicts() {
        assert_eq!(
            details("apt", "bash\t5.2.15-2+b8\tamd64\tshells").unwrap(),
            json!({"name": "bash", "version": "5.2.15-2+b8", "arch": "amd64", "category": "shells"})
        );
        assert_eq!(
            details("rpm", "bash\t5.1.8\t9.el9\t(none)\tx86_64").unwrap()["epoch"],
            "None"
        );
        assert_eq!(
            details("apk", "musl-utils-1.2.4-r2").unwrap(),
            json!({"name": "musl-utils", "version": "1.2.4", "release": "r2"})
        );
    }
}
