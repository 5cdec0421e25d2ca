//! `get_url`, `uri`, `wait_for`, `unarchive` on a real host. The HTTP server is Python's
//! `http.server` (with a small POST echo handler), started *on the host* through the same
//! connection, so the requests the modules make from the host reach it over any transport.

use serde_json::json;

use super::Fixture;

const SERVER: &str = r#"
import http.server, json, sys
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        out = json.dumps({"method": self.command, "path": self.path,
            "body": self.rfile.read(n).decode(),
            "content_type": self.headers.get("Content-Type"),
            "auth": self.headers.get("Authorization"),
            "x_test": self.headers.get("X-Test")}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_PUT = do_POST
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
"#;

/// Start the server on the host, serving `dir`; returns its base URL. It stops by itself
/// after two minutes, or when `stop_http` kills it.
pub(super) async fn serve(fx: &Fixture<'_>, dir: &str) -> String {
    let script = fx.path("server.py");
    let port_file = fx.path("http.port");
    fx.conn
        .exec(&kinit::transport::ExecRequest {
            script: format!("cat > {script}"),
            stdin: Some(SERVER.as_bytes().to_vec()),
            ..Default::default()
        })
        .await
        .unwrap();
    fx.sh(&format!(
        "cd {dir} && (timeout 120 /usr/bin/python3 {script} {port_file} </dev/null >/dev/null 2>&1 & echo $! > {pid})",
        pid = fx.path("http.pid")
    ))
    .await;
    for _ in 0..100 {
        let port = fx.sh(&format!("cat {port_file} 2>/dev/null")).await;
        if !port.is_empty() {
            return format!("http://127.0.0.1:{}", port.trim());
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the HTTP server on the host did not start");
}

pub(super) async fn stop_http(fx: &Fixture<'_>) {
    fx.sh(&format!("kill $(cat {}) 2>/dev/null", fx.path("http.pid")))
        .await;
}

pub async fn get_url(fx: &Fixture<'_>) {
    let www = fx.path("www");
    fx.sh(&format!(
        "mkdir {www} && printf 'payload\\n' > {www}/file.txt"
    ))
    .await;
    let base = serve(fx, &www).await;
    // sha256 of "payload\n"
    let sum = "sha256:b1a5e4e5f5a7c7a3b2c0b7a6b8f8a0c1f0e9d2c3b4a5968778695a4b3c2d1e0f";
    let real = fx
        .sh(&format!("sha256sum {www}/file.txt | cut -d' ' -f1"))
        .await;
    let good = format!("sha256:{}", real.trim());
    let dest = fx.path("dl.txt");
    let probe = format!("cat {dest} 2>&1; stat -c %a {dest} 2>&1");
    let args =
        json!({"url": format!("{base}/file.txt"), "dest": dest, "checksum": good, "mode": "0600"});
    let r = fx.converges("get_url", args, &probe).await;
    assert_eq!(r.data["status_code"], 200);
    assert_eq!(fx.sh(&probe).await, "payload\n600\n");

    // A wrong checksum fails and leaves nothing behind.
    let bad_dest = fx.path("bad.txt");
    let r = fx
        .run(
            "get_url",
            json!({"url": format!("{base}/file.txt"), "dest": bad_dest, "checksum": sum}),
        )
        .await;
    assert!(
        r.failed && r.msg.as_deref().unwrap().contains("checksum"),
        "{r:?}"
    );
    assert!(
        !fx.sh(&format!("ls {}", fx.remote))
            .await
            .contains("bad.txt")
    );

    // Into a directory: the URL's file name; force re-downloads but the same bytes are ok.
    let r = fx
        .run(
            "get_url",
            json!({"url": format!("{base}/file.txt"), "dest": fx.remote, "force": true}),
        )
        .await;
    assert!(r.changed);
    assert_eq!(r.data["dest"], fx.path("file.txt"));
    let r = fx
        .run(
            "get_url",
            json!({"url": format!("{base}/file.txt"), "dest": fx.remote, "force": true}),
        )
        .await;
    assert!(!r.changed, "{r:?}");

    // 404 is a failure that names the status.
    let r = fx
        .run(
            "get_url",
            json!({"url": format!("{base}/missing"), "dest": fx.path("m")}),
        )
        .await;
    assert!(
        r.failed && r.msg.as_deref().unwrap().contains("404"),
        "{r:?}"
    );
    stop_http(fx).await;
}

pub async fn uri(fx: &Fixture<'_>) {
    let www = fx.path("www");
    fx.sh(&format!(
        "mkdir {www} && printf '{{\"k\": [1, 2]}}' > {www}/data.json"
    ))
    .await;
    let base = serve(fx, &www).await;
    let r = fx
        .run("uri", json!({"url": format!("{base}/data.json")}))
        .await;
    assert!(!r.failed && !r.changed, "{r:?}");
    assert_eq!(r.data["status"], 200);
    assert_eq!(r.data["json"], json!({"k": [1, 2]}));
    assert!(r.data.get("content").is_none());

    let r = fx
        .run(
            "uri",
            json!({
                "url": format!("{base}/api"), "method": "POST", "body_format": "json",
                "body": {"name": "x"}, "status_code": [201], "return_content": true,
                "headers": {"X-Test": "yes"}, "url_username": "u", "url_password": "p",
            }),
        )
        .await;
    assert!(!r.failed, "{r:?}");
    let echo = &r.data["json"];
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["body"], r#"{"name":"x"}"#);
    assert_eq!(echo["content_type"], "application/json");
    assert_eq!(echo["x_test"], "yes");
    assert_eq!(echo["auth"], "Basic dTpw");
    assert!(r.data["content"].as_str().unwrap().contains("POST"));

    let r = fx
        .run("uri", json!({"url": format!("{base}/api"), "method": "PUT", "body_format": "form-urlencoded", "body": {"a": "b c"}, "status_code": 201}))
        .await;
    assert_eq!(r.data["json"]["body"], "a=b+c");

    let r = fx.run("uri", json!({"url": format!("{base}/nope")})).await;
    assert!(r.failed);
    assert_eq!(r.data["status"], 404);
    let c = fx
        .check("uri", json!({"url": format!("{base}/data.json")}))
        .await;
    assert!(c.skipped);
    stop_http(fx).await;
}

pub async fn wait_for(fx: &Fixture<'_>) {
    let www = fx.path("www");
    fx.sh(&format!("mkdir {www}")).await;
    let base = serve(fx, &www).await;
    let port: u64 = base.rsplit(':').next().unwrap().parse().unwrap();
    let r = fx
        .run("wait_for", json!({"port": port, "timeout": 10}))
        .await;
    assert!(!r.failed && !r.changed, "{r:?}");
    stop_http(fx).await;
    let r = fx
        .run(
            "wait_for",
            json!({"port": port, "state": "stopped", "timeout": 10}),
        )
        .await;
    assert!(!r.failed, "{r:?}");
    let r = fx
        .run("wait_for", json!({"port": port, "timeout": 1}))
        .await;
    // ansible-core's words (`modules/wait_for.py`).
    assert!(r.failed, "{r:?}");
    assert_eq!(
        r.msg.as_deref(),
        Some(format!("Timeout when waiting for 127.0.0.1:{port}").as_str()),
        "{r:?}"
    );

    // A file that appears later with the awaited line; check mode waits too.
    let f = fx.path("ready.log");
    fx.sh(&format!("(sleep 1; echo 'state: starting' > {f}; sleep 1; echo 'state: READY' >> {f}) </dev/null >/dev/null 2>&1 &")).await;
    let r = fx
        .check(
            "wait_for",
            json!({"path": f, "search_regex": "READY$", "timeout": 20}),
        )
        .await;
    assert!(!r.failed && !r.changed, "{r:?}");
    assert!(fx.sh(&format!("cat {f}")).await.contains("READY"));
    let r = fx
        .run(
            "wait_for",
            json!({"path": f, "state": "absent", "timeout": 1}),
        )
        .await;
    assert!(r.failed);
}

pub async fn unarchive(fx: &Fixture<'_>) {
    let src = fx.local_dir().join("src");
    std::fs::create_dir_all(src.join("app/bin")).unwrap();
    std::fs::write(src.join("app/bin/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::write(src.join("app/README"), "read me\n").unwrap();
    let tgz = fx.local_dir().join("app.tar.gz");
    let st = std::process::Command::new("tar")
        .args([
            "-czf",
            tgz.to_str().unwrap(),
            "-C",
            src.to_str().unwrap(),
            "app",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let dest = fx.path("opt");
    fx.sh(&format!("mkdir {dest}")).await;
    let probe = format!("cd {dest} && find . | sort && cat app/README 2>&1");
    let r = fx
        .converges(
            "unarchive",
            json!({"src": "app.tar.gz", "dest": dest}),
            &probe,
        )
        .await;
    assert_eq!(r.data["handler"], "TgzArchive");
    assert_eq!(
        fx.sh(&probe).await,
        ".\n./app\n./app/README\n./app/bin\n./app/bin/run.sh\nread me\n"
    );

    // A locally modified file is restored; a mode request applies to every member.
    fx.sh(&format!("echo changed > {dest}/app/README")).await;
    let r = fx
        .run("unarchive", json!({"src": "app.tar.gz", "dest": dest}))
        .await;
    assert_eq!(r.data["changed_files"], json!(["app/README"]));
    assert_eq!(fx.sh(&format!("cat {dest}/app/README")).await, "read me\n");
    let probe = format!("stat -c %a {dest}/app/README {dest}/app/bin");
    fx.converges(
        "unarchive",
        json!({"src": "app.tar.gz", "dest": dest, "mode": "u=rwX,g=rX,o="}),
        &probe,
    )
    .await;

    // remote_src + zip + creates.
    let zip_dest = fx.path("z");
    fx.sh(&format!(
        "mkdir {zip_dest} && cd {} && printf x > one.txt && zip -q a.zip one.txt",
        fx.remote
    ))
    .await;
    let args = json!({"src": fx.path("a.zip"), "dest": zip_dest, "remote_src": true});
    fx.converges("unarchive", args, &format!("ls {zip_dest}"))
        .await;
    let r = fx
        .run("unarchive", json!({"src": fx.path("a.zip"), "dest": zip_dest, "remote_src": true, "creates": fx.path("z/one.txt")}))
        .await;
    assert!(!r.changed && r.msg.unwrap().contains("skipped"));
    // `copy: false`, the older spelling of `remote_src: true` (ansible-core's action inverts
    // it), reads the archive on the host; both at once are refused in its words.
    let r = fx
        .run(
            "unarchive",
            json!({"src": fx.path("a.zip"), "dest": zip_dest, "copy": false}),
        )
        .await;
    assert!(!r.failed && !r.changed, "{:?}", r.msg);
    let r = fx
        .run(
            "unarchive",
            json!({"src": fx.path("a.zip"), "dest": zip_dest, "copy": false, "remote_src": true}),
        )
        .await;
    assert_eq!(
        r.msg.as_deref(),
        Some("parameters are mutually exclusive: ('copy', 'remote_src')")
    );
    let r = fx
        .run(
            "unarchive",
            json!({"src": "app.tar.gz", "dest": fx.path("nodir")}),
        )
        .await;
    assert!(r.failed && r.msg.unwrap().contains("not a directory"));
}
