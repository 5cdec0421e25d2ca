//! The service node's configuration: bind's own checkers (`named-checkconf`,
//! `named-checkzone`) accept the rendered configuration and zones, HAProxy (`haproxy -c`)
//! accepts the API load balancer, and the records point where kubeadm's controlPlaneEndpoint
//! expects: the first controller with one controller, the service node's HAProxy with more.
//! bind9-utils and haproxy come from ci/test.sh's package list.

use std::path::Path;
use std::process::Command;

use kinit::spec::{ClusterSpec, SpecInputs};
use kinit::vars::VarMap;
use serde_json::json;

use super::fixture::{Compute, context, inventory, render};

fn check(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} (install bind9-utils and haproxy, as ci/test.sh does): {e}")
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{program} {args:?} rejected the file:\n{text}"
    );
    text
}

fn three_controllers() -> kinit::inventory::Inventory {
    let inputs = SpecInputs {
        spec: "k8s-libvirt-3-1-1",
        ..SpecInputs::default()
    };
    let spec = ClusterSpec::from_inputs(&inputs, &VarMap::new()).unwrap();
    let mut inv = kinit::cluster::expand(&spec).unwrap().to_inventory();
    inv.groups["all"].vars.insert(
        "kinit_state_dir".into(),
        json!("/var/lib/kinit-test/k8scluster"),
    );
    inv
}

/// `(name, type, value)` of every record line of a zone file.
fn records(zone: &str) -> Vec<(String, String, String)> {
    zone.lines()
        .filter(|l| {
            !l.starts_with(';') && !l.starts_with('$') && !l.starts_with(' ') && !l.starts_with('@')
        })
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(w[1], "IN", "record line `{l}`");
            (w[0].to_string(), w[2].to_string(), w[3].to_string())
        })
        .collect()
}

/// Render the bind configuration and zones into a chroot-like tree under `dir` and let
/// `named-checkconf -z` load all of it the way named would.
fn render_all(inv: &kinit::inventory::Inventory, dir: &Path) -> (String, String) {
    let vars = context(inv, "service", "kinit_services", &json!({}));
    let conf = format!(
        "{}\n{}",
        render(
            "roles/kinit_services/templates/named.conf.options.j2",
            &vars
        ),
        render("roles/kinit_services/templates/named.conf.local.j2", &vars)
    );
    let zones = dir.join("var/cache/bind");
    std::fs::create_dir_all(&zones).unwrap();
    std::fs::write(dir.join("named.conf"), &conf).unwrap();
    assert!(
        conf.contains("zone \"k8scluster.kubeinit.local\""),
        "{conf}"
    );
    assert!(conf.contains("zone \"0.0.10.in-addr.arpa\""), "{conf}");
    assert!(conf.contains("1.1.1.1;"), "default forwarder: {conf}");
    let forward = render("roles/kinit_services/templates/db.zone.j2", &vars);
    let reverse = render("roles/kinit_services/templates/db.reverse.j2", &vars);
    std::fs::write(zones.join("db.k8scluster.kubeinit.local"), &forward).unwrap();
    std::fs::write(zones.join("db.0.0.10"), &reverse).unwrap();
    let out = check(
        "named-checkconf",
        &["-z", "-t", dir.to_str().unwrap(), "/named.conf"],
    );
    assert!(
        out.contains("zone k8scluster.kubeinit.local/IN: loaded serial 1"),
        "{out}"
    );
    assert!(
        out.contains("zone 0.0.10.in-addr.arpa/IN: loaded serial 1"),
        "{out}"
    );
    (forward, reverse)
}

#[test]
fn one_controller_zone_points_api_at_the_controller() {
    let dir = tempfile::tempdir().unwrap();
    let (forward, reverse) = render_all(&inventory(Compute::Windows), dir.path());
    let a: Vec<(String, String)> = records(&forward)
        .into_iter()
        .filter(|r| r.1 == "A")
        .map(|r| (r.0, r.2))
        .collect();
    assert_eq!(
        a,
        [
            ("service", "10.0.0.253"),
            ("controller-01", "10.0.0.1"),
            ("compute-01", "10.0.0.2"),
            ("api", "10.0.0.1")
        ]
        .map(|(n, i)| (n.to_string(), i.to_string()))
    );
    let ptr: Vec<(String, String)> = records(&reverse).into_iter().map(|r| (r.0, r.2)).collect();
    assert!(
        ptr.contains(&("2".into(), "compute-01.k8scluster.kubeinit.local.".into())),
        "{reverse}"
    );
}

#[test]
fn several_controllers_go_through_haproxy_on_the_service_node() {
    let dir = tempfile::tempdir().unwrap();
    let inv = three_controllers();
    let (forward, _) = render_all(&inv, dir.path());
    let api: Vec<String> = records(&forward)
        .into_iter()
        .filter(|r| r.0 == "api")
        .map(|r| r.2)
        .collect();
    assert_eq!(api, ["10.0.0.253"]);
    let vars = context(&inv, "service", "kinit_services", &json!({}));
    let cfg = render("roles/kinit_services/templates/haproxy.cfg.j2", &vars);
    let path = dir.path().join("haproxy.cfg");
    std::fs::write(&path, &cfg).unwrap();
    check("haproxy", &["-c", "-f", path.to_str().unwrap()]);
    let servers: Vec<&str> = cfg
        .lines()
        .filter(|l| l.trim_start().starts_with("server "))
        .collect();
    assert_eq!(servers.len(), 3, "{cfg}");
    for (i, s) in servers.iter().enumerate() {
        assert!(s.contains(&format!("10.0.0.{}:6443", i + 1)), "{s}");
    }
    assert!(cfg.contains("bind 10.0.0.253:6443"), "{cfg}");
}

#[test]
fn forwarders_follow_the_spec_dns_setting() {
    let inv = inventory(Compute::Linux);
    let vars = context(
        &inv,
        "service",
        "kinit_services",
        &json!({"kinit_dns_public": ["9.9.9.9", "8.8.8.8"]}),
    );
    let options = render(
        "roles/kinit_services/templates/named.conf.options.j2",
        &vars,
    );
    assert!(
        options.contains("9.9.9.9;")
            && options.contains("8.8.8.8;")
            && !options.contains("1.1.1.1"),
        "{options}"
    );
}
