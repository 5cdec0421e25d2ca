//! Unit tests for `pkg`: version pins, probe parsing and the install/upgrade/remove plan.

use super::*;

#[test]
fn version_pins_match_as_globs_or_prefixes() {
    assert!(version_matches("1.37.2-1.1", "1.37.2-*"));
    assert!(version_matches("1.37.2-1.1", "1.37.?-1.1"));
    assert!(!version_matches("1.37.20-1.1", "1.37.2-*"));
    assert!(!version_matches("1.36.0-1.1", "1.37.2-*"));
    assert!(version_matches("1.2-3", "1.2"));
    assert!(!version_matches("1.3-1", "1.2"));
}

fn have(entries: &[(&str, Option<&str>, bool)]) -> BTreeMap<String, Installed> {
    entries
        .iter()
        .map(|(n, v, u)| {
            (
                n.to_string(),
                Installed {
                    version: v.map(str::to_string),
                    upgradable: *u,
                },
            )
        })
        .collect()
}

#[test]
fn decides_per_state() {
    let names = vec!["a".to_string(), "b".to_string()];
    let h = have(&[("a", Some("1.0"), true), ("b", None, false)]);
    let p = plan(&names, PkgState::Present, &h);
    assert_eq!((p.install, p.upgrade), (vec!["b".to_string()], vec![]));
    let p = plan(&names, PkgState::Latest, &h);
    assert_eq!(
        (p.install, p.upgrade),
        (vec!["b".to_string()], vec!["a".to_string()])
    );
    let p = plan(&names, PkgState::Absent, &h);
    assert_eq!(p.remove, vec!["a".to_string()]);
}

#[test]
fn commands_per_manager() {
    let plan = Plan {
        install: vec!["curl".into()],
        upgrade: vec!["vim".into()],
        remove: vec!["nano".into()],
    };
    assert_eq!(
        Manager::Apt.commands(&plan, true, &[]),
        vec![
            "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 install -y -q --no-remove curl vim",
            "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 remove -y -q --purge nano",
        ]
    );
    assert_eq!(
        Manager::Dnf.commands(&plan, false, &[]),
        vec![
            "dnf install -y curl",
            "dnf upgrade -y vim",
            "dnf remove -y nano"
        ]
    );
}

#[test]
fn parses_probe_lines() {
    let h = parse("kinit-pkg|curl|7.88|\nkinit-pkg|nope||\nkinit-pkg|vim|9.0|1\n");
    assert_eq!(h["curl"].version.as_deref(), Some("7.88"));
    assert_eq!(h["nope"].version, None);
    assert!(h["vim"].upgradable);
}
