//! `ProviderError`: what can go wrong between kinit and a hypervisor's libvirt.

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("libvirt `{uri}`: cannot {action}")]
    Libvirt {
        uri: String,
        action: String,
        #[source]
        source: virt::error::Error,
    },
    #[error("cannot write {what} XML")]
    WriteXml {
        what: &'static str,
        #[source]
        source: quick_xml::SeError,
    },
    #[error("cannot read {what} XML")]
    ReadXml {
        what: &'static str,
        #[source]
        source: quick_xml::DeError,
    },
    #[error("cannot write {what} YAML")]
    WriteYaml {
        what: &'static str,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("invalid {field} `{value}`: expected {expected}")]
    Invalid {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("cannot pack ISO contents")]
    Pack(#[source] std::io::Error),
    #[error("libvirt call for `{uri}` did not complete")]
    Join {
        uri: String,
        #[source]
        source: tokio::task::JoinError,
    },
}

/// `err` and its causes on one line (`a: b: c`), for messages that end up in a module result.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        out.push_str(": ");
        out.push_str(&e.to_string());
        cur = e.source();
    }
    out
}
