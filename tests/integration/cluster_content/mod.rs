//! The bundled cluster deployment content (`playbooks/`, `roles/`): it loads, its phases are in
//! order, and everything it renders (kubeadm configuration, flannel and CNI configuration,
//! Kubernetes manifests, PowerShell) parses into typed structures that agree between the Linux
//! and the Windows side.
//!
//! No kubeadm, kubelet or Windows host can be obtained on the build machine, so these tests
//! check what kinit would hand to them (rendered with kinit's own `Templar`), not a running
//! cluster.

mod checksums;
pub mod fixture;
mod kubeadm;
mod layout;
mod manifests;
mod native_commands;
mod network;
mod powershell;
mod services;
