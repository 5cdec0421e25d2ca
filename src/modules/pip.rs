//! `pip`: Python packages installed, upgraded or removed with pip, in the host's Python or in
//! a virtualenv the module creates first, as ansible-core 2.19's `pip` module does
//! (ansible/modules/pip.py). Each step is one command on the host: the virtualenv (when its
//! `bin/activate` is missing), `pip list --format=freeze` where upstream reads the installed
//! set, and the one `pip install`/`pip uninstall`.
//!
//! Changed detection is upstream's: `Successfully installed`/`Successfully uninstalled` in
//! pip's output, or the freeze before and after for `requirements` and VCS URLs. Check mode
//! is upstream's too: a missing virtualenv, `extra_args`, `requirements` or `state: latest`
//! predict a change outright; otherwise each named package is looked up in the freeze
//! ([`pip_req`](super::pip_req) matches the versions).
//!
//! Longer than most files: the steps (virtualenv, finding pip, the freeze, the install) are
//! each short, but they share upstream's one flow and its accumulated output.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use crate::transport::quote::{sh, sh_join};

use super::args::{boolish, opt_stringish};
use super::host_path;
use super::pip_req::{Package, canonical, recover_names};
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Pip, "pip", Params, run);

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    #[default]
    Present,
    Absent,
    Latest,
    Forcereinstall,
}

impl State {
    fn pip_args(self) -> &'static [&'static str] {
        match self {
            State::Present => &["install"],
            State::Absent => &["uninstall", "-y"],
            State::Latest => &["install", "-U"],
            State::Forcereinstall => &["install", "-U", "--force-reinstall"],
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            State::Present => "present",
            State::Absent => "absent",
            State::Latest => "latest",
            State::Forcereinstall => "forcereinstall",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Packages: names with optional version specifiers (`flask>=2,<3`), paths or VCS URLs; a
    /// list or one comma-separated string.
    #[serde(default, deserialize_with = "opt_names")]
    name: Option<Vec<String>>,
    /// The version of the one package in `name` (`1.0` means `==1.0`; `>=1.0` as written).
    #[serde(default, deserialize_with = "opt_stringish")]
    version: Option<String>,
    /// A requirements file (`pip install -r`), relative to `chdir`.
    requirements: Option<String>,
    /// A virtualenv to install into, created with `virtualenv_command` when its
    /// `bin/activate` is missing.
    #[serde(default, deserialize_with = "host_path::opt")]
    virtualenv: Option<String>,
    /// Create the virtualenv with access to the system's packages.
    #[serde(default, deserialize_with = "boolish")]
    virtualenv_site_packages: bool,
    /// The command that creates the virtualenv (`virtualenv`, `python3 -m venv`, ...).
    #[serde(
        default = "default_virtualenv_command",
        deserialize_with = "host_path::one"
    )]
    virtualenv_command: String,
    /// The Python of a new virtualenv (`-p`; not for `venv`/`pyvenv`).
    virtualenv_python: Option<String>,
    /// `present`, `absent`, `latest` or `forcereinstall`.
    #[serde(default)]
    state: State,
    /// More pip arguments (sh words).
    extra_args: Option<String>,
    /// Install in editable mode (`-e`).
    #[serde(default, deserialize_with = "boolish")]
    editable: bool,
    /// Folder pip runs in (default the temp folder).
    #[serde(default, deserialize_with = "host_path::opt")]
    chdir: Option<String>,
    /// The pip to run (a name looked up in PATH, or a path); not with `virtualenv`.
    #[serde(default, deserialize_with = "host_path::opt")]
    executable: Option<String>,
    /// Umask (octal) for the commands the module runs.
    #[serde(default, deserialize_with = "opt_stringish")]
    umask: Option<String>,
    /// Let pip change an externally managed Python (PEP 668), through
    /// `PIP_BREAK_SYSTEM_PACKAGES=1`.
    #[serde(default, deserialize_with = "boolish")]
    break_system_packages: bool,
}

fn default_virtualenv_command() -> String {
    "virtualenv".into()
}

/// `name` as Ansible's `type='list'` reads it: a string is split at every comma (untrimmed).
fn opt_names<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let item = |v: Value| match v {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(de::Error::custom(format!(
            "expected a list of strings, got item `{other}`"
        ))),
    };
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.split(',').map(str::to_string).collect())),
        Value::Array(a) => a.into_iter().map(item).collect::<Result<_, _>>().map(Some),
        other => item(other).map(|s| Some(vec![s])),
    }
}

/// Argument combinations upstream refuses, with its messages, in its order.
fn refuse(p: &Params) -> Option<String> {
    match (&p.name, &p.requirements) {
        (Some(_), Some(_)) => {
            return Some("parameters are mutually exclusive: name|requirements".into());
        }
        (None, None) => return Some("one of the following is required: name, requirements".into()),
        _ => {}
    }
    if p.executable.is_some() && p.virtualenv.is_some() {
        return Some("parameters are mutually exclusive: executable|virtualenv".into());
    }
    if let Some(u) = &p.umask
        && u32::from_str_radix(u, 8).is_err()
    {
        return Some("umask must be an octal integer".into());
    }
    if p.state == State::Latest && p.version.is_some() {
        return Some("version is incompatible with state=latest".into());
    }
    None
}

/// Upstream's `_is_venv_command`: `pyvenv`, or a command with `-m venv`.
fn is_venv_command(command: &str) -> bool {
    let argv = shlex::split(command).unwrap_or_default();
    if argv.first().map(String::as_str) == Some("pyvenv") {
        return true;
    }
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        let m = match a.as_str() {
            "-m" => args.next().map(String::as_str),
            other => other.strip_prefix("-m").map(|v| v.trim_start_matches('=')),
        };
        if let Some(m) = m {
            return m == "venv";
        }
    }
    false
}

/// The sh prefix every command of one run shares: the folder, the umask, the environment.
struct Shell {
    prefix: String,
}

impl Shell {
    fn new(p: &Params, chdir: Option<&str>) -> Shell {
        let mut prefix = match chdir {
            Some(d) => format!("cd {} || exit 1\n", host_path(d)),
            None => "cd \"${TMPDIR:-/tmp}\" || cd /tmp\n".to_string(),
        };
        if let Some(u) = &p.umask {
            prefix.push_str(&format!("umask {}\n", sh(u)));
        }
        if p.break_system_packages {
            // An environment variable rather than `--break-system-packages`, which pip 23.0
            // and older refuse (pip.py, pypa/pip#11780).
            prefix.push_str("export PIP_BREAK_SYSTEM_PACKAGES=1\n");
        }
        Shell { prefix }
    }

    async fn run(
        &self,
        ctx: &ModuleCtx<'_>,
        script: &str,
    ) -> Result<crate::transport::ExecOutput, ModuleError> {
        ctx.run(format!("{}{script}", self.prefix)).await
    }
}

/// A path argument (Ansible's `type='path'`) as sh text: quoted, with a leading `~` left to
/// the host's `$HOME`.
fn host_path(path: &str) -> String {
    match path.strip_prefix('~') {
        Some("") => "\"$HOME\"".into(),
        Some(rest) if rest.starts_with('/') => format!("\"$HOME\"{}", sh(rest)),
        _ => sh(path),
    }
}

/// Upstream's `_fail`: pip's output as the message.
fn fail(cmd: Value, out: &str, err: &str) -> ModuleResult {
    let mut msg = String::new();
    if !out.is_empty() {
        msg.push_str(&format!("stdout: {out}"));
    }
    if !err.is_empty() {
        msg.push_str(&format!("\n:stderr: {err}"));
    }
    ModuleResult::failed(msg).with("cmd", cmd)
}

enum Step<T> {
    Go(T),
    Done(Box<ModuleResult>),
}

/// Create the virtualenv (upstream's `setup_virtualenv`); its output starts the module's.
async fn make_virtualenv(
    ctx: &ModuleCtx<'_>,
    sh_: &Shell,
    p: &Params,
    env: &str,
) -> Result<Step<(String, String)>, ModuleError> {
    let mut argv = shlex::split(&p.virtualenv_command).unwrap_or_default();
    if argv.is_empty() {
        return Ok(Step::Done(Box::new(ModuleResult::failed(
            "virtualenv_command is empty",
        ))));
    }
    // One probe: the command's full path (a bare name is looked up in PATH), whether its
    // `--help` offers `--no-site-packages`, and the Python a plain `virtualenv` gets by default.
    let probe = format!(
        "c={c}\ncase \"$c\" in */*) ;; *) c=$(command -v \"$c\") || {{ echo \"nobin=$PATH\"; exit 0; }} ;; esac\n\
         echo \"bin=$c\"\n\"$c\" --help 2>&1 | tr -s ' \\t' '\\n\\n' | grep -qx -- --no-site-packages && echo nosite=1\n\
         echo \"py=$(command -v python3)\"\n",
        c = sh(&argv[0])
    );
    let out = sh_.run(ctx, &probe).await?.stdout_str();
    let field = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k).map(str::to_string))
    };
    if let Some(path) = field("nobin=") {
        return Ok(Step::Done(Box::new(ModuleResult::failed(format!(
            "Failed to find required executable \"{}\" in paths: {path}",
            argv[0]
        )))));
    }
    if let Some(bin) = field("bin=") {
        argv[0] = bin;
    }
    if p.virtualenv_site_packages {
        argv.push("--system-site-packages".into());
    } else if field("nosite=").is_some() {
        argv.push("--no-site-packages".into());
    }
    if !is_venv_command(&p.virtualenv_command) {
        let py = p
            .virtualenv_python
            .clone()
            .or_else(|| field("py=").filter(|s| !s.is_empty()))
            .unwrap_or_else(|| "python3".into());
        argv.push(format!("-p{py}"));
    } else if p.virtualenv_python.is_some() {
        return Ok(Step::Done(Box::new(ModuleResult::failed(
            "virtualenv_python should not be used when using the venv module or pyvenv as \
             virtualenv_command",
        ))));
    }
    let r = sh_
        .run(ctx, &format!("{} {}", sh_join(&argv), host_path(env)))
        .await?;
    argv.push(env.to_string());
    let (out, err) = (r.stdout_str(), r.stderr_str());
    if !r.success() {
        return Ok(Step::Done(Box::new(fail(argv.into(), &out, &err))));
    }
    Ok(Step::Go((out, err)))
}

/// The pip command (upstream's `_get_pip`): the virtualenv's `pip3`/`pip`, `executable`, or
/// the host Python's `-m pip`, else `pip3` from PATH.
async fn find_pip(
    ctx: &ModuleCtx<'_>,
    sh_: &Shell,
    p: &Params,
    env: Option<&str>,
) -> Result<Step<Vec<String>>, ModuleError> {
    let script = match (env, &p.executable) {
        (_, Some(exe)) if exe.starts_with('/') => return Ok(Step::Go(vec![exe.clone()])),
        (_, Some(exe)) if exe.starts_with("~/") => format!("echo {}", host_path(exe)),
        (_, Some(exe)) => format!("command -v {}", sh(exe)),
        (Some(env), None) => format!(
            "for b in pip3 pip; do if [ -f {e}/bin/$b ] && [ -x {e}/bin/$b ]; then echo {e}/bin/$b; exit 0; fi; done; exit 1",
            e = host_path(env)
        ),
        (None, None) => {
            let py = match ctx.vars.get("ansible_python_interpreter") {
                Some(Value::String(s)) if !s.starts_with("auto") => s.clone(),
                _ => "python3".into(),
            };
            format!(
                "if p=$(command -v {py}) && \"$p\" -c 'import pip' >/dev/null 2>&1; then echo \"$p\"; echo -m; echo pip; \
                 else command -v pip3; fi",
                py = sh(&py)
            )
        }
    };
    let out = sh_.run(ctx, &script).await?;
    let words: Vec<String> = out.stdout_str().lines().map(str::to_string).collect();
    if out.success() && !words.is_empty() {
        return Ok(Step::Go(words));
    }
    let names = match (&p.executable, env) {
        (Some(exe), _) => exe.clone(),
        (None, Some(_)) => "pip3, pip".into(),
        (None, None) => "pip3".into(),
    };
    Ok(Step::Done(Box::new(ModuleResult::failed(match env {
        Some(env) => format!(
            "Unable to find pip in the virtualenv, {env}, under any of these names: {names}. \
             Make sure pip is present in the virtualenv."
        ),
        None => format!("Unable to find any of {names} to use.  pip needs to be installed."),
    }))))
}

/// Upstream's `_get_packages`: `pip list --format=freeze` (in the C locale), or `pip freeze`
/// for a pip too old to have it. Returns the command run and its output.
async fn installed(
    ctx: &ModuleCtx<'_>,
    sh_: &Shell,
    pip: &[String],
) -> Result<Step<(String, String, String)>, ModuleError> {
    let list: Vec<String> = pip
        .iter()
        .cloned()
        .chain(["list".into(), "--format=freeze".into()])
        .collect();
    let r = sh_
        .run(
            ctx,
            &format!(
                "LANG=C.UTF-8 LC_ALL=C.UTF-8 LC_MESSAGES=C.UTF-8 {}",
                sh_join(&list)
            ),
        )
        .await?;
    if r.success() {
        return Ok(Step::Go((list.join(" "), r.stdout_str(), r.stderr_str())));
    }
    let freeze: Vec<String> = pip.iter().cloned().chain(["freeze".into()]).collect();
    let r = sh_.run(ctx, &sh_join(&freeze)).await?;
    if !r.success() {
        return Ok(Step::Done(Box::new(fail(
            freeze.into(),
            &r.stdout_str(),
            &r.stderr_str(),
        ))));
    }
    Ok(Step::Go((freeze.join(" "), r.stdout_str(), r.stderr_str())))
}

/// Whether a freeze line (`name==version`) satisfies `pkg` (upstream's `_is_present`).
fn is_present(pkg: &Package, freeze: &[&str]) -> bool {
    freeze.iter().any(|line| {
        line.split_once("==")
            .is_some_and(|(n, v)| canonical(n) == pkg.name && pkg.is_satisfied_by(v))
    })
}

macro_rules! step {
    ($e:expr) => {
        match $e? {
            Step::Go(v) => v,
            Step::Done(r) => return Ok(*r),
        }
    };
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    if let Some(msg) = refuse(&p) {
        return Ok(ModuleResult::failed(msg));
    }
    let env = p.virtualenv.as_ref().map(|e| match &p.chdir {
        Some(c) if !e.starts_with('/') && !e.starts_with('~') => {
            format!("{}/{e}", c.trim_end_matches('/'))
        }
        _ => e.clone(),
    });
    let sh_ = Shell::new(&p, p.chdir.as_deref());
    let (mut out, mut err) = (String::new(), String::new());
    let mut venv_created = false;
    if let Some(env) = &env {
        let probe = sh_
            .run(ctx, &format!("test -e {}/bin/activate", host_path(env)))
            .await?;
        if !probe.success() {
            if ctx.check_mode {
                return Ok(ModuleResult::changed());
            }
            venv_created = true;
            (out, err) = step!(make_virtualenv(ctx, &sh_, &p, env).await);
        }
    }
    let pip = step!(find_pip(ctx, &sh_, &p, env.as_deref()).await);
    // Upstream puts the virtualenv's bin/ first in PATH for the install (so build steps find
    // the tools installed there).
    let path_prefix = env
        .as_ref()
        .map(|e| format!("PATH={}:\"$PATH\" ", host_path(&format!("{e}/bin"))))
        .unwrap_or_default();

    let mut packages = Vec::new();
    let mut has_vcs = false;
    if let Some(names) = &p.name {
        has_vcs = names.iter().any(|n| {
            ["svn+", "git+", "hg+", "bzr+"]
                .iter()
                .any(|v| n.starts_with(v))
        });
        packages = recover_names(names)
            .iter()
            .map(|n| Package::parse(n))
            .collect();
        if let Some(version) = &p.version {
            if packages.len() > 1 {
                return Ok(ModuleResult::failed(
                    "'version' argument is ambiguous when installing multiple package \
                     distributions. Please specify version restrictions next to each package \
                     in 'name' argument.",
                ));
            }
            if packages[0].has_version_specifier() {
                return Ok(ModuleResult::failed(
                    "The 'version' argument conflicts with any version specifier provided along \
                     with a package name. Please keep the version specifier, but remove the \
                     'version' argument.",
                ));
            }
            packages[0] = packages[0].with_version(version);
        }
    }
    let mut extra_args = p.extra_args.clone();
    if p.editable {
        // Upstream splits at single spaces here, not as sh words.
        let mut words: Vec<String> = extra_args
            .as_deref()
            .filter(|e| !e.is_empty())
            .map(|e| e.split(' ').map(str::to_string).collect())
            .unwrap_or_default();
        if !words.iter().any(|w| w == "-e") {
            words.push("-e".into());
            extra_args = Some(words.join(" "));
        }
    }
    let mut cmd: Vec<String> = pip.clone();
    cmd.extend(p.state.pip_args().iter().map(|s| s.to_string()));
    if let Some(extra) = extra_args.as_deref().filter(|e| !e.is_empty()) {
        match shlex::split(extra) {
            Some(words) => cmd.extend(words),
            None => {
                return Ok(ModuleResult::failed(format!(
                    "extra_args `{extra}` is not valid shell words"
                )));
            }
        }
    }
    if p.name.is_some() {
        cmd.extend(packages.iter().map(|p| p.to_string()));
    } else if let Some(req) = &p.requirements {
        cmd.extend(["-r".to_string(), req.clone()]);
    }

    if ctx.check_mode {
        let has_extra = extra_args.as_deref().is_some_and(|e| !e.is_empty());
        if has_extra || p.requirements.is_some() || p.state == State::Latest || p.name.is_none() {
            return Ok(ModuleResult::changed());
        }
        let (pkg_cmd, list_out, list_err) = step!(installed(ctx, &sh_, &pip).await);
        out.push_str(&list_out);
        err.push_str(&list_err);
        let freeze: Vec<&str> = out
            .split('\n')
            .filter(|l| {
                !l.is_empty()
                    && !l.starts_with("You are using")
                    && !l.starts_with("You should consider")
            })
            .collect();
        let changed = packages.iter().any(|pkg| {
            let present = is_present(pkg, &freeze);
            match p.state {
                State::Present => !present,
                State::Absent => present,
                _ => false,
            }
        });
        return Ok(ModuleResult {
            changed,
            ..ModuleResult::ok()
        }
        .with("cmd", pkg_cmd)
        .with_streams(out, err));
    }

    let before = if p.requirements.is_some() || has_vcs {
        Some(step!(installed(ctx, &sh_, &pip).await).1)
    } else {
        None
    };
    let r = sh_
        .run(ctx, &format!("{path_prefix}{}", sh_join(&cmd)))
        .await?;
    let (pip_out, pip_err) = (r.stdout_str(), r.stderr_str());
    out.push_str(&pip_out);
    err.push_str(&pip_err);
    let not_installed = r.rc == 1
        && p.state == State::Absent
        && (pip_out.contains("not installed") || pip_err.contains("not installed"));
    if !r.success() && !not_installed {
        return Ok(fail(cmd.into(), &out, &err));
    }
    let changed = if p.state == State::Absent {
        pip_out.contains("Successfully uninstalled")
    } else {
        match before {
            None => pip_out.contains("Successfully installed"),
            Some(before) => step!(installed(ctx, &sh_, &pip).await).1 != before,
        }
    };
    Ok(ModuleResult {
        changed: changed || venv_created,
        ..ModuleResult::ok()
    }
    .with("cmd", cmd)
    .with("name", p.name.clone())
    .with("version", p.version.clone())
    .with("state", p.state.as_str())
    .with("requirements", p.requirements.clone())
    .with("virtualenv", env)
    .with_streams(out, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Params {
        super::super::args::parse("pip", &v).unwrap()
    }

    #[test]
    fn paths_leave_the_tilde_to_the_host() {
        assert_eq!(host_path("~/venv"), "\"$HOME\"/venv");
        assert_eq!(host_path("~"), "\"$HOME\"");
        assert_eq!(host_path("/a b"), "'/a b'");
        assert_eq!(host_path("~user/x"), "'~user/x'");
    }

    #[test]
    fn venv_commands_are_recognised() {
        assert!(is_venv_command("python3 -m venv"));
        assert!(is_venv_command("/usr/bin/python3.11 -mvenv"));
        assert!(is_venv_command("pyvenv"));
        assert!(!is_venv_command("virtualenv"));
        assert!(!is_venv_command("python3 -m virtualenv"));
    }

    #[test]
    fn names_split_at_commas_as_ansible_lists_do() {
        let p = params(serde_json::json!({"name": "a>=1,<2, b"}));
        assert_eq!(p.name.unwrap(), ["a>=1", "<2", " b"]);
        let p = params(serde_json::json!({"name": ["a", 3]}));
        assert_eq!(p.name.unwrap(), ["a", "3"]);
    }

    #[test]
    fn refused_combinations_use_upstreams_messages() {
        let p = params(serde_json::json!({"state": "latest"}));
        assert_eq!(
            refuse(&p).unwrap(),
            "one of the following is required: name, requirements"
        );
        let p = params(serde_json::json!({"name": "a", "requirements": "r.txt"}));
        assert_eq!(
            refuse(&p).unwrap(),
            "parameters are mutually exclusive: name|requirements"
        );
        let p = params(serde_json::json!({"name": "a", "state": "latest", "version": "1"}));
        assert_eq!(
            refuse(&p).unwrap(),
            "version is incompatible with state=latest"
        );
        let p = params(serde_json::json!({"name": "a", "umask": "9"}));
        assert_eq!(refuse(&p).unwrap(), "umask must be an octal integer");
    }

    #[test]
    fn presence_is_read_from_the_freeze() {
        let freeze = ["Kinit_Demo==1.0", "other==2.0"];
        assert!(is_present(&Package::parse("kinit-demo"), &freeze));
        assert!(is_present(&Package::parse("kinit.demo>=1.0"), &freeze));
        assert!(!is_present(&Package::parse("kinit-demo>1.0"), &freeze));
        assert!(!is_present(&Package::parse("missing"), &freeze));
    }
}
