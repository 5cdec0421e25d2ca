//! `mount`, `service_facts`, `package_facts`, `hostname` and `reboot` on a real host. `mount`
//! works on an fstab in the scratch folder; the tmpfs half needs root on the host (as the
//! local tests have) and is left out, saying so, for an unprivileged login. `hostname` and
//! `reboot` get their own SSH hosts (a UTS namespace; an sshd a played reboot restarts).

use serde_json::json;

use kinit::transport::Connection;

use crate::support::Test;

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
        (super::text(&diff.before), super::text(&diff.after)),
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

/// `reboot` over SSH as a playbook runs it. A real reboot cannot happen here (it would take
/// this machine down), so the lab host's `boot_time_command` reads a file and its
/// `reboot_command` plays the reboot: a second later it writes a new boot id, kills sshd
/// with every session (kinit's connection included) and starts a new sshd on the same
/// address. kinit has to reconnect for real, see the new boot id and pass `test_command`.
/// Check mode and the local connection are refused before anything runs, as upstream does.
#[test]
fn reboot_over_ssh_reconnects_to_a_restarted_sshd() {
    if !crate::fixtures::netns::is_root() {
        crate::support::cannot_run("killing and restarting the lab's sshd as root needs root");
        return;
    }
    let mut lab = crate::fixtures::sshd::SshLab::new(1);
    let boot_id = lab.dir().join("boot_id");
    std::fs::write(&boot_id, "first-boot\n").unwrap();
    let play = lab.hosts[0].reboot_script(&boot_id, "second-boot");
    let script = lab.dir().join("play-reboot.sh");
    std::fs::write(&script, play).unwrap();
    let h = &mut lab.hosts[0];
    let inventory = format!(
        "lab ansible_host={} ansible_port={} ansible_user=root ansible_ssh_private_key_file={}\n",
        h.address,
        h.port,
        lab.client_key.display()
    );
    let logins = h.accepted_logins();
    let out = lab.dir().join("results.json");
    let site = format!(
        "- hosts: lab\n  gather_facts: false\n  tasks:\n\
         \x20   - reboot: {{boot_time_command: cat {id}, reboot_command: sh {script}}}\n\
         \x20     check_mode: true\n      register: checked\n\
         \x20   - reboot:\n        boot_time_command: cat {id}\n        reboot_command: sh {script}\n\
         \x20       test_command: test -s {id}\n        reboot_timeout: 60\n        connect_timeout: 5\n\
         \x20     register: rebooted\n\
         \x20   - command: cat {id}\n      register: after\n\
         \x20   - copy:\n        content: \"{{{{ {{'checked': checked, 'rebooted': rebooted, 'after': after.stdout}} | to_json }}}}\"\n\
         \x20       dest: {out}\n\
         - hosts: localhost\n  gather_facts: false\n  tasks:\n\
         \x20   - reboot: {{}}\n      register: local\n      ignore_errors: true\n\
         \x20   - assert:\n        that: local is failed and local.msg == 'Running reboot with local connection would reboot the control node.'\n",
        id = boot_id.display(),
        script = script.display(),
        out = out.display(),
    );
    Test::new()
        .write("hosts.ini", &inventory)
        .write("site.yml", &site)
        .home_knowing(&lab.known_hosts)
        .args(["playbook", "-i", "hosts.ini", "site.yml"])
        .succeeds()
        .partial_output("the recap is checked through the dumped results below");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["checked"]["changed"], true);
    assert_eq!(r["checked"]["rebooted"], true);
    assert_eq!(r["checked"]["elapsed"], 0);
    assert_eq!(r["rebooted"]["changed"], true, "{r}");
    assert_eq!(r["rebooted"]["rebooted"], true, "{r}");
    assert!(r["rebooted"]["elapsed"].as_u64().unwrap() < 60, "{r}");
    assert!(r["rebooted"].get("previous_boot_time").is_none(), "{r}");
    assert_eq!(r["after"], "second-boot");
    // A new sshd took the logins after the played reboot.
    let log = lab.hosts[0].log();
    assert_eq!(log.matches("Server listening on").count(), 2, "{log}");
    assert!(lab.hosts[0].accepted_logins() > logins + 1, "{log}");
}

pub async fn service_facts(fx: &Fixture<'_>) {
    let r = fx.run("service_facts", json!({})).await;
    let systemd = !fx
        .sh("test -d /run/systemd/system && echo yes")
        .await
        .is_empty();
    if r.skipped {
        assert_eq!(
            r.msg.as_deref(),
            Some(
                "Failed to find any services. This can be due to privileges or some other \
                 configuration issue."
            )
        );
        return;
    }
    assert!(!r.changed && !r.failed, "{r:?}");
    let services = r.data["ansible_facts"]["services"].as_object().unwrap();
    if !systemd {
        // This machine's init scripts, as `service --status-all` lists them.
        let listed = fx
            .sh("PATH=$PATH:/usr/sbin:/sbin service --status-all 2>/dev/null | grep -c '\\[ [+-] \\]'")
            .await;
        assert_eq!(services.len().to_string(), listed.trim());
        for (name, s) in services {
            assert_eq!(s["name"], name.as_str());
            assert_eq!(s["source"], "sysv");
            let running = fx
                .sh(&format!(
                    "PATH=$PATH:/usr/sbin:/sbin service --status-all 2>/dev/null | grep -c '\\[ + \\]  {name}$'"
                ))
                .await;
            let want = if running.trim() == "1" {
                "running"
            } else {
                "stopped"
            };
            assert_eq!(s["state"], want, "{name}");
        }
    }
}

pub async fn package_facts(fx: &Fixture<'_>) {
    if fx.sh("command -v dpkg-query").await.trim().is_empty() {
        // The apt half needs a Debian host; the refusals below hold anywhere.
        let r = fx.run("package_facts", json!({"manager": "apt"})).await;
        assert!(r.failed, "{r:?}");
        return;
    }
    let r = fx.run("package_facts", json!({})).await;
    assert!(!r.changed && !r.failed, "{r:?}");
    let pkgs = r.data["ansible_facts"]["packages"].as_object().unwrap();
    let installed = fx
        .sh("dpkg-query -W -f='${db:Status-Status}\\n' | grep -cx installed")
        .await;
    assert_eq!(pkgs.len().to_string(), installed.trim());
    let version = fx.sh("dpkg-query -W -f='${Version}' dpkg").await;
    assert_eq!(
        pkgs["dpkg"],
        json!([{"name": "dpkg", "version": version, "arch": fx.sh("dpkg --print-architecture").await.trim(),
                "category": "admin", "source": "apt"}])
    );
    let r = fx
        .run("package_facts", json!({"manager": ["nosuch", "apt"]}))
        .await;
    assert_eq!(
        r.msg.as_deref(),
        Some("Unsupported package managers requested: nosuch")
    );
    let r = fx.run("package_facts", json!({"manager": "pacman"})).await;
    assert!(
        r.msg
            .unwrap()
            .contains("`pacman` is not supported by kinit"),
        "named managers kinit lacks are refused"
    );
}
