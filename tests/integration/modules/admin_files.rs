//! `cron`, `authorized_key`, `known_hosts`, `assemble` on a real host: each works on files in
//! the host's scratch folder (a path that exists only there), predicts in check mode without
//! touching anything, changes once, then reports ok.

use serde_json::json;

use super::{Fixture, text};

const KEY_A: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBYt4fgbzGtYavHYNjVTMXRWHuqlOLvQeO1Jk/OA4wv6 a@x";
const KEY_B: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMiXWCmBM5/C0nP8bBBL8rwqArblvVoBsgTy4P0pOFBk b@y";

async fn login_user(fx: &Fixture<'_>) -> String {
    fx.sh("id -un").await.trim().to_string()
}

pub async fn cron(fx: &Fixture<'_>) {
    let user = login_user(fx).await;
    let f = fx.path("cron.d/app");
    fx.sh(&format!("mkdir -p {}", fx.path("cron.d"))).await;
    let probe = format!("cat {f} 2>&1");
    let job = json!({"name": "backup", "job": "/bin/backup", "minute": 5, "hour": 2,
                     "user": user, "cron_file": f});
    let r = fx.converges("cron", job.clone(), &probe).await;
    assert_eq!(r.data["jobs"], json!(["backup"]));
    assert_eq!(
        fx.sh(&probe).await,
        format!("#Ansible: backup\n5 2 * * * {user} /bin/backup\n")
    );
    let env = json!({"name": "MAILTO", "job": "ops", "env": true, "user": user, "cron_file": f});
    fx.converges("cron", env, &probe).await;
    // --diff in check mode: the text before and after, the file untouched.
    let mut changed = job.clone();
    changed["hour"] = json!("*/4");
    let r = fx.try_run("cron", changed, true, true).await.unwrap();
    let d = r.diff.unwrap();
    assert!(
        text(&d.before).contains("5 2 * * *") && text(&d.after).contains("5 */4 * * *"),
        "{d:?}"
    );
    assert!(fx.sh(&probe).await.contains("5 2 * * *"));
    // Removing the last job removes the file (check mode first).
    fx.run(
        "cron",
        json!({"name": "MAILTO", "env": true, "state": "absent", "cron_file": f}),
    )
    .await;
    let gone = json!({"name": "backup", "state": "absent", "cron_file": f});
    let c = fx.check("cron", gone.clone()).await;
    assert!(c.changed);
    assert!(fx.sh(&format!("test -f {f} && echo here")).await == "here\n");
    let r = fx.run("cron", gone.clone()).await;
    assert_eq!(
        (r.changed, r.data["state"].clone()),
        (true, json!("absent"))
    );
    assert_eq!(fx.sh(&format!("test -e {f} || echo gone")).await, "gone\n");
    assert!(!fx.run("cron", gone).await.changed);

    // A user's crontab needs the `crontab` program on the host. This machine's tests do not
    // install cron (a Debian package), so where it is missing the test checks the refusal;
    // where it is there, the user's crontab is edited and put back as it was.
    if fx.sh("command -v crontab").await.is_empty() {
        let r = fx.run("cron", json!({"name": "x", "job": "/bin/x"})).await;
        assert!(r.failed);
        assert_eq!(
            r.msg.as_deref(),
            Some("Failed to find required executable \"crontab\"")
        );
    } else {
        let saved = fx.sh("crontab -l 2>/dev/null").await;
        let name = "kinit-test-job";
        let probe = "crontab -l 2>/dev/null";
        fx.converges(
            "cron",
            json!({"name": name, "job": "/bin/true", "minute": 7}),
            probe,
        )
        .await;
        assert!(
            fx.sh(probe)
                .await
                .contains("#Ansible: kinit-test-job\n7 * * * * /bin/true\n")
        );
        fx.converges("cron", json!({"name": name, "state": "absent"}), probe)
            .await;
        assert_eq!(fx.sh(probe).await, saved);
    }
}

pub async fn authorized_key(fx: &Fixture<'_>) {
    let user = login_user(fx).await;
    let kf = fx.path("ssh/authorized_keys");
    let probe = format!(
        "cat {kf} 2>&1; stat -c '%a %U' {} {kf} 2>&1",
        fx.path("ssh")
    );
    let r = fx
        .converges(
            "authorized_key",
            json!({"user": user, "key": KEY_A, "path": kf}),
            &probe,
        )
        .await;
    assert_eq!(r.data["keyfile"], json!(kf));
    assert_eq!(
        fx.sh(&probe).await,
        format!("{KEY_A}\n700 {user}\n600 {user}\n")
    );
    let both = format!("{KEY_A}\n{KEY_B}\n");
    fx.converges(
        "authorized_key",
        json!({"user": user, "key": KEY_B, "path": kf, "key_options": "no-pty", "manage_dir": false}),
        &probe,
    )
    .await;
    assert!(
        fx.sh(&probe)
            .await
            .starts_with(&format!("{KEY_A}\nno-pty {KEY_B}\n"))
    );
    // --diff in check mode: exclusive would drop the other key; nothing is written.
    let r = fx
        .try_run(
            "authorized_key",
            json!({"user": user, "key": KEY_A, "path": kf, "exclusive": true}),
            true,
            true,
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(r.diff.unwrap().after, format!("{KEY_A}\n"));
    assert!(fx.sh(&probe).await.contains("no-pty"));
    fx.converges(
        "authorized_key",
        json!({"user": user, "key": both, "path": kf, "state": "absent"}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&format!("cat {kf}")).await, "");
    // Keys from a URL, fetched by the host; a missing one is upstream's failure.
    let www = fx.path("www");
    fx.sh(&format!(
        "mkdir {www} && printf '%s\\n' '{KEY_B}' > {www}/keys"
    ))
    .await;
    let base = super::net::serve(fx, &www).await;
    fx.converges(
        "authorized_key",
        json!({"user": user, "key": format!("{base}/keys"), "path": kf}),
        &probe,
    )
    .await;
    assert!(fx.sh(&probe).await.starts_with(&format!("{KEY_B}\n")));
    let r = fx
        .run(
            "authorized_key",
            json!({"user": user, "key": format!("{base}/none"), "path": kf}),
        )
        .await;
    assert_eq!(
        r.msg.unwrap(),
        format!("Error getting key from: {base}/none")
    );
    super::net::stop_http(fx).await;
    // Without `path`, the user's own `~/.ssh/authorized_keys`: only predicted here (the lab
    // logs in with that file).
    let home = fx.sh("getent passwd $(id -un) | cut -d: -f6").await;
    let own = format!("{}/.ssh/authorized_keys", home.trim());
    let before = fx.sh(&format!("cat {own} 2>&1")).await;
    let c = fx
        .check("authorized_key", json!({"user": user, "key": KEY_A}))
        .await;
    assert!(c.changed && !c.failed, "{c:?}");
    assert_eq!(c.data["keyfile"], json!(own));
    // `~` in `path` is the login user's home on the host, as Ansible expands a path argument.
    let c = fx
        .check(
            "authorized_key",
            json!({"user": user, "key": KEY_A, "path": "~/.ssh/authorized_keys"}),
        )
        .await;
    assert_eq!(c.data["keyfile"], json!(own));
    assert_eq!(fx.sh(&format!("cat {own} 2>&1")).await, before);
    let r = fx
        .run(
            "authorized_key",
            json!({"user": "kinit-no-such-user", "key": KEY_A, "path": kf}),
        )
        .await;
    assert!(
        r.failed
            && r.msg
                .unwrap()
                .starts_with("Failed to lookup user kinit-no-such-user")
    );
}

pub async fn known_hosts(fx: &Fixture<'_>) {
    let kh = fx.path("known_hosts");
    let probe = format!("cat {kh} 2>&1");
    let line = |k: &str| {
        let mut f = k.split(' ');
        format!("h1.example {} {}", f.next().unwrap(), f.next().unwrap())
    };
    fx.converges(
        "known_hosts",
        json!({"name": "h1.example", "key": line(KEY_A), "path": kh}),
        &probe,
    )
    .await;
    fx.converges(
        "known_hosts",
        json!({"name": "h1.example", "key": line(KEY_B), "path": kh}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, format!("{}\n", line(KEY_B)));
    // The host's ssh-keygen refuses a key that names another host.
    let r = fx
        .run(
            "known_hosts",
            json!({"name": "other.example", "key": line(KEY_A), "path": kh}),
        )
        .await;
    assert_eq!(
        r.msg.as_deref(),
        Some("Host parameter does not match hashed host field in supplied key")
    );
    // A hashed entry is found by name and kept on the next run.
    fx.converges(
        "known_hosts",
        json!({"name": "h2.example", "key": line(KEY_A).replace("h1.", "h2."), "path": kh, "hash_host": true}),
        &probe,
    )
    .await;
    assert!(fx.sh(&probe).await.contains("\n|1|"));
    fx.converges(
        "known_hosts",
        json!({"name": "h2.example", "path": kh, "state": "absent"}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, format!("{}\n", line(KEY_B)));
    // The default `~/.ssh/known_hosts` is the login user's: only predicted here.
    let own = "cat ~/.ssh/known_hosts 2>&1";
    let before = fx.sh(own).await;
    let c = fx
        .check(
            "known_hosts",
            json!({"name": "kinit-test.example", "key": line(KEY_A).replace("h1.example", "kinit-test.example")}),
        )
        .await;
    assert!(c.changed && !c.failed, "{c:?}");
    assert_eq!(fx.sh(own).await, before);
}

pub async fn assemble(fx: &Fixture<'_>) {
    let src = fx.path("frags");
    let dest = fx.path("assembled");
    fx.sh(&format!(
        "mkdir -p {src}/sub && printf 'a\\n' > {src}/01 && printf 'b' > {src}/02 && \
         printf 'h\\n' > {src}/.h && printf 'x\\n' > {src}/sub/x"
    ))
    .await;
    let probe = format!("cat {dest} 2>&1; stat -c %a {dest} 2>&1");
    let r = fx
        .converges(
            "assemble",
            json!({"src": src, "dest": dest, "delimiter": "--", "ignore_hidden": true, "mode": "0640"}),
            &probe,
        )
        .await;
    assert_eq!(r.msg.as_deref(), Some("OK"));
    assert_eq!(fx.sh(&probe).await, "a\n--\nb640\n");
    // A refused validation leaves dest as it was.
    let r = fx
        .run(
            "assemble",
            json!({"src": src, "dest": dest, "validate": "grep -q zzz %s"}),
        )
        .await;
    assert_eq!(r.msg.as_deref(), Some("failed to validate: rc:1 error:"));
    assert_eq!(fx.sh(&probe).await, "a\n--\nb640\n");
    // Fragments on the controller.
    fx.local_file("parts/1", "local\n");
    fx.local_file("parts/2", "fragments\n");
    fx.converges(
        "assemble",
        json!({"src": "parts", "dest": dest, "remote_src": false}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "local\nfragments\n640\n");
}
