//! `VirtType`: whether guests run on KVM or in QEMU's software emulation (TCG), and the
//! virtualization check that picks one for a hypervisor.

use serde::{Deserialize, Serialize};

/// The `type` attribute of `<domain>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VirtType {
    /// Hardware virtualization through `/dev/kvm`.
    Kvm,
    /// QEMU software emulation (TCG): slow, but runs anywhere.
    Qemu,
}

/// A shell snippet for the hypervisor that prints `vmx`/`svm` when the CPU offers hardware
/// virtualization, and `kvm` when `/dev/kvm` exists.
///
/// Both are needed: a nested or paravirtual `/dev/kvm` without vmx/svm in the CPU flags (a
/// PVM host, for one) accepts `type='kvm'` domains and then fails to run stock guests.
pub const PROBE_SCRIPT: &str = "grep -m1 -o -w -E 'vmx|svm' /proc/cpuinfo || true; \
                                [ -c /dev/kvm ] && echo kvm || true";

impl VirtType {
    /// The choice for the output of `PROBE_SCRIPT`.
    pub fn from_probe(stdout: &str) -> Self {
        let words: Vec<&str> = stdout.split_whitespace().collect();
        let hw = words.iter().any(|w| *w == "vmx" || *w == "svm");
        let dev = words.contains(&"kvm");
        if hw && dev {
            VirtType::Kvm
        } else {
            VirtType::Qemu
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_needs_cpu_flags_and_the_device() {
        assert_eq!(VirtType::from_probe("vmx\nkvm\n"), VirtType::Kvm);
        assert_eq!(VirtType::from_probe("svm\nkvm\n"), VirtType::Kvm);
        // A PVM host: /dev/kvm without vmx/svm.
        assert_eq!(VirtType::from_probe("kvm\n"), VirtType::Qemu);
        assert_eq!(VirtType::from_probe("vmx\n"), VirtType::Qemu);
        assert_eq!(VirtType::from_probe(""), VirtType::Qemu);
    }
}
