//! The virt modules on a hypervisor reached over SSH with a `qemu+ssh://root@host:port/system`
//! URI (what `-e libvirt_uri=...` or an inventory gives them): libvirt's client runs OpenSSH to a
//! lab host (a real sshd, root login with the lab key), and `virt-ssh-helper` there talks to
//! this machine's real libvirtd. The hypervisor is addressed by an SSH alias, as KubeInit
//! users do; `ssh` on PATH is a wrapper that records its arguments and adds what a
//! `~/.ssh/config` entry would (`HostName`, the lab's key and known_hosts): OpenSSH reads
//! `~/.ssh` from the password database, not `$HOME`, and the machine's own files stay
//! untouched. The connection itself is the real one.
//! Needs root, a libvirtd answering on `qemu:///system` (ci/test.sh starts one) and
//! `virt-ssh-helper`; says why and passes without them.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use super::hosts::Lab;
use crate::support::Test;

fn virsh(args: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .args(["20", "virsh", "-c", "qemu:///system"])
        .args(args)
        .output()
        .expect("run virsh")
}

/// Removes the test's pool (with its volume) from the real libvirtd, also when it fails.
struct Cleanup {
    pool: String,
    dir: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        virsh(&["vol-delete", "--pool", &self.pool, "disk.qcow2"]);
        virsh(&["pool-destroy", &self.pool]);
        virsh(&["pool-undefine", &self.pool]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// SSH alias of the lab host (the `ssh` wrapper maps it to 127.0.0.1).
const ALIAS: &str = "kinit-lab-hypervisor";

#[test]
fn virt_modules_reach_a_remote_hypervisor_through_qemu_ssh() {
    if !crate::fixtures::netns::is_root() {
        crate::support::cannot_run("lab hosts need root (mount namespaces)");
        return;
    }
    let probe = virsh(&["version"]);
    if !probe.status.success() {
        crate::support::cannot_run(format!(
            "no libvirtd answers at qemu:///system ({})",
            String::from_utf8_lossy(&probe.stderr).trim()
        ));
        return;
    }
    if !std::path::Path::new("/usr/bin/virt-ssh-helper").exists() {
        crate::support::cannot_run("no /usr/bin/virt-ssh-helper (libvirt-clients)");
        return;
    }
    let Some(lab) = Lab::start(&["hypervisor-01"]) else {
        return;
    };
    let port = lab.host("hypervisor-01").port;
    let uri = format!("qemu+ssh://root@{ALIAS}:{port}/system");

    let test = Test::new();
    let (dir, _state) = super::workspace(&test, Some(&lab.known_hosts));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("ssh-calls.log");
    std::fs::write(
        bin.join("ssh"),
        format!(
            "#!/bin/sh\necho \"$@\" >> {log}\nexec /usr/bin/ssh -o HostName=127.0.0.1 \
             -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -i {key} \"$@\"\n",
            log = log.display(),
            kh = lab.known_hosts.display(),
            key = lab.client_key.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();

    let pool = format!("kinit-sshuri-{}", std::process::id());
    let pool_dir = format!("/var/lib/libvirt/images/{pool}");
    let _cleanup = Cleanup {
        pool: pool.clone(),
        dir: pool_dir.clone(),
    };
    std::fs::write(
        dir.join("inventory.yml"),
        serde_yaml::to_string(&serde_json::json!({"all": {"hosts": {"hypervisor-01": {
            "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": port,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": lab.client_key.display().to_string(),
            "libvirt_uri": uri,
        }}}}))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("site.yml"),
        format!(
            "- hosts: hypervisor-01\n  gather_facts: false\n  tasks:\n\
             \x20   - name: Pool\n      virt_pool: {{uri: \"{{{{ libvirt_uri }}}}\", name: {pool}, \
             path: {pool_dir}, state: active}}\n\
             \x20   - name: Volume\n      virt_volume: {{uri: \"{{{{ libvirt_uri }}}}\", pool: {pool}, \
             name: disk.qcow2, capacity: 1M}}\n"
        ),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_kinit"))
            .current_dir(&dir)
            .args(["playbook", "site.yml", "-i", "inventory.yml"])
            .env("HOME", dir.join("home"))
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let first = run();
    assert!(
        first.contains("TASK [Pool]\nchanged: [hypervisor-01]"),
        "{first}"
    );
    assert!(
        first.contains("TASK [Volume]\nchanged: [hypervisor-01]"),
        "{first}"
    );
    let second = run();
    assert!(
        second.contains("TASK [Pool]\nok: [hypervisor-01]"),
        "{second}"
    );
    assert!(
        second.contains("TASK [Volume]\nok: [hypervisor-01]"),
        "{second}"
    );

    // The objects are on the real libvirtd, and libvirt got there by SSH to the lab host.
    let vols = virsh(&["vol-list", &pool]);
    assert!(
        String::from_utf8_lossy(&vols.stdout).contains("disk.qcow2"),
        "{}",
        String::from_utf8_lossy(&vols.stderr)
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains(&port.to_string()) && calls.contains(ALIAS),
        "{calls}"
    );
}
