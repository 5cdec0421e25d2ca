//! kinit's integration tests: one test binary that drives the real `kinit` binary against
//! real servers (sshd hosts, the WinRM test server, libvirt's test driver) started by the
//! tests themselves. Each area has its own module; `support` holds the shared builder.

mod ansible_diff;
mod argspec;
mod chaos;
mod chaos_sshd;
mod chaos_winrm;
mod ci;
mod ci_real;
mod cluster_content;
mod cluster_roles;
mod deploy;
mod deploy_resume;
mod deps;
mod engine_fixes;
mod error_chains;
mod fidelity;
mod fixtures;
mod get_url_resume;
mod hypervisor;
mod interrupt;
mod junit_schema;
mod layers;
mod libvirt;
mod libvirt_e2e;
mod modules;
mod plan;
mod plan_render;
mod playbook;
mod playbook_diff;
mod readme;
mod regression;
mod secrets_scan;
mod session;
mod ssh;
mod support;
mod vault;
mod winrm;
mod winrm_cluster_ca;
mod winrm_playbook;
mod winrm_server;
