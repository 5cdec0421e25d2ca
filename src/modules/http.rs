//! HTTP requests made *on the host* (for `get_url` and `uri`): with `curl` when the host has
//! it, else with the host's `python3`. The request (URL, headers, credentials, body) travels
//! on stdin, never on the command line, so credentials do not show in the host's process list.
//!
//! Both paths print the same framing, parsed by [`parse`]:
//! `kinit-http|<tool exit code>|<status>` then the response headers, then `kinit-body` and the
//! body (unless it went to a file).

use std::collections::BTreeMap;

use serde_json::json;

use crate::transport::quote::sh;

/// Which client the host has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Curl,
    Python,
    None,
}

/// sh text printing `kinit-tool|curl|python|none`.
pub const DETECT: &str = "if command -v curl >/dev/null 2>&1; then echo kinit-tool=curl; \
     elif command -v python3 >/dev/null 2>&1; then echo kinit-tool=python; \
     else echo kinit-tool=none; fi\n";

/// Read the tool from probe output.
pub fn tool_in(out: &str) -> Tool {
    if out.contains("kinit-tool=curl") {
        Tool::Curl
    } else if out.contains("kinit-tool=python") {
        Tool::Python
    } else {
        Tool::None
    }
}

/// One request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_secs: u64,
    pub validate_certs: bool,
    pub follow_redirects: bool,
    pub user: Option<String>,
    pub password: Option<String>,
    /// Write the body to this host path instead of printing it.
    pub out_file: Option<String>,
    /// Continue a partial `out_file` with a Range request (curl only: `continue-at = -`).
    pub resume: bool,
}

const PYTHON: &str = r#"
import base64, json, ssl, sys, urllib.request, urllib.error
r = json.load(sys.stdin)
ctx = None if r["validate_certs"] else ssl._create_unverified_context()
req = urllib.request.Request(r["url"], method=r["method"],
    data=r["body"].encode() if r["body"] is not None else None)
for k, v in r["headers"]:
    req.add_header(k, v)
if r["user"] is not None:
    tok = base64.b64encode(("%s:%s" % (r["user"], r["password"] or "")).encode()).decode()
    req.add_header("Authorization", "Basic " + tok)
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None
handlers = [urllib.request.HTTPSHandler(context=ctx)]
if not r["follow"]:
    handlers.append(NoRedirect())
opener = urllib.request.build_opener(*handlers)
try:
    resp = opener.open(req, timeout=r["timeout"])
except urllib.error.HTTPError as e:
    resp = e
except Exception as e:
    sys.stdout.write("kinit-http|7|0\n" + "kinit-error: %s\n" % e)
    sys.exit(0)
out = sys.stdout.buffer
out.write(("kinit-http|0|%d\n" % resp.status).encode())
for k, v in resp.headers.items():
    out.write(("%s: %s\n" % (k, v)).encode())
out.write(b"kinit-body\n")
data = resp.read()
if r["out_file"]:
    with open(r["out_file"], "wb") as f:
        f.write(data)
else:
    out.write(data)
"#;

/// Quote a value for a curl config file (`-K -`).
fn curl_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The sh script and its stdin for `req` with `tool`.
pub fn script(tool: Tool, req: &Request) -> (String, Vec<u8>) {
    match tool {
        Tool::Python => {
            let spec = json!({
                "url": req.url, "method": req.method, "headers": req.headers,
                "body": req.body, "timeout": req.timeout_secs,
                "validate_certs": req.validate_certs, "follow": req.follow_redirects,
                "user": req.user, "password": req.password, "out_file": req.out_file,
            });
            (
                format!("python3 -c {}", sh(PYTHON)),
                spec.to_string().into_bytes(),
            )
        }
        Tool::Curl | Tool::None => {
            let mut cfg = String::new();
            cfg.push_str(&format!("url = {}\n", curl_str(&req.url)));
            cfg.push_str(&format!("request = {}\n", curl_str(&req.method)));
            cfg.push_str(&format!("max-time = {}\n", req.timeout_secs));
            cfg.push_str("silent\nshow-error\n");
            if req.method == "HEAD" {
                cfg.push_str("head\n");
            }
            if req.follow_redirects {
                cfg.push_str("location\n");
            }
            if req.resume && req.out_file.is_some() {
                cfg.push_str("continue-at = -\n");
            }
            if !req.validate_certs {
                cfg.push_str("insecure\n");
            }
            for (k, v) in &req.headers {
                cfg.push_str(&format!("header = {}\n", curl_str(&format!("{k}: {v}"))));
            }
            if let Some(u) = &req.user {
                let pw = req.password.as_deref().unwrap_or("");
                cfg.push_str(&format!("user = {}\n", curl_str(&format!("{u}:{pw}"))));
            }
            if let Some(b) = &req.body {
                cfg.push_str(&format!("data-raw = {}\n", curl_str(b)));
            }
            let body_to = match &req.out_file {
                Some(f) => sh(f),
                None => "\"$t/b\"".into(),
            };
            let script = format!(
                "t=$(mktemp -d) || exit 1\n\
                 curl -K - -o {body_to} -D \"$t/h\" -w '%{{http_code}}' > \"$t/c\"\n\
                 printf 'kinit-http|%s|%s\\n' \"$?\" \"$(cat \"$t/c\")\"\n\
                 tr -d '\\r' < \"$t/h\"\nprintf 'kinit-body\\n'\n\
                 [ -f \"$t/b\" ] && cat \"$t/b\"\nrm -rf \"$t\"\n"
            );
            (script, cfg.into_bytes())
        }
    }
}

/// A parsed response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// Exit code of curl/python (non-zero: no HTTP answer at all).
    pub tool_rc: i32,
    pub status: u16,
    /// Lower-cased header names (the last block when redirects were followed).
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
    pub error: Option<String>,
}

/// Parse the framing [`script`] prints; `None` when it is not there at all.
pub fn parse(out: &[u8]) -> Option<Response> {
    let start = find(out, b"kinit-http|")?;
    let rest = &out[start..];
    let nl = rest.iter().position(|b| *b == b'\n')?;
    let first = String::from_utf8_lossy(&rest[..nl]).into_owned();
    let mut f = first.trim_start_matches("kinit-http|").split('|');
    let tool_rc = f.next()?.trim().parse().ok()?;
    let status = f.next().unwrap_or("0").trim().parse().unwrap_or(0);
    let rest = &rest[nl + 1..];
    let (head, body) = match find(rest, b"kinit-body\n") {
        Some(i) => (&rest[..i], rest[i + 11..].to_vec()),
        None => (rest, Vec::new()),
    };
    let head = String::from_utf8_lossy(head);
    let mut headers = BTreeMap::new();
    let mut error = None;
    for line in head.lines() {
        if line.starts_with("HTTP/") {
            headers.clear();
        } else if let Some(e) = line.strip_prefix("kinit-error: ") {
            error = Some(e.to_string());
        } else if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    Some(Response {
        tool_rc,
        status,
        headers,
        body,
        error,
    })
}

/// GET `url` from the host, following redirects: the body of a 200 answer, or the reason
/// there is none (for modules that fetch a key: `apt_key`, `deb822_repository`, `rpm_key`,
/// `authorized_key`).
pub async fn get(
    ctx: &super::ModuleCtx<'_>,
    url: &str,
    validate_certs: bool,
) -> Result<Result<Vec<u8>, String>, super::ModuleError> {
    let req = Request {
        url: url.to_string(),
        method: "GET".into(),
        timeout_secs: 30,
        validate_certs,
        follow_redirects: true,
        ..Request::default()
    };
    let probe = ctx.run(DETECT).await?;
    let tool = tool_in(&probe.stdout_str());
    if tool == Tool::None {
        return Ok(Err("the host has neither curl nor python3".into()));
    }
    let (script, stdin) = script(tool, &req);
    let out = ctx.run_with_stdin(script, Some(stdin)).await?;
    Ok(match parse(&out.stdout) {
        // A file:// answer has no HTTP status (curl reports 000).
        Some(r)
            if r.tool_rc == 0
                && (r.status == 200 || (r.status == 0 && url.starts_with("file:"))) =>
        {
            Ok(r.body)
        }
        Some(r) if r.tool_rc == 0 => Err(format!("HTTP Error {}", r.status)),
        Some(r) => Err(r
            .error
            .unwrap_or_else(|| out.stderr_str().trim().to_string())),
        None => Err(out.stderr_str().trim().to_string()),
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_last_header_block_and_body() {
        let out = b"kinit-http|0|200\nHTTP/1.1 301 Moved\nLocation: /x\n\nHTTP/1.1 200 OK\nContent-Type: text/plain\n\nkinit-body\nhi\n";
        let r = parse(out).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.headers.get("content-type").unwrap(), "text/plain");
        assert!(!r.headers.contains_key("location"));
        assert_eq!(r.body, b"hi\n");
    }

    #[test]
    fn credentials_go_to_stdin_not_the_command_line() {
        let req = Request {
            url: "http://h/x".into(),
            method: "GET".into(),
            user: Some("u".into()),
            password: Some("s3cr\"et".into()),
            timeout_secs: 5,
            ..Request::default()
        };
        for tool in [Tool::Curl, Tool::Python] {
            let (script, stdin) = script(tool, &req);
            assert!(!script.contains("s3cr"), "{script}");
            assert!(String::from_utf8(stdin).unwrap().contains("s3cr"));
        }
    }
}
