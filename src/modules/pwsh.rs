//! PowerShell snippets for the Windows modules.
