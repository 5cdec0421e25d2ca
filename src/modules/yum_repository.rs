//! `yum_repository` (ansible-core 2.19's): add, change or remove one repository section in
//! `<reposdir>/<file>.repo` on the host, as upstream does with `RawConfigParser`
//! (lib/ansible/modules/yum_repository.py): the section is rebuilt from the options given,
//! keys in sorted order, `description` written as `name`, booleans as `1`/`0`, `baseurl` and
//! `gpgkey` lists one per line, `exclude`/`includepkgs` space-separated; a changed section
//! moves to the end of the file; the file goes when its last section does. Whether anything
//! changed is decided, as upstream, by comparing the sorted dump of the file before and after
//! (so comments or spacing alone never count), which is also the diff.
//!
//! One probe reads the file (and checks `reposdir`); the new text is written through
//! `filewrite` only when the dump changed.
//!
//! Over 300 lines because upstream has some fifty repository options, each a documented field.

use serde::Deserialize;

use crate::transport::quote::sh;

use super::args::{list, opt_boolish, opt_stringish};
use super::filewrite::{self, Content, Write};
use super::host_path;
use super::mode::{Mode, opt_mode};
use super::posix::{Attrs, Kind};
use super::repo_ini::{RepoFile, Section};
use super::{Diff, ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(YumRepository, "yum_repository", Params, run);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    #[default]
    Present,
    Absent,
}

fn repos_dir() -> String {
    "/etc/yum.repos.d".into()
}

/// The repository options upstream writes, by their key in the file. Strings are written as
/// given; booleans as `1`/`0`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The repository id (the `[section]`), and the file name unless `file` is given.
    name: String,
    /// The human-readable name (written as `name = ...`); required with `state: present`.
    description: Option<String>,
    /// `present` (default) or `absent`.
    #[serde(default)]
    state: State,
    /// File name without `.repo` (default: `name`).
    file: Option<String>,
    /// Folder of the `.repo` files (default `/etc/yum.repos.d`); it must exist.
    #[serde(default = "repos_dir", deserialize_with = "host_path::one")]
    reposdir: String,
    /// URLs of the repository (one per line in the file).
    #[serde(default, deserialize_with = "opt_list")]
    baseurl: Option<Vec<String>>,
    /// URL of a mirror list.
    #[serde(default, deserialize_with = "opt_stringish")]
    mirrorlist: Option<String>,
    /// URL of a metalink.
    #[serde(default, deserialize_with = "opt_stringish")]
    metalink: Option<String>,
    /// Check package signatures.
    #[serde(default, deserialize_with = "opt_boolish")]
    gpgcheck: Option<bool>,
    /// URLs of the signing keys (one per line in the file).
    #[serde(default, deserialize_with = "opt_list")]
    gpgkey: Option<Vec<String>>,
    /// Check the repository metadata's signature.
    #[serde(default, deserialize_with = "opt_boolish")]
    repo_gpgcheck: Option<bool>,
    /// Use the repository.
    #[serde(default, deserialize_with = "opt_boolish")]
    enabled: Option<bool>,
    /// Packages never taken from this repository (space-separated in the file).
    #[serde(default, deserialize_with = "opt_list", alias = "excludepkgs")]
    exclude: Option<Vec<String>>,
    /// The only packages taken from this repository (space-separated in the file).
    #[serde(default, deserialize_with = "opt_list")]
    includepkgs: Option<Vec<String>>,
    /// Deprecated upstream (removed from dnf), still written.
    #[serde(default, rename = "async", deserialize_with = "opt_boolish")]
    async_: Option<bool>,
    /// Maximum download speed.
    #[serde(default, deserialize_with = "opt_stringish")]
    bandwidth: Option<String>,
    /// Relative cost of the repository.
    #[serde(default, deserialize_with = "opt_stringish")]
    cost: Option<String>,
    /// Count this system in the repository's statistics.
    #[serde(default, deserialize_with = "opt_boolish")]
    countme: Option<bool>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_stringish")]
    deltarpm_metadata_percentage: Option<String>,
    /// Largest delta RPM, as a percentage of the full package.
    #[serde(default, deserialize_with = "opt_stringish")]
    deltarpm_percentage: Option<String>,
    /// Use the repository's groups.
    #[serde(default, deserialize_with = "opt_boolish")]
    enablegroups: Option<bool>,
    /// `roundrobin` or `priority`.
    failovermethod: Option<FailoverMethod>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_stringish")]
    gpgcakey: Option<String>,
    /// Deprecated upstream: `all`, `packages` or `none`.
    http_caching: Option<HttpCaching>,
    /// A URL whose repository options are included.
    #[serde(default, deserialize_with = "opt_stringish")]
    include: Option<String>,
    /// `4`, `6`, `IPv4`, `IPv6` or `whatever`.
    #[serde(default, deserialize_with = "opt_stringish")]
    ip_resolve: Option<String>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_boolish")]
    keepalive: Option<bool>,
    /// Deprecated upstream: `0` or `1`.
    #[serde(default, deserialize_with = "opt_stringish")]
    keepcache: Option<String>,
    /// How long metadata stays fresh (`6h`, seconds, `never`).
    #[serde(default, deserialize_with = "opt_stringish")]
    metadata_expire: Option<String>,
    /// Deprecated upstream: `never`, `read-only:past`, `read-only:present`, `read-only:future`.
    #[serde(default, deserialize_with = "opt_stringish")]
    metadata_expire_filter: Option<String>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_stringish")]
    mirrorlist_expire: Option<String>,
    /// Let packages of this repository bypass module filtering.
    #[serde(default, deserialize_with = "opt_boolish")]
    module_hotfixes: Option<bool>,
    /// Password for the repository (written to the file as given).
    #[serde(default, deserialize_with = "opt_stringish")]
    password: Option<String>,
    /// Priority (lower wins).
    #[serde(default, deserialize_with = "opt_stringish")]
    priority: Option<String>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_boolish")]
    protect: Option<bool>,
    /// Proxy URL (`_none_` for none).
    #[serde(default, deserialize_with = "opt_stringish")]
    proxy: Option<String>,
    /// Proxy password.
    #[serde(default, deserialize_with = "opt_stringish")]
    proxy_password: Option<String>,
    /// Proxy user.
    #[serde(default, deserialize_with = "opt_stringish")]
    proxy_username: Option<String>,
    /// Download attempts.
    #[serde(default, deserialize_with = "opt_stringish")]
    retries: Option<String>,
    /// The repository is in Amazon S3.
    #[serde(default, deserialize_with = "opt_boolish")]
    s3_enabled: Option<bool>,
    /// Carry on when the repository cannot be reached.
    #[serde(default, deserialize_with = "opt_boolish")]
    skip_if_unavailable: Option<bool>,
    /// CA certificate file for TLS.
    #[serde(default, deserialize_with = "opt_stringish", alias = "ca_cert")]
    sslcacert: Option<String>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_boolish")]
    ssl_check_cert_permissions: Option<bool>,
    /// Client certificate file for TLS.
    #[serde(default, deserialize_with = "opt_stringish", alias = "client_cert")]
    sslclientcert: Option<String>,
    /// Client key file for TLS.
    #[serde(default, deserialize_with = "opt_stringish", alias = "client_key")]
    sslclientkey: Option<String>,
    /// Verify the server's TLS certificate.
    #[serde(default, deserialize_with = "opt_boolish", alias = "validate_certs")]
    sslverify: Option<bool>,
    /// Download speed limit.
    #[serde(default, deserialize_with = "opt_stringish")]
    throttle: Option<String>,
    /// Network timeout in seconds.
    #[serde(default, deserialize_with = "opt_stringish")]
    timeout: Option<String>,
    /// Deprecated upstream (no effect with dnf), still written.
    #[serde(default, deserialize_with = "opt_stringish")]
    ui_repoid_vars: Option<String>,
    /// User name for the repository.
    #[serde(default, deserialize_with = "opt_stringish")]
    username: Option<String>,
    /// Permissions of the `.repo` file.
    #[serde(default, deserialize_with = "opt_mode")]
    mode: Option<Mode>,
    /// Owner of the `.repo` file.
    owner: Option<String>,
    /// Group of the `.repo` file.
    group: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FailoverMethod {
    Roundrobin,
    Priority,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum HttpCaching {
    All,
    Packages,
    None,
}

/// An optional list (YAML list or comma-separated string).
fn opt_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    list(d).map(Some)
}

const IP_RESOLVE: &[&str] = &["4", "6", "IPv4", "IPv6", "whatever"];
const KEEPCACHE: &[&str] = &["0", "1"];
const EXPIRE_FILTER: &[&str] = &[
    "never",
    "read-only:past",
    "read-only:present",
    "read-only:future",
];

impl Params {
    /// The section's options, sorted by key as upstream adds them.
    fn options(&self) -> Vec<(String, String)> {
        let b = |v: Option<bool>| v.map(|x| if x { "1" } else { "0" }.to_string());
        let s = |v: &Option<String>| v.clone();
        let lines = |v: &Option<Vec<String>>| v.as_ref().map(|l| l.join("\n"));
        let words = |v: &Option<Vec<String>>| v.as_ref().map(|l| l.join(" "));
        let mut opts: Vec<(&str, Option<String>)> = vec![
            ("async", b(self.async_)),
            ("bandwidth", s(&self.bandwidth)),
            ("baseurl", lines(&self.baseurl)),
            ("cost", s(&self.cost)),
            ("countme", b(self.countme)),
            (
                "deltarpm_metadata_percentage",
                s(&self.deltarpm_metadata_percentage),
            ),
            ("deltarpm_percentage", s(&self.deltarpm_percentage)),
            ("enabled", b(self.enabled)),
            ("enablegroups", b(self.enablegroups)),
            ("exclude", words(&self.exclude)),
            (
                "failovermethod",
                self.failovermethod.map(|f| {
                    match f {
                        FailoverMethod::Roundrobin => "roundrobin",
                        FailoverMethod::Priority => "priority",
                    }
                    .to_string()
                }),
            ),
            ("gpgcakey", s(&self.gpgcakey)),
            ("gpgcheck", b(self.gpgcheck)),
            ("gpgkey", lines(&self.gpgkey)),
            (
                "http_caching",
                self.http_caching.map(|h| {
                    match h {
                        HttpCaching::All => "all",
                        HttpCaching::Packages => "packages",
                        HttpCaching::None => "none",
                    }
                    .to_string()
                }),
            ),
            ("include", s(&self.include)),
            ("includepkgs", words(&self.includepkgs)),
            ("ip_resolve", s(&self.ip_resolve)),
            ("keepalive", b(self.keepalive)),
            ("keepcache", s(&self.keepcache)),
            ("metadata_expire", s(&self.metadata_expire)),
            ("metadata_expire_filter", s(&self.metadata_expire_filter)),
            ("metalink", s(&self.metalink)),
            ("mirrorlist", s(&self.mirrorlist)),
            ("mirrorlist_expire", s(&self.mirrorlist_expire)),
            ("module_hotfixes", b(self.module_hotfixes)),
            ("name", s(&self.description)),
            ("password", s(&self.password)),
            ("priority", s(&self.priority)),
            ("protect", b(self.protect)),
            ("proxy", s(&self.proxy)),
            ("proxy_password", s(&self.proxy_password)),
            ("proxy_username", s(&self.proxy_username)),
            ("repo_gpgcheck", b(self.repo_gpgcheck)),
            ("retries", s(&self.retries)),
            ("s3_enabled", b(self.s3_enabled)),
            ("skip_if_unavailable", b(self.skip_if_unavailable)),
            (
                "ssl_check_cert_permissions",
                b(self.ssl_check_cert_permissions),
            ),
            ("sslcacert", s(&self.sslcacert)),
            ("sslclientcert", s(&self.sslclientcert)),
            ("sslclientkey", s(&self.sslclientkey)),
            ("sslverify", b(self.sslverify)),
            ("throttle", s(&self.throttle)),
            ("timeout", s(&self.timeout)),
            ("ui_repoid_vars", s(&self.ui_repoid_vars)),
            ("username", s(&self.username)),
        ];
        opts.sort_by(|a, b| a.0.cmp(b.0));
        opts.into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect()
    }

    /// Upstream's argument checks: the choices of the free-text options and `required_if`.
    fn check(&self) -> Result<(), String> {
        let choice = |name: &str, v: &Option<String>, allowed: &[&str]| match v {
            Some(x) if !allowed.contains(&x.as_str()) => Err(format!(
                "value of {name} must be one of: {}, got: {x}",
                allowed.join(", ")
            )),
            _ => Ok(()),
        };
        choice("ip_resolve", &self.ip_resolve, IP_RESOLVE)?;
        choice("keepcache", &self.keepcache, KEEPCACHE)?;
        choice(
            "metadata_expire_filter",
            &self.metadata_expire_filter,
            EXPIRE_FILTER,
        )?;
        if self.state == State::Present {
            if self.baseurl.is_none() && self.mirrorlist.is_none() && self.metalink.is_none() {
                return Err(
                    "state is present but any of the following are missing: baseurl, mirrorlist, metalink"
                        .into(),
                );
            }
            if self.description.is_none() {
                return Err(
                    "state is present but all of the following are missing: description".into(),
                );
            }
        }
        Ok(())
    }
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if let Err(msg) = p.check() {
        return Ok(ModuleResult::failed(msg));
    }
    let file = p.file.clone().unwrap_or_else(|| p.name.clone());
    let dest = super::posix::join(&p.reposdir, &format!("{file}.repo"));
    let (before, pre) = filewrite::probe_with(
        ctx,
        &format!("[ -d {} ] && echo kinit-dir", sh(&p.reposdir)),
        &dest,
        true,
    )
    .await?;
    if !pre.contains("kinit-dir") {
        return Ok(ModuleResult::failed(format!(
            "Repo directory '{}' does not exist.",
            p.reposdir
        )));
    }
    let mut repo = if before.stat.kind == Kind::File {
        RepoFile::parse(&before.text()).map_err(|e| ModuleError::Failed {
            msg: format!("cannot read `{dest}`: {e}"),
        })?
    } else {
        RepoFile::default()
    };
    let old_dump = repo.dump();
    match p.state {
        State::Present => repo.replace(Section {
            name: p.name.clone(),
            options: p.options(),
        }),
        State::Absent => repo.remove(&p.name),
    }
    let new_dump = repo.dump();
    let mut changed = old_dump != new_dump;
    let attrs = Attrs {
        mode: p.mode.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
    };
    let exists = before.stat.kind == Kind::File;
    if changed && repo.sections.is_empty() {
        if !ctx.check_mode {
            let out = ctx.run(format!("rm -f -- {}", sh(&dest))).await?;
            if !out.success() {
                return Ok(
                    ModuleResult::failed(format!("Cannot remove empty repo file {dest}."))
                        .with("details", out.stderr_str().trim()),
                );
            }
        }
    } else if changed {
        let w = Write {
            dest: &dest,
            attrs: &attrs,
            backup: false,
            force: true,
            validate: None,
        };
        let content = Content::bytes(repo.write().into_bytes());
        let r = filewrite::apply(ctx, &w, content, &before).await?;
        if r.failed {
            return Ok(r);
        }
    } else if exists {
        let fix = attrs.fix_script(&dest, &before.stat, false);
        if !fix.is_empty() {
            changed = true;
            if !ctx.check_mode {
                let out = ctx.run(fix).await?;
                if !out.success() {
                    return Ok(ModuleResult::failed(format!(
                        "cannot set attributes of `{dest}`: {}",
                        out.stderr_str().trim()
                    )));
                }
            }
        }
    }
    let mut r = ModuleResult {
        changed,
        ..ModuleResult::ok()
    }
    .with("repo", p.name.as_str())
    .with(
        "state",
        match p.state {
            State::Present => "present",
            State::Absent => "absent",
        },
    );
    if ctx.diff {
        // The passwords are `no_log` upstream, so its output masks them, in the diff too.
        let secrets: Vec<&String> = [&p.password, &p.proxy_password]
            .into_iter()
            .flatten()
            .filter(|v| !v.is_empty())
            .collect();
        let mask = |mut text: String| {
            for s in &secrets {
                text = text.replace(s.as_str(), "********");
            }
            text
        };
        r.diff = Some(Diff {
            path: Some(dest),
            before: mask(old_dump).into(),
            after: mask(new_dump).into(),
        });
    }
    Ok(r)
}
