//! `uri`: make an HTTP request *from the host* (curl, else python3) and return the status,
//! headers and body (`json` when the answer is JSON). Two round trips: one to find the
//! host's client, one for the request. Like Ansible's, it is skipped in check mode and
//! never reports a change.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::args::{boolish, opt_u64ish};
use super::command::yes;
use super::http::{self, Request};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Uri, "uri", Params, run);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyFormat {
    #[default]
    Raw,
    Json,
    FormUrlencoded,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The URL to request.
    url: String,
    /// HTTP method (default `GET`).
    #[serde(default = "get")]
    method: String,
    /// Request body: text, or a mapping for `json`/`form-urlencoded`.
    body: Option<Value>,
    /// How `body` is encoded: `raw` (default), `json`, `form-urlencoded`.
    #[serde(default)]
    body_format: BodyFormat,
    /// Request headers.
    #[serde(default)]
    headers: indexmap::IndexMap<String, String>,
    /// Status code(s) that count as success (default 200).
    #[serde(default, deserialize_with = "status_list")]
    status_code: Vec<u16>,
    /// Return the body as `content`.
    #[serde(default, deserialize_with = "boolish")]
    return_content: bool,
    /// Seconds before the request is abandoned (default 30).
    #[serde(default, deserialize_with = "opt_u64ish")]
    timeout: Option<u64>,
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
    /// Follow redirects: `safe`/`all`/`yes` (default) or `none`/`no`.
    #[serde(default)]
    follow_redirects: Option<Value>,
}

fn get() -> String {
    "GET".into()
}

fn status_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u16>, D::Error> {
    let items = match Value::deserialize(d)? {
        Value::Array(a) => a,
        v => vec![v],
    };
    items
        .into_iter()
        .map(|v| match &v {
            Value::Number(n) => n.as_u64().map(|n| n as u16),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
        .map(|c| c.ok_or_else(|| serde::de::Error::custom("expected HTTP status codes")))
        .collect()
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let _ = p.force_basic_auth;
    if ctx.check_mode {
        let mut r = ModuleResult::ok();
        r.skipped = true;
        r.msg = Some("uri is skipped in check mode".into());
        return Ok(r);
    }
    let mut headers: Vec<(String, String)> = p.headers.into_iter().collect();
    let has = |h: &[(String, String)], n: &str| h.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let body = match (p.body, p.body_format) {
        (None, _) => None,
        (Some(Value::String(s)), BodyFormat::Raw) => Some(s),
        (Some(v), BodyFormat::Raw) => Some(v.to_string()),
        (Some(v), BodyFormat::Json) => {
            if !has(&headers, "content-type") {
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            Some(match v {
                Value::String(s) => s,
                v => v.to_string(),
            })
        }
        (Some(v), BodyFormat::FormUrlencoded) => {
            if !has(&headers, "content-type") {
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
            }
            Some(match v {
                Value::Object(m) => form_encode(&m),
                Value::String(s) => s,
                other => {
                    return Err(ModuleError::BadArgs {
                        module: "uri",
                        detail: format!(
                            "`body` `{other}` cannot be form-encoded (expected a mapping)"
                        ),
                    });
                }
            })
        }
    };
    let follow = match &p.follow_redirects {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !matches!(s.as_str(), "none" | "no" | "false"),
        _ => true,
    };
    let req = Request {
        url: p.url.clone(),
        method: p.method.to_ascii_uppercase(),
        headers,
        body,
        timeout_secs: p.timeout.unwrap_or(30),
        validate_certs: p.validate_certs,
        follow_redirects: follow,
        user: p.url_username,
        password: p.url_password,
        out_file: None,
        resume: false,
    };
    // Which client the host has decides the script and what goes on its stdin.
    let (curl, curl_in) = http::script(http::Tool::Curl, &req);
    let (py, py_in) = http::script(http::Tool::Python, &req);
    let probe = ctx.run(http::DETECT).await?;
    let (script, stdin) = match http::tool_in(&probe.stdout_str()) {
        http::Tool::Curl => (curl, curl_in),
        http::Tool::Python => (py, py_in),
        http::Tool::None => {
            return Ok(ModuleResult::failed(
                "the host has neither curl nor python3 to make requests with",
            ));
        }
    };
    let out = ctx.run_with_stdin(script, Some(stdin)).await?;
    let Some(resp) = http::parse(&out.stdout).filter(|r| r.tool_rc == 0 && r.status != 0) else {
        let why = http::parse(&out.stdout)
            .and_then(|r| r.error)
            .unwrap_or_else(|| out.stderr_str().trim().to_string());
        return Ok(
            ModuleResult::failed(format!("request to `{}` failed: {why}", p.url))
                .with("status", -1)
                .with("url", p.url.as_str()),
        );
    };
    let expected = if p.status_code.is_empty() {
        vec![200]
    } else {
        p.status_code
    };
    let mut r = ModuleResult::ok()
        .with("status", resp.status)
        .with("url", p.url.as_str());
    for (k, v) in &resp.headers {
        r = r.with(&k.replace('-', "_"), v.as_str());
    }
    let text = String::from_utf8_lossy(&resp.body).into_owned();
    let is_json = resp
        .headers
        .get("content-type")
        .is_some_and(|c| c.contains("json"));
    if is_json && let Ok(j) = serde_json::from_str::<Value>(&text) {
        r = r.with("json", j);
    }
    if p.return_content {
        r = r.with("content", text);
    }
    r.msg = Some(format!("OK ({} bytes)", resp.body.len()));
    if !expected.contains(&resp.status) {
        r.failed = true;
        r.msg = Some(format!(
            "status code was {} and not {:?}: {}",
            resp.status, expected, p.url
        ));
    }
    Ok(r)
}

/// `a=1&b=x%20y` from a mapping.
fn form_encode(m: &Map<String, Value>) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".into(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    m.iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{}={}", enc(k), enc(&v))
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn form_encoding() {
        let m = json!({"a": "x y", "b": 1, "c": "&="});
        assert_eq!(form_encode(m.as_object().unwrap()), "a=x+y&b=1&c=%26%3D");
    }
}
