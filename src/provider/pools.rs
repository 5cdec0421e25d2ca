//! Storage pool and volume operations on a `Hypervisor`.

use std::time::{Duration, Instant};

use virt::storage_pool::StoragePool;
use virt::storage_vol::StorageVol;

use super::hypervisor::absent;
use super::storage::{Pool, Volume};
use super::xml::Document;
use super::{Hypervisor, ProviderError};

/// How long a volume lookup waits for a pool busy with another volume's build; a disk
/// copied rather than layered over a backing file can take minutes.
const POOL_BUSY_WAIT: Duration = Duration::from_secs(600);
const POOL_BUSY_POLL: Duration = Duration::from_millis(250);

/// libvirt's refusal to refresh a pool while one of its volumes is being built
/// (`pool '...' has asynchronous jobs running.`); it has no error number of its own.
fn is_pool_busy(e: &virt::error::Error) -> bool {
    e.message().contains("has asynchronous jobs running")
}

#[derive(Debug, Clone, PartialEq)]
pub struct PoolInfo {
    pub definition: Pool,
    pub active: bool,
    pub autostart: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VolumeInfo {
    pub definition: Volume,
    /// Where the volume lives on the hypervisor.
    pub path: String,
}

impl Hypervisor {
    pub async fn pool(&self, name: &str) -> Result<Option<PoolInfo>, ProviderError> {
        let n = name.to_string();
        let found = self
            .call(format!("look up pool `{name}`"), move |c| {
                let Some(p) = absent(c.lookup_storage_pool_by_name(&n))? else {
                    return Ok(None);
                };
                Ok(Some((p.xml_desc(0)?, p.is_active()?, p.autostart()?)))
            })
            .await?;
        let Some((text, active, autostart)) = found else {
            return Ok(None);
        };
        Ok(Some(PoolInfo {
            definition: Pool::from_xml(&text)?,
            active,
            autostart,
        }))
    }

    /// Define a pool and create its directory (`pool-build`).
    pub async fn define_pool(&self, name: &str, xml: String) -> Result<(), ProviderError> {
        self.call(format!("define pool `{name}`"), move |c| {
            let p = c.define_storage_pool_xml(&xml, 0)?;
            p.build(0).map(|_| ())
        })
        .await
    }

    pub async fn start_pool(&self, name: &str) -> Result<(), ProviderError> {
        self.with_pool(name, "start", |p| p.create(0).map(|_| ()))
            .await
    }

    pub async fn stop_pool(&self, name: &str) -> Result<(), ProviderError> {
        self.with_pool(name, "stop", |p| p.destroy().map(|_| ()))
            .await
    }

    pub async fn undefine_pool(&self, name: &str) -> Result<(), ProviderError> {
        self.with_pool(name, "undefine", |p| p.undefine().map(|_| ()))
            .await
    }

    pub async fn set_pool_autostart(&self, name: &str, on: bool) -> Result<(), ProviderError> {
        self.with_pool(name, "set autostart of", move |p| {
            p.set_autostart(on).map(|_| ())
        })
        .await
    }

    /// The volume `name` in pool `pool`, or `None` (also when the pool is missing).
    ///
    /// Looking up refreshes the pool, which libvirt refuses while the pool has an
    /// asynchronous job running (another volume being built, e.g. the next guest's disk
    /// created at the same time): the lookup is tried again until the pool is free, within
    /// `POOL_BUSY_WAIT`.
    pub async fn volume(
        &self,
        pool: &str,
        name: &str,
    ) -> Result<Option<VolumeInfo>, ProviderError> {
        let deadline = Instant::now() + POOL_BUSY_WAIT;
        loop {
            match self.volume_once(pool, name).await {
                Err(ProviderError::Libvirt { source, .. })
                    if is_pool_busy(&source) && Instant::now() < deadline =>
                {
                    tokio::time::sleep(POOL_BUSY_POLL).await;
                }
                found => return found,
            }
        }
    }

    async fn volume_once(
        &self,
        pool: &str,
        name: &str,
    ) -> Result<Option<VolumeInfo>, ProviderError> {
        let (p, n) = (pool.to_string(), name.to_string());
        let found = self
            .call(
                format!("look up volume `{name}` in pool `{pool}`"),
                move |c| {
                    let Some(pool) = absent(c.lookup_storage_pool_by_name(&p))? else {
                        return Ok(None);
                    };
                    // A pool's volume list is read at refresh; files created behind libvirt's
                    // back would otherwise be invisible.
                    if pool.is_active()? {
                        pool.refresh(0)?;
                    }
                    let Some(v) = absent(pool.lookup_storage_vol_by_name(&n))? else {
                        return Ok(None);
                    };
                    Ok(Some((v.xml_desc(0)?, v.path()?)))
                },
            )
            .await?;
        let Some((text, path)) = found else {
            return Ok(None);
        };
        Ok(Some(VolumeInfo {
            definition: Volume::from_xml(&text)?,
            path,
        }))
    }

    pub async fn create_volume(
        &self,
        pool: &str,
        name: &str,
        xml: String,
    ) -> Result<(), ProviderError> {
        let p = pool.to_string();
        self.call(
            format!("create volume `{name}` in pool `{pool}`"),
            move |c| {
                let pool = c.lookup_storage_pool_by_name(&p)?;
                StorageVol::create_xml(&pool, &xml, 0).map(|_| ())
            },
        )
        .await
    }

    pub async fn resize_volume(
        &self,
        pool: &str,
        name: &str,
        bytes: u64,
    ) -> Result<(), ProviderError> {
        self.with_volume(pool, name, "resize", move |v| {
            v.resize(bytes, 0).map(|_| ())
        })
        .await
    }

    pub async fn delete_volume(&self, pool: &str, name: &str) -> Result<(), ProviderError> {
        self.with_volume(pool, name, "delete", |v| v.delete(0).map(|_| ()))
            .await
    }

    async fn with_pool<F>(&self, name: &str, verb: &str, f: F) -> Result<(), ProviderError>
    where
        F: FnOnce(&StoragePool) -> Result<(), virt::error::Error> + Send + 'static,
    {
        let n = name.to_string();
        self.call(format!("{verb} pool `{name}`"), move |c| {
            f(&c.lookup_storage_pool_by_name(&n)?)
        })
        .await
    }

    async fn with_volume<F>(
        &self,
        pool: &str,
        name: &str,
        verb: &str,
        f: F,
    ) -> Result<(), ProviderError>
    where
        F: FnOnce(&StorageVol) -> Result<(), virt::error::Error> + Send + 'static,
    {
        let (p, n) = (pool.to_string(), name.to_string());
        self.call(
            format!("{verb} volume `{name}` in pool `{pool}`"),
            move |c| {
                f(&c.lookup_storage_pool_by_name(&p)?
                    .lookup_storage_vol_by_name(&n)?)
            },
        )
        .await
    }
}
