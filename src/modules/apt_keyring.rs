//! The commands `apt_key` runs on a keyring: through `apt-key` (upstream's way, and the only
//! one for apt's default keyring), or, on hosts whose apt no longer ships `apt-key` (Debian 13,
//! newer Ubuntu), straight through `gpg` on the `keyring` file the task names. The `gpg` way
//! works in a throwaway GnuPG home: the keyring file is imported, changed there and exported
//! back (armored for a `.asc` file), so the file stays in the format apt reads and the host's
//! own GnuPG home is not touched; a keyring left with no key is removed.

use crate::transport::quote::sh;

/// How keys are listed, added and removed on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keyring {
    /// `apt-key`, on `--keyring FILE` or apt's default keyring.
    AptKey(Option<String>),
    /// `gpg` on this keyring file.
    Gpg(String),
}

/// sh text that sets `HTTP_PROXY`-style proxies as `"$@"` keyserver options, as upstream's
/// `add_http_proxy` adds them.
const PROXY: &str = "p=${HTTPS_PROXY:-${https_proxy:-${HTTP_PROXY:-$http_proxy}}}; \
                     set -- ${p:+--keyserver-options http-proxy=$p}\n";

impl Keyring {
    fn apt_key(k: &Option<String>) -> String {
        match k {
            Some(k) => format!("apt-key --keyring {}", sh(k)),
            None => "apt-key".into(),
        }
    }

    /// The throwaway GnuPG home with the keyring's keys in it, as sh text.
    fn gpg_prelude(k: &str) -> String {
        format!(
            "h=$(mktemp -d) || exit 1\ntrap 'rm -rf \"$h\"' EXIT\n\
             g() {{ gpg --homedir \"$h\" --batch --no-tty --quiet \"$@\"; }}\nk={}\n\
             if [ -s \"$k\" ]; then g --import \"$k\" || {{ echo \"cannot read keyring $k\" >&2; exit 2; }}; fi\n",
            sh(k)
        )
    }

    /// Export the GnuPG home's keys back to the keyring file (removed when none is left).
    fn gpg_save(k: &str) -> String {
        let armor = if k.ends_with(".asc") { "--armor " } else { "" };
        format!(
            "g {armor}--export > \"$h/new\" && if [ -s \"$h/new\" ]; then \
             mkdir -p -- \"$(dirname -- \"$k\")\" && cat \"$h/new\" > \"$k\"; else rm -f -- \"$k\"; fi"
        )
    }

    /// List the keys (`pub   algo/LONGID date`).
    pub fn list(&self) -> String {
        match self {
            Keyring::AptKey(k) => format!(
                "{} adv --list-public-keys --keyid-format=long",
                Self::apt_key(k)
            ),
            Keyring::Gpg(k) => format!(
                "{}g --list-public-keys --keyid-format=long",
                Self::gpg_prelude(k)
            ),
        }
    }

    /// Add the keys of a file on the host, or of stdin with `None`.
    pub fn add(&self, file: Option<&str>) -> String {
        match self {
            Keyring::AptKey(k) => {
                format!("{} add {}", Self::apt_key(k), file.map_or("-".into(), sh))
            }
            Keyring::Gpg(k) => format!(
                "{}g --import {} && {}",
                Self::gpg_prelude(k),
                file.map(sh).unwrap_or_default(),
                Self::gpg_save(k)
            ),
        }
    }

    /// Remove the key with this (short) id.
    pub fn delete(&self, short_id: &str) -> String {
        match self {
            Keyring::AptKey(k) => format!("{} del {}", Self::apt_key(k), sh(short_id)),
            // gpg deletes in batch mode only by fingerprint.
            Keyring::Gpg(k) => format!(
                "{}fp=$(g --with-colons --fingerprint {} | awk -F: '$1 == \"fpr\" {{ print $10; exit }}')\n\
                 [ -n \"$fp\" ] && g --yes --delete-keys \"$fp\" && {}",
                Self::gpg_prelude(k),
                sh(short_id),
                Self::gpg_save(k)
            ),
        }
    }

    /// Receive a key from a keyserver.
    pub fn recv(&self, server: &str, key_id: &str) -> String {
        match self {
            Keyring::AptKey(k) => format!(
                "{PROXY}LC_ALL=C LANG=C {} adv --no-tty --keyserver {} \"$@\" --recv {}",
                Self::apt_key(k),
                sh(server),
                sh(key_id)
            ),
            Keyring::Gpg(k) => format!(
                "{PROXY}{}LC_ALL=C LANG=C g --keyserver {} \"$@\" --recv-keys {} && {}",
                Self::gpg_prelude(k),
                sh(server),
                sh(key_id),
                Self::gpg_save(k)
            ),
        }
    }
}
