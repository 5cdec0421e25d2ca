//! `synchronize` (ansible.posix's): rsync between the controller and the host, as upstream's
//! action plugin and module arrange it (plugins/action/synchronize.py,
//! plugins/modules/synchronize.py).
//!
//! Over SSH, rsync runs on the controller with `--rsh=ssh ...` made from the connection the
//! task uses (address, user, port, key, jump hosts, ssh config), and the host's side named
//! `user@host:path`; `mode: pull` swaps the sides. For a local host rsync runs through the
//! host's connection, so `become` applies to it as it does to upstream's module. A task
//! delegated to localhost for an SSH host copies between the controller and that host, as
//! upstream's most common use does; delegation to a third SSH host (rsync between two
//! remote hosts) is refused. With `become`, the host's rsync runs under `sudo` (`rsync_path`
//! overrides it), as upstream does.
//!
//! Check mode adds `--dry-run`; `changed` comes from rsync's itemized output
//! (`<<CHANGED>>%i %n%L` lines), which is also `msg` and `stdout_lines`.

use serde_json::Value;

use crate::transport::{ConnectionKind, HostTarget};

use super::sync_plan::{self as plan, Direction, Params, Remote};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Synchronize, "synchronize", Params, run);

/// A variable of the task as text (`None` when unset or empty).
fn var(ctx: &ModuleCtx<'_>, name: &str) -> Option<String> {
    match ctx.vars.get(name)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Where the other side of the copy is.
enum Other {
    /// This machine too (a local host).
    Local,
    /// An SSH host.
    Ssh(Box<HostTarget>),
    /// Nowhere rsync can reach: the failure message.
    Refused(String),
}

/// The other side of the copy, from the task's connection (and its delegation).
fn other_side(ctx: &ModuleCtx<'_>) -> Other {
    let inventory_host = var(ctx, "inventory_hostname").unwrap_or_else(|| ctx.host.to_string());
    let delegated = ctx.host != inventory_host;
    match ctx.conn.ssh_target() {
        Some(t) if !delegated => Other::Ssh(Box::new(t.clone())),
        Some(_) => Other::Refused(format!(
            "synchronize delegated to `{}` for `{inventory_host}`: kinit runs rsync on the \
             controller, so only delegation to localhost (or none) is supported",
            ctx.host
        )),
        None if !delegated => Other::Local,
        None => {
            // Delegated to this machine: the inventory host's own connection says where the
            // other side is (its variables are the task's).
            let resolved = match crate::inventory::resolve_target(
                &inventory_host,
                ctx.vars,
                &crate::inventory::ConnectionDefaults::default(),
            ) {
                Ok(r) => r,
                Err(e) => return Other::Refused(e.to_string()),
            };
            match resolved.target.connection {
                ConnectionKind::Ssh => Other::Ssh(Box::new(resolved.target)),
                ConnectionKind::Local => Other::Local,
                ConnectionKind::WinRm => Other::Refused(
                    "synchronize uses rsync to function. rsync needs to connect to the remote \
                     host via ssh, docker client or a direct filesystem copy. This remote host \
                     is being accessed via winrm instead so it cannot work."
                        .into(),
                ),
            }
        }
    }
}

/// A controller-side path: absolute as it is; relative, looked up like `copy`'s `src`
/// (role `files/`, then the playbook's folder), else under the playbook's folder. A
/// trailing `/` is kept.
fn local_path(ctx: &ModuleCtx<'_>, path: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    let found = ctx
        .find_local(path)
        .ok()
        .or_else(|| ctx.search_paths.last().map(|d| d.join(path)));
    let mut s = found
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| path.to_string());
    if path.ends_with('/') && !s.ends_with('/') {
        s.push('/');
    }
    s
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let rsync = var(ctx, "ansible_rsync_path").unwrap_or_else(|| "rsync".into());
    let target = match other_side(ctx) {
        Other::Ssh(t) => t,
        Other::Refused(msg) => return Ok(ModuleResult::failed(msg)),
        Other::Local => {
            // Both sides on this machine: through the connection, with the task's become.
            let argv = p.argv(
                ctx.check_mode,
                None,
                p.rsync_path.as_deref(),
                &local_path(ctx, &p.src),
                &local_path(ctx, &p.dest),
            );
            let cmd = plan::display(&rsync, &argv);
            let out = ctx.run(cmd.clone()).await?;
            return Ok(result(
                &p,
                cmd,
                out.rc,
                &out.stdout_str(),
                &out.stderr_str(),
            ));
        }
    };
    let user = if p.set_remote_user {
        target.user.clone()
    } else {
        None
    };
    let ssh_args = p.use_ssh_args.then(|| {
        [
            "ansible_ssh_args",
            "ansible_ssh_common_args",
            "ansible_ssh_extra_args",
        ]
        .iter()
        .filter_map(|n| var(ctx, n))
        .collect::<Vec<_>>()
        .join(" ")
    });
    let remote = Remote {
        address: target.address.clone(),
        user: user.clone(),
        port: target.port,
        private_key: target.private_key_files.first().cloned(),
        jumps: target
            .jump
            .iter()
            .map(|j| plan::Jump {
                address: j.address.clone(),
                port: j.port,
                user: j.user.clone(),
                private_key: j.private_key_file.clone(),
            })
            .collect(),
        // A config file that does not exist reads as no config (as kinit's own client
        // reads it), not as ssh's `~/.ssh/config`.
        ssh_config: target.ssh_config_file.as_ref().map(|f| {
            if f.exists() {
                f.clone()
            } else {
                "/dev/null".into()
            }
        }),
        known_hosts: target.known_hosts_file.clone(),
        ssh_args,
    };
    let on_host = |path: &str| plan::remote_path(&target.address, path, user.as_deref());
    let (src, dest) = match p.mode {
        Direction::Push => (local_path(ctx, &p.src), on_host(&p.dest)),
        Direction::Pull => (on_host(&p.src), local_path(ctx, &p.dest)),
    };
    // Upstream: with become (sudo) and no `rsync_path`, the host's rsync runs under sudo.
    let rsync_path = p.rsync_path.clone().or_else(|| {
        ctx.become_.as_ref().map(|b| match &b.user {
            Some(u) => format!("sudo -u {u} rsync"),
            None => "sudo rsync".into(),
        })
    });
    let argv = p.argv(
        ctx.check_mode,
        Some(p.rsh(&remote)),
        rsync_path.as_deref(),
        &src,
        &dest,
    );
    let cmd = plan::display(&rsync, &argv);
    let mut command = tokio::process::Command::new(&rsync);
    command
        .args(&argv)
        .envs(ctx.env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(sock) = &target.ssh_agent_socket {
        command.env("SSH_AUTH_SOCK", sock);
    }
    let running = command.output();
    let out = match ctx.timeout {
        Some(t) => match tokio::time::timeout(t, running).await {
            Ok(o) => o,
            Err(_) => {
                return Ok(ModuleResult::failed(format!(
                    "rsync did not finish within {}s",
                    t.as_secs()
                ))
                .with("cmd", cmd));
            }
        },
        None => running.await,
    };
    let out = match out {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ModuleResult::failed(format!(
                "Failed to find required executable \"{rsync}\" in paths on the controller"
            )));
        }
        Err(e) => {
            return Ok(ModuleResult::failed(format!(
                "cannot run `{rsync}` on the controller: {e}"
            )));
        }
    };
    let rc = out.status.code().unwrap_or(-1);
    let mut r = result(
        &p,
        cmd,
        rc,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    if r.failed && target.password.is_some() && target.private_key_files.is_empty() {
        r.msg = r.msg.map(|m| {
            format!(
                "{m}\n(the host is reached with a password; synchronize's ssh needs a key or \
                 an ssh-agent)"
            )
        });
    }
    Ok(r)
}

/// Upstream's result: a failure with rsync's stderr, or changed/msg/stdout_lines from the
/// itemized output.
fn result(p: &Params, cmd: String, rc: i32, stdout: &str, stderr: &str) -> ModuleResult {
    if rc != 0 {
        return ModuleResult::failed(stderr.to_string())
            .with("rc", rc)
            .with("cmd", cmd);
    }
    let (changed, clean, lines) = plan::outcome(stdout, !p.link_dest.is_empty());
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("rc", rc)
    .with("cmd", cmd)
    .with("stdout_lines", lines);
    r.msg = Some(clean);
    r
}
