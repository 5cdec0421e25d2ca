//! `virt_install_wait` in a real `kinit playbook` run, on a Windows domain of libvirt's test
//! driver. Windows itself cannot run here (no ISO, and the test driver boots nothing), so the
//! test stands in for the guest: it appends the stage lines the answer file writes to COM1 to
//! the serial log over time, then opens a TCP listener as the "WinRM" port. Everything else
//! is real: the binary, the playbook, libvirt's domain state, the log read and the port probe
//! on the task's host, the progress events and the reporter's rendering of them.

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::Test;

fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("json log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect()
}

fn result<'a>(ev: &'a [Value], task: &str) -> &'a Value {
    let found: Vec<&Value> = ev
        .iter()
        .filter(|e| e["event"] == "task_result" && e["task"] == task)
        .collect();
    assert_eq!(found.len(), 1, "one result of {task}");
    &found[0]["result"]
}

/// A port free right now (the listener stands in for WinRM only once the "install" is done).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn guest(name: &str, dir: &Path, log: &Path) -> String {
    format!(
        r#"
    - name: Windows guest {name} running
      virt_guest:
        uri: test:///default
        name: {name}
        windows:
          vcpus: 2
          ram_kib: 4194304
          disk: {dir}/{name}.qcow2
          install_iso: {dir}/win.iso
          virtio_iso: {dir}/virtio.iso
          config_iso: {dir}/{name}-config.iso
          serial_log: {log}
          network: default
          mac: "52:54:00:31:00:01"
"#,
        dir = dir.display(),
        log = log.display()
    )
}

fn wait(name: &str, log: &Path, port: u16, timeout: u64, extra: &str) -> String {
    format!(
        r#"
    - name: Windows guest {name} answers on WinRM
      virt_install_wait:
        uri: test:///default
        name: {name}
        serial_log: {log}
        host: 127.0.0.1
        port: {port}
        timeout: {timeout}
        poll: 1
{extra}"#,
        log = log.display()
    )
}

fn append(log: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn virt_install_wait_follows_the_stages_until_winrm_answers() {
    let t = Test::new();
    let dir = t.path().to_path_buf();
    let log = dir.join("iw-win-serial.log");
    let json = dir.join("events.json");
    let port = free_port();
    let play = format!(
        "- hosts: localhost\n  gather_facts: false\n  tasks:{}{}",
        guest("iw-win", &dir, &log),
        wait("iw-win", &log, port, 120, "")
    );
    // Firmware noise before the first marker, as OVMF writes it to COM1.
    append(
        &log,
        "\u{1b}[2J\u{1b}[01;01HBdsDxe: loading Boot0001 \"UEFI QEMU DVD-ROM\"\r\n",
    );
    let guest = std::thread::spawn({
        let log = log.clone();
        move || {
            for stage in ["windowsPE", "specialize", "oobeSystem", "winrm"] {
                std::thread::sleep(Duration::from_millis(2500));
                // `echo kinit-stage: x>COM1` in cmd.exe ends its line with CRLF.
                append(&log, &format!("kinit-stage: {stage}\r\n"));
            }
            std::thread::sleep(Duration::from_millis(2500));
            let winrm = TcpListener::bind(("127.0.0.1", port)).unwrap();
            // Kept open until kinit has seen it.
            std::thread::sleep(Duration::from_secs(5));
            drop(winrm);
        }
    });
    let ran = t
        .real_time()
        .write("site.yml", &play)
        .args(["playbook", "site.yml", "--log-json"])
        .args([json.display().to_string()])
        .succeeds()
        .partial_output("the stages reach kinit when this machine's load lets the guest thread write them: each poll's line and its elapsed time vary; the stage lines are checked below");
    guest.join().unwrap();

    let ev = events(&json);
    let r = result(&ev, "Windows guest iw-win answers on WinRM");
    let stages: Vec<(&str, f64)> = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stage"].as_str().unwrap(),
                s["seen_after"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        stages.iter().map(|s| s.0).collect::<Vec<_>>(),
        ["windowsPE", "specialize", "oobeSystem", "winrm"],
        "{r}"
    );
    // Seen one after the other as the "guest" wrote them, 2.5 s apart (polled every second).
    for pair in stages.windows(2) {
        let gap = pair[1].1 - pair[0].1;
        assert!((1.0..=4.0).contains(&gap), "{stages:?}");
    }
    assert!(stages[0].1 >= 1.0, "{stages:?}");
    assert_eq!(r["last_stage"], "winrm");
    assert_eq!(r["reboots"], 2);
    let elapsed = r["elapsed"].as_f64().unwrap();
    assert!((12.0..60.0).contains(&elapsed), "{elapsed}");
    assert!(elapsed >= stages[3].1, "{r}");

    // The progress events: the live line's text per poll, with the elapsed time.
    let progress: Vec<(&str, f64)> = ev
        .iter()
        .filter(|e| e["event"] == "progress" && e["host"] == "localhost")
        .map(|e| {
            (
                e["status"].as_str().unwrap(),
                e["elapsed"].as_f64().unwrap(),
            )
        })
        .collect();
    let mut statuses: Vec<&str> = progress.iter().map(|p| p.0).collect();
    statuses.dedup();
    assert_eq!(
        statuses,
        [
            "Windows install: starting (no stage marked yet)",
            "Windows install: windowsPE",
            "Windows install: specialize (after 1 reboot)",
            "Windows install: oobeSystem (after 2 reboots)",
            "Windows install: winrm (after 2 reboots)",
        ]
    );
    assert!(
        progress.windows(2).all(|p| p[0].1 <= p[1].1),
        "elapsed grows: {progress:?}"
    );
    // Plain output (stdout is not a terminal): one line per stage change.
    let out = ran.stdout();
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("localhost  Windows install: "))
        .collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(
        lines[2].starts_with("localhost  Windows install: specialize (after 1 reboot) 0m0"),
        "{out}"
    );
}

#[test]
fn virt_install_wait_names_the_last_stage_on_timeout_and_a_powered_off_guest() {
    let t = Test::new();
    let dir = t.path().to_path_buf();
    let log = dir.join("iw-late-serial.log");
    let json = dir.join("events.json");
    append(
        &log,
        "kinit-stage: windowsPE\r\nnoise\r\nkinit-stage: specialize\r\n",
    );
    // Nothing listens there: the "install" never gets to WinRM.
    let port = free_port();
    let destroyed = r#"
    - name: Windows guest iw-late powered off
      virt_guest:
        uri: test:///default
        name: iw-late
        state: destroyed
"#;
    let play = format!(
        "- hosts: localhost\n  gather_facts: false\n  tasks:{}{}{}{}",
        guest("iw-late", &dir, &log),
        wait("iw-late", &log, port, 3, "      ignore_errors: true\n"),
        destroyed,
        wait("iw-late", &log, port, 60, "      ignore_errors: true\n")
            .replace("answers on WinRM", "answers on WinRM when off"),
    );
    let ran = t
        .write("site.yml", &play)
        .args(["playbook", "site.yml", "--log-json"])
        .args([json.display().to_string()])
        .succeeds()
        .partial_output(
            "the messages hold a free port and the seconds waited; they are checked below",
        );
    let ev = events(&json);

    let r = result(&ev, "Windows guest iw-late answers on WinRM");
    assert_eq!(r["failed"], true, "{r}");
    let msg = r["msg"].as_str().unwrap();
    assert!(
        msg.starts_with(&format!(
            "domain `iw-late` did not answer on WinRM 127.0.0.1:{port} within 3s: \
             last stage `specialize` (after 1 reboot) seen at 0m00s; waited 0m0"
        )),
        "{msg}"
    );
    let elapsed = r["elapsed"].as_f64().unwrap();
    assert!((3.0..10.0).contains(&elapsed), "{elapsed}");
    assert_eq!(r["last_stage"], "specialize");
    assert_eq!(r["reboots"], 1);
    assert!(ran.stdout().contains(msg), "{}", ran.stdout());

    // A guest that is off fails at once instead of waiting out its 60 s.
    let r = result(&ev, "Windows guest iw-late answers on WinRM when off");
    let msg = r["msg"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "domain `iw-late` is `Shutoff` during the Windows install: \
             last stage `specialize` (after 1 reboot)"
        ),
        "{msg}"
    );
    assert!(r["elapsed"].as_f64().unwrap() < 5.0, "{r}");
}
