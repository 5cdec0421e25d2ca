//! Path arguments over SSH: `~` and `$VAR` are the remote login user's home and environment
//! (the fixture's unprivileged user when the tests run as root), not the controller's, and
//! each is looked up once per connection.

use serde_json::json;

use kinit::transport::Connection;

use super::Fixture;

/// `~` in `file`, `copy` (with and without `remote_src`), `stat` and `command`'s `chdir`
/// names the remote user's home; `$VAR` takes the task's environment; one lookup serves
/// every later task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tilde_is_the_remote_users_home_over_ssh() {
    let lab = crate::fixtures::sshd::SshLab::new(1);
    let conn = Connection::open(&lab.target(0)).await.expect("ssh connect");
    let fx = Fixture::new(&conn).await;
    let home = fx.sh("printf %s \"$HOME\"").await;
    let controller_home = std::env::var("HOME").unwrap_or_default();
    assert!(home.starts_with('/'), "remote HOME `{home}`");
    if lab.user != whoami() {
        // Only a login as another user can tell the two homes apart.
        assert_ne!(home, controller_home, "the remote user's home is its own");
    }
    let dir = format!("kinit-hostpath-{}", std::process::id());

    let r = fx
        .run(
            "file",
            json!({"path": format!("~/{dir}"), "state": "directory"}),
        )
        .await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["path"], format!("{home}/{dir}"));
    assert_eq!(fx.host_env.lookups(), 1);

    let r = fx
        .run(
            "copy",
            json!({"content": "hi\n", "dest": format!("~/{dir}/a.txt")}),
        )
        .await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["dest"], format!("{home}/{dir}/a.txt"));

    let r = fx
        .try_run_env(
            "copy",
            json!({"src": format!("$HOME/{dir}/a.txt"), "remote_src": true,
                   "dest": "${SCRATCH}/b.txt"}),
            false,
            false,
            vec![("SCRATCH".into(), fx.remote.clone())],
        )
        .await
        .unwrap();
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(fx.sh(&format!("cat {}/b.txt", fx.remote)).await, "hi\n");

    let r = fx
        .run("stat", json!({"path": format!("~/{dir}/a.txt")}))
        .await;
    assert_eq!(r.data["stat"]["exists"], true, "{r:?}");
    let r = fx
        .run(
            "command",
            json!({"_raw_params": "cat a.txt", "chdir": format!("~/{dir}")}),
        )
        .await;
    assert_eq!(r.data["stdout"], "hi");
    // `~` was looked up with the first task, `$HOME` once with the copy.
    assert_eq!(fx.host_env.lookups(), 2);

    fx.sh(&format!("rm -rf \"$HOME\"/{dir}")).await;
    fx.finish().await;
    conn.close().await;
}

fn whoami() -> String {
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
