//! Network operations on a `Hypervisor`: what exists, define, start, stop, undefine.

use serde::Deserialize;

use super::hypervisor::absent;
use super::xml::{self, Metadata};
use super::{Hypervisor, ProviderError};

/// What libvirt holds for a network name.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkInfo {
    pub uuid: String,
    pub fingerprint: Option<String>,
    pub active: bool,
    pub autostart: bool,
}

#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    uuid: String,
    #[serde(default)]
    metadata: Option<Metadata>,
}

impl Hypervisor {
    pub async fn network(&self, name: &str) -> Result<Option<NetworkInfo>, ProviderError> {
        let n = name.to_string();
        // The persistent definition; the test driver only knows the live one (and kinit
        // restarts a network it redefines, so the two agree there).
        let flags = if self.is_test_driver() {
            0
        } else {
            virt::sys::VIR_NETWORK_XML_INACTIVE
        };
        let found = self
            .call(format!("look up network `{name}`"), move |c| {
                let Some(net) = absent(c.lookup_network_by_name(&n))? else {
                    return Ok(None);
                };
                Ok(Some((
                    net.xml_desc(flags)?,
                    net.is_active()?,
                    net.autostart()?,
                )))
            })
            .await?;
        let Some((text, active, autostart)) = found else {
            return Ok(None);
        };
        let head: Head = xml::from_xml(&text, "network")?;
        Ok(Some(NetworkInfo {
            uuid: head.uuid,
            fingerprint: head
                .metadata
                .as_ref()
                .and_then(|m| m.fingerprint())
                .map(str::to_string),
            active,
            autostart,
        }))
    }

    pub async fn define_network(&self, name: &str, xml: String) -> Result<(), ProviderError> {
        self.call(format!("define network `{name}`"), move |c| {
            c.define_network_xml(&xml).map(|_| ())
        })
        .await
    }

    pub async fn start_network(&self, name: &str) -> Result<(), ProviderError> {
        self.with_network(name, "start", |n| n.create().map(|_| ()))
            .await
    }

    pub async fn stop_network(&self, name: &str) -> Result<(), ProviderError> {
        self.with_network(name, "stop", |n| n.destroy().map(|_| ()))
            .await
    }

    pub async fn undefine_network(&self, name: &str) -> Result<(), ProviderError> {
        self.with_network(name, "undefine", |n| n.undefine().map(|_| ()))
            .await
    }

    pub async fn set_network_autostart(&self, name: &str, on: bool) -> Result<(), ProviderError> {
        self.with_network(name, "set autostart of", move |n| {
            n.set_autostart(on).map(|_| ())
        })
        .await
    }

    async fn with_network<F>(&self, name: &str, verb: &str, f: F) -> Result<(), ProviderError>
    where
        F: FnOnce(&virt::network::Network) -> Result<(), virt::error::Error> + Send + 'static,
    {
        let n = name.to_string();
        self.call(format!("{verb} network `{name}`"), move |c| {
            f(&c.lookup_network_by_name(&n)?)
        })
        .await
    }
}
