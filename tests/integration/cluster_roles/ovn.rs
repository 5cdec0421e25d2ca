//! create-network and cleanup-hypervisors on a cluster over two hypervisors (OVN), run by the
//! real `kinit playbook` over SSH against two namespace hosts. A multi-hypervisor OVN (kernel
//! datapath, geneve tunnels, ovn-northd) cannot run here, so `ovs-vsctl`, `ovn-nbctl` and
//! `ovn-sbctl` are recording stand-ins that keep their database as files in the host's
//! folder, next to the node stand-ins for `apt-get`, `dpkg-query` and `systemctl`
//! (`node_standins`); the libvirt networks go to libvirt's test driver, one per hypervisor.
//! Asserted: the order and arguments of every changing call on each hypervisor, a second run
//! that changes nothing, and a cleanup that removes only this cluster's OVN objects.

use serde_json::json;

use super::hosts::{Host, Lab};
use super::{lab_inventory_with, plays_from, run_with, workspace};
use crate::cluster_content::fixture::Compute;
use crate::support::Test;

/// Queries print, changes are recorded in calls.log and applied to the files under `@S/ovs`.
const OVS_VSCTL: &str = r#"D=@S/ovs; mkdir -p $D/ext
case "$*" in
  "--if-exists get open_vswitch . external_ids:"*) k=${5#external_ids:}; [ -f $D/ext/$k ] && echo "\"$(cat $D/ext/$k)\""; exit 0 ;;
  "br-exists "*) [ -e $D/br-$2 ]; exit ;;
esac
echo "ovs-vsctl $*" >> @C
case "$*" in
  "set open_vswitch . "*) shift 3; for kv; do kv=${kv#external_ids:}; echo "${kv#*=}" > $D/ext/${kv%%=*}; done ;;
  "--may-exist add-br "*) touch $D/br-$3 ;;
  *) echo "stand-in ovs-vsctl: unexpected arguments: $*" >&2; exit 1 ;;
esac
"#;

const OVN_NBCTL: &str = r#"D=@S/ovn; mkdir -p $D/ls $D/lsp $D/lr $D/lrp
list() { for f in $D/$1/*; do [ -e "$f" ] && echo "00000000-0000-0000-0000-000000000000 ($(basename $f))"; done; true; }
case "$1" in
  get-connection) cat $D/@T-conn 2>/dev/null; exit 0 ;;
  ls-list) list ls; exit ;;
  lr-list) list lr; exit ;;
  lrp-list) list lrp; exit ;;
esac
[ "$*" = "--if-exists lsp-get-addresses $3" ] && { cat $D/lsp/$3 2>/dev/null; exit 0; }
echo "@T $*" >> @C
case "$1 $2" in
  "set-connection "*) echo "$2" > $D/@T-conn ;;
  "--may-exist ls-add") touch $D/ls/$3 ;;
  "--may-exist lsp-add") [ -e $D/ls/$3 ] || exit 1; [ -s $D/lsp/$4 ] || touch $D/lsp/$4 ;;
  "--may-exist lr-add") touch $D/lr/$3 ;;
  "--may-exist lrp-add") [ -e $D/lr/$3 ] || exit 1; touch $D/lrp/$4 ;;
  "lsp-set-addresses "*) [ -e $D/lsp/$2 ] || exit 1; echo "$3" > $D/lsp/$2 ;;
  "lsp-set-port-security "*|"lsp-set-type "*|"lsp-set-options "*) [ -e $D/lsp/$2 ] || exit 1 ;;
  "--wait=hv --timeout=30") ;;
  "--if-exists lsp-del") rm -f $D/lsp/$3 ;;
  "--if-exists ls-del") rm -f $D/ls/$3 ;;
  "--if-exists lr-del") rm -f $D/lr/$3; rm -f $D/lrp/$3-* ;;
  *) echo "stand-in @T: unexpected arguments: $*" >&2; exit 1 ;;
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
        eprintln!("skipped: namespace hosts need root (mount namespaces and overlays)");
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
             external_ids:system-id={me}"
        )
    };
    let mut central = vec![
        format!("{apt} update -q"),
        format!("{apt} install -y -q openvswitch-switch ovn-host ovn-central"),
        "systemctl enable openvswitch-switch".to_string(),
        "systemctl start openvswitch-switch".into(),
        "systemctl enable ovn-host".into(),
        "systemctl start ovn-host".into(),
        "systemctl enable ovn-central".into(),
        "systemctl start ovn-central".into(),
        "ovn-nbctl set-connection ptcp:6641".into(),
        "ovn-sbctl set-connection ptcp:6642".into(),
        chassis("hypervisor-01", "192.0.2.1"),
        "ovs-vsctl --may-exist add-br br-int".into(),
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
    ]);
    let hv1 = lab.host("hypervisor-01");
    let hv2 = lab.host("hypervisor-02");
    assert_eq!(hv1.calls(), central);
    assert_eq!(
        hv2.calls(),
        [
            format!("{apt} update -q"),
            format!("{apt} install -y -q openvswitch-switch ovn-host"),
            "systemctl enable openvswitch-switch".to_string(),
            "systemctl start openvswitch-switch".into(),
            "systemctl enable ovn-host".into(),
            "systemctl start ovn-host".into(),
            chassis("hypervisor-02", "192.0.2.2"),
            "ovs-vsctl --may-exist add-br br-int".into(),
        ]
    );
    let ovn = hv1.dir.join("node-state/ovn");
    for id in &want_ports {
        assert!(ovn.join("lsp").join(id).exists(), "port {id}");
    }

    // Another cluster's switch on the same central is left alone by the cleanup.
    std::fs::write(ovn.join("ls/sw-othercluster"), "").unwrap();
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
    // Only the OVN and OVS calls: the machine's podman (the service-container step) may
    // probe kernel modules through the modprobe stand-in.
    let ovn_calls = |h: &Host| -> Vec<String> {
        h.calls()
            .into_iter()
            .filter(|c| c.starts_with("ovn-") || c.starts_with("ovs-"))
            .collect()
    };
    assert_eq!(ovn_calls(hv1), removed, "{stdout}");
    assert!(ovn_calls(hv2).is_empty(), "{:?}", hv2.calls());
    assert!(ovn.join("ls/sw-othercluster").exists());
    assert!(!ovn.join("ls/sw-k8scluster").exists());
    assert!(!ovn.join("lr/lr-k8scluster").exists());
}

/// The names of the tasks that reported `changed` on some host.
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
