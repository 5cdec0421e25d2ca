//! `InstallStage`: the stages of a Windows guest's unattended install, as the answer file
//! marks them on the guest's first serial port (COM1) and as `virt_install_wait` reads them
//! back from the hypervisor's log of that port.
//!
//! Each marker is one line, `kinit-stage: <stage>`, written by a command the answer file runs
//! at the start of the stage. The two passes after `windowsPE` each begin after a reboot of the
//! guest (Windows Setup restarts into the installed system for `specialize`, and again for
//! `oobeSystem`), so the last stage seen also tells how many reboots the install went through.

use std::fmt;

/// The line prefix of a stage marker.
pub const MARKER: &str = "kinit-stage: ";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstallStage {
    /// Windows Setup (WinPE) partitions the disk and applies the image.
    WindowsPe,
    /// First boot of the installed system: computer name, network.
    Specialize,
    /// Out-of-box experience and the administrator's first logon.
    OobeSystem,
    /// The first-logon step that opens WinRM over HTTPS.
    Winrm,
}

impl InstallStage {
    pub const ALL: [InstallStage; 4] = [
        InstallStage::WindowsPe,
        InstallStage::Specialize,
        InstallStage::OobeSystem,
        InstallStage::Winrm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            InstallStage::WindowsPe => "windowsPE",
            InstallStage::Specialize => "specialize",
            InstallStage::OobeSystem => "oobeSystem",
            InstallStage::Winrm => "winrm",
        }
    }

    /// Reboots of the guest before this stage began.
    pub fn reboots_before(self) -> u32 {
        match self {
            InstallStage::WindowsPe => 0,
            InstallStage::Specialize => 1,
            InstallStage::OobeSystem | InstallStage::Winrm => 2,
        }
    }

    /// The Windows command line that writes this stage's marker to COM1.
    pub fn command_line(self) -> String {
        format!("cmd.exe /c echo {MARKER}{}>COM1", self.name())
    }

    /// The stage a log line marks, if it is a marker. Serial output carries `\r`, firmware
    /// escape sequences and other boot noise; only the text after the marker counts.
    pub fn from_line(line: &str) -> Option<InstallStage> {
        let (_, rest) = line.split_once(MARKER)?;
        let word = rest.trim_matches(|c: char| c.is_whitespace() || c.is_control());
        Self::ALL.into_iter().find(|s| s.name() == word)
    }
}

impl fmt::Display for InstallStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::InstallStage;

    #[test]
    fn markers_are_read_back_through_serial_noise() {
        assert_eq!(
            InstallStage::from_line("\u{1b}[0mkinit-stage: specialize \r"),
            Some(InstallStage::Specialize)
        );
        assert_eq!(InstallStage::from_line("kinit-stage: nonsense"), None);
        assert_eq!(InstallStage::from_line("BdsDxe: loading Boot0001"), None);
        for s in InstallStage::ALL {
            let echoed = s.command_line();
            let text = echoed
                .strip_prefix("cmd.exe /c echo ")
                .unwrap()
                .strip_suffix(">COM1")
                .unwrap();
            assert_eq!(InstallStage::from_line(text), Some(s));
        }
    }
}
