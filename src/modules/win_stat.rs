//! `win_stat`: facts about one path on a Windows host, in the shape Ansible's `win_stat`
//! returns (`stat.exists`, `isdir`, `size`, `checksum`, ...). One PowerShell run; never
//! changes anything.

use serde::Deserialize;

use crate::transport::quote::ps;

use super::args::boolish;
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinStat, "win_stat", Params, run, windows);

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algo {
    Md5,
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The path on the host.
    #[serde(alias = "dest", alias = "name")]
    path: String,
    /// Compute a checksum of a file (default yes).
    #[serde(default = "super::command::yes", deserialize_with = "boolish")]
    get_checksum: bool,
    /// Checksum algorithm (default `sha1`, as Ansible).
    #[serde(default = "sha1")]
    checksum_algorithm: Algo,
    /// Accepted for compatibility; folder sizes are not computed.
    #[serde(default, deserialize_with = "boolish")]
    get_size: bool,
    /// Accepted for compatibility; links are reported, not followed.
    #[serde(default, deserialize_with = "boolish")]
    follow: bool,
}

fn sha1() -> Algo {
    Algo::Sha1
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> String {
    let algo = format!("{:?}", p.checksum_algorithm).to_uppercase();
    let sum = if p.get_checksum {
        format!(
            "    $st.checksum = (Get-FileHash -LiteralPath $p -Algorithm {algo}).Hash.ToLower()\n"
        )
    } else {
        String::new()
    };
    format!(
        r#"$p = {path}
$epoch = [datetime]'1970-01-01'
$st = @{{ exists = $false }}
$i = Get-Item -LiteralPath $p -Force -ErrorAction SilentlyContinue
if ($null -ne $i) {{
  $st.exists = $true
  $st.path = $i.FullName
  $st.filename = $i.Name
  $st.isdir = [bool]$i.PSIsContainer
  $st.isreg = -not $i.PSIsContainer
  $st.islnk = [bool]($i.Attributes -band [IO.FileAttributes]::ReparsePoint)
  $st.attributes = $i.Attributes.ToString()
  $st.creationtime = ($i.CreationTimeUtc - $epoch).TotalSeconds
  $st.lastwritetime = ($i.LastWriteTimeUtc - $epoch).TotalSeconds
  $st.lastaccesstime = ($i.LastAccessTimeUtc - $epoch).TotalSeconds
  $st.owner = (Get-Acl -LiteralPath $p).Owner
  if (-not $i.PSIsContainer) {{
    $st.size = $i.Length
    $st.extension = $i.Extension
{sum}  }}
}}
$r.stat = $st"#,
        path = ps(&p.path)
    )
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = (p.get_size, p.follow);
    pwsh::run_framed(ctx, &body(&p), None).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::args::parse;

    #[test]
    fn script_parses_and_quotes_the_path() {
        for args in [
            serde_json::json!({"path": "C:\\it's here"}),
            serde_json::json!({"path": "C:\\x", "get_checksum": false, "checksum_algorithm": "sha256"}),
        ] {
            let p: Params = parse("win_stat", &args).unwrap();
            let s = pwsh::frame(false, &body(&p));
            pwsh::assert_parses(&s);
            assert!(s.contains("$p = 'C:\\"));
        }
        let p: Params = parse("win_stat", &serde_json::json!({"path": "C:\\it's"})).unwrap();
        assert!(body(&p).contains("'C:\\it''s'"));
        assert!(body(&p).contains("-Algorithm SHA1"));
    }
}
