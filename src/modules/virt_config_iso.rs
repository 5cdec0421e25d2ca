//! `virt_config_iso`: an ISO image on the hypervisor carrying a guest's first-boot
//! configuration: a cloud-init NoCloud seed (`cidata`) for a Linux guest, or the Windows
//! config ISO (`autounattend.xml` and its first-logon scripts).
//!
//! Runs on the task's host (the hypervisor) through its connection: the files travel on
//! stdin as a tar archive and `genisoimage` (or `xorriso -as mkisofs`) builds the image.
//! Idempotent by the fingerprint stored in the image's application id (see
//! `provider::iso`). Nothing of the contents (the Windows password) is returned or logged.
//!
//! With `windows.winrm_ca_dir` (the cluster state folder, on the machine running kinit), the
//! guest's WinRM certificate is issued by the cluster CA there, or the one issued before is
//! reused (`provider::winrm_cert`), and goes on the ISO as PKCS#12. Check mode issues in
//! memory only and stores nothing.

use serde::Deserialize;
use serde_json::Value;

use super::render::{Rendered, RenderedFile};
use super::virt::{bad_args, one_of};
use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult, args, params};
use crate::provider::ProviderError;
use crate::provider::cloud_init::CloudInit;
use crate::provider::iso::IsoImage;
use crate::provider::windows_config::{CONFIG_LABEL, WindowsConfig};
use crate::provider::winrm_cert::{self, CertError};
use crate::transport::quote;

const NAME: &str = "virt_config_iso";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsoState {
    #[default]
    Present,
    Absent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Where the ISO goes on the hypervisor.
    pub path: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    pub state: IsoState,
    /// A Linux guest's cloud-init seed.
    #[serde(default)]
    pub cloud_init: Option<CloudInit>,
    /// A Windows guest's answer file settings.
    #[serde(default)]
    pub windows: Option<WindowsConfig>,
}

impl Params {
    fn image(&self) -> Result<IsoImage, ProviderError> {
        let (volume_id, files) = match (&self.cloud_init, &self.windows) {
            (Some(c), _) => ("cidata".to_string(), c.seed()?.files()),
            (_, Some(w)) => (CONFIG_LABEL.to_string(), w.files()?),
            _ => (String::new(), Vec::new()),
        };
        Ok(IsoImage {
            path: self.path.clone(),
            volume_id,
            files,
        })
    }
}

const PFX_PLACEHOLDER: &str =
    "[deploy-time value: the guest's WinRM certificate (PKCS#12) from the cluster CA]\n";

/// The files the image would hold, for `kinit plan --render`: under `seed/` for a
/// cloud-init seed, `config-iso/` for the Windows config ISO (`None` when it is removed).
///
/// With `winrm_ca_dir`, the guest's certificate is issued at deploy time from the cluster CA
/// in the state folder, which a render neither reads nor creates: a placeholder stands in for
/// the PKCS#12, so the answer file and first-logon script are the ones deployed.
pub fn render(args: &Value) -> Result<Option<Rendered>, ModuleError> {
    let mut p: Params = params(NAME, args)?;
    if p.state == IsoState::Absent {
        return Ok(None);
    }
    if let Some(w) = p.windows.as_mut()
        && w.winrm_ca_dir.is_some()
    {
        w.winrm_pfx = Some(PFX_PLACEHOLDER.as_bytes().to_vec());
    }
    let folder = if p.cloud_init.is_some() {
        "seed"
    } else {
        "config-iso"
    };
    let image = p.image().map_err(|e| bad_args(NAME, e))?;
    Ok(Some(Rendered::host(
        image
            .files
            .into_iter()
            .map(|(name, content)| RenderedFile {
                name: format!("{folder}/{name}"),
                content,
            })
            .collect(),
    )))
}

pub struct VirtConfigIso;

impl Module for VirtConfigIso {
    /// Names and types only: values may still be templates (checked again at run time).
    fn validate(&self, args: &Value) -> Result<(), ModuleError> {
        let absent = args.get("state").and_then(Value::as_str) == Some("absent");
        one_of(NAME, args, &["cloud_init", "windows"], !absent)?;
        args::validate::<Params>(NAME, args)
    }

    fn run<'a>(
        &'a self,
        ctx: &'a ModuleCtx<'a>,
        args: Value,
    ) -> BoxFuture<'a, Result<ModuleResult, ModuleError>> {
        Box::pin(run(ctx, args))
    }
}

fn check(p: &Params, args: &Value) -> Result<(), ModuleError> {
    if !p.path.starts_with('/') {
        return Err(ModuleError::BadArgs {
            module: NAME,
            detail: format!(
                "`path` `{}`: expected an absolute path on the hypervisor",
                p.path
            ),
        });
    }
    one_of(
        NAME,
        args,
        &["cloud_init", "windows"],
        p.state == IsoState::Present,
    )?;
    p.image()
        .and_then(|i| i.tar())
        .map_err(|e| bad_args(NAME, e))?;
    Ok(())
}

/// The guest's WinRM certificate from the cluster CA in `winrm_ca_dir`, made when missing
/// (outside check mode). In check mode without a CA there is none yet: the ISO would change.
fn winrm_pfx(w: &WindowsConfig, check_mode: bool) -> Result<Option<Vec<u8>>, CertError> {
    let Some(dir) = &w.winrm_ca_dir else {
        return Ok(None);
    };
    let dir = std::path::Path::new(dir);
    if !check_mode {
        winrm_cert::ensure_ca(dir)?;
    }
    match winrm_cert::guest_pkcs12(dir, &w.winrm_request(), &w.admin_password, !check_mode) {
        Ok(pfx) => Ok(Some(pfx)),
        Err(CertError::NoCa { .. }) if check_mode => Ok(None),
        Err(e) => Err(e),
    }
}

async fn run(ctx: &ModuleCtx<'_>, args: Value) -> Result<ModuleResult, ModuleError> {
    let mut p: Params = params(NAME, &args)?;
    check(&p, &args)?;
    if let Some(w) = p.windows.as_mut()
        && p.state == IsoState::Present
    {
        match winrm_pfx(w, ctx.check_mode) {
            Ok(pfx) => w.winrm_pfx = pfx,
            Err(e) => {
                return Ok(ModuleResult::failed(format!(
                    "the guest's WinRM certificate: {}",
                    crate::provider::error::chain(&e)
                ))
                .with("path", p.path.clone()));
            }
        }
    }
    let base = ModuleResult::default().with("path", p.path.clone());
    if p.state == IsoState::Absent {
        let path = quote::sh(&p.path);
        let probe = ctx
            .run(format!("[ -e {path} ] && echo present || true"))
            .await?;
        if probe.stdout_str().trim() != "present" {
            return Ok(base);
        }
        if !ctx.check_mode {
            let out = ctx.run(format!("rm -f {path}")).await?;
            if !out.success() {
                return Ok(ModuleResult::failed(format!(
                    "cannot remove `{}`: {}",
                    p.path,
                    out.stderr_str().trim()
                ))
                .with("path", p.path.clone()));
            }
        }
        return Ok(ModuleResult {
            changed: true,
            ..base
        });
    }

    let image = p.image().map_err(|e| bad_args(NAME, e))?;
    let fingerprint = image.fingerprint();
    let probe = ctx.run(image.probe_script()).await?;
    if image.is_current(&probe.stdout_str()) {
        return Ok(base.with("fingerprint", fingerprint));
    }
    if !ctx.check_mode {
        let tar = image.tar().map_err(|e| bad_args(NAME, e))?;
        let out = ctx.run_with_stdin(image.build_script(), Some(tar)).await?;
        if !out.success() {
            return Ok(ModuleResult::failed(format!(
                "cannot build `{}` (exit {}): {}",
                p.path,
                out.rc,
                out.stderr_str().trim()
            ))
            .with("path", p.path.clone()));
        }
    }
    Ok(ModuleResult {
        changed: true,
        ..base
    }
    .with("fingerprint", fingerprint))
}
