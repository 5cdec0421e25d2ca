//! The Linux node prerequisites (`kinit_linux_node`, the "Linux node prerequisites" play of
//! deploy-cluster.yml) run by the real `kinit playbook` over SSH against namespace hosts with
//! the node stand-ins (`node_standins`: modprobe, sysctl, swap, apt, containerd, systemctl),
//! the package repository keys served over HTTP on 127.0.0.1: the order and arguments of
//! every changing call, the files written, and a second run that changes nothing.

use super::hosts::Lab;
use super::{lab_inventory_with, plays_named, run_with, serve, workspace};
use crate::cluster_content::fixture::Compute;
use crate::support::Test;

#[test]
fn linux_node_role_prepares_kernel_swap_packages_and_containerd_and_reruns_without_changes() {
    let Some(lab) = Lab::start_nodes(&["controller-01", "compute-01"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    let test = Test::new();
    let (dir, state) = workspace(&test, Some(&lab.known_hosts));
    std::fs::write(
        dir.join("deploy.yml"),
        plays_named(&["deploy-cluster (Linux node prerequisites)"]),
    )
    .unwrap();
    let inventory = lab_inventory_with(Compute::Linux, &lab, &state, |_, _| {});
    std::fs::write(dir.join("inventory.yml"), inventory).unwrap();
    // Each node's fstab has a swap line, as a Debian cloud image may.
    for h in &lab.hosts {
        std::fs::write(
            h.etc().join("fstab"),
            "UUID=1234 / ext4 errors=remount-ro 0 1\n/swap.img none swap sw 0 0\n",
        )
        .unwrap();
    }
    // Stand-in for the repositories' signing keys (download.docker.com, pkgs.k8s.io).
    let key = serve(
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\nstand-in\n-----END PGP PUBLIC KEY BLOCK-----\n",
    );
    let base = key.trim_end_matches("/kube-flannel.yml").to_string();
    let docker = format!("docker_repo_base={base}/linux");
    let k8s = format!("kubernetes_repo_base={base}/core:/stable:");
    let extra = ["-e", docker.as_str(), "-e", k8s.as_str()];

    let (stdout, _) = run_with(&lab, &dir, &key, &extra);
    let conf = "/etc/sysctl.d/99-kinit-k8s.conf";
    let apt = "apt-get -o DPkg::Lock::Timeout=60";
    for host in &lab.hosts {
        assert_eq!(
            host.calls(),
            [
                "modprobe overlay".to_string(),
                "modprobe br_netfilter".into(),
                format!("sysctl -p {conf}"),
                format!("sysctl -p {conf}"),
                format!("sysctl -p {conf}"),
                "swapoff -a".into(),
                format!("{apt} update -q"),
                format!("{apt} install -y -q --no-remove apt-transport-https"),
                format!("{apt} update -q"),
                format!(
                    "{apt} install -y -q --no-remove containerd.io kubelet=1.37.2-* kubeadm=1.37.2-* kubectl=1.37.2-*"
                ),
                "apt-mark hold kubelet kubeadm kubectl".into(),
                "containerd config default".into(),
                "systemctl enable containerd".into(),
                "systemctl start containerd".into(),
                "systemctl enable kubelet".into(),
                "systemctl restart containerd".into(),
            ],
            "{}:\n{stdout}",
            host.name
        );
        let etc = host.etc();
        let read = |p: &str| std::fs::read_to_string(etc.join(p)).unwrap();
        assert_eq!(
            read("modules-load.d/kinit-k8s.conf"),
            "overlay\nbr_netfilter\n"
        );
        assert_eq!(
            read("sysctl.d/99-kinit-k8s.conf"),
            "net.ipv4.ip_forward=1\nnet.bridge.bridge-nf-call-iptables=1\n\
             net.bridge.bridge-nf-call-ip6tables=1\n"
        );
        assert!(
            read("fstab").contains("\n# /swap.img none swap sw 0 0\n"),
            "{}",
            read("fstab")
        );
        assert_eq!(
            read("apt/sources.list.d/kubernetes.list"),
            format!(
                "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.asc] {base}/core:/stable:/v1.37/deb/ /\n"
            )
        );
        assert_eq!(
            read("apt/sources.list.d/docker.list"),
            format!(
                "deb [signed-by=/etc/apt/keyrings/docker.asc] {base}/linux/debian bookworm stable\n"
            )
        );
        assert!(read("apt/keyrings/kubernetes-apt-keyring.asc").contains("PGP PUBLIC KEY"));
        assert!(read("containerd/config.toml").contains("    SystemdCgroup = true\n"));
    }

    // Second run: only the queries, the cache updates and the (unchanged) holds run again.
    for h in &lab.hosts {
        h.clear_calls();
    }
    let (stdout, _) = run_with(&lab, &dir, &key, &extra);
    for host in &lab.hosts {
        assert_eq!(
            host.calls(),
            [
                format!("{apt} update -q"),
                format!("{apt} update -q"),
                "apt-mark hold kubelet kubeadm kubectl".into(),
            ],
            "{}:\n{stdout}",
            host.name
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&host.name) && l.contains("changed="))
            .unwrap_or_else(|| panic!("no recap line for {}:\n{stdout}", host.name));
        assert!(
            line.contains("changed=0 "),
            "second run changed something:\n{stdout}"
        );
    }
}
