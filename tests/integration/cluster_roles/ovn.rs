//! create-network and cleanup-hypervisors on a cluster over two hypervisors (OVN), run by the
//! real `kinit playbook` over SSH against two namespace hosts. The namespace hosts share the
//! machine's network and init system, so `ovs-vsctl`, `ovn-nbctl`, `ovn-sbctl`, `ip` and
//! `iptables` are recording stand-ins that keep their state as files in the host's folder,
//! next to the node stand-ins for `apt-get`, `dpkg-query`, `modprobe`, `sysctl` and `systemctl`
//! (`node_standins`); the libvirt networks go to libvirt's test driver, one per hypervisor.
//! Asserted: the order and arguments of every changing call on each hypervisor, a second run
//! that changes nothing, and a cleanup that removes only this cluster's OVN objects, route and
//! rules. The same tasks against real OVN daemons, with traffic, are `ovn_real`'s test.

use serde_json::json;

use super::hosts::{Host, Lab};
use super::{changed_tasks, lab_inventory_with, plays_from, run_with, workspace};
use crate::cluster_content::fixture::Compute;
use crate::support::Test;

/// Queries print, changes are recorded in calls.log and applied to the files under `@S/ovs`.
const OVS_VSCTL: &str = r#"D=@S/ovs; mkdir -p $D/ext
case "$*" in
  "--if-exists get open_vswitch . external_ids:"*) k=${5#external_ids:}; [ -f $D/ext/$k ] && echo "\"$(cat $D/ext/$k)\""; exit 0 ;;
  "br-exists "*) [ -e $D/br-$2 ]; exit ;;
  "get bridge "*" datapath_type") cat $D/br-$3; exit ;;
esac
echo "ovs-vsctl $*" >> @C
case "$*" in
  "set open_vswitch . "*) shift 3; for kv; do kv=${kv#external_ids:}; echo "${kv#*=}" > $D/ext/${kv%%=*}; done ;;
  "--may-exist add-br "*" -- set bridge "*) echo "${8#datapath_type=}" > $D/br-$3 ;;
  "--if-exists del-br "*) rm -f $D/br-$3 ;;
  "remove open_vswitch . external_ids "*) rm -f $D/ext/$5 ;;
  *) echo "stand-in ovs-vsctl: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#;

/// The northbound database as files: `ls/`, `lr/` (names), `lsp/<port>` (addresses),
/// `lsw/<port>` (its switch), `lspt/<port>` (type), `lrp/<port>` (networks), `gw/<port>`
/// (gateway chassis), `route/<router>` (static routes).
const OVN_NBCTL: &str = r#"D=@S/ovn; mkdir -p $D/ls $D/lsp $D/lsw $D/lspt $D/lr $D/lrp $D/gw $D/route
list() { for f in $D/$1/*; do [ -e "$f" ] && echo "00000000-0000-0000-0000-000000000000 ($(basename $f))"; done; true; }
case "$*" in
  get-connection) cat $D/@T-conn 2>/dev/null; exit 0 ;;
  ls-list) list ls; exit ;;
  lr-list) list lr; exit ;;
  "lrp-list "*) list lrp | grep "($2-"; exit 0 ;;
  "lsp-list "*) for f in $D/lsw/*; do [ "$(cat $f 2>/dev/null)" = "$2" ] && echo "0 ($(basename $f))"; done; exit 0 ;;
  "lsp-get-addresses "*) cat $D/lsp/$2 2>/dev/null; exit 0 ;;
  "lsp-get-type "*) [ -e $D/lsp/$2 ] || exit 1; cat $D/lspt/$2 2>/dev/null; exit 0 ;;
  "--format=csv --no-headings --columns=name,networks list Logical_Router_Port")
    for f in $D/lrp/*; do [ -e "$f" ] && echo "$(basename $f),\"$(cat $f)\""; done; exit 0 ;;
  "--if-exists get Logical_Router_Port "*" networks") [ -e $D/lrp/$4 ] && echo "[\"$(cat $D/lrp/$4)\"]"; exit 0 ;;
  "lrp-get-gateway-chassis "*) cat $D/gw/$2 2>/dev/null; exit 0 ;;
  "lr-route-list "*) cat $D/route/$2 2>/dev/null; exit 0 ;;
esac
echo "@T $*" >> @C
case "$1 $2" in
  "set-connection "*) echo "$2" > $D/@T-conn ;;
  "--may-exist ls-add") touch $D/ls/$3 ;;
  "--may-exist lsp-add") [ -e $D/ls/$3 ] || exit 1; [ -s $D/lsp/$4 ] || touch $D/lsp/$4; echo $3 > $D/lsw/$4 ;;
  "--may-exist lr-add") touch $D/lr/$3 ;;
  "--may-exist lrp-add") [ -e $D/lr/$3 ] || exit 1; echo "$6" > $D/lrp/$4 ;;
  "lrp-add "*) [ -e $D/lr/$2 ] && [ ! -e $D/lrp/$3 ] || exit 1; echo "$5" > $D/lrp/$3 ;;
  "--if-exists lrp-del") rm -f $D/lrp/$3 $D/gw/$3 ;;
  "lsp-set-type "*) [ -e $D/lsp/$2 ] || exit 1; echo "$3" > $D/lspt/$2 ;;
  "lsp-set-addresses "*) [ -e $D/lsp/$2 ] || exit 1; echo "$3" > $D/lsp/$2 ;;
  "lsp-set-port-security "*|"lsp-set-options "*) [ -e $D/lsp/$2 ] || exit 1 ;;
  "lrp-set-gateway-chassis "*) [ -e $D/lrp/$2 ] || exit 1; echo "$2-$3 $4" > $D/gw/$2 ;;
  "--may-exist lr-route-add") [ -e $D/lr/$3 ] || exit 1; echo "$4 $5 dst-ip" >> $D/route/$3 ;;
  "--wait=hv --timeout=30") ;;
  "--if-exists lsp-del") rm -f $D/lsp/$3 $D/lsw/$3 $D/lspt/$3 ;;
  "--if-exists ls-del") rm -f $D/ls/$3; for f in $D/lsw/*; do [ "$(cat $f 2>/dev/null)" = "$3" ] && rm -f $D/lsp/${f##*/} $f; done; true ;;
  "--if-exists lr-del") rm -f $D/lr/$3 $D/lrp/$3-* $D/gw/$3-* $D/route/$3 ;;
  *) echo "stand-in @T: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#;

/// `ip` for br-ex's address and link and the host routes (the namespace hosts share the
/// machine's network, which the test must not change).
const IP: &str = r#"D=@S/ip; mkdir -p $D/route
case "$*" in
  "-4 -o addr show dev br-ex") [ -e @S/ovs/br-br-ex ] || exit 1; cat $D/addr 2>/dev/null; exit 0 ;;
  "-o link show dev br-ex") [ -e @S/ovs/br-br-ex ] || exit 1; [ -e $D/up ] && echo "9: br-ex: <BROADCAST,UP,LOWER_UP> mtu 1500" || echo "9: br-ex: <BROADCAST> mtu 1500"; exit 0 ;;
  "-4 route show default") echo "default via 192.0.2.254 dev eth7"; exit 0 ;;
  "-4 route show dev br-ex") cat $D/route/* 2>/dev/null | sed 's/ dev br-ex//'; exit 0 ;;
  "-4 route show "*) n=$(echo $4 | tr / _); cat $D/route/$n 2>/dev/null; exit 0 ;;
esac
echo "ip $*" >> @C
case "$*" in
  "addr add "*" dev br-ex") echo "9: br-ex    inet $3 scope global br-ex" > $D/addr ;;
  "link set dev br-ex up") touch $D/up ;;
  "route replace "*) n=$(echo $3 | tr / _); echo "$3 via $5 dev br-ex" > $D/route/$n ;;
  "route del "*) n=$(echo $3 | tr / _); [ -e $D/route/$n ] || exit 2; rm $D/route/$n ;;
  *) echo "stand-in ip: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#;

/// `iptables` with the rules as lines of `@S/iptables-<table>` (`-S` prints them as `-A`).
const IPTABLES: &str = r#"[ "$1" = -t ] || { echo "stand-in iptables: no table: $*" >&2; exit 1; }
T=@S/iptables-$2; op=$3; shift 3; touch $T
case "$op" in
  -S) sed 's/^/-A /' $T; exit 0 ;;
  -C) grep -qxF -- "$*" $T; exit ;;
esac
echo "iptables -t ${T##*-} $op $*" >> @C
case "$op" in
  -A) echo "$*" >> $T ;;
  -D) grep -qxF -- "$*" $T || exit 1; grep -vxF -- "$*" $T > $T.new; mv $T.new $T ;;
  *) echo "stand-in iptables: unexpected arguments: $op $*" >&2; exit 1 ;;
esac
"#;

fn write_ovn_standins(h: &Host) {
    use std::os::unix::fs::PermissionsExt;
    let calls = h.dir.join("calls.log").display().to_string();
    let state = h.dir.join("node-state").display().to_string();
    for (name, body) in [
        ("ovs-vsctl", OVS_VSCTL.to_string()),
        ("ovn-nbctl", OVN_NBCTL.replace("@T", "ovn-nbctl")),
        ("ovn-sbctl", OVN_NBCTL.replace("@T", "ovn-sbctl")),
        ("ip", IP.to_string()),
        ("iptables", IPTABLES.to_string()),
    ] {
        let p = h.dir.join("bin").join(name);
        let body = body.replace("@C", &calls).replace("@S", &state);
        std::fs::write(
            &p,
            format!("#!/bin/sh\n# Stand-in for {name} (ovn.rs).\n{body}"),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn ovn_network_over_two_hypervisors_is_built_in_order_rerun_without_changes_and_cleaned_up() {
    let Some(lab) = Lab::start_nodes(&["hypervisor-01", "hypervisor-02"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    for h in &lab.hosts {
        write_ovn_standins(h);
    }
    let test = Test::new();
    let (dir, state) = workspace(&test, Some(&lab.known_hosts));
    let pool = dir.join("pool");
    std::fs::create_dir_all(&pool).unwrap();
    // A second test-driver instance for the second hypervisor (its own networks).
    let hv2_driver = dir.join("hv2-driver.xml");
    std::fs::write(&hv2_driver, "<node/>\n").unwrap();
    let hv2_uri = format!("test://{}", hv2_driver.display());
    let inventory = lab_inventory_with(Compute::Linux, &lab, &state, |_, _| {});
    // The fixture cluster has one local hypervisor; here both hypervisors are the lab's SSH
    // hosts, each with its own geneve address and libvirt test-driver instance.
    let mut inv: serde_json::Value = serde_yaml::from_str(&inventory).unwrap();
    let hvs = &mut inv["all"]["children"]["hypervisors"]["hosts"];
    let base = hvs["hypervisor-01"].clone();
    for (name, ip, uri) in [
        ("hypervisor-01", "192.0.2.1", "test:///default".to_string()),
        ("hypervisor-02", "192.0.2.2", hv2_uri.clone()),
    ] {
        let mut vars = base.clone();
        vars["ansible_connection"] = json!("ssh");
        vars["ansible_host"] = json!("127.0.0.1");
        vars["ansible_port"] = json!(lab.host(name).port);
        vars["ansible_user"] = json!("root");
        vars["ansible_ssh_private_key_file"] = json!(lab.client_key.display().to_string());
        vars["kinit_ovn_encap_ip"] = json!(ip);
        // What the gather-facts phase sets before create-network runs.
        vars["hypervisor_family"] = json!("Debian");
        vars["libvirt_uri"] = json!(uri);
        hvs[name] = vars;
    }
    std::fs::write(
        dir.join("inventory.yml"),
        serde_yaml::to_string(&inv).unwrap(),
    )
    .unwrap();
    let pool_arg = format!("libvirt_pool_path={}", pool.display());
    let extra = ["-e", pool_arg.as_str()];
    let create = plays_from("playbooks/create-network.yml", &["create-network"]);
    let cleanup = plays_from(
        "playbooks/cleanup-hypervisors.yml",
        &["cleanup-hypervisors"],
    );

    std::fs::write(dir.join("deploy.yml"), &create).unwrap();
    run_with(&lab, &dir, "unused", &extra);
    let nodes = ["controller-01", "compute-01"];
    let port = |n: &str| kinit::provider::ovs_network::interface_id("k8scluster", n);
    let apt = "apt-get -o DPkg::Lock::Timeout=60";
    let chassis = |me: &str, ip: &str| {
        format!(
            "ovs-vsctl set open_vswitch . external_ids:ovn-remote=tcp:192.0.2.1:6642 \
             external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip={ip} \
             external_ids:system-id={me} external_ids:ovn-bridge-datapath-type=system{}",
            if me == "hypervisor-01" {
                " external_ids:ovn-bridge-mappings=provider:br-ex"
            } else {
                ""
            }
        )
    };
    let br_int = "ovs-vsctl --may-exist add-br br-int -- set bridge br-int datapath_type=system";
    let mut central = vec![
        format!("{apt} update -q"),
        format!("{apt} install -y -q --no-remove openvswitch-switch ovn-host ovn-central"),
        "modprobe openvswitch".to_string(),
        "systemctl enable openvswitch-switch".into(),
        "systemctl start openvswitch-switch".into(),
        "systemctl enable ovn-host".into(),
        "systemctl start ovn-host".into(),
        "systemctl enable ovn-central".into(),
        "systemctl start ovn-central".into(),
        "ovn-nbctl set-connection ptcp:6641".into(),
        "ovn-sbctl set-connection ptcp:6642".into(),
        chassis("hypervisor-01", "192.0.2.1"),
        br_int.into(),
        "ovn-nbctl --may-exist ls-add sw-k8scluster".into(),
    ];
    let mut want_ports = Vec::new();
    for n in nodes {
        let (id, addr) = (port(n), lab_addr(&inv, n));
        central.push(format!("ovn-nbctl --may-exist lsp-add sw-k8scluster {id}"));
        central.push(format!("ovn-nbctl lsp-set-addresses {id} {addr}"));
        central.push(format!("ovn-nbctl lsp-set-port-security {id} {addr}"));
        want_ports.push(id);
    }
    central.extend([
        "ovn-nbctl --may-exist lr-add lr-k8scluster".to_string(),
        "ovn-nbctl --may-exist lrp-add lr-k8scluster lr-k8scluster-sw-k8scluster 0a:00:00:00:00:01 10.0.0.254/24".into(),
        "ovn-nbctl --may-exist lsp-add sw-k8scluster sw-k8scluster-lr-k8scluster".into(),
        "ovn-nbctl lsp-set-type sw-k8scluster-lr-k8scluster router".into(),
        "ovn-nbctl lsp-set-addresses sw-k8scluster-lr-k8scluster router".into(),
        "ovn-nbctl lsp-set-options sw-k8scluster-lr-k8scluster router-port=lr-k8scluster-sw-k8scluster".into(),
        "ovn-nbctl --wait=hv --timeout=30 sync".into(),
        // Outside access: the shared public switch, the router's port on it (its address
        // and MAC derived from the cluster name) pinned to central, the default route to
        // br-ex, br-ex's address, the host route back, forwarding and the masquerade out of
        // the default route's interface.
        "ovn-nbctl --may-exist ls-add public".into(),
        "ovn-nbctl --may-exist lsp-add public public-ln".into(),
        "ovn-nbctl lsp-set-type public-ln localnet".into(),
        "ovn-nbctl lsp-set-addresses public-ln unknown".into(),
        "ovn-nbctl lsp-set-options public-ln network_name=provider".into(),
        "ovn-nbctl --if-exists lrp-del lr-k8scluster-public".into(),
        "ovn-nbctl lrp-add lr-k8scluster lr-k8scluster-public 0a:01:b5:62:26:6b 172.16.0.143/24".into(),
        "ovn-nbctl --may-exist lsp-add public public-lr-k8scluster".into(),
        "ovn-nbctl lsp-set-type public-lr-k8scluster router".into(),
        "ovn-nbctl lsp-set-addresses public-lr-k8scluster router".into(),
        "ovn-nbctl lsp-set-options public-lr-k8scluster router-port=lr-k8scluster-public".into(),
        "ovn-nbctl lrp-set-gateway-chassis lr-k8scluster-public hypervisor-01 20".into(),
        "ovn-nbctl --may-exist lr-route-add lr-k8scluster 0.0.0.0/0 172.16.0.254".into(),
        "ovn-nbctl --wait=hv --timeout=30 sync".into(),
        "ovs-vsctl --may-exist add-br br-ex -- set bridge br-ex datapath_type=system".into(),
        "ip addr add 172.16.0.254/24 dev br-ex".into(),
        "ip link set dev br-ex up".into(),
        "ip route replace 10.0.0.0/24 via 172.16.0.143 dev br-ex".into(),
        "sysctl -w net.ipv4.ip_forward=1".into(),
        "sysctl -w net.ipv4.conf.all.rp_filter=2".into(),
        format!("iptables -t nat -A POSTROUTING {MASQUERADE}"),
        format!("iptables -t filter -A FORWARD {FORWARD_OUT}"),
        format!("iptables -t filter -A FORWARD {FORWARD_IN}"),
    ]);
    let hv1 = lab.host("hypervisor-01");
    let hv2 = lab.host("hypervisor-02");
    assert_eq!(hv1.calls(), central);
    assert_eq!(
        hv2.calls(),
        [
            format!("{apt} update -q"),
            format!("{apt} install -y -q --no-remove openvswitch-switch ovn-host"),
            "modprobe openvswitch".to_string(),
            "systemctl enable openvswitch-switch".into(),
            "systemctl start openvswitch-switch".into(),
            "systemctl enable ovn-host".into(),
            "systemctl start ovn-host".into(),
            chassis("hypervisor-02", "192.0.2.2"),
            br_int.into(),
        ]
    );
    let ovn = hv1.dir.join("node-state/ovn");
    for id in &want_ports {
        assert!(ovn.join("lsp").join(id).exists(), "port {id}");
    }

    // Another cluster's switch, its port on the public switch and its host route on the same
    // central are left alone by the cleanup, and keep the shared public switch and br-ex.
    std::fs::write(ovn.join("ls/sw-othercluster"), "").unwrap();
    std::fs::write(ovn.join("lsp/public-lr-othercluster"), "router\n").unwrap();
    std::fs::write(ovn.join("lsw/public-lr-othercluster"), "public\n").unwrap();
    let other_route = hv1.dir.join("node-state/ip/route/10.1.0.0_24");
    std::fs::write(&other_route, "10.1.0.0/24 via 172.16.0.7 dev br-ex\n").unwrap();
    for h in &lab.hosts {
        h.clear_calls();
    }
    let (stdout, _) = run_with(&lab, &dir, "unused", &extra);
    // The libvirt test driver's state lives in the kinit process, so a new run starts without
    // the network and pool (their idempotence within one run is libvirt.rs's test); every
    // other task changes nothing.
    let changed = changed_tasks(&stdout);
    assert!(
        changed.iter().all(
            |t| t == "Cluster network on the integration bridge" || t == "Cluster storage pool"
        ),
        "second run changed {changed:?}:\n{stdout}"
    );
    for h in &lab.hosts {
        // apt-get update runs every time (update_cache), changing nothing installed.
        assert_eq!(h.calls(), [format!("{apt} update -q")], "{}", h.name);
        h.clear_calls();
    }

    std::fs::write(
        dir.join("deploy.yml"),
        format!("{cleanup}{}", cleanup.trim_start_matches("---\n")),
    )
    .unwrap();
    let (stdout, _) = run_with(&lab, &dir, "unused", &extra);
    let mut removed: Vec<String> = want_ports
        .iter()
        .map(|id| format!("ovn-nbctl --if-exists lsp-del {id}"))
        .collect();
    removed.push("ovn-nbctl --if-exists ls-del sw-k8scluster".into());
    removed.push("ovn-nbctl --if-exists lr-del lr-k8scluster".into());
    removed.extend([
        "ovn-nbctl --if-exists lsp-del public-lr-k8scluster".to_string(),
        "ip route del 10.0.0.0/24 dev br-ex".into(),
        format!("iptables -t nat -D POSTROUTING {MASQUERADE}"),
        format!("iptables -t filter -D FORWARD {FORWARD_OUT}"),
        format!("iptables -t filter -D FORWARD {FORWARD_IN}"),
    ]);
    // Only the OVN and OVS calls: the machine's podman (the service-container step) may
    // probe kernel modules through the modprobe stand-in.
    let ovn_calls = |h: &Host| -> Vec<String> {
        h.calls()
            .into_iter()
            .filter(|c| {
                ["ovn-", "ovs-", "ip ", "iptables "]
                    .iter()
                    .any(|p| c.starts_with(p))
            })
            .collect()
    };
    assert_eq!(ovn_calls(hv1), removed, "{stdout}");
    assert!(ovn_calls(hv2).is_empty(), "{:?}", hv2.calls());
    assert!(ovn.join("ls/sw-othercluster").exists());
    assert!(!ovn.join("ls/sw-k8scluster").exists());
    assert!(!ovn.join("lr/lr-k8scluster").exists());
    assert!(ovn.join("ls/public").exists());
    assert!(other_route.exists());
    assert!(hv1.dir.join("node-state/ovs/br-br-ex").exists());
}

/// The rules the role adds on central, as `iptables` gets them after the chain.
const MASQUERADE: &str =
    "-s 10.0.0.0/24 -o eth7 -j MASQUERADE -m comment --comment kinit-ovn-k8scluster";
const FORWARD_OUT: &str = "-s 10.0.0.0/24 -j ACCEPT -m comment --comment kinit-ovn-k8scluster";
const FORWARD_IN: &str = "-d 10.0.0.0/24 -j ACCEPT -m comment --comment kinit-ovn-k8scluster";

/// `"<mac> <ip>"` of node `n` in the inventory.
fn lab_addr(inv: &serde_json::Value, n: &str) -> String {
    let h = &inv["all"]["children"]["cluster_nodes"]["hosts"][n];
    let h = if h.is_null() {
        find_host(inv, n)
    } else {
        h.clone()
    };
    format!(
        "{} {}",
        h["kinit_mac"].as_str().unwrap(),
        h["kinit_ip"].as_str().unwrap()
    )
}

fn find_host(inv: &serde_json::Value, n: &str) -> serde_json::Value {
    inv["all"]["children"]
        .as_object()
        .unwrap()
        .values()
        .find_map(|g| {
            g["hosts"]
                .get(n)
                .filter(|v| v.get("kinit_mac").is_some())
                .cloned()
        })
        .unwrap()
}
