//! What apt says back, read for people: the packages a simulated install (`apt-get -s`) would
//! bring, and the reason an install was refused (the packages it would have removed, the unmet
//! dependencies, its `E:` lines), so a failed task names the package and apt's cause instead of
//! a bare exit code.

/// The packages `apt-get install -s` would install or upgrade, in apt's order.
pub fn simulated_installs(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Inst "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The indented package lines under one of apt's headings (`The following packages will be
/// REMOVED:`), joined by spaces.
fn block_under(stdout: &str, heading: &str) -> Vec<String> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(heading));
    if lines.next().is_none() {
        return Vec::new();
    }
    lines
        .take_while(|l| l.starts_with(' '))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// apt's own reason for refusing or failing an install, in one line.
pub fn reason(stdout: &str, stderr: &str) -> String {
    let mut parts = Vec::new();
    let removed = block_under(stdout, "The following packages will be REMOVED:");
    if !removed.is_empty() {
        parts.push(format!(
            "it would remove {} (kinit never removes a package to install another; remove it \
             yourself first if that is what you want)",
            removed.join(" ")
        ));
    }
    let unmet = block_under(stdout, "The following packages have unmet dependencies:");
    if !unmet.is_empty() {
        parts.push(format!("unmet dependencies: {}", unmet.join("; ")));
    }
    parts.extend(
        stderr
            .lines()
            .chain(stdout.lines())
            .filter(|l| l.starts_with("E: ") || l.starts_with("dpkg: error"))
            .map(str::to_string),
    );
    parts.dedup();
    if parts.is_empty() {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return tail.into_iter().rev().collect::<Vec<_>>().join("; ");
    }
    parts.join("; ")
}

/// Whether a failed simulation only says the package is not in the index yet (a repository a
/// check-mode run did not add, or a cache it did not refresh): not a prediction of failure.
pub fn only_unknown_packages(stderr: &str) -> bool {
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("E: ")).collect();
    !errors.is_empty()
        && errors.iter().all(|l| {
            l.starts_with("E: Unable to locate package")
                || l.starts_with("E: Package '")
                || l.starts_with("E: Version '")
        })
}

/// sh text that finishes what an interrupted or failed dpkg run left unconfigured, so the
/// package database is consistent again, and prints what it did.
pub const DPKG_RECOVER: &str = "if [ -n \"$(dpkg --audit 2>/dev/null)\" ]; then \
     if DEBIAN_FRONTEND=noninteractive dpkg --configure -a >/dev/null 2>&1; \
     then echo configured; else echo unconfigured; fi; fi";

#[cfg(test)]
mod tests {
    use super::*;

    // The shape of apt 2.6's answer when an install needs a removal and `--no-remove` is set.
    const REMOVE_REFUSED: &str = "Reading package lists...\nBuilding dependency tree...\n\
        The following additional packages will be installed:\n  qemu-system-common qemu-system-data\n\
        The following packages will be REMOVED:\n  qemu-utils\n\
        The following NEW packages will be installed:\n  qemu-system-x86\n";

    #[test]
    fn a_refused_removal_names_the_package() {
        let r = reason(
            REMOVE_REFUSED,
            "E: Packages need to be removed but remove is disabled.\n",
        );
        assert!(
            r.starts_with("it would remove qemu-utils (kinit never"),
            "{r}"
        );
        assert!(
            r.ends_with("E: Packages need to be removed but remove is disabled."),
            "{r}"
        );
    }

    #[test]
    fn unmet_dependencies_are_kept_with_their_package() {
        let out = "The following packages have unmet dependencies:\n \
            qemu-system-x86 : Depends: qemu-system-data (> 1:10.0.2+ds~) but 1:7.2 is to be installed\n\
            \x20                  Depends: seabios (> 1.16.3-1~) but 1.16.2-1 is to be installed\n";
        let r = reason(
            out,
            "E: Unable to correct problems, you have held broken packages.\n",
        );
        assert_eq!(
            r,
            "unmet dependencies: qemu-system-x86 : Depends: qemu-system-data (> 1:10.0.2+ds~) \
             but 1:7.2 is to be installed; Depends: seabios (> 1.16.3-1~) but 1.16.2-1 is to be \
             installed; E: Unable to correct problems, you have held broken packages."
        );
    }

    #[test]
    fn simulation_lists_what_would_be_installed() {
        let out = "Inst libfdt1 (1.6.1-4+b1 Debian:12.15/oldstable [amd64])\n\
            Inst qemu-system-x86 (1:10.0.2 Debian Backports [amd64])\nConf libfdt1 (1.6.1-4+b1)\n";
        assert_eq!(simulated_installs(out), ["libfdt1", "qemu-system-x86"]);
    }

    #[test]
    fn unknown_packages_are_told_apart_from_conflicts() {
        assert!(only_unknown_packages(
            "E: Unable to locate package kubelet\n"
        ));
        assert!(!only_unknown_packages(
            "E: Unable to locate package kubelet\nE: Unable to correct problems\n"
        ));
        assert!(!only_unknown_packages(""));
    }
}
