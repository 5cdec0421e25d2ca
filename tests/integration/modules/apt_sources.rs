//! `apt_repository`, `apt_key`, `deb822_repository` and `dpkg_selections` on a real host.
//! The host's own apt setup is never changed: `apt_repository` works in an apt tree in the
//! scratch folder (`APT_CONFIG`, which the module honours through `apt-config`), its
//! `apt-get update` reads an offline local repository (a hand-written Packages file);
//! `apt_key` uses a keyring in the scratch folder and a throwaway test key; `deb822_repository`
//! (whose folder is fixed, as upstream's is) writes a `kinit-test-*` file and removes it;
//! `dpkg_selections` holds an essential package and puts it back. Over SSH the login is
//! unprivileged: there the cases check the decision and the clear failure of what needs root.

use serde_json::{Value, json};

use super::Fixture;
use kinit::modules::ModuleResult;

const KEY: &str = include_str!("../../playbooks/diff/files/50-key-one.asc");
/// The long id of `KEY` (its fingerprint is F08ED6098F7CEF730217CE9D73F82B224E99B342).
const KEY_ID: &str = "73F82B224E99B342";

async fn is_root(fx: &Fixture<'_>) -> bool {
    fx.sh("id -u").await.trim() == "0"
}

/// A name unique to this test process (the deb822 folder is the host's own).
fn unique(prefix: &str) -> String {
    format!("{prefix}{}", std::process::id())
}

async fn run_env(
    fx: &Fixture<'_>,
    module: &str,
    args: Value,
    check: bool,
    env: &[(&str, &str)],
) -> ModuleResult {
    let env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    fx.try_run_env(module, args, check, true, env)
        .await
        .unwrap()
}

pub async fn apt_repository(fx: &Fixture<'_>) {
    if fx.sh("command -v apt-config").await.is_empty() {
        let r = fx
            .run("apt_repository", json!({"repo": "deb http://x/ y z"}))
            .await;
        assert_eq!(
            r.msg.as_deref(),
            Some("Module apt_repository is not supported on target.")
        );
        return;
    }
    let root = fx.path("apt");
    fx.sh(&format!(
        "mkdir -p {root}/sources.list.d {root}/lists/partial {root}/cache/archives/partial {root}/repo && \
         printf 'Dir::Etc::sourcelist \"{root}/sources.list\";\\nDir::Etc::sourceparts \"{root}/sources.list.d\";\\n\
         Dir::State::Lists \"{root}/lists\";\\nDir::Cache \"{root}/cache\";\\n' > {root}/apt.conf && \
         printf 'Package: kinit-test-dummy\\nVersion: 1.0\\nArchitecture: all\\nFilename: ./d.deb\\nSize: 1\\n\
         Description: offline apt test\\n\\n' > {root}/repo/Packages && \
         printf '#deb  http://a.example.invalid/debian stable main\\n' > {root}/sources.list"
    ))
    .await;
    let conf = format!("{root}/apt.conf");
    let env = [("APT_CONFIG", conf.as_str())];
    let local = format!("{root}/sources.list.d/kinit-test-local.list");
    let repo = format!("deb [trusted=yes] file:{root}/repo ./");
    let args = json!({"repo": repo, "filename": "kinit-test-local"});

    // Check mode: the file it would add, nothing written.
    let c = run_env(fx, "apt_repository", args.clone(), true, &env).await;
    assert!(c.changed && !c.failed, "{c:?}");
    assert_eq!(c.data["sources_added"], json!([local]));
    let d = c.diff.clone().unwrap();
    assert_eq!((d.before, d.after), (json!(""), json!(format!("{repo}\n"))));
    assert_eq!(fx.sh(&format!("ls {root}/sources.list.d")).await, "");

    // Added, with `apt-get update` (update_cache defaults on) fetching the local index.
    let r = run_env(fx, "apt_repository", args.clone(), false, &env).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["state"], "present");
    assert_eq!(
        fx.sh(&format!("stat -c %a {local}; cat {local}")).await,
        format!("644\n{repo}\n")
    );
    assert_eq!(
        fx.sh(&format!("ls {root}/lists | grep -c _repo_._Packages"))
            .await,
        "1\n"
    );
    let again = run_env(fx, "apt_repository", args.clone(), false, &env).await;
    assert!(!again.changed && !again.failed, "{again:?}");

    // A commented-out line is enabled where it is, in upstream's normal form.
    let main = "deb http://a.example.invalid/debian stable main";
    let r = run_env(
        fx,
        "apt_repository",
        json!({"repo": main, "update_cache": false}),
        false,
        &env,
    )
    .await;
    assert!(r.changed, "{r:?}");
    assert_eq!(r.data["sources_added"], json!([]));
    assert_eq!(
        fx.sh(&format!("cat {root}/sources.list")).await,
        format!("{main}\n")
    );

    // A PPA needs Launchpad: refused, saying what to write instead.
    let distro = fx.sh(". /etc/os-release; echo $ID").await;
    let r = run_env(
        fx,
        "apt_repository",
        json!({"repo": "ppa:kinit/test", "codename": "noble"}),
        false,
        &env,
    )
    .await;
    let msg = r.msg.unwrap_or_default();
    assert!(
        r.failed && msg.starts_with("cannot add `ppa:kinit/test`: "),
        "{msg}"
    );
    if distro.trim() != "ubuntu" {
        assert!(msg.contains("PPAs are built for Ubuntu"), "{msg}");
    }
    assert!(
        msg.contains("https://ppa.launchpadcontent.net/kinit/test/ubuntu noble main"),
        "{msg}"
    );

    // An update that keeps failing puts the sources back as they were.
    let r = run_env(
        fx,
        "apt_repository",
        json!({"repo": "deb [trusted=yes] http://127.0.0.1:9/kinit ./", "filename": "kinit-test-bad",
               "update_cache_retries": 1, "update_cache_retry_max_delay": 0}),
        false,
        &env,
    )
    .await;
    let msg = r.msg.unwrap_or_default();
    assert!(
        r.failed && msg.starts_with("Failed to update apt cache after 1 retries: "),
        "{msg}"
    );
    assert_eq!(
        fx.sh(&format!("ls {root}/sources.list.d")).await,
        "kinit-test-local.list\n"
    );

    // Removed: the file it empties goes.
    let args = json!({"repo": repo, "state": "absent", "update_cache": false});
    let r = run_env(fx, "apt_repository", args.clone(), false, &env).await;
    assert!(r.changed, "{r:?}");
    assert_eq!(r.data["sources_removed"], json!([local]));
    assert_eq!(fx.sh(&format!("ls {root}/sources.list.d")).await, "");
    let r = run_env(fx, "apt_repository", args, false, &env).await;
    assert!(!r.changed && !r.failed, "{r:?}");
}

pub async fn apt_key(fx: &Fixture<'_>) {
    if fx.sh("command -v apt-key").await.is_empty() {
        let r = fx.run("apt_key", json!({"data": KEY})).await;
        assert!(r.failed && r.msg.unwrap().contains("deb822_repository"));
        return;
    }
    let kr = fx.path("kinit-test.gpg");
    let args = json!({"data": KEY, "keyring": kr});
    gpg_keyring_without_apt_key(fx).await;
    if !is_root(fx).await {
        // apt-key adds and removes only as root: the decision, then its refusal.
        let c = fx.check("apt_key", args.clone()).await;
        assert!(c.changed && !c.failed, "{c:?}");
        assert_eq!(c.data["before"], json!([]));
        let r = fx.run("apt_key", args).await;
        assert_eq!(
            r.msg.as_deref(),
            Some("Unable to add a key from binary data")
        );
        assert!(
            r.data["stderr"]
                .as_str()
                .unwrap()
                .contains("can only be used by root"),
            "{r:?}"
        );
        return;
    }
    let probe = format!(
        "apt-key --keyring {kr} adv --list-public-keys --keyid-format=long 2>/dev/null | grep ^pub"
    );
    let r = fx.converges("apt_key", args, &probe).await;
    assert_eq!(r.data["id"], KEY_ID);
    assert_eq!(r.data["short_id"], &KEY_ID[8..]);
    assert_eq!(r.data["before"], json!([]));
    assert_eq!(r.data["after"], json!([KEY_ID]));
    let r = fx
        .converges(
            "apt_key",
            json!({"id": format!("0x{}", KEY_ID.to_lowercase()), "keyring": kr, "state": "absent"}),
            &probe,
        )
        .await;
    assert_eq!(r.data["after"], json!([]));
}

/// A host without `apt-key` (a PATH that leaves it out): the keyring file is kept with gpg,
/// by any user, in the binary format apt reads, and removed with its last key.
async fn gpg_keyring_without_apt_key(fx: &Fixture<'_>) {
    let bin = fx.path("bin");
    fx.sh(&format!(
        "mkdir {bin} && for f in /usr/bin/*; do [ \"${{f##*/}}\" = apt-key ] || ln -s \"$f\" {bin}/; done"
    ))
    .await;
    let path = format!("{bin}:/usr/sbin");
    let env = [("PATH", path.as_str())];
    let kr = fx.path("kinit-test-gpg.gpg");
    let args = json!({"data": KEY, "keyring": kr});
    let c = run_env(fx, "apt_key", args.clone(), true, &env).await;
    assert!(c.changed && !c.failed, "{c:?}");
    assert_eq!(fx.sh(&format!("ls {kr} 2>/dev/null")).await, "");
    let r = run_env(fx, "apt_key", args.clone(), false, &env).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["after"], json!([KEY_ID]));
    let shown = fx
        .sh(&format!("gpg --show-keys --with-colons {kr} 2>/dev/null | grep ^pub | cut -d: -f5; head -c 1 {kr} | od -An -tx1"))
        .await;
    // Binary (not armored, whose first byte is `-`), as apt reads a `.gpg` keyring.
    assert!(
        shown.starts_with(&format!("{KEY_ID}\n")) && !shown.ends_with(" 2d\n"),
        "{shown}"
    );
    let again = run_env(fx, "apt_key", args, false, &env).await;
    assert!(!again.changed && !again.failed, "{again:?}");
    let gone = json!({"id": KEY_ID, "keyring": kr, "state": "absent"});
    let r = run_env(fx, "apt_key", gone.clone(), false, &env).await;
    assert!(r.changed && !r.failed, "{r:?}");
    assert_eq!(r.data["after"], json!([]));
    assert_eq!(fx.sh(&format!("ls {kr} 2>/dev/null")).await, "");
    let r = run_env(fx, "apt_key", gone, false, &env).await;
    assert!(!r.changed && !r.failed, "{r:?}");
    // Without a keyring there is nothing gpg could stand in for.
    let r = run_env(fx, "apt_key", json!({"data": KEY}), false, &env).await;
    assert!(r.failed && r.msg.unwrap().contains("has no `apt-key`"));
}

pub async fn deb822_repository(fx: &Fixture<'_>) {
    let name = unique("kinit-test-deb822-");
    let dest = format!("/etc/apt/sources.list.d/{name}.sources");
    let args = json!({"name": name, "uris": "http://deb.example.invalid/debian",
                      "suites": "bookworm", "components": ["main", "contrib"],
                      "signed_by": KEY, "architectures": ["amd64"], "enabled": true});
    let c = fx.check("deb822_repository", args.clone()).await;
    assert!(c.changed && !c.failed, "{c:?}");
    let key_lines: String = KEY
        .trim()
        .lines()
        .map(|l| match l.trim() {
            "" => "    .\n".to_string(),
            t => format!("    {t}\n"),
        })
        .collect();
    assert_eq!(
        c.data["repo"],
        format!(
            "Architectures: amd64\nComponents: main contrib\nEnabled: yes\nX-Repolib-Name: {name}\n\
             Signed-By:\n{key_lines}Suites: bookworm\nTypes: deb\nURIs: http://deb.example.invalid/debian\n"
        )
    );
    assert_eq!(fx.sh(&format!("ls {dest} 2>/dev/null")).await, "");
    if !is_root(fx).await {
        // /etc/apt belongs to root: the write fails and says so.
        let err = fx
            .try_run("deb822_repository", args, false, false)
            .await
            .map(|r| r.msg.unwrap_or_default())
            .unwrap_or_else(|e| e.to_string());
        assert!(err.contains(&dest), "{err}");
        return;
    }
    let probe = format!("stat -c %a {dest} 2>&1; cat {dest} 2>&1");
    let r = fx.converges("deb822_repository", args, &probe).await;
    assert_eq!(r.data["dest"], dest.as_str());
    assert_eq!(r.data["key_filename"], Value::Null);
    assert_eq!(
        fx.sh(&probe).await,
        format!("644\n{}", c.data["repo"].as_str().unwrap())
    );
    let r = fx
        .converges(
            "deb822_repository",
            json!({"name": name, "state": "absent"}),
            &format!("test -e {dest} && echo there"),
        )
        .await;
    assert_eq!(r.data["repo"], Value::Null);
}

pub async fn dpkg_selections(fx: &Fixture<'_>) {
    let probe = "dpkg --get-selections hostname";
    if fx.sh(probe).await.split_whitespace().nth(1) != Some("install") {
        return; // not a Debian host, or someone holds it already: leave it alone
    }
    let hold = json!({"name": "hostname", "selection": "hold"});
    let r = fx
        .run(
            "dpkg_selections",
            json!({"name": "kinit-test-no-such-package", "selection": "hold"}),
        )
        .await;
    assert_eq!(
        r.msg.as_deref(),
        Some("Failed to find package 'kinit-test-no-such-package' to perform selection 'hold'.")
    );
    if !is_root(fx).await {
        let c = fx.check("dpkg_selections", hold.clone()).await;
        assert!(c.changed, "{c:?}");
        assert_eq!(
            (&c.data["before"], &c.data["after"]),
            (&json!("install"), &json!("hold"))
        );
        let r = fx.run("dpkg_selections", hold).await;
        assert!(
            r.failed && r.msg.as_deref().unwrap_or("").contains("dpkg"),
            "{r:?}"
        );
        return;
    }
    // Held, then put back before anything is asserted, so a failure leaves no hold behind.
    let c = fx.check("dpkg_selections", hold.clone()).await;
    let held_after_check = fx.sh(probe).await;
    let first = fx.run("dpkg_selections", hold.clone()).await;
    let held = fx.sh(probe).await;
    let second = fx.run("dpkg_selections", hold).await;
    let restore = fx
        .run(
            "dpkg_selections",
            json!({"name": "hostname", "selection": "install"}),
        )
        .await;
    assert!(c.changed && held_after_check.contains("install"), "{c:?}");
    assert!(first.changed && held.contains("hold"), "{first:?}");
    assert_eq!(first.data["before"], "install");
    assert!(!second.changed, "{second:?}");
    assert!(restore.changed && !restore.failed, "{restore:?}");
    assert!(fx.sh(probe).await.contains("install"));
}
