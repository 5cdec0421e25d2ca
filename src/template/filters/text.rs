//! String filters: Python-flavoured regular expressions (`regex_replace`, `regex_search`,
//! `regex_findall`, `regex_escape`), base64, path parts and digests.
//!
//! Longer than most files: each filter is small, and the regex ones share the Python-to-Rust
//! pattern translation.

use base64::Engine;
use base64::engine::GeneralPurpose;
use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use crate::pyre::{self, Anchor, Flags, PyRegex, Template};
use crate::template::pyrepr;

fn text(value: &Value) -> Result<String, Error> {
    pyrepr::to_str(value)
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// Compile a Python `re` pattern with the filter's `ignorecase`/`multiline` flags.
fn compile(pattern: &str, ignorecase: bool, multiline: bool) -> Result<PyRegex, Error> {
    let flags = Flags {
        ignorecase,
        multiline,
        dotall: false,
    };
    PyRegex::with(pattern, flags, Anchor::Search)
        .map_err(|e| invalid(format!("invalid regular expression `{pattern}`: {e}")))
}

fn flags(kwargs: &Kwargs) -> Result<(bool, bool), Error> {
    Ok((
        kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false),
        kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false),
    ))
}

/// `regex_replace(pattern, replacement='', ignorecase, multiline, count, mandatory_count)`.
pub fn regex_replace(
    value: Value,
    pattern: Option<String>,
    repl: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let (ic, ml) = flags(&kwargs)?;
    let count = kwargs.get::<Option<usize>>("count")?.unwrap_or(0);
    let mandatory = kwargs.get::<Option<usize>>("mandatory_count")?.unwrap_or(0);
    kwargs.assert_all_used()?;
    let s = text(&value)?;
    let pattern = pattern.unwrap_or_default();
    let re = compile(&pattern, ic, ml)?;
    let repl = repl.unwrap_or_default();
    let template = Template::new(&repl, &re)
        .map_err(|e| invalid(format!("regex_replace: replacement `{repl}`: {e}")))?;
    let (out, subs) = re.subn(&s, &template, count);
    // Upstream's check is `mandatory_count != subs` (after at most `count` replacements).
    if mandatory > 0 && subs != mandatory {
        return Err(invalid(format!(
            "'{pattern}' should match {mandatory} times, but matches {subs} times in '{s}'"
        )));
    }
    Ok(out)
}

/// `regex_search(pattern, '\\1', '\\g<name>'...)`: the match (or the named groups as a
/// list), `None` when nothing matches.
pub fn regex_search(
    value: Value,
    pattern: String,
    groups: Rest<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (ic, ml) = flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let s = text(&value)?;
    let re = compile(&pattern, ic, ml)?;
    let Some(caps) = re.search(&s) else {
        return Ok(Value::from(()));
    };
    if groups.is_empty() {
        return Ok(Value::from(caps.as_str()));
    }
    let mut out = Vec::new();
    for g in groups.iter() {
        let index = if let Some(n) = g.strip_prefix("\\g<").and_then(|r| r.strip_suffix('>')) {
            match n.parse::<usize>() {
                Ok(i) => Some(i),
                Err(_) => re.group_index(n),
            }
        } else if let Some(n) = g.strip_prefix('\\').and_then(|n| n.parse::<usize>().ok()) {
            Some(n)
        } else {
            return Err(invalid(format!(
                "regex_search: unknown group argument `{g}`"
            )));
        };
        // Python's `Match.group` refuses a group the pattern does not have.
        let Some(i) = index.filter(|i| *i <= re.groups()) else {
            return Err(invalid(format!("regex_search: no such group `{g}`")));
        };
        out.push(caps.get(i).map_or(Value::from(()), Value::from));
    }
    Ok(Value::from(out))
}

/// `regex_findall(pattern)`: every match; the group when there is one, a list of groups
/// when there are several (Python's `re.findall`).
pub fn regex_findall(value: Value, pattern: String, kwargs: Kwargs) -> Result<Value, Error> {
    let (ic, ml) = flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let s = text(&value)?;
    let re = compile(&pattern, ic, ml)?;
    let groups = re.groups();
    let out: Vec<Value> = re
        .matches(&s)
        .iter()
        .map(|c| {
            let get = |i: usize| Value::from(c.get(i).unwrap_or(""));
            match groups {
                0 => get(0),
                1 => get(1),
                n => Value::from((1..=n).map(get).collect::<Vec<_>>()),
            }
        })
        .collect();
    Ok(Value::from(out))
}

/// `regex_escape`: Python's `re.escape`.
/// `regex_escape(re_type='python')`: Python's `re.escape`, or for `posix_basic` a backslash
/// before each of `].[^$*\` (ansible-core's filter; `posix_extended` it has not implemented).
pub fn regex_escape(
    value: Value,
    re_type: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let re_type = match kwargs.get::<Option<String>>("re_type")? {
        Some(t) => t,
        None => re_type.unwrap_or_else(|| "python".into()),
    };
    kwargs.assert_all_used()?;
    let s = text(&value)?;
    match re_type.as_str() {
        "python" => Ok(pyre::escape(&s)),
        "posix_basic" => Ok(s
            .chars()
            .fold(String::with_capacity(s.len()), |mut out, c| {
                if matches!(c, ']' | '.' | '[' | '^' | '$' | '*' | '\\') {
                    out.push('\\');
                }
                out.push(c);
                out
            })),
        "posix_extended" => Err(invalid(format!(
            "Regex type ({re_type}) not yet implemented"
        ))),
        _ => Err(invalid(format!("Invalid regex type ({re_type})"))),
    }
}

/// `b64encode(encoding='utf-8', urlsafe=False)` and `b64decode(...)`'s arguments, positional or
/// named: the codec, its name as written, and the alphabet (`urlsafe`: `-_` for `+/`).
fn b64_args(
    encoding: Option<String>,
    urlsafe: Option<bool>,
    kwargs: &Kwargs,
) -> Result<(crate::codec::Codec, String, &'static GeneralPurpose), Error> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    let encoding = match kwargs.get::<Option<String>>("encoding")? {
        Some(e) => e,
        None => encoding.unwrap_or_else(|| "utf-8".into()),
    };
    let urlsafe = kwargs.get::<Option<bool>>("urlsafe")?.or(urlsafe) == Some(true);
    kwargs.assert_all_used()?;
    let codec = crate::codec::Codec::lookup(&encoding)
        .ok_or_else(|| invalid(format!("unknown encoding: {encoding}")))?;
    Ok((codec, encoding, if urlsafe { &URL_SAFE } else { &STANDARD }))
}

/// `b64encode`: the text's bytes in `encoding` as base64, as ansible-core's filter.
pub fn b64encode(
    value: Value,
    encoding: Option<String>,
    urlsafe: Option<bool>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let (codec, name, engine) = b64_args(encoding, urlsafe, &kwargs)?;
    let bytes = codec
        .encode(&text(&value)?, &name)
        .map_err(|e| invalid(e.to_string()))?;
    Ok(engine.encode(bytes))
}

/// `b64decode`: base64 to bytes, read as `encoding` text (strictly, as Python's `to_text`
/// with ansible-core's `surrogate_or_strict`).
pub fn b64decode(
    value: Value,
    encoding: Option<String>,
    urlsafe: Option<bool>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let (codec, name, engine) = b64_args(encoding, urlsafe, &kwargs)?;
    let s = text(&value)?;
    let bytes = engine
        .decode(s.trim())
        .map_err(|e| invalid(format!("b64decode: `{s}` is not base64: {e}")))?;
    match codec {
        // UTF-8 as kinit always read it: invalid sequences replaced, not refused.
        crate::codec::Codec::Utf8 => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        codec => codec.decode(&bytes).map_err(|at| {
            invalid(format!(
                "'{name}' codec can't decode byte 0x{:02x} in position {at}",
                bytes.get(at).copied().unwrap_or_default()
            ))
        }),
    }
}

/// `basename`: Python's `os.path.basename`.
pub fn basename(value: Value) -> Result<String, Error> {
    let s = text(&value)?;
    Ok(s.rsplit('/').next().unwrap_or_default().to_string())
}

/// `comment(style='plain')`: `text` as a comment block for a configuration file, the way
/// Ansible's filter lays it out: an opening line of the bare marker, every line of the text
/// behind the marker, a closing line of the bare marker (`#`, `# text`, `#` for `plain`).
/// Styles: `plain` (`# `), `erlang` (`% `), `c` (`// `), `cblock` (`/*`, ` * `, ` */`) and
/// `xml` (`<!--`, ` - `, `-->`); `decoration`, `prefix`, `postfix`, `beginning`, `end`,
/// `prefix_count`, `postfix_count` and `newline` override a style's parts.
pub fn comment(value: Value, style: Option<String>, kwargs: Kwargs) -> Result<String, Error> {
    let text = text(&value)?;
    let style = match style {
        Some(s) => s,
        None => kwargs
            .get::<Option<String>>("style")?
            .unwrap_or_else(|| "plain".into()),
    };
    let (beginning, decoration, end) = match style.as_str() {
        "plain" => ("", "# ", ""),
        "erlang" => ("", "% ", ""),
        "c" => ("", "// ", ""),
        "cblock" => ("/*", " * ", " */"),
        "xml" => ("<!--", " - ", "-->"),
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("Invalid style '{other}'."),
            ));
        }
    };
    let get = |k: &str, d: &str| -> Result<String, Error> {
        Ok(kwargs
            .get::<Option<String>>(k)?
            .unwrap_or_else(|| d.to_string()))
    };
    let decoration = get("decoration", decoration)?;
    let newline = get("newline", "\n")?;
    let beginning = get("beginning", beginning)?;
    let end = get("end", end)?;
    let prefix = get("prefix", decoration.trim_end())?;
    let postfix = get("postfix", decoration.trim_end())?;
    let prefix_count = kwargs.get::<Option<usize>>("prefix_count")?.unwrap_or(1);
    let postfix_count = kwargs.get::<Option<usize>>("postfix_count")?.unwrap_or(1);
    kwargs.assert_all_used()?;
    let mut out = String::new();
    if !beginning.is_empty() {
        out.push_str(&beginning);
        out.push_str(&newline);
    }
    if !prefix.is_empty() {
        for _ in 0..prefix_count {
            if prefix != newline {
                out.push_str(&prefix);
            }
            out.push_str(&newline);
        }
    }
    let body = format!("{decoration}{text}").replace(&newline, &format!("{newline}{decoration}"));
    // A line that holds only the marker keeps no trailing space.
    let bare = format!("{decoration}{newline}");
    out.push_str(&body.replace(&bare, &format!("{}{newline}", decoration.trim_end())));
    for _ in 0..postfix_count {
        out.push_str(&newline);
        out.push_str(&postfix);
    }
    if !end.is_empty() {
        out.push_str(&newline);
        out.push_str(&end);
    }
    Ok(out)
}

/// `expanduser`: a leading `~` or `~/` becomes `$HOME` of the machine kinit runs on (the
/// controller, where Ansible's filters run too); `~user` is left alone.
pub fn expanduser(value: Value) -> Result<String, Error> {
    let s = text(&value)?;
    let home = std::env::var("HOME").unwrap_or_default();
    Ok(match s.strip_prefix('~') {
        Some("") if !home.is_empty() => home,
        Some(rest) if rest.starts_with('/') && !home.is_empty() => format!("{home}{rest}"),
        _ => s,
    })
}

/// `realpath`: Python's `os.path.realpath` on the controller (symlinks resolved where the
/// path exists; otherwise the path made absolute).
pub fn realpath(value: Value) -> Result<String, Error> {
    let s = text(&value)?;
    let p = std::path::Path::new(&s);
    Ok(match std::fs::canonicalize(p) {
        Ok(r) => r.display().to_string(),
        Err(_) => std::path::absolute(p)
            .map(|a| a.display().to_string())
            .unwrap_or(s),
    })
}

/// `relpath(start=cwd)`: Python's `os.path.relpath`, worked out on the text alone: both
/// paths made absolute against the working folder and normalised (`.`, `..`, doubled
/// slashes), then `..` for each of `start`'s own parts and the rest of the path.
pub fn relpath(value: Value, start: Option<Value>) -> Result<String, Error> {
    let path = text(&value)?;
    if path.is_empty() {
        return Err(Error::new(
            minijinja::ErrorKind::InvalidOperation,
            "relpath: no path specified",
        ));
    }
    let start = match start {
        Some(s) => text(&s)?,
        None => ".".to_string(),
    };
    let parts = |p: &str| -> Vec<String> {
        let cwd = std::env::current_dir()
            .map(|c| c.display().to_string())
            .unwrap_or_default();
        let full = if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{cwd}/{p}")
        };
        let mut out: Vec<String> = Vec::new();
        for c in full.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                c => out.push(c.to_string()),
            }
        }
        out
    };
    let (p, s) = (parts(&path), parts(&start));
    let common = p.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let rel: Vec<String> = std::iter::repeat_n("..".to_string(), s.len() - common)
        .chain(p[common..].iter().cloned())
        .collect();
    Ok(if rel.is_empty() {
        ".".to_string()
    } else {
        rel.join("/")
    })
}

/// `splitext`: Python's `os.path.splitext`, `[root, ext]` (a leading dot is not an extension).
pub fn splitext(value: Value) -> Result<Value, Error> {
    let s = text(&value)?;
    let name_start = s.rfind('/').map_or(0, |i| i + 1);
    let name = &s[name_start..];
    let stem_dots = name.len() - name.trim_start_matches('.').len();
    let split = name[stem_dots..]
        .rfind('.')
        .map(|i| name_start + stem_dots + i);
    Ok(match split {
        Some(i) => Value::from(vec![s[..i].to_string(), s[i..].to_string()]),
        None => Value::from(vec![s.clone(), String::new()]),
    })
}

/// `dirname`: Python's `os.path.dirname` (trailing slashes of the head dropped).
pub fn dirname(value: Value) -> Result<String, Error> {
    let s = text(&value)?;
    let head = match s.rfind('/') {
        Some(i) => &s[..=i],
        None => "",
    };
    if !head.is_empty() && head.chars().any(|c| c != '/') {
        return Ok(head.trim_end_matches('/').to_string());
    }
    Ok(head.to_string())
}

/// A hex digest of `data` with a named algorithm.
pub fn digest(algorithm: &str, data: &[u8]) -> Result<String, Error> {
    use sha2::Digest;
    Ok(match algorithm {
        "md5" => hex::encode(<md5::Md5 as md5::Digest>::digest(data)),
        "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "sha224" => hex::encode(sha2::Sha224::digest(data)),
        "sha256" => hex::encode(sha2::Sha256::digest(data)),
        "sha384" => hex::encode(sha2::Sha384::digest(data)),
        "sha512" => hex::encode(sha2::Sha512::digest(data)),
        // Python's `hashlib.new` words (ansible-core's `get_hash` passes them on).
        other => return Err(invalid(format!("unsupported hash type {other}"))),
    })
}

/// `hash(algorithm='sha1')`.
pub fn hash(value: Value, algorithm: Option<String>) -> Result<String, Error> {
    digest(
        algorithm.as_deref().unwrap_or("sha1"),
        text(&value)?.as_bytes(),
    )
}

/// `checksum` and `sha1`.
pub fn sha1(value: Value) -> Result<String, Error> {
    digest("sha1", text(&value)?.as_bytes())
}

pub fn md5(value: Value) -> Result<String, Error> {
    digest("md5", text(&value)?.as_bytes())
}

/// `password_hash(hashtype='sha512', salt=None, rounds=None)`: crypt(3) SHA-512 (`$6$`) or
/// SHA-256 (`$5$`) hashes as `/etc/shadow` holds them; a random salt when none is given.
pub fn password_hash(
    value: Value,
    hashtype: Option<String>,
    salt: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let rounds = kwargs.get::<Option<usize>>("rounds")?;
    let salt = kwargs.get::<Option<String>>("salt")?.or(salt);
    let hashtype = kwargs.get::<Option<String>>("hashtype")?.or(hashtype);
    let salt_size = match kwargs.get::<Option<Value>>("salt_size")? {
        None => 16,
        Some(v) => v
            .as_usize()
            .filter(|_| v.is_integer())
            .ok_or_else(|| invalid("salt_size must be an integer".into()))?,
    };
    kwargs.assert_all_used()?;
    let password = text(&value)?;
    let salt = match salt {
        Some(s) => s,
        None => random_salt(salt_size)?,
    };
    crypt(
        &password,
        hashtype.as_deref().unwrap_or("sha512"),
        &salt,
        rounds,
    )
}

/// `password` hashed as `password_hash(kind, salt)` does with its default rounds (the
/// `password` lookup's `encrypt`).
pub fn hash_password(password: &str, kind: &str, salt: &str) -> Result<String, Error> {
    crypt(password, kind, salt, None)
}

fn crypt(password: &str, kind: &str, salt: &str, rounds: Option<usize>) -> Result<String, Error> {
    let n = rounds.unwrap_or(sha_crypt::ROUNDS_DEFAULT);
    // passlib's words, which ansible-core passes on.
    let algorithm = kind.trim_end_matches("_crypt");
    let bad_rounds = |_| {
        let why = match n < sha_crypt::ROUNDS_MIN {
            true => format!("min_desired_rounds ({n}) is too low, must be at least 1000"),
            false => format!("max_desired_rounds ({n}) is too high, must be at most 999999999"),
        };
        invalid(format!(
            "Could not hash the secret: {algorithm}_crypt: {why}"
        ))
    };
    let (id, hash) = match kind {
        "sha512" | "sha512_crypt" => {
            let p = sha_crypt::Sha512Params::new(n).map_err(bad_rounds)?;
            let h = sha_crypt::sha512_crypt_b64(password.as_bytes(), salt.as_bytes(), &p);
            ("6", h)
        }
        "sha256" | "sha256_crypt" => {
            let p = sha_crypt::Sha256Params::new(n).map_err(bad_rounds)?;
            let h = sha_crypt::sha256_crypt_b64(password.as_bytes(), salt.as_bytes(), &p);
            ("5", h)
        }
        "md5" | "md5_crypt" | "blowfish" | "bcrypt" => {
            return Err(invalid(format!(
                "password_hash: kinit hashes with sha512 and sha256 only, not {other}",
                other = kind
            )));
        }
        other => {
            return Err(invalid(format!(
                "{other} is not in the list of supported passlib algorithms: md5, blowfish, \
                 sha256, sha512"
            )));
        }
    };
    let hash = hash.map_err(|e| invalid(format!("password_hash failed: {e:?}")))?;
    let salt: String = salt.chars().take(16).collect();
    Ok(match rounds {
        Some(r) if r != sha_crypt::ROUNDS_DEFAULT => format!("${id}$rounds={r}${salt}${hash}"),
        _ => format!("${id}${salt}${hash}"),
    })
}

/// `size` characters from crypt's alphabet, from the kernel's random source.
fn random_salt(size: usize) -> Result<String, Error> {
    use std::io::Read;
    const ALPHABET: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut bytes = vec![0u8; size];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| invalid(format!("password_hash: no random salt: {e}")))?;
    Ok(bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect())
}

/// Python's `type(x)` as printed: `<class 'bool'>`.
fn py_class(v: &Value) -> String {
    format!("<class '{}'>", super::core::type_debug(v.clone()))
}

/// `path_join`: Python's `os.path.join` of a list of parts (a later absolute part starts
/// over); a string is returned as it is.
pub fn path_join(value: Value) -> Result<String, Error> {
    if let Some(s) = value.as_str() {
        return Ok(s.to_string());
    }
    if !matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "|path_join expects string or sequence, got {} instead.",
                py_class(&value)
            ),
        ));
    }
    let mut out = String::new();
    for (i, part) in value.try_iter()?.enumerate() {
        let part = text(&part)?;
        if i == 0 || part.starts_with('/') {
            out = part;
        } else {
            if !out.is_empty() && !out.ends_with('/') {
                out.push('/');
            }
            out.push_str(&part);
        }
    }
    Ok(out)
}

/// `commonpath`: Python's `os.path.commonpath`, the longest common sub-path of the paths in a
/// list (all absolute or all relative).
pub fn commonpath(value: Value) -> Result<String, Error> {
    if !matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "|commonpath expects sequence, got {} instead.",
                py_class(&value)
            ),
        ));
    }
    let paths: Vec<String> = value
        .try_iter()?
        .map(|p| text(&p))
        .collect::<Result<_, _>>()?;
    let Some(first) = paths.first() else {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "commonpath() arg is an empty sequence",
        ));
    };
    let absolute = first.starts_with('/');
    if paths.iter().any(|p| p.starts_with('/') != absolute) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "Can't mix absolute and relative paths",
        ));
    }
    let parts = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_string)
            .collect()
    };
    let mut common = parts(first);
    for p in &paths[1..] {
        let other = parts(p);
        let same = common
            .iter()
            .zip(&other)
            .take_while(|(a, b)| a == b)
            .count();
        common.truncate(same);
    }
    let joined = common.join("/");
    Ok(if absolute {
        format!("/{joined}")
    } else {
        joined
    })
}

#[cfg(test)]
mod tests {
    use minijinja::Value;

    #[test]
    fn password_hashes_match_crypt() {
        // Expected values from `openssl passwd -6 -salt saltsalt x` (and `-5`).
        let h = |t: &str| {
            let env = minijinja::Environment::new();
            let mut env = env;
            env.add_filter("password_hash", super::password_hash);
            env.render_str(t, minijinja::context! { pw => Value::from("x") })
                .unwrap()
        };
        assert_eq!(
            h("{{ pw | password_hash('sha512', 'saltsalt') }}"),
            "$6$saltsalt$8RWsOfwR6M6PpnoeQiEiWzNTPo1f0HjVYjDnLZhGx16aBFRkeqiHAzfXP/LgrOWMBMXqiU2pLrXsSOHNUyUm91"
        );
        assert_eq!(
            h("{{ pw | password_hash('sha256', salt='saltsalt') }}"),
            "$5$saltsalt$hcyDOxdIg0p3xyqtpHh/v8Ph.am06tQaovp1KpEklb7"
        );
        let random = h("{{ pw | password_hash }}");
        assert!(
            random.starts_with("$6$") && random.len() == 3 + 16 + 1 + 86,
            "{random}"
        );
        assert_ne!(random, h("{{ pw | password_hash }}"));
    }

    #[test]
    fn regex_filters_take_python_back_references_and_look_around() {
        let mut env = minijinja::Environment::new();
        env.add_filter("regex_replace", super::regex_replace);
        env.add_filter("regex_search", super::regex_search);
        env.add_filter("regex_findall", super::regex_findall);
        let r = |t: &str| {
            env.render_str(t, minijinja::context! {})
                .map_err(|e| e.to_string())
        };
        // Expected values from CPython 3.11's `re`.
        assert_eq!(
            r(r#"{{ 'a=1 b=2' | regex_replace('(?P<k>\\w)=(\\d)', '\\g<2>:\\g<k>$') }}"#),
            Ok("1:a$ 2:b$".into())
        );
        assert_eq!(
            r(r#"{{ 'aa ab bb' | regex_findall('(\\w)\\1') }}"#),
            Ok("['a', 'b']".replace('\'', "\""))
        );
        assert_eq!(
            r(r#"{{ 'foobar foobaz' | regex_search('foo(?!bar)\\w+') }}"#),
            Ok("foobaz".into())
        );
        assert!(
            r(r#"{{ 'x' | regex_replace('x', 'y', mandatory_count=2) }}"#)
                .unwrap_err()
                .contains("'x' should match 2 times, but matches 1 times in 'x'")
        );
    }
}
