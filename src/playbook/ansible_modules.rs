//! Modules Ansible knows that kinit does not implement. A task naming one loads with a
//! warning and fails only on a host that reaches it, as a module whose collection is missing
//! would under ansible-playbook; a branch that never runs (a RedHat-only `when` on a Debian
//! host) costs nothing. A name that is neither kinit's nor Ansible's stays a load-time error,
//! so typos are still caught before anything runs.

/// `ansible.builtin` modules (ansible-core 2.19) and the short names of the collection modules
/// real playbooks use most, that kinit does not implement yet.
const KNOWN: &[&str] = &[
    // ansible.builtin
    "debconf",
    "dnf5",
    "expect",
    "iptables",
    "mount_facts",
    "set_stats",
    "subversion",
    "sysvinit",
    // ansible.posix
    "acl",
    "at",
    "firewalld",
    "patch",
    "seboolean",
    "selinux",
    // community.general
    "alternatives",
    "capabilities",
    "filesystem",
    "gem",
    "git_config",
    "homebrew",
    "locale_gen",
    "lvg",
    "lvol",
    "make",
    "nmcli",
    "npm",
    "pam_limits",
    "parted",
    "pipx",
    "snap",
    "timezone",
    "ufw",
    "xml",
    "yarn",
    // community.docker, kubernetes.core, community.crypto, containers.podman
    "docker_container",
    "docker_image",
    "docker_network",
    "docker_volume",
    "docker_compose_v2",
    "k8s",
    "k8s_info",
    "helm",
    "helm_repository",
    "openssl_privatekey",
    "openssl_csr",
    "x509_certificate",
    "podman_container",
    "podman_image",
    // ansible.windows and community.windows
    "win_acl",
    "win_certificate_store",
    "win_chocolatey",
    "win_dns_client",
    "win_domain_membership",
    "win_environment",
    "win_firewall_rule",
    "win_hostname",
    "win_lineinfo",
    "win_package",
    "win_path",
    "win_regedit",
    "win_scheduled_task",
    "win_template",
    "win_updates",
    "win_user",
];

/// Whether `name` (short, or a fully qualified `namespace.collection.module`) is a module of
/// Ansible or of an Ansible collection. Any three-part dotted name counts: kinit cannot know
/// which collections a user has installed, and a missing one fails only where it runs.
pub fn is_known(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if parts.len() == 3 && parts.iter().all(|p| valid(p)) {
        return true;
    }
    KNOWN.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::is_known;

    #[test]
    fn no_module_kinit_implements_is_listed_as_lacking() {
        let listed: Vec<&&str> = super::KNOWN
            .iter()
            .filter(|n| crate::modules::lookup(n).is_some())
            .collect();
        assert!(listed.is_empty(), "implemented, still in KNOWN: {listed:?}");
    }

    #[test]
    fn ansible_names_are_known_and_typos_are_not() {
        assert!(is_known("iptables"));
        assert!(is_known("community.general.npm"));
        assert!(is_known("ansible.posix.firewalld"));
        assert!(!is_known("apt_kee"));
        assert!(!is_known("shel"));
        assert!(!is_known("a..b"));
    }
}
