//! The slow tier: the modules against a real libvirtd with QEMU in software emulation.
//! Ignored by default; run it on a machine with libvirt and QEMU installed:
//!
//! ```sh
//! # Debian 12: qemu-system-x86 libvirt-daemon-system ovmf swtpm swtpm-tools genisoimage
//! # (see the machine reference notes for the backports recipe); without systemd start
//! # the daemons by hand: `/usr/sbin/virtlogd -d && /usr/sbin/libvirtd -d`
//! KINIT_TEST_LIBVIRT_URI=qemu:///system cargo test --test integration real_libvirt -- --ignored
//! ```
//!
//! It builds a pool, a base image and an overlay over it, a seed ISO and a Windows config
//! ISO, a NAT network with DHCP host entries, then starts a Linux domain (no OS on the
//! disk: it proves QEMU accepts the definition and runs it) and a Windows-shaped domain
//! (SeaBIOS, the default firmware), and removes everything,
//! including the Windows domain's NVRAM and TPM state.

use serde_json::json;

use super::ok;

#[tokio::test]
#[ignore = "needs a real libvirtd with QEMU: set KINIT_TEST_LIBVIRT_URI and pass --ignored"]
async fn real_libvirt_runs_linux_and_windows_domains() {
    let Ok(uri) = std::env::var("KINIT_TEST_LIBVIRT_URI") else {
        panic!("set KINIT_TEST_LIBVIRT_URI (e.g. qemu:///system)");
    };
    // Under the images directory: QEMU runs as its own user and must reach the files.
    let dir = format!("/var/lib/libvirt/images/kinit-test-{}", std::process::id());
    let pool = "kinit-test-pool";
    let r = ok("virt_pool", json!({"name": pool, "uri": uri, "path": dir})).await;
    assert!(r.changed);
    assert!(
        std::path::Path::new(&dir).is_dir(),
        "pool-build made the directory"
    );

    let base = json!({"pool": pool, "name": "base.qcow2", "uri": uri, "capacity": "64M"});
    assert!(ok("virt_volume", base.clone()).await.changed);
    let win = json!({"pool": pool, "name": "win.qcow2", "uri": uri, "capacity": "64M"});
    assert!(ok("virt_volume", win).await.changed);
    let overlay = json!({"pool": pool, "name": "node.qcow2", "uri": uri, "capacity": "128M",
                         "backing": {"path": format!("{dir}/base.qcow2")}});
    let r = ok("virt_volume", overlay.clone()).await;
    assert!(r.changed);
    assert!(!ok("virt_volume", overlay.clone()).await.changed);
    let mut bigger = overlay.clone();
    bigger["capacity"] = json!("256M");
    assert!(
        ok("virt_volume", bigger).await.changed,
        "the qemu driver resizes"
    );
    let info = std::process::Command::new("qemu-img")
        .args(["info", &format!("{dir}/node.qcow2")])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.contains("backing file: ") && info.contains("base.qcow2"),
        "{info}"
    );
    assert!(info.contains("256 MiB"), "{info}");

    let seed = format!("{dir}/node-seed.iso");
    ok(
        "virt_config_iso",
        json!({"path": seed, "cloud_init": {
            "hostname": "node", "fqdn": "node.kinit.test", "mac": "52:54:00:77:00:01",
            "address": "10.231.0.1/24", "gateway": "10.231.0.254"}}),
    )
    .await;
    let config = format!("{dir}/win-config.iso");
    ok(
        "virt_config_iso",
        json!({"path": config, "windows": {
            "computer_name": "win", "admin_password": "Real-Test-1!",
            "mac": "52:54:00:77:00:02", "address": "10.231.0.2/24", "gateway": "10.231.0.254"}}),
    )
    .await;
    // Stand-ins for the Windows and virtio-win ISOs (none can be downloaded here).
    for iso in ["win.iso", "virtio.iso"] {
        std::fs::copy(&seed, format!("{dir}/{iso}")).unwrap();
    }

    let net = json!({"name": "kinit-test-net", "uri": uri, "nat": {
        "cidr": "10.231.0.0/24", "bridge": "kinittest0", "domain": "kinit.test",
        "hosts": [{"name": "node", "mac": "52:54:00:77:00:01", "ip": "10.231.0.1"},
                  {"name": "win", "mac": "52:54:00:77:00:02", "ip": "10.231.0.2"}]}});
    assert!(ok("virt_network", net.clone()).await.changed);
    assert!(!ok("virt_network", net).await.changed);

    let linux = json!({"name": "kinit-test-linux", "uri": uri, "linux": {
        "vcpus": 1, "ram_kib": 262144, "network": "kinit-test-net", "mac": "52:54:00:77:00:01",
        "disk": format!("{dir}/node.qcow2"), "seed_iso": seed}});
    let r = ok("virt_guest", linux.clone()).await;
    assert_eq!(r.data["state"], "running", "{:?}", r.data);
    assert!(!ok("virt_guest", linux).await.changed);

    let windows = json!({"name": "kinit-test-windows", "uri": uri, "virt_type": "qemu",
        "windows": {
            "vcpus": 1, "ram_kib": 1048576, "network": "kinit-test-net",
            "mac": "52:54:00:77:00:02", "disk": format!("{dir}/win.qcow2"),
            "install_iso": format!("{dir}/win.iso"), "virtio_iso": format!("{dir}/virtio.iso"),
            "config_iso": config, "serial_log": format!("{dir}/win-serial.log")}});
    let r = ok("virt_guest", windows).await;
    assert_eq!(r.data["state"], "running", "{:?}", r.data);
    // virtlogd opened the serial log for the running guest (the firmware writes to COM1).
    let live = std::process::Command::new("virsh")
        .args(["-c", &uri, "dumpxml", "kinit-test-windows"])
        .output()
        .unwrap();
    let live = String::from_utf8_lossy(&live.stdout);
    assert!(
        live.contains(&format!("<log file='{dir}/win-serial.log' append='on'/>")),
        "{live}"
    );
    assert!(std::path::Path::new(&format!("{dir}/win-serial.log")).exists());

    for name in ["kinit-test-linux", "kinit-test-windows"] {
        let gone = json!({"name": name, "uri": uri, "state": "absent"});
        assert!(ok("virt_guest", gone.clone()).await.changed);
        assert!(!ok("virt_guest", gone).await.changed);
    }
    let gone = json!({"name": "kinit-test-net", "uri": uri, "state": "absent"});
    assert!(ok("virt_network", gone).await.changed);
    for v in ["node.qcow2", "base.qcow2", "win.qcow2"] {
        ok(
            "virt_volume",
            json!({"pool": pool, "name": v, "uri": uri, "state": "absent"}),
        )
        .await;
    }
    ok(
        "virt_pool",
        json!({"name": pool, "uri": uri, "state": "absent"}),
    )
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
}
