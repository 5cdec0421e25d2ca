//! The libvirt provider: typed libvirt XML definitions (domains, networks, pools, volumes),
//! the guest builders that turn a node's settings into a domain (Linux cloud image, Windows
//! from ISO), the cloud-init NoCloud seed and the Windows `autounattend.xml`, ISO building on
//! the hypervisor, and `Hypervisor`: one cached `virt` connection per URI whose blocking calls
//! run on tokio's blocking pool.
//!
//! XML is never assembled from strings: every definition is a serde struct serialized by
//! `quick-xml`, which escapes user values. What libvirt accepts is checked by tests that define
//! every generated document on libvirt's own test driver (`test:///default`).
//!
//! # Reaching a remote hypervisor
//!
//! The `virt` crate opens libvirt URIs from the controller process. `qemu:///system` on a
//! task whose host is reached over SSH is that host's libvirt: the `virt_*` modules forward
//! its socket over kinit's own SSH connection (no second login, one known_hosts policy) and
//! open the forwarded socket (`modules::virt`). `qemu+ssh://root@host/system` also works;
//! libvirt's own client then runs the system `ssh` binary (keys from `~/.ssh` or the agent,
//! `?keyfile=` to pick one).

pub mod cloud_init;
pub mod devices;
pub mod domain;
pub mod error;
pub mod guests;
pub mod hypervisor;
pub mod install_stage;
pub mod iso;
pub mod linux_guest;
pub mod mac;
pub mod network;
pub mod networks;
pub mod ovs_network;
pub mod pools;
pub mod storage;
pub mod unattend;
pub mod virt_type;
pub mod windows_config;
pub mod windows_guest;
pub mod winrm_cert;
pub mod xml;

pub use error::ProviderError;
pub use hypervisor::Hypervisor;
pub use mac::MacAddr;
pub use virt_type::VirtType;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod unattend_tests;
