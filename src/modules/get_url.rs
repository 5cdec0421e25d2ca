//! `get_url`: download a URL *on the host* (curl, else python3) to a path, verified against a
//! checksum when one is given (`sha256:<hex>`, or `sha256:<url>` of a `SHA256SUMS`-style file
//! fetched on the host too). `file://` URLs work like HTTP ones (without a status code).
//!
//! One probe (destination stat + checksum, which HTTP client the host has); when a download is
//! needed, `get_url_fetch` downloads to a temporary sibling (continuing a partial one with
//! `resume`), verifies the checksum, and either drops it (same bytes as the existing file) or
//! renames it into place; one more command fixes owner/mode only when needed.

use serde::Deserialize;

use super::args::{boolish, opt_u64ish};
use super::command::yes;
use super::get_url_fetch::{self, Fetched};
use super::host_path;
use super::http::{self, Request, Tool};
use super::mode::{Mode, opt_mode};
use super::posix::join;
use super::posix::{self, Algo, Attrs, Kind, StatReq};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(GetUrl, "get_url", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// What to download (http, https, ftp as the host's client supports).
    url: String,
    /// Where to put it on the host; a directory receives the URL's file name.
    #[serde(deserialize_with = "host_path::one")]
    dest: String,
    /// `<algorithm>:<hex>` (`sha256:abc...`); verified after download, and an existing
    /// file with this checksum is not downloaded again.
    checksum: Option<String>,
    /// Download even when `dest` exists (default no: an existing file is kept unless its
    /// checksum differs from `checksum`).
    #[serde(default, deserialize_with = "boolish")]
    force: bool,
    /// Permissions of the file.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner (name or uid).
    owner: Option<String>,
    /// Group (name or gid).
    group: Option<String>,
    /// Seconds before the request is abandoned (default 10).
    #[serde(default, deserialize_with = "opt_u64ish")]
    timeout: Option<u64>,
    /// Extra request headers.
    #[serde(default)]
    headers: indexmap::IndexMap<String, String>,
    /// Check the server's TLS certificate (default yes).
    #[serde(default = "yes", deserialize_with = "boolish")]
    validate_certs: bool,
    /// User for HTTP basic authentication.
    url_username: Option<String>,
    /// Password for HTTP basic authentication.
    url_password: Option<String>,
    /// Accepted for compatibility: credentials are always sent with the first request.
    #[serde(default, deserialize_with = "boolish")]
    force_basic_auth: bool,
    /// kinit: keep the partial file of an interrupted download and continue it on the next
    /// run with a Range request (needs curl on the host; the checksum still decides).
    #[serde(default, deserialize_with = "boolish")]
    resume: bool,
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = p.force_basic_auth;
    let spec = match &p.checksum {
        Some(c) => Some(parse_checksum(c)?),
        None => None,
    };
    let algo = spec.as_ref().map_or(Algo::Sha256, |w| w.0);
    let name = url_file_name(&p.url);
    let inner = join(&p.dest, &name);
    let reqs = [
        StatReq {
            path: &p.dest,
            follow: true,
            checksum: Some(algo),
        },
        StatReq {
            path: &inner,
            follow: true,
            checksum: Some(algo),
        },
    ];
    let probe = format!("{}{}", posix::stat_script(&reqs), http::DETECT);
    let out = ctx.run(probe).await?;
    let (_, mut stats, rest) =
        posix::parse_probe(&out.stdout, 2).ok_or_else(|| ModuleError::Failed {
            msg: format!("cannot inspect `{}`: {}", p.dest, out.stderr_str().trim()),
        })?;
    let tool = http::tool_in(&String::from_utf8_lossy(&rest));
    let want = match spec {
        Some((a, Sum::Hex(hex))) => Some((a, hex)),
        Some((a, Sum::Url(url))) => {
            let hex = checksum_from_url(ctx, tool, &url, &p.url, p.validate_certs).await?;
            Some((a, hex))
        }
        None => None,
    };
    let (dest, stat) = if stats[0].kind == Kind::Directory {
        (inner, stats.pop().expect("two records"))
    } else {
        (p.dest.clone(), stats.swap_remove(0))
    };
    let attrs = Attrs {
        mode: p.mode,
        owner: p.owner,
        group: p.group,
    };
    let matches = match &want {
        Some((_, hex)) => stat.checksum.as_deref() == Some(hex.as_str()),
        None => true,
    };
    let download = !stat.exists() || p.force || !matches;
    let mut r = ModuleResult::ok()
        .with("dest", dest.as_str())
        .with("url", p.url.as_str());
    if !download {
        let fix = attrs.fix_script(&dest, &stat, false);
        r.changed = !fix.is_empty();
        r.msg = Some("file already exists".into());
        if r.changed && !ctx.check_mode {
            let o = ctx.run(fix).await?;
            if !o.success() {
                return Ok(ModuleResult::failed(o.stderr_str().trim().to_string()));
            }
        }
        return Ok(r);
    }
    if ctx.check_mode {
        r.changed = true;
        return Ok(r);
    }
    if tool == Tool::None {
        return Ok(ModuleResult::failed(
            "the host has neither curl nor python3 to download with",
        ));
    }
    let req = Request {
        url: p.url.clone(),
        method: "GET".into(),
        headers: p.headers.into_iter().collect(),
        body: None,
        timeout_secs: p.timeout.unwrap_or(10),
        validate_certs: p.validate_certs,
        follow_redirects: true,
        user: p.url_username,
        password: p.url_password,
        out_file: Some(format!("{dest}.kinit-dl")),
        resume: p.resume,
    };
    let want_ref = want.as_ref().map(|(a, h)| (*a, h.as_str()));
    let status = match get_url_fetch::fetch(ctx, tool, req, &dest, want_ref).await? {
        Fetched::Moved { status } => {
            r.changed = true;
            status
        }
        Fetched::Same { status } => status,
        Fetched::BadSum { got } => {
            return Ok(ModuleResult::failed(format!(
                "the checksum of `{}` is `{got}`, expected `{}`",
                p.url,
                want.map(|w| w.1).unwrap_or_default()
            )));
        }
        Fetched::Failed { status, why, kept } => {
            let mut msg = format!("request to `{}` failed (HTTP status {status})", p.url);
            if !why.is_empty() {
                msg.push_str(&format!(": {why}"));
            }
            if kept {
                msg.push_str(&format!(
                    "; the partial download `{dest}.kinit-dl` is kept and a re-run continues it"
                ));
            }
            return Ok(ModuleResult::failed(msg).with("status_code", status));
        }
    };
    r = r.with("status_code", status);
    // Bring the (new or unchanged) file to the requested attributes.
    let now = if r.changed {
        posix::RemoteStat {
            kind: Kind::File,
            mode: 0o10000,
            uid: u32::MAX,
            gid: u32::MAX,
            ..stat
        }
    } else {
        stat
    };
    let fix = attrs.fix_script(&dest, &now, false);
    if !fix.is_empty() {
        r.changed = true;
        let o = ctx.run(fix).await?;
        if !o.success() {
            return Ok(ModuleResult::failed(o.stderr_str().trim().to_string()));
        }
    }
    Ok(r)
}

/// What `checksum` gives after `<algorithm>:`: the digest, or where to read it from.
#[derive(Debug, PartialEq)]
enum Sum {
    Hex(String),
    /// A checksums file (`SHA256SUMS`), fetched on the host like the download itself.
    Url(String),
}

fn is_file_url(url: &str) -> bool {
    url.starts_with("file://")
}

/// `sha256:abc` → (algorithm, lower-case hex); `sha256:https://.../SHA256SUMS` → the URL.
fn parse_checksum(c: &str) -> Result<(Algo, Sum), ModuleError> {
    let bad = || ModuleError::BadArgs {
        module: "get_url",
        detail: format!(
            "`checksum` `{c}` is not `<algorithm>:<hex>` or `<algorithm>:<url of a checksums \
             file>` (md5, sha1, sha224, sha256, sha384, sha512)"
        ),
    };
    let (a, rest) = c.split_once(':').ok_or_else(bad)?;
    let algo: Algo = serde_json::from_value(serde_json::json!(a)).map_err(|_| bad())?;
    if ["http://", "https://", "ftp://", "file://"]
        .iter()
        .any(|s| rest.starts_with(s))
    {
        return Ok((algo, Sum::Url(rest.to_string())));
    }
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    Ok((algo, Sum::Hex(rest.to_ascii_lowercase())))
}

/// Fetch a checksums file on the host and pick the digest of `url`'s file name.
async fn checksum_from_url(
    ctx: &ModuleCtx<'_>,
    tool: Tool,
    sums_url: &str,
    url: &str,
    validate_certs: bool,
) -> Result<String, ModuleError> {
    let failed = |why: String| ModuleError::Failed {
        msg: format!("cannot read the checksums file `{sums_url}`: {why}"),
    };
    if tool == Tool::None {
        return Err(failed("the host has neither curl nor python3".into()));
    }
    let req = Request {
        url: sums_url.to_string(),
        method: "GET".into(),
        timeout_secs: 10,
        validate_certs,
        follow_redirects: true,
        ..Request::default()
    };
    let (fetch, stdin) = http::script(tool, &req);
    let out = ctx.run_with_stdin(fetch, Some(stdin)).await?;
    let resp = http::parse(&out.stdout).ok_or_else(|| failed(out.stderr_str().trim().into()))?;
    let ok = (200..300).contains(&resp.status) || (is_file_url(sums_url) && resp.tool_rc == 0);
    if !ok || resp.tool_rc != 0 {
        return Err(failed(
            resp.error
                .unwrap_or_else(|| format!("HTTP status {}", resp.status)),
        ));
    }
    pick_checksum(&String::from_utf8_lossy(&resp.body), &url_file_name(url))
        .ok_or_else(|| failed(format!("no checksum for `{}` in it", url_file_name(url))))
}

/// The digest for `file` in a `sha256sum`-style listing (`<hex>  name` or `<hex> *name`);
/// a listing of one bare digest is that digest.
fn pick_checksum(text: &str, file: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let [only] = lines.as_slice()
        && !only.contains(char::is_whitespace)
    {
        return Some(only.to_ascii_lowercase());
    }
    lines.iter().find_map(|l| {
        let (hex, name) = l.split_once(char::is_whitespace)?;
        let name = name.trim().trim_start_matches('*').trim_start_matches("./");
        (name == file && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| hex.to_ascii_lowercase())
    })
}

/// The last path segment of a URL (without query), or `index.html`.
fn url_file_name(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let after_host = path.splitn(4, '/').nth(3).unwrap_or("");
    after_host
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("index.html")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_a_digest_or_a_checksums_file_url() {
        let (a, s) = parse_checksum("sha256:ABCdef01").unwrap();
        assert_eq!((a, s), (Algo::Sha256, Sum::Hex("abcdef01".into())));
        let (_, s) = parse_checksum("sha256:https://example.org/SHA256SUMS").unwrap();
        assert_eq!(s, Sum::Url("https://example.org/SHA256SUMS".into()));
        assert!(parse_checksum("sha256:nothex").is_err());
        assert!(parse_checksum("crc:abc").is_err());
    }

    #[test]
    fn picks_the_digest_of_the_downloaded_file_name() {
        let sums = "aa11  other.tar.gz\nBB22 *kinit.tar.gz\ncc33  ./third\n";
        assert_eq!(pick_checksum(sums, "kinit.tar.gz").as_deref(), Some("bb22"));
        assert_eq!(pick_checksum(sums, "third").as_deref(), Some("cc33"));
        assert_eq!(pick_checksum(sums, "missing"), None);
        assert_eq!(pick_checksum("dd44\n", "any").as_deref(), Some("dd44"));
    }
}
