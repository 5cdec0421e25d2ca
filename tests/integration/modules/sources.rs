//! `pip` and `git`: software fetched from a package index or a repository, both served from
//! the host's own scratch folder (wheels built there, repositories made there), so the cases
//! need no network.

use serde_json::json;

use super::Fixture;

/// The wheel builder the differential playbook uses too.
const MAKE_WHEELS: &str = include_str!("../../playbooks/diff/files/make_wheels.py");

pub async fn pip(fx: &Fixture<'_>) {
    if fx
        .sh("python3 -c 'import venv, ensurepip' && echo ok")
        .await
        != "ok\n"
    {
        crate::support::cannot_run("the host has no Python with `venv` and `ensurepip`");
        return;
    }
    let wheels = fx.path("wheels");
    let venv = fx.path("venv");
    let out = fx
        .sh(&format!(
            "python3 - {wheels} kinitdemo-1.0 kinitdemo-2.0 <<'EOF'\n{MAKE_WHEELS}\nEOF\nls {wheels}"
        ))
        .await;
    assert_eq!(
        out,
        "kinitdemo-1.0-py3-none-any.whl\nkinitdemo-2.0-py3-none-any.whl\n"
    );
    let make = json!({"name": "pip", "virtualenv": venv, "virtualenv_command": "python3 -m venv"});
    // Check mode without the virtualenv: a change, and no virtualenv.
    let c = fx.check("pip", make.clone()).await;
    assert!(c.changed && !c.failed && c.data.is_empty(), "{c:?}");
    assert_eq!(
        fx.sh(&format!("ls {venv} 2>&1 >/dev/null | wc -l")).await,
        "1\n"
    );
    // Creating it is the change (pip itself is already there).
    let r = fx.run("pip", make.clone()).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["virtualenv"], venv.as_str());
    assert!(
        r.data["stdout"]
            .as_str()
            .unwrap()
            .contains("Requirement already satisfied: pip")
    );
    let r = fx.run("pip", make).await;
    assert!(!r.changed && !r.failed, "{r:?}");
    // Direct references to the wheels (`name @ file://...`): no index involved, and check
    // mode still decides from the installed set (no `extra_args`).
    let wheel = |v: &str| format!("kinitdemo @ file://{wheels}/kinitdemo-{v}-py3-none-any.whl");
    let probe = format!("{venv}/bin/pip list --format=freeze | grep kinit");
    let args = json!({"name": wheel("1.0"), "virtualenv": venv});
    let r = fx.converges("pip", args, &probe).await;
    assert_eq!(r.data["name"], json!([wheel("1.0")]));
    assert_eq!(fx.sh(&probe).await, "kinitdemo==1.0\n");
    // `latest` always predicts a change in check mode, and changes nothing there.
    let latest = json!({"name": wheel("2.0"), "state": "latest", "virtualenv": venv});
    let c = fx.check("pip", latest.clone()).await;
    assert!(c.changed, "{c:?}");
    assert_eq!(fx.sh(&probe).await, "kinitdemo==1.0\n");
    let r = fx.run("pip", latest).await;
    assert!(r.changed, "{r:?}");
    assert_eq!(fx.sh(&probe).await, "kinitdemo==2.0\n");
    // A specifier the installed version meets: nothing to do, in check mode and for real.
    let met = json!({"name": "kinitdemo>=2.0,<3", "virtualenv": venv});
    assert!(!fx.check("pip", met.clone()).await.changed);
    let r = fx.run("pip", met).await;
    assert!(!r.changed && !r.failed, "{r:?}");
    assert!(
        r.data["stdout"]
            .as_str()
            .unwrap()
            .contains("Requirement already satisfied: kinitdemo<3,>=2.0"),
        "{r:?}"
    );
    fx.converges(
        "pip",
        json!({"name": "kinitdemo", "state": "absent", "virtualenv": venv}),
        &probe,
    )
    .await;
    assert_eq!(fx.sh(&probe).await, "");
    let r = fx
        .run(
            "pip",
            json!({"name": "kinit-nosuch", "virtualenv": venv, "extra_args": "--no-index"}),
        )
        .await;
    assert!(r.failed, "{r:?}");
    assert!(
        r.msg
            .as_deref()
            .unwrap()
            .contains("No matching distribution found for kinit-nosuch"),
        "{r:?}"
    );
}

pub async fn git(fx: &Fixture<'_>) {
    if fx.sh("command -v git >/dev/null && echo ok").await != "ok\n" {
        crate::support::cannot_run("the host has no `git`");
        return;
    }
    let origin = fx.path("origin");
    let co = fx.path("co");
    let git = "git -c user.name=kinit -c user.email=kinit@example.invalid";
    fx.sh(&format!(
        "git init -q -b main {origin} && cd {origin} && echo one > f && git add f && \
         {git} commit -qm one && {git} tag -a v1 -m v1"
    ))
    .await;
    let head = |dir: &str| {
        format!("git -C {dir} rev-parse HEAD 2>&1; git -C {dir} status --porcelain 2>&1")
    };
    let sha = async || {
        fx.sh(&format!("git -C {origin} rev-parse HEAD"))
            .await
            .trim()
            .to_string()
    };
    let one = sha().await;
    // Clone: check mode reports the remote's sha from ls-remote and creates nothing.
    let c = fx.check("git", json!({"repo": origin, "dest": co})).await;
    assert_eq!(c.data["after"], one.as_str());
    assert_eq!(c.data["before"], json!(null));
    let r = fx
        .converges("git", json!({"repo": origin, "dest": co}), &head(&co))
        .await;
    assert_eq!(r.data["after"], one.as_str());
    assert_eq!(fx.sh(&format!("cat {co}/f")).await, "one\n");
    // A new commit upstream: check mode sees it, the update takes it.
    fx.sh(&format!(
        "cd {origin} && echo two >> f && {git} commit -qam two"
    ))
    .await;
    let two = sha().await;
    let c = fx.check("git", json!({"repo": origin, "dest": co})).await;
    assert_eq!(
        (c.data["before"].as_str(), c.data["after"].as_str()),
        (Some(one.as_str()), Some(two.as_str()))
    );
    assert_eq!(c.data["remote_url_changed"], false);
    let r = fx
        .converges("git", json!({"repo": origin, "dest": co}), &head(&co))
        .await;
    assert_eq!(r.data["after"], two.as_str());
    // An annotated tag checks out its commit.
    let r = fx
        .converges(
            "git",
            json!({"repo": origin, "dest": co, "version": "v1"}),
            &head(&co),
        )
        .await;
    assert_eq!(r.data["after"], one.as_str());
    // Local modifications: refused (in check mode too), reset with force.
    fx.sh(&format!("echo local >> {co}/f")).await;
    let main = json!({"repo": origin, "dest": co, "version": "main"});
    for check in [true, false] {
        let r = fx.try_run("git", main.clone(), check, false).await.unwrap();
        assert!(r.failed, "{r:?}");
        assert_eq!(
            r.msg.as_deref(),
            Some(
                format!("Local modifications exist in the destination: {co} (force=no).").as_str()
            )
        );
    }
    let mut forced = main.clone();
    forced["force"] = json!(true);
    let before = fx.sh(&head(&co)).await;
    assert!(fx.check("git", forced.clone()).await.changed);
    assert_eq!(
        fx.sh(&head(&co)).await,
        before,
        "check mode touched the checkout"
    );
    let r = fx.run("git", forced.clone()).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(fx.sh(&head(&co)).await, format!("{two}\n"));
    assert!(!fx.run("git", forced).await.changed);
    // A bare mirror, and `clone: false` only reporting.
    let bare = fx.path("bare.git");
    fx.converges(
        "git",
        json!({"repo": format!("file://{origin}"), "dest": bare, "bare": true}),
        &format!("git -C {bare} rev-parse HEAD 2>&1"),
    )
    .await;
    let r = fx.run("git", json!({"repo": origin, "clone": false})).await;
    assert!(r.changed && r.data["after"] == two.as_str(), "{r:?}");
}
