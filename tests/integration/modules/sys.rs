//! `mount`, `service_facts` and `package_facts` on a real host. `mount` works on an fstab in
//! the scratch folder; the tmpfs half needs root on the host (as the local tests have) and
//! is left out, saying so, for an unprivileged login.

use serde_json::json;

use super::Fixture;

async fn is_root(fx: &Fixture<'_>) -> bool {
    fx.sh("id -u").await.trim() == "0"
}

pub async fn mount(fx: &Fixture<'_>) {
    let fstab = fx.path("etc/fstab");
    let mp = fx.path("mnt/a");
    let probe = format!("cat {fstab} 2>/dev/null; grep -c ' {mp} ' /proc/self/mountinfo");
    let entry = json!({"path": mp, "src": "none", "fstype": "tmpfs", "opts": "size=1m",
                       "fstab": fstab, "state": "present"});
    let r = fx.converges("mount", entry.clone(), &probe).await;
    assert_eq!(r.data["boot"], "yes");
    assert_eq!(r.data["backup_file"], "");
    assert_eq!(
        fx.sh(&format!("cat {fstab}")).await,
        format!("none {mp} tmpfs size=1m 0 0\n")
    );
    // Missing fields are refused as ansible-core's required_if refuses them.
    let err = fx
        .try_run(
            "mount",
            json!({"path": mp, "state": "mounted", "fstab": fstab}),
            false,
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "state is mounted but all of the following are missing: src, fstype"
    );
    if is_root(fx).await {
        let mut mounted = entry.clone();
        mounted["state"] = json!("mounted");
        mounted["opts"] = json!("size=2m");
        fx.converges("mount", mounted, &probe).await;
        assert!(
            fx.sh(&format!("grep ' {mp} ' /proc/self/mountinfo"))
                .await
                .contains("size=2048k"),
        );
        let gone = json!({"path": mp, "fstab": fstab, "state": "absent"});
        fx.converges("mount", gone, &format!("{probe}; ls {}", fx.path("mnt")))
            .await;
    } else {
        // Mounting needs root on the host; the fstab half above ran unprivileged.
        let gone = json!({"path": mp, "fstab": fstab, "state": "absent_from_fstab"});
        fx.converges("mount", gone, &probe).await;
    }
    assert_eq!(fx.sh(&format!("cat {fstab}")).await, "");
}
