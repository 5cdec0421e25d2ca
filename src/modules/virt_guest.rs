//! `virt_guest`: a libvirt domain built from a node's typed settings (a Linux cloud-image
//! guest or a Windows guest installed from ISO), and its run state: define, start, shut
//! down, destroy, undefine (with its UEFI variables and TPM state).
//!
//! Idempotent: the definition's fingerprint is kept in the domain's `<metadata>`; the same
//! settings change nothing. Changed settings redefine the domain under its existing uuid;
//! a running guest picks them up at its next boot (`pending_restart` in the result).
//!
//! Starting a UEFI Windows guest presses Enter once a second for `windows.boot_key_seconds`
//! (default 60), so the install CD's "Press any key" prompt is answered.
//!
//! `virt_type: auto` (the default) runs the virtualization check on the task's host: KVM
//! when the CPU has vmx/svm and `/dev/kvm` exists, else QEMU software emulation.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::render::{Rendered, RenderedFile};
use super::virt::{bad_args, connect, default_uri, failed, one_of};
use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult, args, params};
use crate::provider::domain::Domain;
use crate::provider::guests::GuestState;
use crate::provider::linux_guest::LinuxGuest;
use crate::provider::virt_type::PROBE_SCRIPT;
use crate::provider::windows_guest::WindowsGuest;
use crate::provider::xml::{Definition, Document};
use crate::provider::{ProviderError, VirtType};

const NAME: &str = "virt_guest";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestWant {
    /// Defined and running (the default).
    #[default]
    Running,
    /// Defined; running or not as it is.
    Present,
    /// Defined and powered off gracefully (ACPI), waiting up to `shutdown_timeout`.
    Shutdown,
    /// Defined and powered off at once.
    Destroyed,
    /// Powered off and undefined, with its UEFI variables and TPM state.
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VirtTypeParam {
    /// Decided by the virtualization check on the task's host.
    #[default]
    Auto,
    Kvm,
    Qemu,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Domain name (KubeInit's `guest_name`, `k8scluster-controller-01`).
    pub name: String,
    /// `running` (default), `present`, `shutdown`, `destroyed` or `absent`.
    #[serde(default)]
    pub state: GuestWant,
    /// libvirt URI (see `virt_network`).
    #[serde(default = "default_uri")]
    pub uri: String,
    /// Start the guest when the hypervisor boots; unchanged when not given.
    #[serde(default)]
    pub autostart: Option<bool>,
    /// `auto` (default), `kvm` or `qemu`.
    #[serde(default)]
    pub virt_type: VirtTypeParam,
    /// Seconds to wait for a graceful shutdown (default 300).
    #[serde(default = "default_shutdown_timeout")]
    pub shutdown_timeout: u64,
    /// A Linux guest's settings.
    #[serde(default)]
    pub linux: Option<LinuxGuest>,
    /// A Windows guest's settings.
    #[serde(default)]
    pub windows: Option<WindowsGuest>,
}

fn default_shutdown_timeout() -> u64 {
    300
}

impl Params {
    fn domain(&self, virt_type: VirtType) -> Option<Result<Domain, ProviderError>> {
        match (&self.linux, &self.windows) {
            (Some(l), _) => Some(l.domain(&self.name, virt_type)),
            (_, Some(w)) => Some(w.domain(&self.name, virt_type)),
            _ => None,
        }
    }
}

/// The domain XML the task would define, for `kinit plan --render`: exactly what `run`
/// defines, with `virt_type: auto` taken as KVM (what a hypervisor that can run the cluster
/// has; `run` falls back to QEMU where the check finds no KVM). `None` when the task gives
/// no definition or removes the guest.
pub fn render(args: &Value) -> Result<Option<Rendered>, ModuleError> {
    let p: Params = params(NAME, args)?;
    if p.state == GuestWant::Absent {
        return Ok(None);
    }
    let vt = match p.virt_type {
        VirtTypeParam::Qemu => VirtType::Qemu,
        VirtTypeParam::Kvm | VirtTypeParam::Auto => VirtType::Kvm,
    };
    let Some(d) = p.domain(vt) else {
        return Ok(None);
    };
    let xml = d
        .and_then(Domain::fingerprinted)
        .and_then(|d| d.to_xml())
        .map_err(|e| bad_args(NAME, e))?;
    Ok(Some(Rendered::host(vec![RenderedFile {
        name: "domain.xml".into(),
        content: xml.into_bytes(),
    }])))
}

pub struct VirtGuest;

impl Module for VirtGuest {
    /// Names and types only: values may still be templates (checked again at run time).
    fn validate(&self, args: &Value) -> Result<(), ModuleError> {
        one_of(NAME, args, &["linux", "windows"], false)?;
        args::validate::<Params>(NAME, args)
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(async move {
            one_of(NAME, &args, &["linux", "windows"], false)?;
            let p: Params = params(NAME, &args)?;
            // Settings errors before any libvirt call (the real type is picked later).
            if let Some(d) = p.domain(VirtType::Qemu) {
                d.map_err(|e| bad_args(NAME, e))?;
            }
            let hv = connect(NAME, ctx, &p.uri).await?;
            let cur = hv.guest(&p.name).await.map_err(failed)?;
            let check = ctx.check_mode;
            let mut changed = false;
            let mut actions: Vec<&str> = Vec::new();
            let mut out = ModuleResult::default()
                .with("name", p.name.clone())
                .with("uri", p.uri.clone());

            if p.state == GuestWant::Absent {
                if let Some(c) = cur {
                    changed = true;
                    actions.push("undefined");
                    if !check {
                        if c.state.is_active() {
                            hv.destroy_guest(&p.name).await.map_err(failed)?;
                        }
                        hv.undefine_guest(&p.name, &c).await.map_err(failed)?;
                    }
                }
                out.changed = changed;
                return Ok(out.with("state", "absent").with("actions", actions));
            }

            let desired = if p.linux.is_some() || p.windows.is_some() {
                let vt = resolve_virt_type(ctx, p.virt_type).await?;
                out = out.with("virt_type", format!("{vt:?}").to_lowercase());
                let d = p.domain(vt).expect("a definition was given");
                Some(
                    d.and_then(Domain::fingerprinted)
                        .map_err(|e| bad_args(NAME, e))?,
                )
            } else {
                None
            };

            let mut state = cur.as_ref().map_or(GuestState::Shutoff, |c| c.state);
            let mut autostart = cur.as_ref().is_some_and(|c| c.autostart);
            match (&cur, desired) {
                (None, None) => {
                    return Err(ModuleError::BadArgs {
                        module: NAME,
                        detail: format!(
                            "domain `{}` does not exist on `{}`; give `linux` or `windows` to \
                             define it",
                            p.name, p.uri
                        ),
                    });
                }
                (None, Some(d)) => {
                    changed = true;
                    actions.push("defined");
                    if !check {
                        let xml = d.to_xml().map_err(failed)?;
                        hv.define_guest(&p.name, xml).await.map_err(failed)?;
                    }
                }
                (Some(c), Some(mut d))
                    if c.fingerprint.as_deref()
                        != d.metadata.as_ref().and_then(|m| m.fingerprint()) =>
                {
                    changed = true;
                    actions.push("redefined");
                    // Without the uuid libvirt refuses a second domain of the same name.
                    d.uuid = Some(c.uuid.clone());
                    if !check {
                        let xml = d.to_xml().map_err(failed)?;
                        hv.define_guest(&p.name, xml).await.map_err(failed)?;
                    }
                    if c.state.is_active() {
                        out = out.with("pending_restart", true);
                    }
                }
                (Some(_), _) => {}
            }

            match p.state {
                GuestWant::Running if state == GuestState::Paused => {
                    changed = true;
                    actions.push("resumed");
                    if !check {
                        hv.resume_guest(&p.name).await.map_err(failed)?;
                    }
                    state = GuestState::Running;
                }
                GuestWant::Running if !state.is_active() => {
                    changed = true;
                    actions.push("started");
                    if !check {
                        hv.start_guest(&p.name).await.map_err(failed)?;
                        // A UEFI Windows guest's CD loader waits for a key (see
                        // `provider::windows_guest`); BIOS guests need none.
                        if let Some(window) = p.windows.as_ref().and_then(|w| w.boot_keys()) {
                            let n = hv.press_enter_for(&p.name, window).await.map_err(failed)?;
                            out = out.with("boot_keys", n);
                        }
                    }
                    state = GuestState::Running;
                }
                GuestWant::Shutdown if state.is_active() => {
                    changed = true;
                    actions.push("shut down");
                    if !check {
                        let timeout = Duration::from_secs(p.shutdown_timeout);
                        if !hv.shutdown_guest(&p.name, timeout).await.map_err(failed)? {
                            return Err(ModuleError::Failed {
                                msg: format!(
                                    "domain `{}` did not power off within {}s of the shutdown \
                                     request; `state: destroyed` forces it off",
                                    p.name, p.shutdown_timeout
                                ),
                            });
                        }
                    }
                    state = GuestState::Shutoff;
                }
                GuestWant::Destroyed if state.is_active() => {
                    changed = true;
                    actions.push("destroyed");
                    if !check {
                        hv.destroy_guest(&p.name).await.map_err(failed)?;
                    }
                    state = GuestState::Shutoff;
                }
                _ => {}
            }
            if let Some(want) = p.autostart
                && want != autostart
            {
                changed = true;
                actions.push(if want {
                    "autostart on"
                } else {
                    "autostart off"
                });
                if !check {
                    hv.set_guest_autostart(&p.name, want)
                        .await
                        .map_err(failed)?;
                }
                autostart = want;
            }
            if !check && let Some(c) = hv.guest(&p.name).await.map_err(failed)? {
                out = out.with("uuid", c.uuid);
                state = c.state;
            }
            out.changed = changed;
            Ok(out
                .with("state", serde_json::to_value(state).unwrap_or_default())
                .with("autostart", autostart)
                .with("actions", actions))
        })
    }
}

/// The virtualization check, run on the task's host (the hypervisor).
async fn resolve_virt_type(
    ctx: &ModuleCtx<'_>,
    want: VirtTypeParam,
) -> Result<VirtType, ModuleError> {
    Ok(match want {
        VirtTypeParam::Kvm => VirtType::Kvm,
        VirtTypeParam::Qemu => VirtType::Qemu,
        VirtTypeParam::Auto => VirtType::from_probe(&ctx.run(PROBE_SCRIPT).await?.stdout_str()),
    })
}
