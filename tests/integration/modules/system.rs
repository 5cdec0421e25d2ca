//! `setup`, `sysctl`, `modprobe`, `user`, `package`/`apt`/`dnf`, `service`/`systemd` on a
//! real host. Where the test machine cannot really do the thing (no kernel modules, no
//! systemd, no package downloads), the test says so and asserts the check-mode decision and
//! the failure message instead.

use serde_json::json;

use super::Fixture;

async fn is_root(fx: &Fixture<'_>) -> bool {
    fx.sh("id -u").await.trim() == "0"
}

pub async fn setup(fx: &Fixture<'_>) {
    let r = fx.run("setup", json!({})).await;
    assert!(!r.changed && !r.failed);
    let f = &r.data["ansible_facts"];
    assert_eq!(f["ansible_hostname"], fx.sh("hostname -s").await.trim());
    assert_eq!(f["ansible_kernel"], fx.sh("uname -r").await.trim());
    assert_eq!(f["ansible_architecture"], fx.sh("uname -m").await.trim());
    let nproc: u64 = fx.sh("nproc").await.trim().parse().unwrap();
    assert_eq!(f["ansible_processor_vcpus"], nproc);
    assert!(f["ansible_memtotal_mb"].as_u64().unwrap() > 64);
    let id = fx.sh(". /etc/os-release; echo $ID").await;
    if id.trim() == "debian" {
        assert_eq!(f["ansible_os_family"], "Debian");
        assert_eq!(f["ansible_distribution"], "Debian");
        assert_eq!(f["ansible_pkg_mgr"], "apt");
    }
    let version = fx.sh(". /etc/os-release; echo $VERSION_ID").await;
    assert_eq!(f["ansible_distribution_version"], version.trim());
    assert!(
        f["ansible_interfaces"]
            .as_array()
            .unwrap()
            .contains(&json!("lo"))
    );
    // The default route's interface and address, as `ip route` sees them.
    let route = fx
        .sh("ip -4 route show default 2>/dev/null | awk '{print $5; exit}'")
        .await;
    if !route.trim().is_empty() {
        assert_eq!(f["ansible_default_ipv4"]["interface"], route.trim());
        let addr = fx
            .sh(&format!(
                "ip -o -4 addr show {} | awk '{{print $4; exit}}' | cut -d/ -f1",
                route.trim()
            ))
            .await;
        assert_eq!(f["ansible_default_ipv4"]["address"], addr.trim());
    }
    let r = fx
        .run("setup", json!({"filter": "ansible_distribution*"}))
        .await;
    let keys: Vec<&String> = r.data["ansible_facts"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k.starts_with("ansible_distribution")),
        "{keys:?}"
    );
}

pub async fn sysctl(fx: &Fixture<'_>) {
    // File only (works unprivileged): set, replace, remove.
    let file = fx.path("99-kinit.conf");
    fx.sh(&format!("printf 'vm.swappiness=10\\n' > {file}"))
        .await;
    let probe = format!("cat {file}");
    let args =
        json!({"name": "net.ipv4.ip_forward", "value": 1, "sysctl_file": file, "reload": false});
    fx.converges("sysctl", args, &probe).await;
    let args =
        json!({"name": "vm.swappiness", "value": "60", "sysctl_file": file, "reload": false});
    fx.converges("sysctl", args, &probe).await;
    assert_eq!(
        fx.sh(&probe).await,
        "vm.swappiness=60\nnet.ipv4.ip_forward=1\n"
    );
    let args = json!({"name": "vm.swappiness", "state": "absent", "sysctl_file": file});
    fx.converges("sysctl", args, &probe).await;

    // The running kernel: `kernel.domainname` is harmless to change and is restored.
    if is_root(fx).await && fx.sh("cat /proc/sys/kernel/domainname").await.trim() == "(none)" {
        let probe = "cat /proc/sys/kernel/domainname";
        let args = json!({"name": "kernel.domainname", "value": "kinit-test", "sysctl_file": file, "sysctl_set": true});
        fx.converges("sysctl", args, probe).await;
        assert_eq!(fx.sh(probe).await, "kinit-test\n");
        fx.sh("sysctl -q -w kernel.domainname='(none)'").await;
    }
}

pub async fn modprobe(fx: &Fixture<'_>) {
    // This machine has no loadable kernel modules (no /lib/modules, no kmod): the test
    // checks the decision and the clear failure rather than a real load.
    let loaded = fx.sh("test -d /sys/module/kinit_nosuch && echo yes").await;
    assert!(loaded.is_empty());
    let c = fx.check("modprobe", json!({"name": "kinit_nosuch"})).await;
    assert!(c.changed, "{c:?}");
    let r = fx
        .run(
            "modprobe",
            json!({"name": "kinit_nosuch", "state": "absent"}),
        )
        .await;
    assert!(!r.changed && !r.failed);
    let r = fx.run("modprobe", json!({"name": "kinit_nosuch"})).await;
    assert!(
        r.failed,
        "loading a module that does not exist must fail: {r:?}"
    );
    // A module that is loaded (or built in) shows under /sys/module: present is ok.
    let builtin = fx.sh("ls /sys/module | head -n 1").await;
    if !builtin.trim().is_empty() {
        let r = fx.run("modprobe", json!({"name": builtin.trim()})).await;
        assert!(!r.changed && !r.failed, "{r:?}");
    }
    let err = fx
        .try_run("modprobe", json!({"name": "x; rm -rf /"}), false, false)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a kernel module name"));
}
