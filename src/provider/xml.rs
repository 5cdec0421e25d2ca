//! Serializing and reading libvirt XML with `quick-xml`'s serde support, and the definition
//! fingerprint kinit stores in a domain's or network's `<metadata>`.
//!
//! libvirt rewrites what it is given (default devices, PCI addresses, a generated MAC), so
//! comparing our XML with `dumpxml` cannot tell whether our definition changed. Instead kinit
//! keeps a SHA-256 of its own document (without uuid and metadata) in a kinit-namespaced
//! metadata element: same fingerprint, same definition, nothing to do.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ProviderError;

/// The XML namespace of kinit's metadata element.
pub const KINIT_NS: &str = "https://github.com/kinit/xmlns/definition/1";

/// `<metadata><kinit:definition xmlns:kinit="...">sha256</kinit:definition></metadata>`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Metadata {
    #[serde(
        rename = "kinit:definition",
        alias = "definition",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub definition: Option<Fingerprint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    #[serde(rename = "@xmlns:kinit", default)]
    pub ns: String,
    #[serde(rename = "$text")]
    pub sha256: String,
}

impl Metadata {
    pub fn with_fingerprint(sha256: String) -> Self {
        Self {
            definition: Some(Fingerprint {
                ns: KINIT_NS.to_string(),
                sha256,
            }),
        }
    }

    pub fn fingerprint(&self) -> Option<&str> {
        self.definition.as_ref().map(|f| f.sha256.as_str())
    }
}

/// A libvirt XML document kinit writes and reads back (`<domain>`, `<network>`, `<pool>`,
/// `<volume>`).
pub trait Document: Serialize + DeserializeOwned {
    /// The root element, also the document's name in errors.
    const ROOT: &'static str;

    /// The XML document libvirt is given.
    fn to_xml(&self) -> Result<String, ProviderError> {
        to_xml(Self::ROOT, self, Self::ROOT)
    }

    fn from_xml(text: &str) -> Result<Self, ProviderError> {
        from_xml(text, Self::ROOT)
    }
}

/// A document that carries kinit's fingerprint in its `<metadata>` (domains, networks).
pub trait Definition: Document + Clone {
    /// The uuid and metadata, which the fingerprint leaves out.
    fn identity(&mut self) -> (&mut Option<String>, &mut Option<Metadata>);

    /// A hash of the document without uuid and metadata, so that neither a carried-over
    /// uuid nor the fingerprint itself changes it.
    fn fingerprint(&self) -> Result<String, ProviderError> {
        let mut bare = self.clone();
        let (uuid, metadata) = bare.identity();
        (*uuid, *metadata) = (None, None);
        Ok(sha256(&bare.to_xml()?))
    }

    /// This definition with its fingerprint stored in `<metadata>`.
    fn fingerprinted(mut self) -> Result<Self, ProviderError> {
        let fp = self.fingerprint()?;
        *self.identity().1 = Some(Metadata::with_fingerprint(fp));
        Ok(self)
    }
}

/// An element with no content, such as `<acpi/>` or `<readonly/>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Empty {}

/// `value` as an indented XML document whose root element is `root`.
pub fn to_xml<T: Serialize>(
    root: &str,
    value: &T,
    what: &'static str,
) -> Result<String, ProviderError> {
    let mut out = String::new();
    let mut ser = quick_xml::se::Serializer::with_root(&mut out, Some(root))
        .map_err(|source| ProviderError::WriteXml { what, source })?;
    ser.indent(' ', 2);
    value
        .serialize(ser)
        .map_err(|source| ProviderError::WriteXml { what, source })?;
    out.push('\n');
    Ok(out)
}

/// Read XML (typically libvirt's `dumpxml`) into a typed definition; elements and attributes
/// the type does not model are ignored.
pub fn from_xml<T: for<'de> Deserialize<'de>>(
    xml: &str,
    what: &'static str,
) -> Result<T, ProviderError> {
    quick_xml::de::from_str(xml).map_err(|source| ProviderError::ReadXml { what, source })
}

/// Hex SHA-256 of a document.
pub fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}
