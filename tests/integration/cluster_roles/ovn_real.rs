//! create-network's OVN tasks and the OVN cleanup, run by the real `kinit playbook` against
//! this machine (hypervisor-01, ovn-central, over the local connection) with real Open vSwitch
//! and OVN daemons that the role itself starts (ovs-ctl and ovn-ctl: no systemd here; the
//! userspace datapath where the openvswitch kernel module is missing). Guests are network
//! namespaces plugged into br-int with the cluster's interface ids, MACs and addresses; the
//! "outside" is a namespace behind a veth with no route back to the cluster networks, so a
//! reply from it proves the masquerading. The libvirt network and pool tasks go to libvirt's
//! test driver (in-process), so they are the only tasks a second run may report changed.
//! Root and the OVN packages are required; the test skips saying why otherwise, and leaves
//! the machine as it found it (drop guard) even when it fails.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::{plays_from, workspace};
use crate::fixtures::netns::is_root;
use crate::support::Test;

const OVS_CTL: &str = "/usr/share/openvswitch/scripts/ovs-ctl";
const OVN_CTL: &str = "/usr/share/ovn/scripts/ovn-ctl";
/// The outside interface on the host side and the outside namespace's address.
const OUT_IF: &str = "kovn-out-h";
const OUTSIDE: &str = "198.51.100.2";

/// One test cluster: its name, /24 prefix and guest namespaces (`kovn-<tag><n>`).
struct Cluster {
    name: &'static str,
    net: &'static str,
    tag: &'static str,
}

const A: Cluster = Cluster {
    name: "kovna",
    net: "10.213.1",
    tag: "a",
};
const B: Cluster = Cluster {
    name: "kovnb",
    net: "10.213.2",
    tag: "b",
};

impl Cluster {
    fn port(&self, n: u8) -> String {
        format!(
            "0e0e0e0e-0000-4000-8000-{:012x}",
            u32::from(self.tag.as_bytes()[0]) * 16 + u32::from(n)
        )
    }
    fn mac(&self, n: u8) -> String {
        format!("52:54:00:13:{:02x}:{n:02x}", self.tag.as_bytes()[0])
    }
    fn ns(&self, n: u8) -> String {
        format!("kovn-{}{n}", self.tag)
    }

    /// The inventory: hypervisor-01 is this machine, hypervisor-02 exists only so the cluster
    /// spans two hypervisors (the runs are limited to hypervisor-01).
    fn inventory(&self, dir: &Path, extra: serde_json::Value) -> String {
        let mut vars = json!({
            "kinit_cluster_name": self.name,
            "kinit_network": format!("{}.0/24", self.net),
            "kinit_network_prefix": 24,
            "kinit_gateway": format!("{}.254", self.net),
            "kinit_network_name": format!("{}-net", self.name),
            "kinit_state_dir": dir.join("state").display().to_string(),
            "libvirt_uri": "test:///default",
            "libvirt_pool_path": dir.join("pool").display().to_string(),
            "hypervisor_family": "Debian",
            "kinit_ovn_nat_interface": OUT_IF,
        });
        for (k, v) in extra.as_object().unwrap() {
            vars[k] = v.clone();
        }
        let mut nodes = serde_json::Map::new();
        for n in [1, 2] {
            nodes.insert(
                format!("node-{n}"),
                json!({
                    "kinit_interface_id": self.port(n),
                    "kinit_mac": self.mac(n),
                    "kinit_ip": format!("{}.{n}", self.net),
                    "kinit_hypervisor": "hypervisor-01",
                    "kinit_guest_name": format!("{}-node-{n}", self.name),
                }),
            );
        }
        serde_yaml::to_string(&json!({"all": {
            "vars": vars,
            "hosts": {"localhost": {"ansible_connection": "local"}},
            "children": {
                "hypervisors": {"hosts": {
                    "hypervisor-01": {"ansible_connection": "local", "ansible_host": "127.0.0.1"},
                    "hypervisor-02": {"ansible_host": "192.0.2.2"},
                }},
                "cluster_nodes": {"hosts": nodes},
            },
        }}))
        .unwrap()
    }

    /// Plug guest `n` into br-int: a namespace whose eth0 has the node's MAC and address and
    /// a default route through the cluster gateway.
    fn guest(&self, n: u8) {
        let (ns, host) = (self.ns(n), format!("{}-h", self.ns(n)));
        sh(&format!(
            "ip netns add {ns} && ip link add {host} type veth peer name eth0 netns {ns} \
             && ip -n {ns} link set eth0 address {mac} && ip -n {ns} addr add {net}.{n}/24 dev eth0 \
             && ip -n {ns} link set eth0 up && ip -n {ns} link set lo up \
             && ip -n {ns} route add default via {net}.254 && ip link set {host} up \
             && ovs-vsctl add-port br-int {host} -- set interface {host} external_ids:iface-id={id}",
            mac = self.mac(n),
            net = self.net,
            id = self.port(n),
        ));
    }
}

/// Runs `script` with `sh -c`; panics with its output unless it succeeds (fixture steps).
fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `script` succeeds (output dropped).
fn ok(script: &str) -> bool {
    Command::new("sh")
        .args(["-c", script])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One ping from guest namespace `ns` to `to` (two-second wait).
fn pings(ns: &str, to: &str) -> bool {
    ok(&format!("ip netns exec {ns} ping -c 1 -W 2 {to}"))
}

/// Like [`pings`], allowing a few tries while ovn-controller installs fresh flows.
fn pings_soon(ns: &str, to: &str) -> bool {
    (0..5).any(|_| pings(ns, to))
}

/// `kinit playbook deploy.yml -i <inventory> -l hypervisor-01` in `dir`: exit status, stdout
/// and stderr.
fn kinit(dir: &Path, inventory: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kinit"))
        .current_dir(dir)
        .args([
            "playbook",
            "deploy.yml",
            "-i",
            inventory,
            "-l",
            "hypervisor-01",
        ])
        .env("HOME", dir.join("home"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`kinit`] that must succeed; returns stdout.
fn kinit_ok(dir: &Path, inventory: &str) -> String {
    let (ok, stdout, stderr) = kinit(dir, inventory);
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

/// The names of the tasks that reported `changed`.
fn changed_tasks(stdout: &str) -> Vec<String> {
    let mut task = String::new();
    let mut out = Vec::new();
    for l in stdout.lines() {
        if let Some(t) = l.strip_prefix("TASK [").and_then(|t| t.strip_suffix(']')) {
            task = t.to_string();
        } else if l.starts_with("changed:") && !out.contains(&task) {
            out.push(task.clone());
        }
    }
    out
}

/// Why this machine cannot run the test, if it cannot.
fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("needs root (OVS daemons, namespaces, iptables)".into());
    }
    for tool in [OVS_CTL, OVN_CTL] {
        if !Path::new(tool).exists() {
            return Some(format!(
                "{tool} missing (openvswitch-switch, ovn-central, ovn-host)"
            ));
        }
    }
    for tool in [
        "ovs-vsctl",
        "ovn-nbctl",
        "ovn-controller",
        "iptables",
        "ping",
    ] {
        if !ok(&format!("command -v {tool}")) {
            return Some(format!("`{tool}` missing"));
        }
    }
    if Path::new("/var/run/openvswitch/db.sock").exists() || ok(&format!("{OVS_CTL} status")) {
        return Some("Open vSwitch already runs on this machine; not touching it".into());
    }
    None
}

/// Puts the machine back as the test found it: guest and outside namespaces, OVN and OVS
/// daemons (the role started them: the test only runs when none was running), their
/// databases, the test clusters' routes and iptables rules, the sysctl file and values.
struct Restore {
    sysctls: Vec<(String, String)>,
    sysctl_file_existed: bool,
}

const SYSCTL_FILE: &str = "/etc/sysctl.d/90-kinit-ovn.conf";

impl Restore {
    fn new() -> Restore {
        let sysctls = ["net.ipv4.ip_forward", "net.ipv4.conf.all.rp_filter"]
            .iter()
            .map(|k| {
                (
                    k.to_string(),
                    sh(&format!("sysctl -n {k}")).trim().to_string(),
                )
            })
            .collect();
        Restore {
            sysctls,
            sysctl_file_existed: Path::new(SYSCTL_FILE).exists(),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let mut script = String::new();
        for c in [&A, &B] {
            for n in [1, 2] {
                script += &format!("ip netns del {} 2>/dev/null; ", c.ns(n));
            }
            script += &format!("ip route del {}.0/24 dev br-ex 2>/dev/null; ", c.net);
            for t in ["nat", "filter"] {
                script += &format!(
                    "iptables -t {t} -S | grep -E -- '--comment \"?kinit-ovn-{}\"?( |$)' | sed 's/^-A /-D /' \
                     | while read -r r; do iptables -t {t} $r; done; ",
                    c.name
                );
            }
        }
        script += "ip netns del kovn-out 2>/dev/null; ";
        script += "ovs-vsctl --timeout=5 --if-exists del-br br-ex; ovs-vsctl --timeout=5 --if-exists del-br br-int; ";
        script += &format!(
            "{OVN_CTL} stop_controller; {OVN_CTL} stop_northd; {OVS_CTL} stop; \
             rm -f /etc/openvswitch/conf.db /etc/openvswitch/.conf.db.~lock~ /etc/openvswitch/system-id.conf \
             /var/lib/ovn/ovnnb_db.db /var/lib/ovn/ovnsb_db.db /var/lib/ovn/.ovnnb_db.db.~lock~ \
             /var/lib/ovn/.ovnsb_db.db.~lock~; "
        );
        if !self.sysctl_file_existed {
            script += &format!("rm -f {SYSCTL_FILE}; ");
        }
        for (k, v) in &self.sysctls {
            script += &format!("sysctl -qw {k}={v}; ");
        }
        let _ = Command::new("sh").args(["-c", &script]).output();
    }
}

#[test]
fn ovn_outside_access_on_real_ovn_pings_through_nat_reruns_unchanged_and_cleans_up_per_cluster() {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let _restore = Restore::new();
    let test = Test::new();
    let (dir, _) = workspace(&test, None);
    std::fs::create_dir_all(dir.join("pool")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let create = plays_from("playbooks/create-network.yml", &["create-network"]);
    let cleanup = plays_from(
        "playbooks/cleanup-hypervisors.yml",
        &["cleanup-hypervisors"],
    );
    let write = |name: &str, body: &str| std::fs::write(dir.join(name), body).unwrap();
    write("a.yml", &A.inventory(&dir, json!({})));
    write("b.yml", &B.inventory(&dir, json!({})));

    // The outside: a namespace on a veth whose only route is its own /24.
    sh(&format!(
        "ip netns add kovn-out && ip link add {OUT_IF} type veth peer name eth0 netns kovn-out \
         && ip addr add 198.51.100.1/24 dev {OUT_IF} && ip link set {OUT_IF} up \
         && ip -n kovn-out addr add {OUTSIDE}/24 dev eth0 && ip -n kovn-out link set eth0 up"
    ));

    // Cluster A from nothing: the role starts the daemons and builds everything.
    write("deploy.yml", &create);
    let first = kinit_ok(&dir, "a.yml");
    assert!(
        changed_tasks(&first).contains(
            &"Cluster network masqueraded out of the outside interface (ovn-central)".to_string()
        ),
        "{first}"
    );
    if !Path::new("/sys/module/openvswitch").exists() {
        assert!(
            first.contains("WARNING: the openvswitch kernel module is not available"),
            "{first}"
        );
    }
    A.guest(1);
    A.guest(2);
    sh("ovn-nbctl --wait=hv --timeout=30 sync");
    assert!(pings_soon(&A.ns(1), "10.213.1.2"), "guest to guest");
    assert!(pings_soon(&A.ns(1), "10.213.1.254"), "guest to its gateway");
    assert!(pings_soon(&A.ns(2), OUTSIDE), "guest to the outside");
    assert!(
        !ok("ip -n kovn-out route get 10.213.1.1"),
        "the outside must have no route back to the cluster"
    );
    let nat = sh("iptables -t nat -S POSTROUTING");
    assert!(
        nat.contains(&format!("-A POSTROUTING -s 10.213.1.0/24 -o {OUT_IF} -m comment --comment kinit-ovn-kovna -j MASQUERADE")),
        "{nat}"
    );
    // Without the rule the outside's replies have nowhere to go.
    sh(&format!(
        "iptables -t nat -D POSTROUTING -s 10.213.1.0/24 -o {OUT_IF} -m comment --comment kinit-ovn-kovna -j MASQUERADE"
    ));
    assert!(!pings(&A.ns(1), OUTSIDE), "reached the outside without NAT");

    // A second run puts the rule back and is otherwise a no-op; a third changes nothing OVN.
    let second = kinit_ok(&dir, "a.yml");
    assert!(
        changed_tasks(&second).contains(
            &"Cluster network masqueraded out of the outside interface (ovn-central)".to_string()
        ),
        "{second}"
    );
    assert!(
        pings_soon(&A.ns(1), OUTSIDE),
        "outside after the rule came back"
    );
    let third = kinit_ok(&dir, "a.yml");
    let changed = changed_tasks(&third);
    assert!(
        changed.iter().all(
            |t| t == "Cluster network on the integration bridge" || t == "Cluster storage pool"
        ),
        "third run changed {changed:?}:\n{third}"
    );

    // Cluster B asking for A's public address is refused, naming the address and A's port.
    let a_ip = sh("ovn-nbctl get Logical_Router_Port lr-kovna-public networks");
    let a_ip = a_ip
        .trim()
        .trim_matches(['[', ']', '"'])
        .split('/')
        .next()
        .unwrap()
        .to_string();
    write(
        "b-clash.yml",
        &B.inventory(&dir, json!({"kinit_ovn_public_ip": a_ip})),
    );
    let (clash_ok, stdout, stderr) = kinit(&dir, "b-clash.yml");
    assert!(!clash_ok, "a clashing public address must fail:\n{stdout}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains(&format!("kinit_ovn_public_ip: `{a_ip}` of cluster `kovnb` is already held by router port `lr-kovna-public`")),
        "{all}"
    );
    assert!(ok(
        "ovn-nbctl lsp-list public | grep -q '(public-lr-kovna)'"
    ));
    assert!(!ok("ovn-nbctl lrp-list lr-kovnb | grep -q public"));

    // With its own (default) address B works next to A.
    let b_out = kinit_ok(&dir, "b.yml");
    let b_ip = sh("ovn-nbctl get Logical_Router_Port lr-kovnb-public networks");
    assert!(!b_ip.contains(&format!("\"{a_ip}/")), "{b_ip} {b_out}");
    B.guest(1);
    sh("ovn-nbctl --wait=hv --timeout=30 sync");
    assert!(
        pings_soon(&B.ns(1), "10.213.2.254"),
        "B guest to its gateway"
    );
    assert!(pings_soon(&B.ns(1), OUTSIDE), "B guest to the outside");
    assert!(
        pings_soon(&A.ns(1), OUTSIDE),
        "A guest still reaches the outside"
    );

    // Cleanup of A (run twice: the second changes nothing) leaves B working.
    write(
        "deploy.yml",
        &format!("{cleanup}{}", cleanup.trim_start_matches("---\n")),
    );
    let out = kinit_ok(&dir, "a.yml");
    let second_half = &out[out.rfind("PLAY [cleanup-hypervisors]").unwrap()..];
    let changed = changed_tasks(second_half);
    assert!(
        changed.is_empty(),
        "second cleanup changed {changed:?}:\n{out}"
    );
    let nb = sh("ovn-nbctl show");
    assert!(!nb.contains("kovna"), "{nb}");
    assert!(
        nb.contains("lr-kovnb-public") && nb.contains("(public)"),
        "{nb}"
    );
    let routes = sh("ip -4 route show");
    assert!(!routes.contains("10.213.1.0/24"), "{routes}");
    assert!(routes.contains("10.213.2.0/24 via"), "{routes}");
    let rules = sh("iptables -t nat -S; iptables -S");
    assert!(!rules.contains("kinit-ovn-kovna"), "{rules}");
    assert!(rules.contains("kinit-ovn-kovnb"), "{rules}");
    assert!(ok("ovs-vsctl br-exists br-ex"));
    assert!(
        !pings(&A.ns(1), OUTSIDE),
        "A guest reaches the outside after its cleanup"
    );
    assert!(
        pings_soon(&B.ns(1), OUTSIDE),
        "B guest lost the outside to A's cleanup"
    );

    // Cleanup of the last cluster also removes the shared public switch and br-ex.
    kinit_ok(&dir, "b.yml");
    let nb = sh("ovn-nbctl show");
    assert!(nb.trim().is_empty(), "{nb}");
    assert!(!ok("ovs-vsctl br-exists br-ex"));
    let rules = sh("iptables -t nat -S; iptables -S");
    assert!(!rules.contains("kinit-ovn-"), "{rules}");
    assert!(!sh("ip -4 route show").contains("10.213."));
    assert!(sh("ovs-vsctl get open_vswitch . external_ids").contains("system-id=hypervisor-01"));
}
