//! The WinRm transport. Not implemented yet: connecting answers `Unsupported`.

use std::path::Path;

use super::{ExecOutput, ExecRequest, HostTarget, Source, TransportError};

pub struct WinRmConnection {
    name: String,
}

impl WinRmConnection {
    pub async fn connect(target: &HostTarget) -> Result<Self, TransportError> {
        Err(TransportError::Unsupported {
            host: target.name.clone(),
            kind: "winrm",
            reason: "not implemented yet".into(),
        })
    }

    fn unsupported(&self) -> TransportError {
        TransportError::Unsupported {
            host: self.name.clone(),
            kind: "winrm",
            reason: "not implemented yet".into(),
        }
    }

    pub async fn exec(&self, _req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        Err(self.unsupported())
    }

    pub async fn put(
        &self,
        _src: &Source,
        _dest: &str,
        _mode: Option<u32>,
    ) -> Result<(), TransportError> {
        Err(self.unsupported())
    }

    pub async fn get(&self, _src: &str, _dest: &Path) -> Result<(), TransportError> {
        Err(self.unsupported())
    }

    pub async fn close(self) {}
}
