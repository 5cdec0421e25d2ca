//! `yum_repository` (a `.repo` file in a scratch `reposdir`) and `rpm_key` (a real rpm
//! database on the host, kept private: the task's `HOME` points at a folder whose
//! `.rpmmacros` sets `%_dbpath`, so the machine's own database is never touched).

use serde_json::json;

use super::Fixture;

pub async fn yum_repository(fx: &Fixture<'_>) {
    let rd = fx.path("repos");
    fx.sh(&format!("mkdir {rd}")).await;
    let file = format!("{rd}/epel.repo");
    let probe = format!("cat {file} 2>&1; stat -c %a {file} 2>&1");
    let args = json!({
        "name": "epel", "description": "EPEL", "reposdir": rd,
        "baseurl": ["http://a.example/epel/", "http://b.example/epel/"],
        "gpgcheck": true, "enabled": "no", "priority": 5, "excludepkgs": "kernel*,foo",
        "mode": "0640"
    });
    let r = fx.converges("yum_repository", args, &probe).await;
    assert_eq!(r.data["repo"], "epel");
    assert_eq!(r.data["state"], "present");
    assert_eq!(
        fx.sh(&probe).await,
        "[epel]\nbaseurl = http://a.example/epel/\n\thttp://b.example/epel/\nenabled = 0\n\
         exclude = kernel* foo\ngpgcheck = 1\nname = EPEL\npriority = 5\n\n640\n"
    );
    // A second repository in the same file; the diff is upstream's sorted dump.
    let r = fx
        .try_run(
            "yum_repository",
            json!({"name": "epel-src", "file": "epel", "description": "EPEL sources",
                   "mirrorlist": "http://m.example/", "reposdir": rd,
                   "username": "u", "password": "s3cret-pw"}),
            false,
            true,
        )
        .await
        .unwrap();
    assert!(r.changed, "{r:?}");
    let diff = r.diff.unwrap();
    assert_eq!(diff.path.as_deref(), Some(file.as_str()));
    let (before, after) = (diff.before.as_str().unwrap(), diff.after.as_str().unwrap());
    assert!(before.starts_with("[epel]\n") && after.contains("[epel-src]\n"));
    // The password is in the file, as upstream writes it, but masked in the diff.
    assert!(after.contains("password = ********\n"), "{after}");
    assert!(!after.contains("s3cret-pw"));
    assert!(
        fx.sh(&format!("cat {file}"))
            .await
            .contains("password = s3cret-pw\n")
    );
    // Removing both: the file goes with its last section.
    let gone = json!({"name": "epel-src", "file": "epel", "state": "absent", "reposdir": rd});
    assert!(fx.run("yum_repository", gone.clone()).await.changed);
    assert!(!fx.run("yum_repository", gone).await.changed);
    let last = json!({"name": "epel", "state": "absent", "reposdir": rd});
    fx.converges("yum_repository", last, &format!("ls {rd}"))
        .await;
    assert_eq!(fx.sh(&format!("ls {rd}")).await, "");
    // Upstream's argument failures.
    let r = fx
        .run(
            "yum_repository",
            json!({"name": "x", "description": "X", "reposdir": rd}),
        )
        .await;
    assert_eq!(
        r.msg.as_deref(),
        Some(
            "state is present but any of the following are missing: baseurl, mirrorlist, metalink"
        )
    );
    let r = fx
        .run(
            "yum_repository",
            json!({"name": "x", "description": "X", "baseurl": "http://x/", "reposdir": fx.path("none")}),
        )
        .await;
    assert_eq!(
        r.msg,
        Some(format!(
            "Repo directory '{}' does not exist.",
            fx.path("none")
        ))
    );
}

/// The fixed public test key (id `48DA5DC1A892D309`) the differential playbook uses too.
fn test_key() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/playbooks/diff/files/60-rpm-key.asc"),
    )
    .unwrap()
}

pub async fn rpm_key(fx: &Fixture<'_>) {
    if fx
        .sh("command -v rpm >/dev/null && command -v gpg >/dev/null && echo ok")
        .await
        != "ok\n"
    {
        crate::support::cannot_run("the host has no `rpm` or `gpg` (ci/deps.sh installs them)");
        return;
    }
    let home = fx.path("home");
    fx.sh(&format!(
        "mkdir -p {home}/db && echo '%_dbpath {home}/db' > {home}/.rpmmacros"
    ))
    .await;
    let env = vec![("HOME".to_string(), home.clone())];
    let run = |args: serde_json::Value, check: bool| {
        let env = env.clone();
        async move {
            fx.try_run_env("rpm_key", args, check, false, env)
                .await
                .unwrap()
        }
    };
    let keys = format!("HOME={home} rpm -q gpg-pubkey 2>&1");
    let keyfile = fx.path("key.asc");
    fx.conn
        .put(
            &kinit::transport::Source::Bytes(test_key().into_bytes()),
            &keyfile,
            None,
        )
        .await
        .unwrap();

    // A file on the host, with its fingerprint: check mode, import, then ok.
    let args =
        json!({"key": keyfile, "fingerprint": "AA55 FBD1 7FA9 891E 8EEE E88A 48DA 5DC1 A892 D309"});
    let c = run(args.clone(), true).await;
    assert!(c.changed && !c.failed, "{c:?}");
    assert_eq!(fx.sh(&keys).await, "package gpg-pubkey is not installed\n");
    let r = run(args.clone(), false).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert!(fx.sh(&keys).await.starts_with("gpg-pubkey-a892d309-"));
    assert!(!run(args, false).await.changed);
    // By key id, either spelling.
    assert!(
        !run(json!({"key": "0x48da5dc1a892d309"}), false)
            .await
            .changed
    );

    // Removed by id (check mode first), then absent stays ok.
    let absent = json!({"key": "A892D309", "state": "absent"});
    assert!(run(absent.clone(), true).await.changed);
    assert!(fx.sh(&keys).await.starts_with("gpg-pubkey-a892d309-"));
    assert!(run(absent.clone(), false).await.changed);
    assert_eq!(fx.sh(&keys).await, "package gpg-pubkey is not installed\n");
    assert!(!run(absent, false).await.changed);

    // From a URL (fetched by the host from a real HTTP server), and inline (kinit's
    // extension); a wrong fingerprint refuses the import.
    let www = fx.path("www");
    fx.sh(&format!(
        "mkdir {www} && cp {keyfile} {www}/key.asc && echo nope > {www}/not-a-key"
    ))
    .await;
    let base = super::net::serve(fx, &www).await;
    let r = run(
        json!({"key": format!("{base}/key.asc"), "fingerprint": "0000"}),
        false,
    )
    .await;
    assert!(r.failed, "{r:?}");
    assert_eq!(
        r.msg.as_deref(),
        Some(
            "The specified fingerprint, '{'0000'}', does not match any key fingerprints in \
             '{'AA55FBD17FA9891E8EEEE88A48DA5DC1A892D309'}'"
        )
    );
    let r = run(json!({"key": format!("{base}/not-a-key")}), false).await;
    assert_eq!(r.msg, Some(format!("Not a public key: {base}/not-a-key")));
    assert!(
        run(json!({"key": format!("{base}/key.asc")}), false)
            .await
            .changed
    );
    super::net::stop_http(fx).await;
    assert!(
        run(json!({"key": "A892D309", "state": "absent"}), false)
            .await
            .changed
    );
    let inline = json!({"key": test_key()});
    assert!(run(inline.clone(), false).await.changed);
    assert!(!run(inline, false).await.changed);
    // Errors as upstream words them.
    let r = run(json!({"key": fx.path("missing.asc")}), false).await;
    assert_eq!(
        r.msg,
        Some(format!("Not a valid key {}", fx.path("missing.asc")))
    );
    let r = run(json!({"key": "0x00000000"}), false).await;
    assert_eq!(
        r.msg.as_deref(),
        Some("When importing a key, a valid file must be given")
    );
}
