//! The `password` lookup, as ansible-core's `plugins/lookup/password.py`: a term is a path
//! and `k=v` options (`length`, `chars`, `seed`, `encrypt`, `ident`). A file that exists gives
//! its password (its first part, before ` salt=`); otherwise a new random one is made and,
//! unless the path is `/dev/null`, saved there (folders made `0700`, the file `0600`) so every
//! later run gets the same. A relative path is taken from the playbook's folder (the loader's
//! `path_dwim`). With `encrypt`, the password comes back hashed with a salt kept in the file.
//!
//! `seed` gives the very password Ansible gives: Python's `random.Random(seed).choice`, that is
//! MT19937 seeded from the seed's bytes and their SHA-512, is reproduced here. A number given
//! as a keyword argument (`seed=7`) seeds as Python's number does; ansible-core 2.19 gives a
//! different password for it on every run, kinit the same one.
//! Reading, making and saving a password is done under one lock, so hosts asking for the same
//! file at once all get the one saved.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::pyrandom::{PyRandom, system_below};
use minijinja::Error;

/// ansible-core's default `chars`: letters, digits and `.,:-_`.
const DEFAULT_CHARS: &[&str] = &["ascii_letters", "digits", ".,:-_"];
const DEFAULT_LENGTH: usize = 20;

fn invalid(msg: String) -> Error {
    Error::new(minijinja::ErrorKind::InvalidOperation, msg)
}

/// A `seed` as Python's `random.Random` takes it: text (a `k=v` term's, or a string) or a
/// whole number (a number given as a keyword argument), which seed differently.
#[derive(Debug, Clone, PartialEq)]
pub enum Seed {
    Text(String),
    Int(i128),
}

/// The options of one term (after keyword arguments, which a term's own `k=v` override).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub length: Option<usize>,
    pub chars: Option<Vec<String>>,
    pub seed: Option<Seed>,
    pub encrypt: Option<String>,
    pub ident: Option<String>,
}

impl Options {
    /// Set option `key` from its text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        match key {
            "length" => {
                self.length = Some(value.trim().parse().map_err(|_| {
                    invalid(format!("password lookup: length `{value}` is not a number"))
                })?)
            }
            "chars" => self.chars = Some(split_chars(value)),
            "seed" => self.seed = Some(Seed::Text(value.to_string())),
            // An empty `encrypt` is none, as Python reads it.
            "encrypt" => self.encrypt = Some(value.to_string()).filter(|v| !v.is_empty()),
            "ident" => self.ident = Some(value.to_string()),
            other => {
                return Err(invalid(format!(
                    "Unrecognized parameter(s) given to password lookup: {other}"
                )));
            }
        }
        Ok(())
    }
}

/// `chars=ascii_letters,digits,,` as ansible-core splits it: on commas, `,,` being a comma.
fn split_chars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.contains(",,") {
        out.push(",".to_string());
    }
    out.extend(
        text.replace(",,", ",")
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    );
    out
}

/// The path and options of a term: `path k=v...` (a path may hold spaces before the options).
pub fn parse_term(term: &str, base: Options) -> Result<(String, Options), Error> {
    let mut opts = base;
    let Some((first, rest)) = term.split_once(' ') else {
        return Ok((term.to_string(), opts));
    };
    let mut path = first.to_string();
    let mut seen_option = false;
    for word in super::kv::split_kv(rest) {
        match word.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                opts.set(k, &super::kv::unquote(v))?;
                seen_option = true;
            }
            _ if seen_option => {
                return Err(invalid(
                    "Unrecognized value after key=value parameters given to password lookup".into(),
                ));
            }
            _ => {
                path.push(' ');
                path.push_str(&word);
            }
        }
    }
    Ok((path, opts))
}

/// Python's `string` constants by name; any other text stands for its own characters.
fn char_set(spec: &str) -> &str {
    match spec {
        "ascii_letters" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "ascii_lowercase" => "abcdefghijklmnopqrstuvwxyz",
        "ascii_uppercase" => "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "digits" => "0123456789",
        "hexdigits" => "0123456789abcdefABCDEF",
        "octdigits" => "01234567",
        "punctuation" => "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
        "whitespace" => " \t\n\r\x0b\x0c",
        "printable" => {
            "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n\r\x0b\x0c"
        }
        other => other,
    }
}

/// The candidate characters, quotes taken out (`_gen_candidate_chars`).
fn candidates(specs: &[String]) -> Vec<char> {
    specs
        .iter()
        .flat_map(|s| char_set(s).chars())
        .filter(|c| *c != '"' && *c != '\'')
        .collect()
}

/// One term's password. `base` is the playbook's folder, for a relative path.
pub fn lookup(term: &str, base_opts: Options, base: &Path) -> Result<String, Error> {
    static LOCK: Mutex<()> = Mutex::new(());
    let (rel, opts) = parse_term(term, base_opts)?;
    let path = if Path::new(&rel).is_absolute() {
        PathBuf::from(&rel)
    } else {
        base.join(&rel)
    };
    let chars = candidates(
        opts.chars.as_deref().unwrap_or(
            &DEFAULT_CHARS
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        ),
    );
    if chars.is_empty() {
        return Err(invalid(
            "password lookup: `chars` leaves no characters".into(),
        ));
    }
    let length = opts.length.unwrap_or(DEFAULT_LENGTH);
    let dev_null = path == Path::new("/dev/null");
    let _held = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let content = if dev_null {
        None
    } else {
        match std::fs::read(&path) {
            Ok(b) => Some(String::from_utf8_lossy(&b).trim_end().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(invalid(format!(
                    "password lookup: cannot read {}: {e}",
                    path.display()
                )));
            }
        }
    };
    let (password, mut salt, mut changed) = match &content {
        Some(c) => {
            let (p, s) = parse_content(c);
            (p, s, false)
        }
        None => (
            random_password(length, &chars, opts.seed.as_ref())?,
            None,
            true,
        ),
    };
    if let Some(e) = &opts.encrypt {
        hash_kind(e)?;
        if salt.is_none() {
            salt = Some(random_password(
                16,
                &candidates(&["./".into(), "ascii_letters".into(), "digits".into()]),
                None,
            )?);
            changed = true;
        }
    }
    if changed && !dev_null {
        write_file(&path, &password, salt.as_deref(), opts.encrypt.is_some())?;
    }
    match (&opts.encrypt, salt) {
        (Some(kind), Some(salt)) => {
            super::filters::text::hash_password(&password, hash_kind(kind)?, &salt)
        }
        _ => Ok(password),
    }
}

/// The `password_hash` type for an `encrypt` value kinit can compute.
fn hash_kind(encrypt: &str) -> Result<&'static str, Error> {
    match encrypt {
        "sha512_crypt" => Ok("sha512"),
        "sha256_crypt" => Ok("sha256"),
        other => Err(invalid(format!(
            "password lookup: encrypt `{other}` is not supported by kinit, expected \
             sha512_crypt or sha256_crypt"
        ))),
    }
}

/// `password salt=SALT` (`ident=` after it is dropped: kinit's hashes take none).
fn parse_content(content: &str) -> (String, Option<String>) {
    match content.rfind(" salt=") {
        Some(i) => {
            let salt = &content[i + " salt=".len()..];
            let salt = salt.split(" ident=").next().unwrap_or(salt);
            (content[..i].to_string(), Some(salt.to_string()))
        }
        None => (content.to_string(), None),
    }
}

fn write_file(
    path: &Path,
    password: &str,
    salt: Option<&str>,
    keep_salt: bool,
) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let fail = |e: std::io::Error| {
        invalid(format!(
            "password lookup: cannot write {}: {e}",
            path.display()
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
    }
    let content = match salt.filter(|_| keep_salt) {
        Some(s) => format!("{password} salt={s}\n"),
        None => format!("{password}\n"),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(fail)?;
    f.write_all(content.as_bytes()).map_err(fail)
}

/// `length` characters picked from `chars`: from the system's randomness, or with `seed` as
/// Python's `random.Random(seed)` picks them.
fn random_password(length: usize, chars: &[char], seed: Option<&Seed>) -> Result<String, Error> {
    let n = chars.len() as u64;
    match seed {
        Some(s) => {
            let mut r = match s {
                Seed::Text(t) => PyRandom::from_str_seed(t),
                Seed::Int(n) => PyRandom::from_int_seed(*n),
            };
            Ok((0..length).map(|_| chars[r.below(n) as usize]).collect())
        }
        None => {
            let mut out = String::with_capacity(length);
            for _ in 0..length {
                let i = system_below(n).map_err(|e| invalid(format!("no randomness: {e}")))?;
                out.push(chars[i as usize]);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_password_python_gives() {
        // python3 -c "import random,string; r=random.Random('web1');
        //   print(''.join(r.choice(string.ascii_letters+string.digits+'.,:-_') for _ in range(20)))"
        let chars = candidates(
            &DEFAULT_CHARS
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        );
        assert_eq!(
            random_password(20, &chars, Some(&Seed::Text("web1".into()))).unwrap(),
            "PHReYru8meWgwuf2LQh8"
        );
        // An empty seed is still a seed (its SHA-512 alone makes the number).
        let digits: Vec<char> = "0123456789".chars().collect();
        let seeded = |s: Seed| random_password(10, &digits, Some(&s)).unwrap();
        assert_eq!(seeded(Seed::Text(String::new())), "7936359095");
        // A number seeds as a number: python3 -c "import random; r=random.Random(7);
        //   print(''.join(r.choice('0123456789') for _ in range(10)))"
        assert_eq!(seeded(Seed::Int(7)), "5260181590");
        assert_eq!(seeded(Seed::Int((1 << 40) + 5)), "8840802123");
    }

    #[test]
    fn terms_split_into_a_path_and_options() {
        let (p, o) = parse_term("creds/db length=8 chars=digits,,", Options::default()).unwrap();
        assert_eq!(p, "creds/db");
        assert_eq!(o.length, Some(8));
        assert_eq!(o.chars, Some(vec![",".to_string(), "digits".to_string()]));
        let (p, _) = parse_term("a dir/with space length=3", Options::default()).unwrap();
        assert_eq!(p, "a dir/with space");
        let e = parse_term("x bogus=1", Options::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("Unrecognized parameter(s) given to password lookup: bogus")
        );
        assert!(parse_term("x length=2 trailing", Options::default()).is_err());
    }

    #[test]
    fn a_saved_password_is_given_back_and_a_new_one_saved_private() {
        let d = tempfile::tempdir().unwrap();
        let first = lookup("sub/pw length=12", Options::default(), d.path()).unwrap();
        assert_eq!(first.chars().count(), 12);
        let file = d.path().join("sub/pw");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            format!("{first}\n")
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&file), mode(&d.path().join("sub"))), (0o600, 0o700));
        assert_eq!(
            lookup("sub/pw length=30", Options::default(), d.path()).unwrap(),
            first
        );
        // With `encrypt`, the salt is kept beside the password and the hash is stable.
        let h1 = lookup("sub/pw encrypt=sha512_crypt", Options::default(), d.path()).unwrap();
        let h2 = lookup("sub/pw encrypt=sha512_crypt", Options::default(), d.path()).unwrap();
        assert!(h1.starts_with("$6$") && h1 == h2, "{h1} {h2}");
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .starts_with(&format!("{first} salt="))
        );
        // `/dev/null` is never read nor written.
        let a = lookup("/dev/null", Options::default(), d.path()).unwrap();
        assert_eq!(a.chars().count(), 20);
    }
}
