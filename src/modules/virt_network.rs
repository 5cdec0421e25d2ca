//! `virt_network`: a libvirt network, defined from typed settings (a NAT network for the
//! cluster CIDR with static DHCP and DNS entries per node, or a bridge-mode network on an
//! Open vSwitch bridge for a cluster spread over several hypervisors by OVN), started or
//! stopped, or removed.
//!
//! Idempotent: the definition's fingerprint is kept in the network's `<metadata>`; the same
//! settings change nothing. Changed settings redefine the network under its existing uuid
//! and, when it is running, restart it so dnsmasq serves the new entries.

use serde::Deserialize;
use serde_json::Value;

use super::render::{Rendered, RenderedFile};
use super::virt::{bad_args, connect, default_uri, failed};
use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult, args, params};
use crate::provider::network::{NatNetwork, Network};
use crate::provider::ovs_network::OvsNetwork;
use crate::provider::xml::{Definition, Document};

const NAME: &str = "virt_network";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetState {
    /// Defined, and running (the default).
    #[default]
    Active,
    /// Defined; running or not as it is.
    Present,
    /// Defined and stopped.
    Inactive,
    /// Stopped and undefined.
    Absent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Network name (`kimgtnet0`).
    pub name: String,
    /// `active` (default), `present`, `inactive` or `absent`.
    #[serde(default)]
    pub state: NetState,
    /// libvirt URI: `qemu:///system` (default) is the task host's libvirt (over SSH, its
    /// socket forwarded through kinit's connection); `qemu+ssh://root@host/system` also
    /// works for a remote one; `test:///default` in tests.
    #[serde(default = "default_uri")]
    pub uri: String,
    /// Start the network when the hypervisor boots; unchanged when not given.
    #[serde(default)]
    pub autostart: Option<bool>,
    /// The network's settings; needed to create it, optional to start/stop one that exists.
    #[serde(default)]
    pub nat: Option<NatNetwork>,
    /// Instead of `nat`: a bridge-mode network on an OVS bridge (`ovs: {}` takes `br-int`).
    #[serde(default)]
    pub ovs: Option<OvsNetwork>,
}

/// The network definition the settings give (with its fingerprint), if any.
fn desired(p: &Params) -> Result<Option<Network>, ModuleError> {
    let defined = match (&p.nat, &p.ovs) {
        (Some(_), Some(_)) => {
            return Err(ModuleError::BadArgs {
                module: NAME,
                detail: format!("network `{}`: give either `nat` or `ovs`, not both", p.name),
            });
        }
        (Some(n), None) => n.network(&p.name),
        (None, Some(o)) => o.network(&p.name),
        (None, None) => return Ok(None),
    };
    defined
        .and_then(|d| d.fingerprinted())
        .map(Some)
        .map_err(|e| bad_args(NAME, e))
}

/// The network XML the task would define, for `kinit plan --render` (`None` without `nat`
/// or `ovs`, or when it removes the network).
pub fn render(args: &Value) -> Result<Option<Rendered>, ModuleError> {
    let p: Params = params(NAME, args)?;
    if p.state == NetState::Absent {
        return Ok(None);
    }
    let Some(d) = desired(&p)? else {
        return Ok(None);
    };
    let xml = d.to_xml().map_err(|e| bad_args(NAME, e))?;
    Ok(Some(Rendered::target(vec![RenderedFile {
        name: format!("network-{}.xml", p.name),
        content: xml.into_bytes(),
    }])))
}

pub struct VirtNetwork;

impl Module for VirtNetwork {
    /// Names and types only: values may still be templates (checked again at run time).
    fn validate(&self, args: &Value) -> Result<(), ModuleError> {
        args::validate::<Params>(NAME, args)
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(async move {
            let p: Params = params(NAME, &args)?;
            let desired = desired(&p)?;
            let hv = connect(NAME, ctx, &p.uri).await?;
            let cur = hv.network(&p.name).await.map_err(failed)?;
            let check = ctx.check_mode;
            let mut changed = false;
            let mut actions: Vec<&str> = Vec::new();

            if p.state == NetState::Absent {
                if let Some(cur) = cur {
                    changed = true;
                    if !check {
                        if cur.active {
                            hv.stop_network(&p.name).await.map_err(failed)?;
                        }
                        hv.undefine_network(&p.name).await.map_err(failed)?;
                    }
                    actions.push("undefined");
                }
                return Ok(result(&p, changed, actions, "absent"));
            }

            let mut active = cur.as_ref().is_some_and(|c| c.active);
            let mut autostart = cur.as_ref().is_some_and(|c| c.autostart);
            match (&cur, desired) {
                (None, None) => {
                    return Err(ModuleError::BadArgs {
                        module: NAME,
                        detail: format!(
                            "network `{}` does not exist on `{}`; give `nat` or `ovs` to define it",
                            p.name, p.uri
                        ),
                    });
                }
                (None, Some(d)) => {
                    changed = true;
                    actions.push("defined");
                    if !check {
                        let xml = d.to_xml().map_err(failed)?;
                        hv.define_network(&p.name, xml).await.map_err(failed)?;
                    }
                }
                (Some(c), Some(mut d))
                    if c.fingerprint.as_deref()
                        != d.metadata.as_ref().and_then(|m| m.fingerprint()) =>
                {
                    changed = true;
                    actions.push("redefined");
                    d.uuid = Some(c.uuid.clone());
                    // A running network keeps its old settings until restarted: stop it,
                    // define, start again (defining while stopped also replaces the
                    // definition at once on the test driver).
                    let restart = c.active && p.state != NetState::Inactive;
                    if !check {
                        if c.active {
                            hv.stop_network(&p.name).await.map_err(failed)?;
                        }
                        let xml = d.to_xml().map_err(failed)?;
                        hv.define_network(&p.name, xml).await.map_err(failed)?;
                        if restart {
                            hv.start_network(&p.name).await.map_err(failed)?;
                        }
                    }
                    if restart {
                        actions.push("restarted");
                    } else if c.active {
                        actions.push("stopped");
                        active = false;
                    }
                }
                (Some(_), _) => {}
            }

            let todo = super::virt::Activity::plan(
                match p.state {
                    NetState::Active => Some(true),
                    NetState::Inactive => Some(false),
                    _ => None,
                },
                active,
                p.autostart,
                autostart,
            );
            changed |= todo.changed();
            actions.extend(todo.actions());
            if !check {
                if todo.start {
                    hv.start_network(&p.name).await.map_err(failed)?;
                }
                if todo.stop {
                    hv.stop_network(&p.name).await.map_err(failed)?;
                }
                if let Some(on) = todo.autostart {
                    hv.set_network_autostart(&p.name, on)
                        .await
                        .map_err(failed)?;
                }
            }
            active = (active || todo.start) && !todo.stop;
            autostart = todo.autostart.unwrap_or(autostart);
            let state = if active { "active" } else { "inactive" };
            Ok(result(&p, changed, actions, state).with("autostart", autostart))
        })
    }
}

fn result(p: &Params, changed: bool, actions: Vec<&str>, state: &str) -> ModuleResult {
    ModuleResult {
        changed,
        ..ModuleResult::default()
    }
    .with("name", p.name.clone())
    .with("uri", p.uri.clone())
    .with("state", state)
    .with("actions", actions)
}
