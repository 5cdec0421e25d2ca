//! The service node role (`kinit_services`, the "DNS and API load balancer" play of
//! create-services.yml) run by the real `kinit playbook` over SSH against a namespace host
//! with the node stand-ins (`node_standins`: apt-get, dpkg-query, systemctl): the package and
//! service calls in order, the zones it writes checked by bind's own `named-checkzone`, the
//! forwarders, and a second run that changes nothing. With one controller there is no
//! HAProxy (its configuration is checked with `haproxy -c` in cluster_content::services).

use super::hosts::Lab;
use super::{lab_inventory_with, plays_from, run_with, serve, workspace};
use crate::cluster_content::fixture::Compute;
use crate::support::Test;

fn checkzone(zone: &str, file: &std::path::Path) -> String {
    let out = std::process::Command::new("named-checkzone")
        .arg(zone)
        .arg(file)
        .output()
        .expect("named-checkzone (bind9-utils) is installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{zone}: {text}");
    text
}

#[test]
fn service_node_role_serves_the_cluster_zones_and_reruns_without_changes() {
    let Some(lab) = Lab::start_nodes(&["service"]) else {
        crate::support::cannot_run("namespace hosts need root (mount namespaces and overlays)");
        return;
    };
    let test = Test::new();
    let (dir, state) = workspace(&test, Some(&lab.known_hosts));
    std::fs::write(
        dir.join("deploy.yml"),
        plays_from(
            "playbooks/create-services.yml",
            &["create-services (DNS and API load balancer)"],
        ),
    )
    .unwrap();
    let inventory = lab_inventory_with(Compute::Linux, &lab, &state, |_, _| {});
    std::fs::write(dir.join("inventory.yml"), inventory).unwrap();
    let unused = serve("");
    let forwarders = r#"{"kinit_dns_public": ["9.9.9.9", "1.1.1.1"]}"#;
    let extra = ["-e", forwarders];

    let (stdout, _) = run_with(&lab, &dir, &unused, &extra);
    let host = lab.host("service");
    let apt = "apt-get -o DPkg::Lock::Timeout=60";
    assert_eq!(
        host.calls(),
        [
            format!("{apt} update -q"),
            format!("{apt} install -y -q --no-remove bind9 bind9-dnsutils"),
            "systemctl enable named".into(),
            "systemctl start named".into(),
            "systemctl restart named".into(),
        ],
        "{stdout}"
    );
    let options = std::fs::read_to_string(host.etc().join("bind/named.conf.options")).unwrap();
    let fwd = options
        .split("forwarders")
        .nth(1)
        .and_then(|s| s.split('}').next())
        .unwrap_or_else(|| panic!("no forwarders:\n{options}"));
    let listed: Vec<&str> = fwd
        .split([';', '{'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(listed, ["9.9.9.9", "1.1.1.1"], "{options}");
    let local = std::fs::read_to_string(host.etc().join("bind/named.conf.local")).unwrap();
    assert!(
        local.contains("\"/var/cache/bind/db.k8scluster.kubeinit.local\""),
        "{local}"
    );
    let zones = host.dir.join("var-cache-upper/bind");
    let forward = checkzone(
        "k8scluster.kubeinit.local",
        &zones.join("db.k8scluster.kubeinit.local"),
    );
    assert!(forward.contains("OK"), "{forward}");
    let zone_text = std::fs::read_to_string(zones.join("db.k8scluster.kubeinit.local")).unwrap();
    for (name, ip) in [
        ("api", "10.0.0.1"),
        ("controller-01", "10.0.0.1"),
        ("compute-01", "10.0.0.2"),
        ("service", "10.0.0.253"),
    ] {
        let found = zone_text.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.first() == Some(&name) && w.last() == Some(&ip) && w.contains(&"A")
        });
        assert!(found, "no A record {name} {ip}:\n{zone_text}");
    }
    let reverse = checkzone("0.0.10.in-addr.arpa", &zones.join("db.0.0.10"));
    assert!(reverse.contains("OK"), "{reverse}");

    // Second run: only the cache update runs; nothing changes.
    host.clear_calls();
    let (stdout, _) = run_with(&lab, &dir, &unused, &extra);
    assert_eq!(host.calls(), [format!("{apt} update -q")], "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("service") && l.contains("changed="))
        .unwrap_or_else(|| panic!("no recap line:\n{stdout}"));
    assert!(line.contains("changed=0 "), "{stdout}");
}
