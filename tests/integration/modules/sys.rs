//! `mount`, `service_facts` and `package_facts` on a real host. `mount` works on an fstab in
//! the scratch folder; the tmpfs half needs root on the host (as the local tests have) and
//! is left out, saying so, for an unprivileged login.

use serde_json::json;

use kinit::transport::Connection;

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

/// `hostname` over SSH against an sshd in its own UTS and mount namespaces, with a scratch
/// file bind-mounted over its `/etc/hostname`: the module changes that host's name, never
/// this machine's (checked at the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostname_over_ssh_in_its_own_uts_namespace() {
    if !crate::fixtures::netns::is_root() {
        crate::support::cannot_run("a host with its own UTS namespace needs root (unshare)");
        return;
    }
    let ours = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let mut lab = crate::fixtures::sshd::SshLab::new(1);
    let file = lab.dir().join("etc-hostname");
    std::fs::write(&file, "labhost\n").unwrap();
    lab.hosts[0].isolate_hostname(&file);
    let mut target = lab.target(0);
    target.user = Some("root".into());
    let conn = Connection::open(&target).await.expect("ssh connect");
    let fx = Fixture::new(&conn).await;
    assert_eq!(fx.sh("cat /etc/hostname").await, "labhost\n");
    let running = fx.sh("hostname").await;

    // This Debian host has no systemd: upstream's file strategy, /etc/hostname only.
    let r = fx
        .converges(
            "hostname",
            json!({"name": "web01.example.test"}),
            "cat /etc/hostname; hostname",
        )
        .await;
    assert_eq!(r.data["name"], "web01.example.test");
    assert_eq!(r.data["ansible_facts"]["ansible_hostname"], "web01");
    assert_eq!(
        r.data["ansible_facts"]["ansible_nodename"],
        "web01.example.test"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "web01.example.test\n"
    );
    assert_eq!(fx.sh("hostname").await, running, "the running name stays");

    // The Alpine strategy also sets the running name from the file.
    fx.converges(
        "hostname",
        json!({"name": "web02", "use": "alpine"}),
        "cat /etc/hostname; hostname",
    )
    .await;
    assert_eq!(fx.sh("hostname").await, "web02\n");
    let r = fx
        .try_run("hostname", json!({"name": "web03"}), true, true)
        .await
        .unwrap();
    let diff = r.diff.expect("a diff");
    assert_eq!(
        (diff.before.as_str(), diff.after.as_str()),
        ("hostname = web02\n", "hostname = web03\n")
    );
    let r = fx
        .try_run(
            "hostname",
            json!({"name": "x", "use": "freebsd"}),
            false,
            false,
        )
        .await
        .unwrap_err();
    assert!(
        r.to_string().contains("`use: freebsd` is not supported"),
        "{r}"
    );
    fx.finish().await;
    conn.close().await;
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        ours,
        "this machine's name is untouched"
    );
    assert_eq!(std::fs::read_to_string("/etc/hostname").unwrap(), ours);
}
