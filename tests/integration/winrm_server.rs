//! Fixture: the repository's WinRM test server (`tests/winrm_server/server.py`), started per
//! test on a free loopback port and killed on drop. Windows cannot run here; this server
//! speaks the WinRS protocol (auth, sealing, faults) and runs commands with sh.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kinit::secret::Secret;
use kinit::transport::target::{WinRmAuth, WinRmScheme};
use kinit::transport::{ConnectionKind, HostTarget};

/// The Python that has pyspnego (the venv `ci/test.sh` builds), or a clear failure.
pub fn python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("KINIT_VENV")
        .map(|v| PathBuf::from(v).join("bin/python"))
        .into_iter()
        .chain([
            root.join("target/venv/bin/python"),
            PathBuf::from("python3"),
        ]);
    for py in candidates {
        let ok = Command::new(&py)
            .args(["-c", "import spnego, winrm"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return py;
        }
    }
    panic!(
        "no Python with pyspnego and pywinrm: run ci/test.sh once (it builds target/venv) \
         or set KINIT_VENV"
    );
}

pub fn server_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/winrm_server")
}

/// Which of kinit's three supported modes a server and target are set up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    HttpsNtlm,
    HttpNtlmSealed,
    HttpsBasic,
}

pub struct WinRmServer {
    child: Child,
    pub port: u16,
    pub state: tempfile::TempDir,
    pub https: bool,
}

pub const USER: &str = "KINIT\\vagrant";
pub const PASSWORD: &str = "Vagrant-Secret-42";

impl WinRmServer {
    pub fn start(https: bool, extra: &[&str]) -> Self {
        Self::start_env(https, extra, &[])
    }

    /// `start` with environment variables for the server (`KINIT_WINRM_PFX_PASSWORD`).
    pub fn start_env(https: bool, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let state = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(python());
        cmd.envs(env.iter().copied());
        cmd.arg(server_dir().join("server.py"))
            .arg("--state-dir")
            .arg(state.path())
            .arg("--user")
            .arg(format!("{USER}:{PASSWORD}"))
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if https {
            cmd.arg("--https");
        }
        let mut child = cmd.spawn().expect("start the WinRM test server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .strip_prefix("READY ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("WinRM test server did not start: {line:?}"));
        WinRmServer {
            child,
            port,
            state,
            https,
        }
    }

    pub fn for_mode(mode: Mode, extra: &[&str]) -> Self {
        Self::start(mode != Mode::HttpNtlmSealed, extra)
    }

    pub fn ca_file(&self) -> PathBuf {
        self.state.path().join("cert.pem")
    }

    /// A target for `mode`, with certificate verification against the server's own cert.
    pub fn target(&self, mode: Mode) -> HostTarget {
        let mut t = HostTarget::new("win1", ConnectionKind::WinRm);
        t.address = "127.0.0.1".into();
        t.port = Some(self.port);
        t.user = Some(USER.into());
        t.password = Some(Secret::new(PASSWORD));
        t.connect_timeout = Duration::from_secs(5);
        t.winrm.scheme = if self.https {
            WinRmScheme::Https
        } else {
            WinRmScheme::Http
        };
        t.winrm.auth = match mode {
            Mode::HttpsBasic => WinRmAuth::Basic,
            _ => WinRmAuth::Ntlm,
        };
        t.winrm.ca_file = self.https.then(|| self.ca_file());
        t.winrm.operation_timeout = Duration::from_secs(5);
        t
    }

    fn client(&self) -> (reqwest::Client, String) {
        let scheme = if self.https { "https" } else { "http" };
        let client = reqwest::Client::builder()
            .tls_danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        (client, format!("{scheme}://127.0.0.1:{}", self.port))
    }

    /// The server's counters (`GET /_stats`).
    pub async fn stats(&self) -> serde_json::Value {
        let (client, base) = self.client();
        let r = client.get(format!("{base}/_stats")).send().await.unwrap();
        serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
    }

    pub async fn stat(&self, key: &str) -> i64 {
        self.stats().await[key].as_i64().unwrap()
    }

    /// Fault injection: `{"fail_next": N, "delay_ms": M}`.
    pub async fn control(&self, body: serde_json::Value) {
        let (client, base) = self.client();
        let r = client
            .post(format!("{base}/_control"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    /// Wait (bounded) until counter `key` satisfies `pred`; returns its last value.
    pub async fn wait_for(&self, key: &str, pred: impl Fn(i64) -> bool) -> i64 {
        let mut v = self.stat(key).await;
        for _ in 0..100 {
            if pred(v) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            v = self.stat(key).await;
        }
        v
    }
}

impl Drop for WinRmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
