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
    // Debian's point release (`12.11`) is /etc/debian_version, as ansible-core reports it;
    // elsewhere os-release's VERSION_ID.
    let version = fx
        .sh(". /etc/os-release; if [ \"$ID\" = debian ]; then cat /etc/debian_version; else echo $VERSION_ID; fi")
        .await;
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

/// A name unique to this test process (accounts, packages and init scripts are global).
fn unique(prefix: &str) -> String {
    format!("{prefix}{}", std::process::id())
}

pub async fn user(fx: &Fixture<'_>) {
    let name = unique("kinitu");
    if !is_root(fx).await {
        // Unprivileged login: only the decision can be checked, and the failure is clear.
        let c = fx.check("user", json!({"name": name})).await;
        assert!(c.changed);
        let r = fx.run("user", json!({"name": name})).await;
        assert!(r.failed && r.msg.unwrap().contains("useradd"));
        let r = fx.run("user", json!({"name": "root"})).await;
        assert!(!r.changed && !r.failed, "{r:?}");
        return;
    }
    let probe = format!("getent passwd {name} | cut -d: -f6,7; id -Gn {name} 2>&1");
    let home = fx.path("home");
    fx.converges(
        "user",
        json!({"name": name, "shell": "/bin/sh", "home": home, "comment": "kinit test", "groups": ["daemon"]}),
        &probe,
    )
    .await;
    assert_eq!(
        fx.sh(&probe).await,
        format!("{home}:/bin/sh\n{name} daemon\n")
    );
    assert_eq!(
        fx.sh(&format!("test -d {home} && echo made")).await,
        "made\n"
    );
    // Only the differing option changes; append keeps existing groups.
    fx.converges("user", json!({"name": name, "shell": "/bin/bash"}), &probe)
        .await;
    fx.converges(
        "user",
        json!({"name": name, "groups": "bin", "append": true}),
        &probe,
    )
    .await;
    assert!(fx.sh(&probe).await.contains(&format!("{name} daemon bin")));
    // A password hash is set once and then left alone.
    let hash = "$6$salt$IxDD3jeSOb5eB1CX5LBsqZFVkJdido3OUILO5Ifz5iwMuTS4XMS130MTSuDDl3aCI6WouIL9AjRbLCelDCy.g.";
    fx.converges(
        "user",
        json!({"name": name, "password": hash}),
        &format!("getent shadow {name} | cut -d: -f2"),
    )
    .await;
    fx.converges(
        "user",
        json!({"name": name, "state": "absent", "remove": true}),
        &format!("getent passwd {name} || echo gone"),
    )
    .await;
}

pub async fn group(fx: &Fixture<'_>) {
    let name = unique("kinitg");
    // An existing group is reported with its gid, whoever runs the module.
    let r = fx.run("group", json!({"name": "root"})).await;
    assert!(!r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["gid"], 0);
    if !is_root(fx).await {
        // Unprivileged login: only the decision can be checked, and the failure is groupadd's.
        let c = fx.check("group", json!({"name": name})).await;
        assert!(c.changed && c.data.is_empty(), "{c:?}");
        let r = fx.run("group", json!({"name": name})).await;
        assert!(
            r.failed && r.msg.as_deref().unwrap_or("").contains("groupadd"),
            "{r:?}"
        );
        return;
    }
    let probe = format!("getent group {name} | cut -d: -f1,3");
    let r = fx.converges("group", json!({"name": name}), &probe).await;
    assert_eq!(r.data["name"], name.as_str());
    assert_eq!(r.data["state"], "present");
    // A new gid: groupmod, then nothing; check mode reports the current gid.
    let c = fx.check("group", json!({"name": name, "gid": 47399})).await;
    assert_eq!(c.data["gid"], r.data["gid"]);
    let r = fx
        .converges("group", json!({"name": name, "gid": 47399}), &probe)
        .await;
    assert_eq!(r.data["gid"], 47399);
    assert_eq!(fx.sh(&probe).await, format!("{name}:47399\n"));
    // Another group may not take that gid unless non_unique.
    let other = format!("{name}o");
    let r = fx.run("group", json!({"name": other, "gid": 47399})).await;
    assert!(r.failed, "{r:?}");
    assert_eq!(
        r.msg.as_deref(),
        Some("groupadd: GID '47399' already exists\n")
    );
    let r = fx
        .run(
            "group",
            json!({"name": other, "gid": 47399, "non_unique": true}),
        )
        .await;
    assert!(r.changed && !r.failed, "{r:?}");
    for g in [&other, &name] {
        fx.converges(
            "group",
            json!({"name": g, "state": "absent"}),
            &format!("getent group {g} || echo gone"),
        )
        .await;
    }
    assert_eq!(fx.sh(&probe).await, "");
}

pub async fn packages(fx: &Fixture<'_>) {
    // `dpkg` is installed on every Debian host: present is ok, absent would remove it (check
    // mode only!), and `package` finds apt by itself.
    if fx.sh("command -v dpkg-query").await.is_empty() {
        return; // not a Debian-family host
    }
    let r = fx.run("apt", json!({"name": "dpkg"})).await;
    assert!(!r.changed && !r.failed, "{r:?}");
    let c = fx
        .check("apt", json!({"name": "dpkg", "state": "absent"}))
        .await;
    assert!(c.changed);
    assert_eq!(
        c.data["commands"],
        json!([
            "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 remove -y -q dpkg"
        ])
    );
    let r = fx
        .run("package", json!({"name": ["dpkg"], "state": "present"}))
        .await;
    assert!(!r.changed);
    assert_eq!(r.data["manager"], "apt");

    // A package that is not installed: check mode says it would install it, nothing happens.
    let missing = unique("kinit-nosuch-");
    let c = fx.check("package", json!({"name": missing})).await;
    assert!(c.changed);
    assert_eq!(
        c.data["commands"],
        json!([format!(
            "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 install -y -q --no-remove {missing}"
        )])
    );
    assert!(
        fx.sh(&format!("dpkg-query -W {missing} 2>&1"))
            .await
            .contains("no packages found")
    );

    // A real install and removal, without a network: a tiny .deb built on the host.
    if !is_root(fx).await {
        return;
    }
    let pkg = unique("kinit-test-pkg-");
    let deb = fx.path(&format!("{pkg}.deb"));
    let build = fx.path("debroot");
    fx.sh(&format!(
        "mkdir -p {build}/DEBIAN {build}/usr/share/{pkg} && echo hi > {build}/usr/share/{pkg}/f && \
         printf 'Package: {pkg}\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: kinit <kinit@example.invalid>\\nDescription: kinit module test\\n' > {build}/DEBIAN/control && \
         dpkg-deb --build {build} {deb} >/dev/null"
    ))
    .await;
    let probe = format!("dpkg-query -W -f='${{Status}}' {pkg} 2>&1");
    fx.converges("apt", json!({"deb": deb}), &probe).await;
    assert_eq!(fx.sh(&probe).await, "install ok installed");
    fx.converges(
        "apt",
        json!({"name": pkg, "state": "absent", "purge": true}),
        &probe,
    )
    .await;
    assert!(!fx.sh(&probe).await.contains("install ok installed"));
}

pub async fn service(fx: &Fixture<'_>) {
    let systemd = !fx
        .sh("test -d /run/systemd/system && echo yes")
        .await
        .is_empty();
    let name = unique("kinit-svc-");
    let r = fx
        .check("service", json!({"name": name, "state": "started"}))
        .await;
    assert!(
        r.failed && r.msg.unwrap().contains("could not find"),
        "unknown services fail"
    );
    if systemd || !is_root(fx).await {
        // This machine has no systemd; on a systemd host this case would start real units.
        return;
    }
    // A real SysV init script: `service` runs it, `update-rc.d` enables it.
    let dir = &fx.remote;
    let script = format!(
        "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n# Required-Start:\n# Required-Stop:\n\
         # Default-Start: 2 3 4 5\n# Default-Stop: 0 1 6\n# Short-Description: kinit test\n### END INIT INFO\n\
         P={dir}/svc.pid\ncase \"$1\" in\n\
         start) [ -f $P ] && kill -0 $(cat $P) 2>/dev/null && exit 0; sleep 300 </dev/null >/dev/null 2>&1 & echo $! > $P; echo start >> {dir}/svc.log ;;\n\
         stop) [ -f $P ] && kill $(cat $P) 2>/dev/null; rm -f $P; echo stop >> {dir}/svc.log ;;\n\
         restart) $0 stop; $0 start ;;\n\
         reload|force-reload) echo reload >> {dir}/svc.log ;;\n\
         status) [ -f $P ] && kill -0 $(cat $P) 2>/dev/null && exit 0; exit 3 ;;\n\
         esac\nexit 0\n"
    );
    let init = format!("/etc/init.d/{name}");
    fx.conn
        .exec(&kinit::transport::ExecRequest {
            script: format!("cat > {init} && chmod 755 {init}"),
            stdin: Some(script.into_bytes()),
            ..Default::default()
        })
        .await
        .unwrap();
    let log =
        format!("cat {dir}/svc.log 2>/dev/null; service {name} status >/dev/null && echo running");
    fx.converges("service", json!({"name": name, "state": "started"}), &log)
        .await;
    assert!(fx.sh(&log).await.ends_with("start\nrunning\n"));
    let r = fx
        .run("service", json!({"name": name, "state": "reloaded"}))
        .await;
    assert!(r.changed);
    let r = fx
        .run(
            "systemd",
            json!({"name": name, "state": "restarted", "daemon_reload": true}),
        )
        .await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["init"], "sysv");
    assert_eq!(
        fx.sh(&format!("cat {dir}/svc.log")).await,
        "start\nreload\nstop\nstart\n"
    );
    fx.converges("systemd", json!({"name": name, "state": "stopped"}), &log)
        .await;
    let links =
        format!("ls /etc/rc2.d/ | grep -c {name}; ls /etc/rc2.d/S??{name} 2>/dev/null | wc -l");
    fx.converges("service", json!({"name": name, "enabled": true}), &links)
        .await;
    fx.converges("service", json!({"name": name, "enabled": false}), &links)
        .await;
    fx.sh(&format!(
        "update-rc.d -f {name} remove >/dev/null 2>&1; rm -f {init}"
    ))
    .await;
}
