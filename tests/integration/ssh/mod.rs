//! The SSH transport against real sshd hosts: commands, files, become, jump hosts, host key
//! checking, ssh config, scale and faults.

mod basics;
mod forward;
mod interrupted_put;
mod jump;
mod playbook;
mod scale;
mod shell;
mod slow_link;
mod speed;
mod trust;
