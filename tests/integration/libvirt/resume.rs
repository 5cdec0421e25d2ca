//! Resume after an interrupted guest creation, in-process on the test driver (whose state
//! lives per process, so the interruption is simulated): a run cut short between defining a
//! domain and starting it, or while an older definition stood, leaves a domain of the
//! guest's name that kinit did not finish. The next run's `virt_guest` task must take it
//! over (redefined under the same uuid, started), not fail on the name, and a run after that
//! changes nothing. The cross-process variant with real SIGINTs is `deploy_resume.rs`.

use serde_json::json;

use super::{TEST_URI, ok};

#[tokio::test]
async fn a_half_defined_domain_is_taken_over_by_the_next_run() {
    let name = "resume-half";
    let hv = kinit::provider::Hypervisor::open(TEST_URI).await.unwrap();
    // What the interrupted run left: defined, never started, not kinit's final definition.
    let xml = format!(
        "<domain type='test'><name>{name}</name><memory unit='KiB'>65536</memory>\
         <os><type>hvm</type></os></domain>"
    );
    hv.define_guest(name, xml).await.unwrap();
    let half = hv.guest(name).await.unwrap().unwrap();
    assert!(!half.state.is_active());
    assert_eq!(half.fingerprint, None);

    let args = json!({
        "name": name, "uri": TEST_URI, "state": "running", "autostart": true,
        "virt_type": "qemu",
        "linux": {
            "vcpus": 2, "ram_kib": 1048576, "network": "default", "mac": "52:54:00:20:09:01",
            "disk": format!("/var/lib/libvirt/images/{name}.qcow2"),
            "seed_iso": format!("/var/lib/libvirt/images/{name}-seed.iso")
        }
    });
    let r = ok("virt_guest", args.clone()).await;
    assert!(r.changed);
    assert_eq!(
        r.data["actions"],
        json!(["redefined", "started", "autostart on"]),
        "{:?}",
        r.data
    );
    let now = hv.guest(name).await.unwrap().unwrap();
    assert_eq!(now.uuid, half.uuid, "taken over, not a second domain");
    assert!(now.state.is_active());
    assert!(now.autostart);
    assert!(now.fingerprint.is_some());
    // Converged: the next run finds nothing to do.
    let again = ok("virt_guest", args.clone()).await;
    assert!(!again.changed, "{:?}", again.data);

    // Interrupted after the define but before the start of kinit's own definition.
    ok(
        "virt_guest",
        json!({"name": name, "uri": TEST_URI, "state": "destroyed"}),
    )
    .await;
    let r = ok("virt_guest", args).await;
    assert_eq!(r.data["actions"], json!(["started"]), "{:?}", r.data);
    ok(
        "virt_guest",
        json!({"name": name, "uri": TEST_URI, "state": "absent"}),
    )
    .await;
    assert!(hv.guest(name).await.unwrap().is_none());
}
