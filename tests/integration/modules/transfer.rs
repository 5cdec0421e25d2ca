//! `archive` (packing on the host with its own tar/gzip/zip) and `synchronize` (rsync between
//! the controller and the host: over SSH through an ssh the module builds from the
//! connection's settings, for the local host through the connection itself).

use std::sync::atomic::Ordering;

use serde_json::json;

use super::Fixture;

/// Note `runs` rsync runs: over SSH each logs in to the host once with its own ssh.
fn rsync_logins(fx: &Fixture<'_>, runs: usize) {
    if fx.conn.ssh_target().is_some() {
        fx.own_logins.fetch_add(runs, Ordering::Relaxed);
    }
}

pub async fn archive(fx: &Fixture<'_>) {
    let src = fx.path("src");
    fx.sh(&format!(
        "mkdir -p {src}/tree/sub && printf 'one\\n' > {src}/tree/one.txt && \
         printf 'two\\n' > {src}/tree/sub/two.log && printf 'single\\n' > {src}/single.txt"
    ))
    .await;
    let tgz = fx.path("tree.tgz");
    let args = json!({"path": format!("{src}/tree"), "dest": tgz});
    // Check mode predicts a change for an archive of a folder (as upstream: always) and
    // writes nothing.
    let c = fx.check("archive", args.clone()).await;
    assert!(c.changed && !c.failed, "{c:?}");
    assert_eq!(c.data["dest_state"], "absent");
    assert_eq!(
        fx.sh(&format!("ls {tgz} 2>&1 >/dev/null | wc -l")).await,
        "1\n"
    );
    let first = fx.run("archive", args.clone()).await;
    assert!(first.changed && !first.failed, "{first:?}");
    assert_eq!(first.data["dest_state"], "archive");
    assert_eq!(first.data["arcroot"], format!("{src}/"));
    assert_eq!(first.data["state"], "file");
    let mut archived: Vec<String> = first.data["archived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    archived.sort();
    assert_eq!(
        archived,
        [
            format!("{src}/tree/one.txt"),
            format!("{src}/tree/sub"),
            format!("{src}/tree/sub/two.log")
        ]
    );
    assert_eq!(
        fx.sh(&format!("tar -tzf {tgz} | sort")).await,
        "tree/one.txt\ntree/sub/\ntree/sub/two.log\n"
    );
    // Unchanged sources: ok, and the archive file is left as it was.
    let stamp = format!("stat -c '%i %Y' {tgz}");
    let before = fx.sh(&stamp).await;
    let again = fx.run("archive", args.clone()).await;
    assert!(!again.changed, "{again:?}");
    assert_eq!(fx.sh(&stamp).await, before);
    // A changed source file rewrites it; a mode alone changes only the mode, once.
    fx.sh(&format!("printf 'ONE, longer\\n' > {src}/tree/one.txt"))
        .await;
    assert!(fx.run("archive", args.clone()).await.changed);
    let mut with_mode = args.clone();
    with_mode["mode"] = json!("0600");
    // (Not `converges`: check mode predicts a change for a folder's archive every time.)
    assert!(fx.run("archive", with_mode.clone()).await.changed);
    assert_eq!(fx.sh(&format!("stat -c %a {tgz}")).await, "600\n");
    assert!(!fx.run("archive", with_mode).await.changed);

    // One file is compressed beside itself; check mode predicts it until it exists.
    let probe = format!("gzip -dc {src}/single.txt.gz 2>&1");
    let r = fx
        .converges(
            "archive",
            json!({"path": format!("{src}/single.txt")}),
            &probe,
        )
        .await;
    assert_eq!(r.data["dest_state"], "compress");
    assert_eq!(fx.sh(&probe).await, "single\n");

    // zip with exclusion_patterns (matched on the full path), then remove.
    let zip = fx.path("tree.zip");
    let r = fx
        .run(
            "archive",
            json!({"path": format!("{src}/tree"), "dest": zip, "format": "zip",
                   "exclusion_patterns": ["*.log"], "remove": true}),
        )
        .await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["archived"], json!([format!("{src}/tree/one.txt")]));
    assert_eq!(
        fx.sh(&format!("unzip -Z1 {zip} | sort")).await,
        "tree/one.txt\ntree/sub/\n"
    );
    assert_eq!(
        fx.sh(&format!("ls {src}")).await,
        "single.txt\nsingle.txt.gz\n"
    );

    // A glob matching nothing is upstream's failure; several sources need a dest.
    let r = fx
        .run("archive", json!({"path": format!("{src}/*.none")}))
        .await;
    assert!(r.failed, "{r:?}");
    assert_eq!(r.msg.as_deref(), Some("Error, no source paths were found"));
    let r = fx
        .run(
            "archive",
            json!({"path": [format!("{src}/single.txt"), format!("{src}/single.txt.gz")]}),
        )
        .await;
    assert_eq!(
        r.msg.as_deref(),
        Some("Error, must specify \"dest\" when archiving multiple files or trees")
    );
}

pub async fn synchronize(fx: &Fixture<'_>) {
    if fx.sh("command -v rsync >/dev/null && echo ok").await != "ok\n" {
        crate::support::cannot_run("the host has no `rsync` (ci/deps.sh installs it)");
        return;
    }
    let over_ssh = fx.conn.ssh_target().is_some();
    fx.local_file("tree/a.txt", "a\n");
    fx.local_file("tree/sub/b.txt", "b\n");
    let dest = fx.path("copy");
    let probe = format!("cd {dest} 2>/dev/null && find . | sort && cat a.txt sub/b.txt");
    // A relative `src` is found in the search path (role/playbook `files/`), its trailing
    // slash kept.
    let r = fx
        .converges("synchronize", json!({"src": "tree/", "dest": dest}), &probe)
        .await;
    rsync_logins(fx, 4);
    assert_eq!(
        fx.sh(&probe).await,
        ".\n./a.txt\n./sub\n./sub/b.txt\na\nb\n"
    );
    // rsync's itemized lines: `<` sent to the remote side, `>` received locally.
    let sent = if over_ssh { "<" } else { ">" };
    let lines = r.data["stdout_lines"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| *l == format!("{sent}f+++++++++ a.txt")),
        "{lines:?}"
    );
    let cmd = r.data["cmd"].as_str().unwrap();
    // Over SSH the host's side is `user@address:path` through the connection's key and port.
    assert_eq!(cmd.contains("--rsh="), over_ssh, "{cmd}");
    if let Some(t) = fx.conn.ssh_target() {
        let user = t.user.clone().unwrap();
        assert!(
            cmd.ends_with(&format!("{user}@{}:{dest}", t.address)),
            "{cmd}"
        );
        assert!(
            cmd.contains(&format!("-o Port={}", t.port.unwrap())),
            "{cmd}"
        );
    }

    // delete removes what the source lacks; check mode only reports it.
    fx.sh(&format!("printf x > {dest}/extra")).await;
    let args = json!({"src": "tree/", "dest": dest, "delete": true});
    let c = fx.check("synchronize", args.clone()).await;
    assert!(c.changed, "{c:?}");
    assert_eq!(fx.sh(&format!("ls {dest}")).await, "a.txt\nextra\nsub\n");
    let r = fx.run("synchronize", args).await;
    rsync_logins(fx, 2);
    assert!(
        r.data["stdout_lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "*deleting   extra")
    );
    assert_eq!(fx.sh(&format!("ls {dest}")).await, "a.txt\nsub\n");

    // pull: from the host into a folder on the controller.
    fx.sh(&format!("printf 'from host\\n' > {dest}/sub/c.txt"))
        .await;
    let back = fx.local_dir().join("back");
    let args = json!({"mode": "pull", "src": format!("{dest}/sub/"), "dest": back});
    let r = fx.run("synchronize", args.clone()).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(back.join("c.txt")).unwrap(),
        "from host\n"
    );
    assert!(!fx.run("synchronize", args).await.changed);
    rsync_logins(fx, 2);

    // rsync's own failure: its stderr and exit code.
    let r = fx
        .run(
            "synchronize",
            json!({"src": fx.local_dir().join("none/").display().to_string() + "/", "dest": dest}),
        )
        .await;
    rsync_logins(fx, 1);
    assert!(r.failed, "{r:?}");
    assert_eq!(r.data["rc"], 23);
    assert!(
        r.msg
            .as_deref()
            .unwrap()
            .contains("No such file or directory"),
        "{r:?}"
    );
}
