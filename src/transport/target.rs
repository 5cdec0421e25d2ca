//! `HostTarget`: everything needed to reach one host, resolved from inventory variables,
//! command-line flags and `~/.ssh/config` before any connection is opened.

use std::path::PathBuf;
use std::time::Duration;

use crate::secret::Secret;

/// How SSH host keys are checked (`--host-key-checking`, `ansible_host_key_checking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyChecking {
    /// Refuse hosts whose key is unknown or changed.
    #[default]
    Strict,
    /// Record unknown hosts, refuse changed keys.
    AcceptNew,
    /// Accept any key (not recommended).
    Off,
}

#[derive(Debug, thiserror::Error)]
#[error("unknown host key checking `{0}`; expected strict, accept-new or off")]
pub struct UnknownHostKeyChecking(pub String);

impl std::str::FromStr for HostKeyChecking {
    type Err = UnknownHostKeyChecking;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "strict" => Ok(Self::Strict),
            "accept-new" => Ok(Self::AcceptNew),
            "off" => Ok(Self::Off),
            other => Err(UnknownHostKeyChecking(other.to_string())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectionKind {
    #[default]
    Ssh,
    WinRm,
    Local,
}

/// One hop of a jump chain (`ProxyJump user@host:port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpHost {
    pub address: String,
    pub port: u16,
    pub user: Option<String>,
    pub private_key_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Default)]
pub struct BecomeOptions {
    /// Target user (`root` when empty).
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub method: BecomeMethod,
    /// `become_flags`: options for the become program, in place of kinit's own (`-H` for
    /// sudo, none for su).
    pub flags: Option<String>,
}

/// How a POSIX host's command becomes another user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BecomeMethod {
    #[default]
    Sudo,
    Su,
}

impl BecomeMethod {
    /// The method `become_method` names, or `None` for one kinit does not have.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().rsplit('.').next().unwrap_or_default() {
            "sudo" => Some(Self::Sudo),
            "su" => Some(Self::Su),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WinRmScheme {
    Http,
    #[default]
    Https,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WinRmAuth {
    #[default]
    Ntlm,
    Basic,
}

#[derive(Debug, Clone)]
pub struct WinRmOptions {
    pub scheme: WinRmScheme,
    pub auth: WinRmAuth,
    /// `false` only when the user opted out (`ansible_winrm_server_cert_validation=ignore`).
    pub cert_validation: bool,
    pub ca_file: Option<PathBuf>,
    /// WS-Man `OperationTimeout`: how long one Receive long-polls before the server answers
    /// `w:TimedOut` (kinit then polls again; it is not a command timeout).
    pub operation_timeout: Duration,
    pub path: String,
    /// Allow Basic auth over plain HTTP (password and commands in clear text). Off unless the
    /// user opts in; Windows refuses it too unless `AllowUnencrypted=true`.
    pub allow_basic_over_http: bool,
    /// Extra tries for a request that failed before reaching the shell (connection errors,
    /// bare HTTP 5xx), each on a fresh, re-authenticated connection
    /// (`ansible_winrm_reconnection_retries`).
    pub http_retries: u32,
    /// The wait before the first extra try, doubled before each further one
    /// (`ansible_winrm_reconnection_backoff`).
    pub retry_backoff: Duration,
    /// Shell idle timeout asked of the server: a shell kinit could not delete (killed process)
    /// expires after this long instead of Windows' two hours.
    pub idle_timeout: Duration,
}

impl Default for WinRmOptions {
    fn default() -> Self {
        Self {
            scheme: WinRmScheme::Https,
            auth: WinRmAuth::Ntlm,
            cert_validation: true,
            ca_file: None,
            operation_timeout: Duration::from_secs(20),
            path: "/wsman".into(),
            allow_basic_over_http: false,
            http_retries: 2,
            retry_backoff: Duration::from_millis(200),
            idle_timeout: Duration::from_secs(900),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HostTarget {
    /// Inventory name, used in messages.
    pub name: String,
    pub connection: ConnectionKind,
    /// What to connect to (`ansible_host`, else the name).
    pub address: String,
    /// `None`: the transport's default (22, 5985/5986).
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub private_key_files: Vec<PathBuf>,
    pub jump: Vec<JumpHost>,
    pub host_key_checking: HostKeyChecking,
    /// Extra known_hosts file consulted (and written under accept-new), e.g. a cluster's own.
    pub known_hosts_file: Option<PathBuf>,
    pub winrm: WinRmOptions,
    pub connect_timeout: Duration,
    /// Connection attempts before the host is unreachable.
    pub connect_attempts: u32,
    /// OpenSSH client config consulted for Host aliases (`None`: `~/.ssh/config`).
    pub ssh_config_file: Option<PathBuf>,
    /// Passphrase for encrypted private key files (e.g. from `KINIT_SSH_KEY_PASSPHRASE`).
    pub key_passphrase: Option<Secret>,
    /// ssh-agent socket (`None`: `$SSH_AUTH_SOCK`).
    pub ssh_agent_socket: Option<PathBuf>,
    /// Run commands through one long-lived remote `/bin/sh` per host (one round trip per
    /// command) instead of a new exec channel each (two round trips).
    pub persistent_shell: bool,
}

impl HostTarget {
    pub fn new(name: impl Into<String>, connection: ConnectionKind) -> Self {
        let name = name.into();
        Self {
            address: name.clone(),
            name,
            connection,
            port: None,
            user: None,
            password: None,
            private_key_files: Vec::new(),
            jump: Vec::new(),
            host_key_checking: HostKeyChecking::Strict,
            known_hosts_file: None,
            winrm: WinRmOptions::default(),
            connect_timeout: Duration::from_secs(10),
            connect_attempts: 3,
            ssh_config_file: None,
            key_passphrase: std::env::var("KINIT_SSH_KEY_PASSPHRASE")
                .ok()
                .map(Secret::new),
            ssh_agent_socket: None,
            persistent_shell: true,
        }
    }
}
