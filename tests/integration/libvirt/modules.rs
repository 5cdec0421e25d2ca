//! The `virt_*` modules on the test driver: first run changes, second run changes nothing,
//! changed settings redefine under the same uuid, removal is idempotent, `--check` touches
//! nothing.

use serde_json::{Value, json};

use super::{TEST_URI, ok, run_module};

fn net_args(hosts: Value, state: &str) -> Value {
    json!({
        "name": "m-net", "uri": TEST_URI, "state": state, "autostart": true,
        "nat": {"cidr": "10.9.0.0/24", "domain": "mcluster.kubeinit.local", "hosts": hosts}
    })
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn virt_network_is_idempotent_with_dhcp_hosts() {
    let hosts = json!([
        {"name": "controller-01", "mac": "52:54:00:20:00:01", "ip": "10.9.0.1"},
        {"name": "compute-01", "mac": "52:54:00:20:00:02", "ip": "10.9.0.2"}
    ]);
    // --check on a missing network: reports the change, defines nothing.
    let r = run_module("virt_network", net_args(hosts.clone(), "active"), true)
        .await
        .unwrap();
    assert!(r.changed);
    let hv = kinit::provider::Hypervisor::open(TEST_URI).await.unwrap();
    assert!(
        hv.network("m-net").await.unwrap().is_none(),
        "check mode defined nothing"
    );

    let r = ok("virt_network", net_args(hosts.clone(), "active")).await;
    assert!(r.changed);
    assert_eq!(
        strs(&r.data["actions"]),
        ["defined", "started", "autostart on"]
    );
    let r = ok("virt_network", net_args(hosts.clone(), "active")).await;
    assert!(!r.changed, "{:?}", r.data);
    assert_eq!(r.data["state"], "active");

    let uuid = hv.network("m-net").await.unwrap().unwrap().uuid;
    // A third node: redefined under the same uuid, restarted to serve the new lease.
    let mut more = hosts.as_array().unwrap().clone();
    more.push(json!({"name": "compute-02", "mac": "52:54:00:20:00:03", "ip": "10.9.0.3"}));
    let r = ok(
        "virt_network",
        net_args(Value::Array(more.clone()), "active"),
    )
    .await;
    assert!(r.changed);
    assert_eq!(strs(&r.data["actions"]), ["redefined", "restarted"]);
    let info = hv.network("m-net").await.unwrap().unwrap();
    assert_eq!(info.uuid, uuid);
    let text = hv
        .call("dumpxml".into(), |c| {
            c.lookup_network_by_name("m-net")?.xml_desc(0)
        })
        .await
        .unwrap();
    assert!(
        text.contains("mac='52:54:00:20:00:03' name='compute-02' ip='10.9.0.3'"),
        "{text}"
    );
    assert!(
        !ok(
            "virt_network",
            net_args(Value::Array(more.clone()), "active")
        )
        .await
        .changed
    );

    let r = ok(
        "virt_network",
        net_args(Value::Array(more.clone()), "inactive"),
    )
    .await;
    assert!(r.changed);
    assert_eq!(r.data["state"], "inactive");
    let absent = json!({"name": "m-net", "uri": TEST_URI, "state": "absent"});
    assert!(ok("virt_network", absent.clone()).await.changed);
    assert!(!ok("virt_network", absent).await.changed);
    assert!(hv.network("m-net").await.unwrap().is_none());
}

#[tokio::test]
async fn virt_network_explains_a_missing_definition() {
    let err = run_module(
        "virt_network",
        json!({"name": "m-nothing", "uri": TEST_URI}),
        false,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`m-nothing` does not exist") && err.contains("`nat`"),
        "{err}"
    );
    let err = run_module(
        "virt_network",
        json!({"name": "x", "uri": TEST_URI, "nat": {"cidr": "10.0.0.0/24", "hosts": [
            {"name": "a", "mac": "52:54:00:00:00:01", "ip": "192.168.1.1"}]}}),
        false,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("hosts.ip") && err.contains("`192.168.1.1`"),
        "{err}"
    );
    let err = run_module("virt_network", json!({"name": "x", "colour": "red"}), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("colour"), "{err}");
}

#[tokio::test]
async fn virt_pool_and_virt_volume_are_idempotent() {
    let pool = json!({"name": "m-pool", "uri": TEST_URI, "path": "/var/lib/libvirt/images/m-pool"});
    let r = ok("virt_pool", pool.clone()).await;
    assert!(r.changed);
    assert_eq!(strs(&r.data["actions"]), ["defined", "started"]);
    assert!(!ok("virt_pool", pool.clone()).await.changed);
    let moved = json!({"name": "m-pool", "uri": TEST_URI, "path": "/elsewhere"});
    let r = run_module("virt_pool", moved, false).await;
    let err = r.unwrap_err().to_string();
    assert!(
        err.contains("/var/lib/libvirt/images/m-pool") && err.contains("/elsewhere"),
        "{err}"
    );

    let vol = |cap: &str| json!({"pool": "m-pool", "name": "m-disk.qcow2", "uri": TEST_URI, "capacity": cap});
    let r = ok("virt_volume", vol("20G")).await;
    assert!(r.changed);
    assert_eq!(
        r.data["path"],
        "/var/lib/libvirt/images/m-pool/m-disk.qcow2"
    );
    assert_eq!(r.data["capacity"], 20u64 << 30);
    assert!(!ok("virt_volume", vol("20G")).await.changed);
    // Asking for less changes nothing (disks never shrink).
    let r = ok("virt_volume", vol("10G")).await;
    assert!(!r.changed);
    assert_eq!(r.data["capacity"], 20u64 << 30);
    // Growing calls virStorageVolResize, which the test driver does not implement (the
    // qemu driver does): the attempt shows up as that error, and --check reports a change.
    assert!(
        run_module("virt_volume", vol("25G"), true)
            .await
            .unwrap()
            .changed
    );
    let err = run_module("virt_volume", vol("25G"), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("resize volume `m-disk.qcow2`") && err.contains("virStorageVolResize"),
        "{err}"
    );
    let raw = json!({"pool": "m-pool", "name": "m-disk.qcow2", "uri": TEST_URI,
                     "capacity": "20G", "format": "raw"});
    let err = run_module("virt_volume", raw, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exists as qcow2") && err.contains("remove it first"),
        "{err}"
    );

    let gone =
        json!({"pool": "m-pool", "name": "m-disk.qcow2", "uri": TEST_URI, "state": "absent"});
    assert!(ok("virt_volume", gone.clone()).await.changed);
    assert!(!ok("virt_volume", gone).await.changed);
    let absent = json!({"name": "m-pool", "uri": TEST_URI, "state": "absent"});
    assert!(ok("virt_pool", absent.clone()).await.changed);
    assert!(!ok("virt_pool", absent).await.changed);
}

fn linux_guest(name: &str, ram: u64, state: &str) -> Value {
    json!({
        "name": name, "uri": TEST_URI, "state": state, "virt_type": "auto",
        "linux": {
            "vcpus": 2, "ram_kib": ram, "network": "default", "mac": "52:54:00:20:01:01",
            "disk": format!("/var/lib/libvirt/images/{name}.qcow2"),
            "seed_iso": format!("/var/lib/libvirt/images/{name}-seed.iso")
        }
    })
}

#[tokio::test]
async fn virt_guest_linux_lifecycle_is_idempotent() {
    let n = "m-linux";
    let r = ok("virt_guest", linux_guest(n, 1048576, "running")).await;
    assert!(r.changed);
    assert_eq!(strs(&r.data["actions"]), ["defined", "started"]);
    assert_eq!(r.data["state"], "running");
    // No vmx/svm on this kind of machine (and the test driver has no KVM): the check says qemu.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let hw = cpuinfo.split_whitespace().any(|w| w == "vmx" || w == "svm")
        && std::path::Path::new("/dev/kvm").exists();
    assert_eq!(r.data["virt_type"], if hw { "kvm" } else { "qemu" });
    let uuid = r.data["uuid"].clone();
    let r = ok("virt_guest", linux_guest(n, 1048576, "running")).await;
    assert!(!r.changed, "{:?}", r.data);

    // More RAM: redefined, same uuid, applies at the next boot.
    let r = ok("virt_guest", linux_guest(n, 2097152, "running")).await;
    assert!(r.changed);
    assert_eq!(strs(&r.data["actions"]), ["redefined"]);
    assert_eq!(r.data["uuid"], uuid);
    assert_eq!(r.data["pending_restart"], true);
    assert!(
        !ok("virt_guest", linux_guest(n, 2097152, "running"))
            .await
            .changed
    );

    let state = |s: &str| json!({"name": n, "uri": TEST_URI, "state": s});
    let r = ok("virt_guest", state("shutdown")).await;
    assert!(r.changed);
    assert_eq!(r.data["state"], "shutoff");
    assert!(!ok("virt_guest", state("shutdown")).await.changed);
    assert!(ok("virt_guest", state("running")).await.changed);
    let r = ok("virt_guest", state("destroyed")).await;
    assert!(r.changed);
    assert_eq!(r.data["state"], "shutoff");
    assert!(!ok("virt_guest", state("present")).await.changed);
    let r = ok(
        "virt_guest",
        json!({"name": n, "uri": TEST_URI, "state": "running", "autostart": true}),
    )
    .await;
    assert_eq!(strs(&r.data["actions"]), ["started", "autostart on"]);
    // Removal of a running guest, twice.
    assert!(ok("virt_guest", state("absent")).await.changed);
    assert!(!ok("virt_guest", state("absent")).await.changed);
    let hv = kinit::provider::Hypervisor::open(TEST_URI).await.unwrap();
    assert!(hv.guest(n).await.unwrap().is_none());
}

#[tokio::test]
async fn virt_guest_windows_defines_and_undefines() {
    let n = "m-windows";
    let args = json!({
        "name": n, "uri": TEST_URI, "virt_type": "qemu",
        "windows": {
            "vcpus": 4, "max_vcpus": 8, "ram_kib": 16777216, "network": "default",
            "mac": "52:54:00:20:02:01", "nic_model": "virtio",
            "disk": "/var/lib/libvirt/images/m-windows.qcow2",
            "install_iso": "/var/lib/libvirt/images/win2022.iso",
            "virtio_iso": "/var/lib/libvirt/images/virtio-win.iso",
            "config_iso": "/var/lib/libvirt/images/m-windows-config.iso"
        }
    });
    let r = run_module("virt_guest", args.clone(), true).await.unwrap();
    assert!(r.changed, "check mode reports the change");
    let hv = kinit::provider::Hypervisor::open(TEST_URI).await.unwrap();
    assert!(
        hv.guest(n).await.unwrap().is_none(),
        "check mode defined nothing"
    );
    let r = ok("virt_guest", args.clone()).await;
    assert!(r.changed);
    assert_eq!(r.data["virt_type"], "qemu");
    assert!(!ok("virt_guest", args.clone()).await.changed);
    let info = hv.guest(n).await.unwrap().unwrap();
    // SeaBIOS by default (issue 18): no UEFI variables, no TPM.
    assert!(!info.has_nvram && !info.has_tpm);
    let mut secure_bios = args.clone();
    secure_bios["windows"]["secure_boot"] = json!(true);
    let err = run_module("virt_guest", secure_bios, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("secure_boot") && err.contains("firmware: uefi"),
        "{err}"
    );
    let absent = json!({"name": n, "uri": TEST_URI, "state": "absent"});
    assert!(ok("virt_guest", absent.clone()).await.changed);
    assert!(!ok("virt_guest", absent).await.changed);
}

#[tokio::test]
async fn virt_guest_refuses_two_definitions_and_bad_settings() {
    let both = json!({"name": "x", "uri": TEST_URI, "linux": {}, "windows": {}});
    let err = run_module("virt_guest", both, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("exactly one of `linux`, `windows`"), "{err}");
    let mut bad = linux_guest("m-bad", 100, "running");
    bad["linux"]["ram_kib"] = json!(100);
    let err = run_module("virt_guest", bad, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("ram_kib") && err.contains("`100`"), "{err}");
    let mut bad = linux_guest("m-bad", 1048576, "running");
    bad["linux"]["mac"] = json!("52:54:00:zz:00:01");
    let err = run_module("virt_guest", bad, false)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("52:54:00:zz:00:01"), "{err}");
}

#[test]
fn load_time_validation_leaves_templated_values_for_run_time() {
    let m = kinit::modules::lookup("community.libvirt.virt_guest").unwrap();
    let mut templated = linux_guest("m-tpl", 1048576, "running");
    templated["linux"]["ram_kib"] = json!("{{ ram }}");
    m.validate(&templated)
        .expect("a template is checked after rendering");
    let mut unknown = linux_guest("m-tpl", 1048576, "running");
    unknown["colour"] = json!("red");
    let err = m.validate(&unknown).unwrap_err().to_string();
    assert!(err.contains("colour"), "{err}");
    let m = kinit::modules::lookup("virt_config_iso").unwrap();
    let err = m
        .validate(&json!({"path": "/x.iso"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`cloud_init`"), "{err}");
    m.validate(&json!({"path": "{{ p }}", "state": "absent"}))
        .unwrap();
}
