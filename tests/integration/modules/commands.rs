//! `command`, `shell`, `raw`, `script`, `ping` on a real host.

use serde_json::json;

use super::Fixture;

pub async fn command(fx: &Fixture<'_>) {
    let marker = fx.path("made-by-command");
    // argv is passed without a shell: the `;` is an argument, not shell syntax. `$HOME` is
    // expanded on the host, as Ansible's `expand_argument_vars` (on by default) expands it,
    // and stays as written with it off.
    let home = fx.sh("printf %s \"$HOME\"").await;
    let r = fx
        .run("command", json!({"argv": ["echo", "a;b", "$HOME"]}))
        .await;
    assert_eq!(r.data["stdout"], format!("a;b {home}").as_str());
    assert!(r.changed && !r.failed);
    let r = fx
        .run(
            "command",
            json!({"argv": ["echo", "$HOME"], "expand_argument_vars": false}),
        )
        .await;
    assert_eq!(r.data["stdout"], "$HOME");

    // Free-form text is split like a shell would, but still run without one.
    let r = fx
        .run(
            "command",
            json!({"_raw_params": "printf '%s|' 'a b' c > d"}),
        )
        .await;
    assert_eq!(r.data["stdout"], "a b|c|>|d|");

    // creates: check mode predicts, the run creates, the next run skips.
    let args = json!({"cmd": format!("touch {marker}"), "creates": marker});
    let c = fx.check("command", args.clone()).await;
    assert!(c.changed && !c.skipped, "{c:?}");
    assert_eq!(fx.sh(&format!("test -e {marker} || echo no")).await, "no\n");
    let r = fx.run("command", args.clone()).await;
    assert!(r.changed, "{r:?}");
    let r = fx.run("command", args).await;
    assert!(!r.changed, "{r:?}");
    assert!(r.data["stdout"].as_str().unwrap().contains("skipped"));

    // removes + chdir + stdin.
    let r = fx
        .run(
            "command",
            json!({"cmd": "cat", "stdin": "hello", "chdir": fx.remote, "removes": marker}),
        )
        .await;
    assert_eq!(r.data["stdout"], "hello");
    let r = fx
        .run("command", json!({"argv": ["pwd"], "chdir": fx.remote}))
        .await;
    assert_eq!(r.data["stdout"], fx.remote.as_str());

    // Without creates/removes, check mode skips (Ansible's behaviour).
    let c = fx.check("command", json!({"cmd": "false"})).await;
    assert!(c.skipped && !c.failed);

    // A non-zero exit is a failed result with the rc, not an error.
    let r = fx
        .run(
            "command",
            json!({"argv": ["sh", "-c", "echo e >&2; exit 3"]}),
        )
        .await;
    assert!(r.failed);
    assert_eq!(r.data["rc"], 3);
    assert_eq!(r.data["stderr"], "e");
}

pub async fn shell(fx: &Fixture<'_>) {
    let f = fx.path("shell-out");
    let r = fx
        .run(
            "shell",
            json!({"_raw_params": format!("echo one | tr o O > {f}; cat {f}; echo $((1+2))")}),
        )
        .await;
    assert_eq!(r.data["stdout_lines"], json!(["One", "3"]));
    let r = fx
        .run(
            "shell",
            json!({"cmd": "echo $0", "executable": "/bin/bash"}),
        )
        .await;
    assert_eq!(r.data["stdout"], "/bin/bash");
    let args = json!({"cmd": format!("echo x >> {f}"), "creates": fx.path("never")});
    let c = fx.check("shell", args).await;
    assert!(c.changed);
    assert_eq!(fx.sh(&format!("cat {f}")).await, "One\n");
}

pub async fn raw(fx: &Fixture<'_>) {
    let r = fx
        .run("raw", json!({"_raw_params": "echo raw; exit 0"}))
        .await;
    // raw keeps the output's last newline, as ansible-playbook registers it (`raw: echo raw`
    // gives "raw\n" there too).
    assert_eq!(r.data["stdout"], "raw\n");
    assert!(r.changed);
    let f = fx.path("raw-made");
    let c = fx
        .check("raw", json!({"_raw_params": format!("touch {f}")}))
        .await;
    assert!(c.skipped);
    assert_eq!(
        fx.sh(&format!("test -e {f} || echo absent")).await,
        "absent\n"
    );
}

pub async fn script(fx: &Fixture<'_>) {
    fx.local_file(
        "hello.sh",
        "#!/bin/sh\necho \"args: $*\"\npwd\ntouch made-by-script\n",
    );
    let made = fx.path("made-by-script");
    let args = json!({"cmd": "hello.sh 'a b' c", "chdir": fx.remote, "creates": made});
    let c = fx.check("script", args.clone()).await;
    assert!(c.changed, "{c:?}");
    assert_eq!(
        fx.sh(&format!("test -e {made} || echo absent")).await,
        "absent\n"
    );
    let r = fx.run("script", args.clone()).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(
        r.data["stdout_lines"],
        json!(["args: a b c", fx.remote.as_str()])
    );
    let r = fx.run("script", args).await;
    assert!(!r.changed, "{r:?}");
    let err = fx
        .try_run("script", json!({"cmd": "missing.sh"}), false, false)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("could not find `missing.sh`"),
        "{err}"
    );
}

pub async fn ping(fx: &Fixture<'_>) {
    let r = fx.run("ping", json!(null)).await;
    assert_eq!(r.data["ping"], "pong");
    assert!(!r.changed);
    let r = fx.run("ping", json!({"data": "crash"})).await;
    assert!(r.failed);
}
