//! Opening the one connection to a host: resolve the hop chain (`HostTarget.jump`, else the
//! config's ProxyJump), connect the first hop over TCP (nodelay, connect timeout, retries with
//! backoff), tunnel each further hop through a direct-tcpip channel of the previous one, and
//! check host keys and authenticate at every hop.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};

use super::auth::{self, Credentials};
use super::client::Client;
use super::config::SshConfig;
use super::known_hosts::KnownHosts;
use super::stream::{QuickAck, coalesce};
use crate::transport::{HostTarget, TransportError};

/// One hop of the chain, fully resolved.
#[derive(Debug, Clone)]
struct Hop {
    address: String,
    port: u16,
    user: String,
    key_files: Vec<PathBuf>,
}

impl Hop {
    fn shown(&self) -> String {
        format!("{}@{}:{}", self.user, self.address, self.port)
    }
}

/// The authenticated connection to the target, and the jump connections it runs through
/// (kept alive as long as it is).
pub(crate) struct Connected {
    pub handle: Handle<Client>,
    jumps: Vec<Handle<Client>>,
}

impl Connected {
    pub async fn disconnect(&self) {
        let bye = || russh::Disconnect::ByApplication;
        let _ = self.handle.disconnect(bye(), "", "en").await;
        for j in self.jumps.iter().rev() {
            let _ = j.disconnect(bye(), "", "en").await;
        }
    }
}

fn russh_config() -> Arc<client::Config> {
    Arc::new(client::Config {
        // Without it every command stalls ~40 ms (Nagle against delayed ACK).
        nodelay: true,
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 4,
        inactivity_timeout: None,
        ..client::Config::default()
    })
}

fn resolve(target: &HostTarget) -> Result<Vec<Hop>, TransportError> {
    let cfg = SshConfig::load(target.ssh_config_file.as_deref()).map_err(|e| {
        TransportError::Protocol {
            host: target.name.clone(),
            what: "ssh config".into(),
            detail: e.to_string(),
        }
    })?;
    let local_user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let me = cfg.host(&target.address);
    let jumps = if target.jump.is_empty() {
        me.proxy_jump.clone().unwrap_or_default()
    } else {
        target.jump.clone()
    };
    let mut hops: Vec<Hop> = jumps
        .iter()
        .map(|j| {
            let c = cfg.host(&j.address);
            Hop {
                address: c.hostname.clone().unwrap_or_else(|| j.address.clone()),
                // An explicit `:port` in the jump spec wins; 22 there means "not given".
                port: if j.port != 22 {
                    j.port
                } else {
                    c.port.unwrap_or(22)
                },
                user: j
                    .user
                    .clone()
                    .or(c.user.clone())
                    .or(target.user.clone())
                    .unwrap_or_else(|| local_user.clone()),
                key_files: jump_key_files(
                    j.private_key_file.iter().chain(&c.identity_files),
                    auth::default_key_files,
                    &target.private_key_files,
                ),
            }
        })
        .collect();
    hops.push(Hop {
        address: me
            .hostname
            .clone()
            .unwrap_or_else(|| target.address.clone()),
        port: target.port.or(me.port).unwrap_or(22),
        user: target
            .user
            .clone()
            .or(me.user.clone())
            .unwrap_or(local_user),
        key_files: target
            .private_key_files
            .iter()
            .cloned()
            .chain(me.identity_files.iter().cloned())
            .collect(),
    });
    Ok(hops)
}

/// The keys a jump host is offered: its own (from the jump spec, then the ssh config), else
/// the user's default key files as OpenSSH's own jump connection would use; then the
/// target's keys, for setups where one key opens both. The target's key (a cluster's key
/// for its guests) alone is not enough: the hypervisor knows the user, not the cluster.
fn jump_key_files<'a>(
    own: impl Iterator<Item = &'a PathBuf>,
    defaults: impl FnOnce() -> Vec<PathBuf>,
    target: &[PathBuf],
) -> Vec<PathBuf> {
    let mut keys: Vec<PathBuf> = own.cloned().collect();
    if keys.is_empty() {
        keys = defaults();
    }
    for k in target {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    keys
}

/// Why one attempt at a hop failed, and whether trying again can help.
enum AttemptError {
    Retry(Box<dyn std::error::Error + Send + Sync>),
    /// The attempt used up the whole connect timeout: another would only wait as long again
    /// (a silent server took three timeouts, 30 s, to be reported).
    GaveUp(Box<dyn std::error::Error + Send + Sync>),
    Fatal(TransportError),
}

pub(crate) async fn connect(target: &HostTarget) -> Result<Connected, TransportError> {
    let hops = resolve(target)?;
    let known = Arc::new(KnownHosts::new(
        target.host_key_checking,
        target.known_hosts_file.as_deref(),
    ));
    let config = russh_config();
    let agent_socket = target
        .ssh_agent_socket
        .clone()
        .or_else(|| std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from));
    let mut jumps: Vec<Handle<Client>> = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        let is_target = i + 1 == hops.len();
        let mut attempts = target.connect_attempts.max(1);
        let mut last: Option<Box<dyn std::error::Error + Send + Sync>> = None;
        let mut handle = None;
        for attempt in 1..=attempts {
            if attempt > 1 {
                // 250 ms, 500 ms, 1 s, ... capped at 5 s.
                let backoff = Duration::from_millis(250 << (attempt - 2).min(5));
                tokio::time::sleep(backoff.min(Duration::from_secs(5))).await;
            }
            let via = jumps.last();
            match try_hop(target, hop, via, !is_target, &known, &config).await {
                Ok(h) => {
                    handle = Some(h);
                    break;
                }
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(AttemptError::Retry(e)) => last = Some(e),
                Err(AttemptError::GaveUp(e)) => {
                    last = Some(e);
                    attempts = attempt;
                    break;
                }
            }
        }
        let Some(mut handle) = handle else {
            let via = if i > 0 {
                format!(" via {}", hops[i - 1].shown())
            } else {
                String::new()
            };
            return Err(TransportError::Connect {
                host: target.name.clone(),
                address: format!("{}{via}", hop.shown()),
                attempts,
                source: last.unwrap_or_else(|| "no attempt made".into()),
            });
        };
        let creds = Credentials {
            user: &hop.user,
            key_files: &hop.key_files,
            // A password belongs to the target; jump hosts authenticate by key or agent.
            password: if is_target {
                target.password.as_ref()
            } else {
                None
            },
            passphrase: target.key_passphrase.as_ref(),
            agent: agent_socket.as_deref(),
        };
        let name = if is_target {
            target.name.clone()
        } else {
            format!("{} (jump host {})", target.name, hop.address)
        };
        // Bounded like the handshake: a server that dies mid-authentication must not leave
        // the run waiting for a reply that never comes.
        let auth = auth::authenticate(&mut handle, &name, &creds);
        match tokio::time::timeout(target.connect_timeout, auth).await {
            Ok(done) => done?,
            Err(_) => {
                return Err(TransportError::Timeout {
                    host: name,
                    what: "authentication".into(),
                    after: target.connect_timeout,
                });
            }
        }
        if is_target {
            return Ok(Connected { handle, jumps });
        }
        jumps.push(handle);
    }
    unreachable!("the hop list always ends with the target")
}

/// One attempt: transport (TCP or a tunnel through `via`) plus key exchange, within the
/// connect timeout. `carries_tunnels`: this hop is a jump host for the next one.
async fn try_hop(
    target: &HostTarget,
    hop: &Hop,
    via: Option<&Handle<Client>>,
    carries_tunnels: bool,
    known: &Arc<KnownHosts>,
    config: &Arc<client::Config>,
) -> Result<Handle<Client>, AttemptError> {
    let refusal = Arc::new(Mutex::new(None));
    // Whether the TCP connection (or the tunnel) was made, to tell a silent server from one
    // that does not answer at all.
    let reached = std::sync::atomic::AtomicBool::new(false);
    let handler = Client {
        host: hop.address.clone(),
        port: hop.port,
        known: known.clone(),
        refusal: refusal.clone(),
    };
    let attempt = async {
        match via {
            None => {
                let tcp = tokio::net::TcpStream::connect((hop.address.as_str(), hop.port))
                    .await
                    .map_err(|e| AttemptError::Retry(Box::new(e)))?;
                reached.store(true, std::sync::atomic::Ordering::Relaxed);
                let _ = tcp.set_nodelay(true);
                // Quick ACKs matter only where a jump host forwards inner packets to us.
                let tcp = QuickAck::new(tcp, carries_tunnels);
                client::connect_stream(config.clone(), tcp, handler).await
            }
            Some(jump) => {
                let ch = jump
                    .channel_open_direct_tcpip(hop.address.clone(), hop.port.into(), "127.0.0.1", 0)
                    .await
                    .map_err(|e| AttemptError::Retry(Box::new(e)))?;
                reached.store(true, std::sync::atomic::Ordering::Relaxed);
                client::connect_stream(config.clone(), coalesce(ch.into_stream()), handler).await
            }
        }
        .map_err(|e| match refusal.lock().expect("not poisoned").take() {
            Some(reason) => AttemptError::Fatal(TransportError::HostKey {
                host: target.name.clone(),
                reason,
            }),
            None => AttemptError::Retry(Box::new(e)),
        })
    };
    match tokio::time::timeout(target.connect_timeout, attempt).await {
        Ok(r) => r,
        Err(_) if reached.load(std::sync::atomic::Ordering::Relaxed) => Err(AttemptError::GaveUp(
            format!(
                "the connection was accepted but no SSH handshake completed within {:?} \
                 (not an SSH server, or one too busy to answer; `ansible_timeout` sets the wait)",
                target.connect_timeout
            )
            .into(),
        )),
        Err(_) => Err(AttemptError::GaveUp(
            format!(
                "no answer to the connection within {:?} (a firewall dropping it, or the host \
                 is down; `ansible_timeout` sets the wait)",
                target.connect_timeout
            )
            .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::jump_key_files;

    fn paths(p: &[&str]) -> Vec<PathBuf> {
        p.iter().map(PathBuf::from).collect()
    }

    /// Regression: a jump host was offered only the target's key (the cluster's key for
    /// its guests), so a hypervisor that accepts the user's default key refused kinit's
    /// connections to the guests behind it.
    #[test]
    fn jump_host_without_own_key_gets_the_default_keys_before_the_targets() {
        let defaults = || paths(&["/home/u/.ssh/id_ed25519"]);
        let target = paths(&["/state/cluster/id_ed25519"]);
        assert_eq!(
            jump_key_files([].iter(), defaults, &target),
            paths(&["/home/u/.ssh/id_ed25519", "/state/cluster/id_ed25519"])
        );
        let own = paths(&["/k/hv", "/state/cluster/id_ed25519"]);
        assert_eq!(
            jump_key_files(own.iter(), || panic!("own keys given"), &target),
            own
        );
    }
}
