//! Domain operations on a `Hypervisor`: what exists (uuid, stored fingerprint, state), define,
//! start, shut down, destroy, undefine.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use virt::domain::{Domain as VirDomain, DomainState};
use virt::sys;

use super::hypervisor::absent;
use super::xml::{self, Metadata};
use super::{Hypervisor, ProviderError};

/// The run state of a domain, as `virsh domstate` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestState {
    Running,
    Paused,
    /// Shutting down.
    Shutdown,
    Shutoff,
    Crashed,
    Other,
}

impl GuestState {
    pub fn is_active(self) -> bool {
        !matches!(self, GuestState::Shutoff | GuestState::Crashed)
    }
}

/// What libvirt holds for a domain name.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestInfo {
    pub uuid: String,
    /// kinit's fingerprint of the definition, `None` when it was not defined by kinit.
    pub fingerprint: Option<String>,
    pub state: GuestState,
    pub autostart: bool,
    /// UEFI variables file, removed with the domain.
    pub has_nvram: bool,
    /// Emulated TPM with persistent state, removed with the domain.
    pub has_tpm: bool,
}

/// The few parts of `dumpxml` the operations need.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    uuid: String,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    os: Option<HeadOs>,
    #[serde(default)]
    devices: Option<HeadDevices>,
}

#[derive(Deserialize)]
struct HeadOs {
    #[serde(rename = "@firmware", default)]
    firmware: Option<String>,
    #[serde(default)]
    loader: Option<xml::Empty>,
    #[serde(default)]
    nvram: Option<xml::Empty>,
}

#[derive(Deserialize)]
struct HeadDevices {
    #[serde(default)]
    tpm: Vec<xml::Empty>,
}

fn state_of(dom: &VirDomain) -> Result<GuestState, virt::error::Error> {
    let (state, _) = dom.state()?;
    Ok(match state.unwrap_or(DomainState::NoState) {
        DomainState::Running | DomainState::Blocked => GuestState::Running,
        DomainState::Paused | DomainState::PMSuspended => GuestState::Paused,
        DomainState::Shutdown => GuestState::Shutdown,
        DomainState::Shutoff => GuestState::Shutoff,
        DomainState::Crashed => GuestState::Crashed,
        DomainState::NoState => GuestState::Other,
    })
}

impl Hypervisor {
    /// The domain called `name`, or `None`.
    pub async fn guest(&self, name: &str) -> Result<Option<GuestInfo>, ProviderError> {
        let n = name.to_string();
        let found = self
            .call(format!("look up domain `{name}`"), move |c| {
                let Some(dom) = absent(c.lookup_domain_by_name(&n))? else {
                    return Ok(None);
                };
                // The persistent definition: a running guest's live XML is the old one
                // until it reboots.
                let xml = dom.xml_desc(sys::VIR_DOMAIN_XML_INACTIVE)?;
                Ok(Some((xml, state_of(&dom)?, dom.autostart()?)))
            })
            .await?;
        let Some((text, state, autostart)) = found else {
            return Ok(None);
        };
        let head: Head = xml::from_xml(&text, "domain")?;
        let os = head.os.as_ref();
        Ok(Some(GuestInfo {
            uuid: head.uuid,
            fingerprint: head
                .metadata
                .as_ref()
                .and_then(|m| m.fingerprint())
                .map(str::to_string),
            state,
            autostart,
            has_nvram: os.is_some_and(|o| {
                o.nvram.is_some() || o.loader.is_some() || o.firmware.as_deref() == Some("efi")
            }),
            has_tpm: head.devices.is_some_and(|d| !d.tpm.is_empty()),
        }))
    }

    /// Define (or redefine, when the XML carries the existing uuid) a persistent domain.
    pub async fn define_guest(&self, name: &str, xml: String) -> Result<(), ProviderError> {
        self.call(format!("define domain `{name}`"), move |c| {
            c.define_domain_xml(&xml).map(|_| ())
        })
        .await
    }

    pub async fn start_guest(&self, name: &str) -> Result<(), ProviderError> {
        self.with_guest(name, "start", |d| d.create().map(|_| ()))
            .await
    }

    pub async fn resume_guest(&self, name: &str) -> Result<(), ProviderError> {
        self.with_guest(name, "resume", |d| d.resume().map(|_| ()))
            .await
    }

    /// Presses and releases Enter on the guest's keyboard (`virDomainSendKey`).
    pub async fn press_enter(&self, name: &str) -> Result<(), ProviderError> {
        // Linux input event code of KEY_ENTER; libvirt maps it to the keyboard QEMU emulates.
        const KEY_ENTER: u32 = 28;
        self.with_guest(name, "send Enter to", |d| {
            let mut keys = [KEY_ENTER];
            d.send_key(sys::VIR_KEYCODE_SET_LINUX, 0, keys.as_mut_ptr(), 1, 0)
        })
        .await
    }

    /// Presses Enter once a second for `window`, or until the guest stops: answers a boot
    /// loader's "Press any key" prompt that may come at any moment of that window. Returns
    /// how many presses libvirt took.
    pub async fn press_enter_for(
        &self,
        name: &str,
        window: Duration,
    ) -> Result<u32, ProviderError> {
        let start = Instant::now();
        let mut pressed = 0;
        while start.elapsed() < window {
            match self.guest(name).await? {
                Some(g) if g.state.is_active() => {}
                _ => break,
            }
            self.press_enter(name).await?;
            pressed += 1;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok(pressed)
    }

    /// Hard power-off.
    pub async fn destroy_guest(&self, name: &str) -> Result<(), ProviderError> {
        self.with_guest(name, "destroy", |d| d.destroy().map(|_| ()))
            .await
    }

    pub async fn set_guest_autostart(&self, name: &str, on: bool) -> Result<(), ProviderError> {
        self.with_guest(name, "set autostart of", move |d| {
            d.set_autostart(on).map(|_| ())
        })
        .await
    }

    /// Ask the guest to power off (ACPI) and wait until it has, up to `timeout`. Returns
    /// whether it stopped in time.
    pub async fn shutdown_guest(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<bool, ProviderError> {
        self.with_guest(name, "shut down", |d| d.shutdown().map(|_| ()))
            .await?;
        let start = Instant::now();
        loop {
            match self.guest(name).await? {
                None => return Ok(true),
                Some(g) if !g.state.is_active() => return Ok(true),
                Some(_) if start.elapsed() >= timeout => return Ok(false),
                Some(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// Remove the definition, with its managed save, snapshot metadata, and (when present)
    /// its UEFI variables and TPM state, which libvirt otherwise refuses to leave behind.
    pub async fn undefine_guest(&self, name: &str, info: &GuestInfo) -> Result<(), ProviderError> {
        let mut flags =
            sys::VIR_DOMAIN_UNDEFINE_MANAGED_SAVE | sys::VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA;
        // The test driver keeps no NVRAM or TPM files and rejects these flags.
        if !self.is_test_driver() {
            if info.has_nvram {
                flags |= sys::VIR_DOMAIN_UNDEFINE_NVRAM;
            }
            if info.has_tpm {
                flags |= sys::VIR_DOMAIN_UNDEFINE_TPM;
            }
        }
        self.with_guest(name, "undefine", move |d| {
            d.undefine_flags(flags).map(|_| ())
        })
        .await
    }

    async fn with_guest<F>(&self, name: &str, verb: &str, f: F) -> Result<(), ProviderError>
    where
        F: FnOnce(&VirDomain) -> Result<(), virt::error::Error> + Send + 'static,
    {
        let n = name.to_string();
        self.call(format!("{verb} domain `{name}`"), move |c| {
            f(&c.lookup_domain_by_name(&n)?)
        })
        .await
    }
}
