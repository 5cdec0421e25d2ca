//! URL filters: `urldecode` (Python's `urllib.parse.unquote_plus`) and `urlsplit` (the
//! parts of Python's `urllib.parse.urlsplit`, as ansible-core's plugins/filter/urlsplit.py
//! hands them out), and Jinja's `urlencode`, which also takes a dictionary or a sequence of
//! pairs (`a=1&b=2`).

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};

use crate::template::pyrepr;

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// `unquote_plus`: `+` is a space, `%XX` a byte; the bytes are read as UTF-8 with
/// replacement characters, and a `%` not followed by two hex digits stays as it is.
pub fn urldecode(value: Value) -> Result<String, Error> {
    let s = pyrepr::to_str(&value)?;
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'+' {
            out.push(b' ');
        } else if c == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 2;
        } else {
            out.push(c);
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Jinja's `url_quote`: Python's `quote` of the UTF-8 bytes of `str(value)`, keeping
/// letters, digits and `_.-~` (and `/` outside a query string, where a space is `+`).
fn quote(value: &Value, for_qs: bool) -> Result<String, Error> {
    let text = pyrepr::to_str(value)?;
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~".contains(&b) || (!for_qs && b == b'/') {
            out.push(char::from(b));
        } else if for_qs && b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// `urlencode`: a string (or any non-sequence) quoted; a dictionary's items, or a sequence
/// of pairs, as `k=v` joined with `&`.
pub fn urlencode(value: Value) -> Result<String, Error> {
    let pairs: Vec<(Value, Value)> = match value.kind() {
        ValueKind::Map => value
            .try_iter()?
            .map(|k| value.get_item(&k).map(|v| (k, v)))
            .collect::<Result<_, _>>()?,
        ValueKind::Seq | ValueKind::Iterable => value
            .try_iter()?
            .map(|pair| Ok((pair.get_item_by_index(0)?, pair.get_item_by_index(1)?)))
            .collect::<Result<_, Error>>()?,
        _ => return quote(&value, false),
    };
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| Ok(format!("{}={}", quote(k, true)?, quote(v, true)?)))
        .collect::<Result<_, Error>>()?;
    Ok(parts.join("&"))
}

/// The scheme (lower-cased), netloc and the rest of `url`, as Python's `urlsplit` cuts them
/// (C0 controls and spaces around it dropped, tabs and line breaks inside it too).
fn scheme_netloc(url: &str) -> (String, String, String) {
    let url: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut rest = url.as_str();
    let mut scheme = String::new();
    if let Some(i) = rest.find(':')
        && rest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
        && rest[..i]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        scheme = rest[..i].to_ascii_lowercase();
        rest = &rest[i + 1..];
    }
    let mut netloc = "";
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        netloc = &after[..end];
        rest = &after[end..];
    }
    (scheme, netloc.to_string(), rest.to_string())
}

/// Python's `urlsplit` result: scheme, netloc, path, query, fragment and the netloc's
/// username, password, hostname (lowercased) and port (an integer).
fn split(url: &str) -> Result<Vec<(&'static str, Value)>, Error> {
    let (scheme, netloc, rest) = scheme_netloc(url);
    let (netloc, rest) = (netloc.as_str(), rest.as_str());
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (userinfo, hostport) = match netloc.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, netloc),
    };
    let (username, password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((n, p)) => (Value::from(n), Value::from(p)),
            None => (Value::from(u), Value::from(())),
        },
        None => (Value::from(()), Value::from(())),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']').unwrap_or((v6, ""));
        (h, after.strip_prefix(':'))
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let hostname = if host.is_empty() {
        Value::from(())
    } else {
        Value::from(host.to_lowercase())
    };
    let port = match port.filter(|p| !p.is_empty()) {
        None => Value::from(()),
        // Python's words.
        Some(p) if !p.chars().all(|c| c.is_ascii_digit()) => {
            return Err(invalid(format!(
                "Port could not be cast to integer value as '{p}'"
            )));
        }
        Some(p) => match p.parse::<u16>() {
            Ok(n) => Value::from(n),
            Err(_) => return Err(invalid("Port out of range 0-65535".into())),
        },
    };
    // Sorted by name, as upstream's `object_to_dict` lists them.
    Ok(vec![
        ("fragment", Value::from(fragment)),
        ("hostname", hostname),
        ("netloc", Value::from(netloc)),
        ("password", password),
        ("path", Value::from(path)),
        ("port", port),
        ("query", Value::from(query)),
        ("scheme", Value::from(scheme)),
        ("username", username),
    ])
}

/// The `uri` test (ansible-core's plugins/test/uri.py): anything `urlparse` takes is a URI,
/// so only a scheme outside `schemes` (when given) makes a string fail it.
pub fn is_uri(value: Value, schemes: Option<Value>) -> Result<bool, Error> {
    let (scheme, _, _) = scheme_netloc(&pyrepr::to_str(&value)?);
    Ok(match schemes.filter(|s| s.is_true()) {
        None => true,
        Some(list) => list
            .try_iter()?
            .any(|s| s.as_str() == Some(scheme.as_str())),
    })
}

/// The `url` test: a URI with a netloc, or a `file` one.
pub fn is_url(value: Value, schemes: Option<Value>) -> Result<bool, Error> {
    if !is_uri(value.clone(), schemes)? {
        return Ok(false);
    }
    let (scheme, netloc, _) = scheme_netloc(&pyrepr::to_str(&value)?);
    Ok(!netloc.is_empty() || scheme == "file")
}

/// The `urn` test: a URI whose scheme is `urn`.
pub fn is_urn(value: Value) -> Result<bool, Error> {
    is_uri(value, Some(Value::from(vec!["urn"])))
}

/// `urlsplit(query='')`: the dictionary of parts, or the one part named.
pub fn urlsplit(value: Value, query: Option<String>) -> Result<Value, Error> {
    let parts = split(&pyrepr::to_str(&value)?)?;
    match query.filter(|q| !q.is_empty()) {
        None => Ok(Value::from_iter(parts)),
        Some(q) => parts
            .into_iter()
            .find(|(k, _)| *k == q)
            .map(|(_, v)| v)
            // Upstream's words.
            .ok_or_else(|| invalid(format!("urlsplit: unknown URL component: {q}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urldecode_is_unquote_plus() {
        let d = |s: &str| urldecode(Value::from(s)).unwrap();
        assert_eq!(d("a+b%20c%C3%A9"), "a b cé");
        assert_eq!(d("100%"), "100%");
        assert_eq!(d("%zz%4"), "%zz%4");
        assert_eq!(d("%ff"), "\u{fffd}");
    }

    #[test]
    fn urlencode_as_jinja() {
        let e = |v: Value| urlencode(v).unwrap();
        assert_eq!(e(Value::from("a b/é&")), "a%20b/%C3%A9%26");
        let m = Value::from_iter([("foo", "b r"), ("x/y", "1")]);
        assert_eq!(e(m), "foo=b+r&x%2Fy=1");
        assert_eq!(e(Value::from(Vec::<Value>::new())), "");
        let pairs = Value::from(vec![
            Value::from(vec!["a", "1"]),
            Value::from(vec!["b", "2"]),
        ]);
        assert_eq!(e(pairs), "a=1&b=2");
        assert_eq!(e(Value::from(42)), "42");
    }

    #[test]
    fn uri_tests_as_pythons_urlparse_reads_them() {
        let s = |v: &str| Value::from(v);
        let special = || Some(Value::from(vec!["http", "https", "file"]));
        assert!(is_uri(s("asldkfjh"), None).unwrap());
        assert!(!is_uri(s("asldkfjh"), special()).unwrap());
        assert!(is_uri(s("admin:secret@example.com"), None).unwrap());
        assert!(!is_url(s("admin:secret@example.com"), None).unwrap());
        assert!(is_url(s("file://etc/hosts"), special()).unwrap());
        assert!(is_url(s("ftp:// searchengine.tld"), None).unwrap());
        assert!(!is_url(s("htp://x.tld"), special()).unwrap());
        assert!(!is_url(s("urn:isbn:9780307476463"), None).unwrap());
        assert!(is_urn(s("URN:isbn:9780307476463")).unwrap());
        assert!(!is_urn(s("ftps://a:b@example.com")).unwrap());
    }

    #[test]
    fn urlsplit_parts() {
        let u = "HTTP://Mary:Secret@WWW.acme.com:9000/dir/x.html?q=t#frag";
        let get = |q: &str| urlsplit(Value::from(u), Some(q.into())).unwrap();
        assert_eq!(get("scheme"), Value::from("http"));
        assert_eq!(get("hostname"), Value::from("www.acme.com"));
        assert_eq!(get("netloc"), Value::from("Mary:Secret@WWW.acme.com:9000"));
        assert_eq!(get("port"), Value::from(9000));
        assert_eq!(get("username"), Value::from("Mary"));
        assert_eq!(get("password"), Value::from("Secret"));
        assert_eq!(get("path"), Value::from("/dir/x.html"));
        assert_eq!(get("query"), Value::from("q=t"));
        assert_eq!(get("fragment"), Value::from("frag"));
        let v6 = urlsplit(Value::from("http://[::1]:80/"), Some("hostname".into())).unwrap();
        assert_eq!(v6, Value::from("::1"));
        let bare = urlsplit(Value::from("/just/a/path"), Some("port".into())).unwrap();
        assert!(bare.is_none());
        let e = urlsplit(Value::from(u), Some("bad".into())).unwrap_err();
        assert!(
            e.to_string()
                .contains("urlsplit: unknown URL component: bad")
        );
        let e = urlsplit(Value::from("http://h:x/"), Some("port".into())).unwrap_err();
        assert!(e.to_string().contains("Port could not be cast"));
    }
}
