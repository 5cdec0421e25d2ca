//! create-network's OVN tasks and the OVN cleanup, run by the real `kinit playbook` against
//! this machine (hypervisor-01, ovn-central, over the local connection) with real Open vSwitch
//! and OVN daemons that the role itself starts (ovs-ctl and ovn-ctl: no systemd here; the
//! userspace datapath where the openvswitch kernel module is missing). Guests are network
//! namespaces plugged into br-int with the cluster's interface ids, MACs and addresses; the
//! "outside" is a namespace behind a veth with no route back to the cluster networks, so a
//! reply from it proves the masquerading. hypervisor-02 is a second chassis in a network
//! namespace with its own Open vSwitch and ovn-controller (see `start_hv2`), so one guest of
//! the first cluster sits behind a geneve tunnel. The libvirt network and pool tasks go to libvirt's
//! test driver (in-process), so they are the only tasks a second run may report changed.
//! Root and the OVN packages are required; the test skips saying why otherwise, and leaves
//! the machine as it found it (drop guard) even when it fails.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::{changed_tasks, plays_from, workspace};
use crate::support::{OVN_CTL, OVS_CTL, Test, ovn_unavailable};

/// The outside interface on the host side and the outside namespace's address.
const OUT_IF: &str = "kovn-out-h";
const OUTSIDE: &str = "198.51.100.2";
/// The second hypervisor's network namespace, and the underlay both chassis tunnel over.
const HV2: &str = "kovn-hv2";
const UNDERLAY: &str = "192.168.213";

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
/// A cluster on A's network, which create-network must refuse.
const C: Cluster = Cluster {
    name: "kovnc",
    net: "10.213.1",
    tag: "c",
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
                    "hypervisor-01": {
                        "ansible_connection": "local",
                        "ansible_host": "127.0.0.1",
                        "kinit_ovn_encap_ip": format!("{UNDERLAY}.1"),
                    },
                    "hypervisor-02": {"ansible_host": "192.0.2.2"},
                }},
                "cluster_nodes": {"hosts": nodes},
            },
        }}))
        .unwrap()
    }

    /// Plug guest `n` into hypervisor-01's br-int: a namespace whose eth0 has the node's MAC
    /// and address and a default route through the cluster gateway.
    fn guest(&self, n: u8) {
        self.guest_on(n, "", "")
    }

    /// [`Cluster::guest`] on the second chassis: the veth's other end in its namespace, on
    /// its br-int (`env` points ovs-vsctl at its database).
    fn guest_on_hv2(&self, n: u8, hv2: &Path) {
        self.guest_on(
            n,
            &format!(" netns {HV2}"),
            &format!("ip netns exec {HV2} env OVS_RUNDIR={} ", hv2.display()),
        )
    }

    fn guest_on(&self, n: u8, host_netns: &str, on_host: &str) {
        let (ns, host) = (self.ns(n), format!("{}-h", self.ns(n)));
        sh(&format!(
            "ip netns add {ns} && ip link add {host}{host_netns} type veth peer name eth0 netns {ns} \
             && ip -n {ns} link set eth0 address {mac} && ip -n {ns} addr add {net}.{n}/24 dev eth0 \
             && ip -n {ns} link set eth0 up && ip -n {ns} link set lo up \
             && ip -n {ns} route add default via {net}.254 && {on_host}ip link set {host} up \
             && {on_host}ovs-vsctl add-port br-int {host} -- set interface {host} external_ids:iface-id={id}",
            mac = self.mac(n),
            net = self.net,
            id = self.port(n),
        ));
    }
}

/// hypervisor-02 as a second OVN chassis in the network namespace [`HV2`]: its own
/// ovsdb-server, ovs-vswitchd (userspace datapath) and ovn-controller with their run,
/// database and log files in `dir`, reaching central over a veth on the underlay. It is
/// configured here with the settings the role's chassis task gives a hypervisor: kinit reaches
/// hosts over SSH or locally, and a namespace sharing this machine's files and `/run` cannot
/// hold a second Open vSwitch under the role's paths. The userspace datapath sends tunnel
/// packets only through an address on one of its own bridges, so on both sides the underlay
/// address is on `br-phy` with the veth as its port.
fn start_hv2(dir: &Path) {
    let d = dir.display();
    let env =
        format!("env OVS_RUNDIR={d} OVS_DBDIR={d} OVS_LOGDIR={d} OVN_RUNDIR={d} OVN_LOGDIR={d}");
    sh(&format!(
        "ip netns add {HV2} && ip link add kovn-u1 type veth peer name kovn-u2 netns {HV2} \
         && ip link set kovn-u1 up \
         && ovs-vsctl add-br br-phy -- set bridge br-phy datapath_type=netdev -- add-port br-phy kovn-u1 \
         && ip addr add {UNDERLAY}.1/24 dev br-phy && ip link set br-phy up \
         && ovsdb-tool create {d}/conf.db /usr/share/openvswitch/vswitch.ovsschema \
         && ip netns exec {HV2} {env} sh -ec '
              ip link set lo up; ip link set kovn-u2 up
              ovsdb-server {d}/conf.db --remote=punix:{d}/db.sock --pidfile --log-file --detach
              ovs-vsctl --no-wait init
              ovs-vswitchd unix:{d}/db.sock --pidfile --log-file --detach
              ovs-vsctl add-br br-phy -- set bridge br-phy datapath_type=netdev -- add-port br-phy kovn-u2
              ip addr add {UNDERLAY}.2/24 dev br-phy; ip link set br-phy up
              ovs-vsctl set open_vswitch . external_ids:ovn-remote=tcp:{UNDERLAY}.1:6642 \
                external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip={UNDERLAY}.2 \
                external_ids:system-id=hypervisor-02 external_ids:ovn-bridge-datapath-type=netdev
              ovs-vsctl add-br br-int -- set bridge br-int datapath_type=netdev fail-mode=secure
              ovn-controller unix:{d}/db.sock --pidfile --log-file --detach'"
    ));
    let registered =
        eventually(|| sh("ovn-sbctl --bare --columns=name list Chassis").contains("hypervisor-02"));
    assert!(
        registered,
        "hypervisor-02 never registered with the southbound database"
    );
}

/// How long a condition the OVN daemons bring about may take: a ceiling for a machine under
/// load, not a timing; a condition that holds ends the wait at once.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(90);

/// Whether `cond` holds within [`SETTLE`], tried every 200 ms.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The chassis that `port` is bound to, once ovn-controller has claimed it.
fn bound_on(port: &str) -> String {
    let mut uuid = String::new();
    let claimed = eventually(|| {
        uuid = sh(&format!(
            "ovn-sbctl --bare --columns=chassis find Port_Binding logical_port={port}"
        ));
        !uuid.trim().is_empty()
    });
    assert!(claimed, "no chassis claimed port {port}");
    sh(&format!(
        "ovn-sbctl --bare --columns=name list Chassis {}",
        uuid.trim()
    ))
    .trim()
    .to_string()
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

/// Like [`pings`], tried until ovn-controller has installed fresh flows (within [`SETTLE`]).
fn pings_soon(ns: &str, to: &str) -> bool {
    eventually(|| pings(ns, to))
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

/// Puts the machine back as the test found it: guest and outside namespaces, OVN and OVS
/// daemons (the role started them: the test only runs when none was running), their
/// databases, the test clusters' routes and iptables rules, the sysctl file and values.
struct Restore {
    sysctls: Vec<(String, String)>,
    sysctl_file_existed: bool,
    /// Run, database and log folder of the second chassis's daemons.
    hv2: tempfile::TempDir,
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
            hv2: tempfile::tempdir().unwrap(),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let mut script = String::new();
        // C too: a create-network that wrongly accepted it would leave its rules.
        for c in [&A, &B, &C] {
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
        // The second chassis: its daemons by their pidfiles, then its namespace.
        let h = self.hv2.path().display();
        script += &format!(
            "for d in ovn-controller ovs-vswitchd ovsdb-server; do \
             [ -f {h}/$d.pid ] && kill $(cat {h}/$d.pid); done; sleep 0.5; ip netns del {HV2} 2>/dev/null; "
        );
        // ovn-controller recreates a missing br-int, so it stops before the bridges go; the
        // userspace datapath's tap devices go with the bridges and ovs-vswitchd.
        script += &format!("{OVN_CTL} stop_controller; ");
        script +=
            "for b in br-ex br-int br-phy; do ovs-vsctl --timeout=5 --if-exists del-br $b; done; ";
        script += &format!(
            "{OVN_CTL} stop_northd; {OVS_CTL} stop; \
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
        script += "for l in br-ex br-int br-phy ovs-netdev kovn-u1; do ip link del $l 2>/dev/null; done; ";
        let _ = Command::new("sh").args(["-c", &script]).output();
    }
}

#[test]
fn ovn_outside_access_on_real_ovn_pings_through_nat_reruns_unchanged_and_cleans_up_per_cluster() {
    if let Some(why) = ovn_unavailable(&["ping"]) {
        crate::support::cannot_run(why);
        return;
    }
    let restore = Restore::new();
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
    // Node 1 on this machine, node 2 on the second chassis: they talk over geneve.
    start_hv2(restore.hv2.path());
    A.guest(1);
    A.guest_on_hv2(2, restore.hv2.path());
    sh("ovn-nbctl --wait=hv --timeout=30 sync");
    assert_eq!(bound_on(&A.port(1)), "hypervisor-01");
    assert_eq!(bound_on(&A.port(2)), "hypervisor-02");
    assert!(
        pings_soon(&A.ns(1), "10.213.1.2"),
        "guest to guest across the tunnel"
    );
    assert!(
        pings_soon(&A.ns(2), "10.213.1.254"),
        "hypervisor-02's guest to its gateway"
    );
    assert!(pings_soon(&A.ns(1), "10.213.1.254"), "guest to its gateway");
    assert!(
        pings_soon(&A.ns(2), OUTSIDE),
        "hypervisor-02's guest to the outside (through central, the gateway chassis)"
    );
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

    // Cluster C on A's network is refused before it changes anything.
    write("c-clash.yml", &C.inventory(&dir, json!({})));
    let (clash_ok, stdout, stderr) = kinit(&dir, "c-clash.yml");
    assert!(!clash_ok, "a clashing cluster network must fail:\n{stdout}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("kinit_network: `10.213.1.0/24` of cluster `kovnc` is already routed on ovn-central to router port `lr-kovna-public`"),
        "{all}"
    );
    assert!(!ok("ovn-nbctl ls-list | grep -q '(sw-kovnc)'"));
    assert!(!ok("ovn-nbctl lr-list | grep -q '(lr-kovnc)'"));

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
