//! `get_url`'s transfer: fetch the URL to `<dest>.kinit-dl` on the host, then (only when the
//! transfer succeeded) verify the checksum and move the file into place.
//!
//! With `resume`, an interrupted transfer keeps its partial `.kinit-dl` file and the next
//! run continues it with an HTTP Range request (curl's `continue-at`); a server that ignores
//! ranges makes kinit start over once, and the checksum decides whether the joined file is
//! right. Without `resume` a failed transfer leaves nothing behind.

use crate::transport::quote::sh;

use super::http::{self, Request, Tool};
use super::posix::Algo;
use super::{ModuleCtx, ModuleError};

/// How a transfer ended.
#[derive(Debug, PartialEq)]
pub enum Fetched {
    /// The file is in place (new content).
    Moved { status: u16 },
    /// The download had the same bytes as the existing file.
    Same { status: u16 },
    /// The download's digest differs from the wanted one (the download was removed).
    BadSum { got: String },
    /// No usable answer; `kept` when a partial file stays for a later resume.
    Failed {
        status: u16,
        why: String,
        kept: bool,
    },
}

/// curl: "server does not support byte ranges" (CURLE_RANGE_ERROR).
const CURL_RANGE_ERROR: i32 = 33;
/// HTTP 416: the partial file already holds everything the server has.
const RANGE_NOT_SATISFIABLE: u16 = 416;

pub async fn fetch(
    ctx: &ModuleCtx<'_>,
    tool: Tool,
    mut req: Request,
    dest: &str,
    want: Option<(Algo, &str)>,
) -> Result<Fetched, ModuleError> {
    let tmp = req
        .out_file
        .clone()
        .unwrap_or_else(|| format!("{dest}.kinit-dl"));
    req.out_file = Some(tmp.clone());
    req.resume = req.resume && tool == Tool::Curl;
    let is_file = req.url.starts_with("file://");
    let (status, rc, why) = loop {
        let (fetch, stdin) = http::script(tool, &req);
        let out = ctx.run_with_stdin(fetch, Some(stdin)).await?;
        let resp = http::parse(&out.stdout);
        let rc = resp.as_ref().map_or(-1, |r| r.tool_rc);
        let mut status = resp.as_ref().map_or(0, |r| r.status);
        // `file://` has no HTTP status: the tool's success is the answer.
        if is_file && rc == 0 && status == 0 {
            status = 200;
        }
        if req.resume && rc == CURL_RANGE_ERROR {
            ctx.run(format!("rm -f -- {}", sh(&tmp))).await?;
            req.resume = false;
            continue;
        }
        if req.resume && status == RANGE_NOT_SATISFIABLE {
            break (200, 0, String::new());
        }
        let why = resp
            .and_then(|r| r.error)
            .unwrap_or_else(|| out.stderr_str().trim().to_string());
        break (status, rc, why);
    };
    if !(200..300).contains(&status) || rc != 0 {
        let keep = req.resume && rc != 0;
        let probe = if keep {
            format!("[ -s {t} ] && echo kinit-kept", t = sh(&tmp))
        } else {
            format!("rm -f -- {}", sh(&tmp))
        };
        let kept = ctx.run(probe).await?.stdout_str().contains("kinit-kept");
        return Ok(Fetched::Failed { status, why, kept });
    }
    let sum_tool = format!("{}sum", want.map_or(Algo::Sha256, |w| w.0).tool());
    let verify = format!(
        "s=$({sum_tool} -- {t} | cut -d' ' -f1) || exit 1\n\
         if [ -n {w} ] && [ \"$s\" != {w} ]; then rm -f -- {t}; echo \"kinit-badsum=$s\"; exit 0; fi\n\
         if [ -f {d} ] && cmp -s -- {t} {d}; then rm -f -- {t}; echo kinit-same; \
         else mv -f -- {t} {d} && echo kinit-moved; fi\n",
        t = sh(&tmp),
        d = sh(dest),
        w = sh(want.map_or("", |w| w.1)),
    );
    let out = ctx.run(verify).await?;
    let text = out.stdout_str();
    Ok(
        if let Some(got) = text.lines().find_map(|l| l.strip_prefix("kinit-badsum=")) {
            Fetched::BadSum { got: got.into() }
        } else if text.contains("kinit-moved") {
            Fetched::Moved { status }
        } else if text.contains("kinit-same") {
            Fetched::Same { status }
        } else {
            Fetched::Failed {
                status,
                why: format!("cannot verify or move `{tmp}`: {}", out.stderr_str().trim()),
                kept: false,
            }
        },
    )
}
