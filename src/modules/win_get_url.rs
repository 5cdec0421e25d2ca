//! `win_get_url`: download a URL on a Windows host (`Invoke-WebRequest`), verified against a
//! checksum when given. Check and change are one PowerShell run: the file is downloaded to a
//! temporary sibling, verified, and moved into place only if its hash differs from the
//! existing file. Credentials travel on stdin, not in the command line.

use serde::Deserialize;
use serde_json::Value;

use crate::transport::quote::ps;

use super::args::{boolish, opt_u64ish};
use super::command::yes;
use super::{ModuleCtx, ModuleError, ModuleResult, pwsh, typed_module};

typed_module!(WinGetUrl, "win_get_url", Params, run, windows);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// What to download.
    url: String,
    /// Where to put it; a folder receives the URL's file name.
    dest: String,
    /// Expected checksum (hex), verified after download; a file that has it is not
    /// downloaded again.
    checksum: Option<String>,
    /// `md5`, `sha1` (default), `sha256`, `sha384`, `sha512`.
    #[serde(default = "sha1")]
    checksum_algorithm: String,
    /// Download even when `dest` exists (default yes, as Ansible's `win_get_url`).
    #[serde(default = "yes", deserialize_with = "boolish")]
    force: bool,
    /// Extra request headers.
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
    /// User for HTTP basic authentication.
    url_username: Option<String>,
    /// Password for HTTP basic authentication.
    url_password: Option<String>,
    /// Check the server's TLS certificate (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_certs: bool,
    /// Seconds before the request is abandoned (default 30).
    #[serde(default, deserialize_with = "opt_u64ish")]
    timeout: Option<u64>,
}

fn sha1() -> String {
    "sha1".into()
}

/// The module body (inside `pwsh::frame`).
pub fn body(p: &Params) -> Result<String, ModuleError> {
    let algo = match p.checksum_algorithm.to_ascii_lowercase().as_str() {
        a @ ("md5" | "sha1" | "sha256" | "sha384" | "sha512") => a.to_uppercase(),
        other => {
            return Err(ModuleError::BadArgs {
                module: "win_get_url",
                detail: format!(
                    "unknown value `{other}` for `checksum_algorithm` (md5, sha1, sha256, sha384, sha512)"
                ),
            });
        }
    };
    let leaf = p
        .url
        .split(['?', '#'])
        .next()
        .and_then(|u| u.rsplit('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("index.html");
    let want = p
        .checksum
        .as_deref()
        .map(|c| ps(&c.to_ascii_lowercase()))
        .unwrap_or_else(|| "$null".into());
    let auth = match &p.url_username {
        Some(u) => format!(
            "  $pw = [Console]::In.ReadToEnd().TrimEnd(\"`r\", \"`n\")\n  $tok = [Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes({} + ':' + $pw))\n  $headers['Authorization'] = 'Basic ' + $tok\n",
            ps(u)
        ),
        None => String::new(),
    };
    let certs = if p.validate_certs {
        ""
    } else {
        "  [Net.ServicePointManager]::ServerCertificateValidationCallback = { $true }\n"
    };
    Ok(format!(
        r#"$d = {dest}
if (Test-Path -LiteralPath $d -PathType Container) {{ $d = Join-Path $d {leaf} }}
$r.dest = $d
$r.url = {url}
$want = {want}
$exists = Test-Path -LiteralPath $d -PathType Leaf
$need = (-not $exists) -or {force}
if ($exists -and $null -ne $want) {{ $need = (Get-FileHash -LiteralPath $d -Algorithm {algo}).Hash.ToLower() -ne $want }}
if (-not $need) {{ $r.msg = 'file already exists' }}
elseif ($check) {{ $r.changed = $true }}
else {{
  $headers = {headers}
{auth}{certs}  [Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
  $tmp = $d + '.kinit-dl'
  $resp = Invoke-WebRequest -Uri $r.url -OutFile $tmp -UseBasicParsing -TimeoutSec {timeout} -Headers $headers -PassThru
  $r.status_code = [int]$resp.StatusCode
  $got = (Get-FileHash -LiteralPath $tmp -Algorithm {algo}).Hash.ToLower()
  $r.checksum_dest = $got
  if ($null -ne $want -and $got -ne $want) {{
    Remove-Item -LiteralPath $tmp -Force
    throw "the checksum of the download is $got, expected $want"
  }}
  if ($exists -and (Get-FileHash -LiteralPath $d -Algorithm {algo}).Hash.ToLower() -eq $got) {{
    Remove-Item -LiteralPath $tmp -Force
  }} else {{
    Move-Item -LiteralPath $tmp -Destination $d -Force
    $r.changed = $true
  }}
}}"#,
        dest = ps(&p.dest),
        leaf = ps(leaf),
        url = ps(&p.url),
        force = pwsh::bool_lit(p.force),
        headers = pwsh::lit(&Value::Object(p.headers.clone())),
        timeout = p.timeout.unwrap_or(30),
    ))
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let script = body(&p)?;
    let stdin = p.url_password.as_ref().map(|pw| pw.clone().into_bytes());
    pwsh::run_framed(ctx, &script, stdin).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::args::parse;

    #[test]
    fn script_parses_and_keeps_the_password_out() {
        let p: Params = parse(
            "win_get_url",
            &serde_json::json!({
                "url": "https://dl.k8s.io/v1.30.0/bin/windows/amd64/kubelet.exe?x=1",
                "dest": "C:\\k\\", "checksum": "ABC123", "checksum_algorithm": "sha256",
                "headers": {"X-It's": "y"}, "url_username": "u", "url_password": "s3cret",
                "validate_certs": false, "force": false,
            }),
        )
        .unwrap();
        let s = pwsh::frame(true, &body(&p).unwrap());
        pwsh::assert_parses(&s);
        assert!(!s.contains("s3cret"));
        assert!(s.contains("Join-Path $d 'kubelet.exe'"));
        assert!(s.contains("$want = 'abc123'"));
        let bad: Params = parse(
            "win_get_url",
            &serde_json::json!({"url": "u", "dest": "d", "checksum_algorithm": "crc"}),
        )
        .unwrap();
        assert!(body(&bad).is_err());
    }
}
