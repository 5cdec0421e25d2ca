//! `virt_volume`: a disk image in a libvirt storage pool: an empty qcow2/raw disk, or a
//! qcow2 overlay over a base image (a guest's disk over the shared cloud image).
//!
//! Idempotent: an existing volume with the same format and backing image is kept; a larger
//! `capacity` grows it (never shrinks). A volume with another format or backing image is an
//! error rather than being replaced, since that would throw away a guest's disk.

use serde::Deserialize;
use serde_json::Value;

use super::virt::{connect, default_uri, failed};
use super::{BoxFuture, Module, ModuleCtx, ModuleError, ModuleResult, args, params};
use crate::provider::storage::{BackingStore, ByteSize, Capacity, Format, Volume, VolumeTarget};
use crate::provider::xml::Document;

const NAME: &str = "virt_volume";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolState {
    #[default]
    Present,
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskFormat {
    #[default]
    Qcow2,
    Raw,
}

impl DiskFormat {
    fn name(self) -> &'static str {
        match self {
            DiskFormat::Qcow2 => "qcow2",
            DiskFormat::Raw => "raw",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backing {
    /// Path of the base image on the hypervisor.
    pub path: String,
    /// Format of the base image (default `qcow2`).
    #[serde(default)]
    pub format: DiskFormat,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Pool the volume is in.
    pub pool: String,
    /// Volume (file) name, e.g. `k8scluster-controller-01.qcow2`.
    pub name: String,
    /// `present` (default) or `absent`.
    #[serde(default)]
    pub state: VolState,
    /// libvirt URI (see `virt_network`).
    #[serde(default = "default_uri")]
    pub uri: String,
    /// Virtual size: bytes or `30G`-style. For an overlay, at least the base image's size.
    #[serde(default)]
    pub capacity: Option<ByteSize>,
    /// `qcow2` (default) or `raw`.
    #[serde(default)]
    pub format: DiskFormat,
    /// Make the volume a copy-on-write overlay over this image (qcow2 only).
    #[serde(default)]
    pub backing: Option<Backing>,
}

pub struct VirtVolume;

impl Module for VirtVolume {
    /// Names and types only: values may still be templates (checked again at run time).
    fn validate(&self, args: &Value) -> Result<(), ModuleError> {
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

fn check(p: &Params) -> Result<(), ModuleError> {
    let bad = |detail: String| ModuleError::BadArgs {
        module: NAME,
        detail,
    };
    if p.name.contains('/') || p.name.is_empty() {
        return Err(bad(format!(
            "`name` `{}`: expected a file name without `/`",
            p.name
        )));
    }
    if p.state == VolState::Present && p.capacity.is_none() {
        return Err(bad("`capacity` is required with state `present`".into()));
    }
    if let Some(b) = &p.backing {
        if p.format != DiskFormat::Qcow2 {
            return Err(bad("`backing` needs `format: qcow2`".into()));
        }
        if !b.path.starts_with('/') {
            return Err(bad(format!(
                "`backing.path` `{}`: expected an absolute path on the hypervisor",
                b.path
            )));
        }
    }
    Ok(())
}

async fn run(ctx: &ModuleCtx<'_>, args: Value) -> Result<ModuleResult, ModuleError> {
    let p: Params = params(NAME, &args)?;
    check(&p)?;
    let hv = connect(NAME, ctx, &p.uri).await?;
    let cur = hv.volume(&p.pool, &p.name).await.map_err(failed)?;
    let check = ctx.check_mode;
    let base = ModuleResult::default()
        .with("pool", p.pool.clone())
        .with("name", p.name.clone())
        .with("uri", p.uri.clone());

    if p.state == VolState::Absent {
        let Some(_) = cur else {
            return Ok(base);
        };
        if !check {
            hv.delete_volume(&p.pool, &p.name).await.map_err(failed)?;
        }
        return Ok(ModuleResult {
            changed: true,
            ..base
        });
    }

    let capacity = p.capacity.map(|c| c.0).unwrap_or_default();
    let Some(cur) = cur else {
        let vol = Volume {
            name: p.name.clone(),
            capacity: Capacity::bytes(capacity),
            target: Some(VolumeTarget {
                path: None,
                format: Some(Format {
                    kind: p.format.name().into(),
                }),
            }),
            backing_store: p.backing.as_ref().map(|b| BackingStore {
                path: b.path.clone(),
                format: Format {
                    kind: b.format.name().into(),
                },
            }),
        };
        if !check {
            let xml = vol.to_xml().map_err(failed)?;
            hv.create_volume(&p.pool, &p.name, xml)
                .await
                .map_err(failed)?;
        }
        let mut r = base
            .with("capacity", capacity)
            .with("actions", vec!["created"]);
        r.changed = true;
        if !check && let Some(v) = hv.volume(&p.pool, &p.name).await.map_err(failed)? {
            r = r.with("path", v.path);
        }
        return Ok(r);
    };

    let d = &cur.definition;
    let have_format = d.format().unwrap_or("raw");
    let have_backing = d.backing_store.as_ref().map(|b| b.path.as_str());
    let want_backing = p.backing.as_ref().map(|b| b.path.as_str());
    if have_format != p.format.name() || have_backing != want_backing {
        return Err(ModuleError::Failed {
            msg: format!(
                "volume `{}` in pool `{}` exists as {have_format}{} and would have to be \
                 replaced to become {}{}; remove it first (state: absent)",
                p.name,
                p.pool,
                have_backing
                    .map(|b| format!(" over `{b}`"))
                    .unwrap_or_default(),
                p.format.name(),
                want_backing
                    .map(|b| format!(" over `{b}`"))
                    .unwrap_or_default(),
            ),
        });
    }
    let mut r = base.with("path", cur.path.clone());
    if capacity > d.capacity.value {
        if !check {
            hv.resize_volume(&p.pool, &p.name, capacity)
                .await
                .map_err(failed)?;
        }
        r.changed = true;
        r = r
            .with("capacity", capacity)
            .with("actions", vec!["resized"]);
    } else {
        r = r.with("capacity", d.capacity.value);
    }
    Ok(r)
}
