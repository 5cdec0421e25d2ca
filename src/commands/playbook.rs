//! `kinit playbook`: load the inventory and playbooks, then syntax-check, list, or run them
//! with the reporter attached, and map the result onto ansible-playbook's exit codes.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::ansible_cfg;
use crate::cli::PlaybookArgs;
use crate::config::{PlaybookConfig, PlaybookMode, vault_sources};
use crate::exec::Executor;
use crate::exec::session::Session;
use crate::inventory::{Inventory, InventoryError};
use crate::playbook::{Loader, Play, Playbook, list};
use crate::report::{EventSender, Redactor};
use crate::secret::Secret;
use crate::{Error, Outcome};

pub fn playbook(args: PlaybookArgs) -> Result<Outcome, Error> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cfg = ansible_cfg::load(&|k| std::env::var(k).ok(), &cwd, home.as_deref())?;
    crate::vars::set_hash_merge(cfg.hash_merge);
    if let (Some(file), false) = (&cfg.file, cfg.ignored.is_empty()) {
        eprintln!(
            "[WARNING]: {}: kinit does not use these settings: {}",
            file.display(),
            cfg.ignored.join(", ")
        );
    }
    if let Some(m) = cfg
        .become_method
        .as_deref()
        .filter(|m| crate::transport::BecomeMethod::parse(m).is_none())
    {
        eprintln!(
            "[WARNING]: become_method `{m}` from ansible.cfg/ANSIBLE_BECOME_METHOD: kinit \
             becomes with sudo or su; a task that becomes with it fails"
        );
    }
    // `-k`/`-K` first, as ansible-playbook asks them (`CLI.ask_passwords`), and only for a run.
    let listing = args.syntax_check || args.list_tasks || args.list_tags || args.list_hosts;
    let (ssh_password, become_password) = if listing {
        (None, None)
    } else {
        ask_passwords(&args.connect)?
    };
    // Secrets next: `-e @file`, playbooks and inventories may all be vaulted.
    let vault = crate::vault::load_secrets(&vault_sources(&args.vault, &cfg), &mut |w| {
        eprintln!("[WARNING]: {w}")
    })?;
    let redactor = Redactor::default();
    for pw in vault.passwords() {
        redactor.add(pw.expose());
    }
    for pw in ssh_password.iter().chain(&become_password) {
        redactor.add(pw.expose());
    }
    crate::vault::install(vault);
    let mut config = PlaybookConfig::from_args(&args, &cfg, &cwd, roles_path())?;
    config.run.connect.password = ssh_password;
    config.run.connect.become_password = become_password;
    let loader = Arc::new(Loader::new(config.loader.clone()));
    let mut books = Vec::new();
    for p in &config.playbooks {
        books.push(loader.load_playbook(p)?);
    }
    for b in &books {
        crate::playbook::reserved::warnings(b)
            .into_iter()
            .for_each(|w| loader.warn(w));
    }
    for w in loader.take_warnings() {
        eprintln!("[WARNING]: {w}");
    }
    match config.mode {
        PlaybookMode::SyntaxCheck => {
            for b in &books {
                println!("\nplaybook: {}", b.path.display());
            }
            return Ok(Outcome::Success);
        }
        PlaybookMode::ListTags => {
            for b in &books {
                print!("{}", list::list_tags(b, hosts_text(&config.run.extra_vars)));
            }
            return Ok(Outcome::Success);
        }
        PlaybookMode::ListTasks => {
            for b in &books {
                print!(
                    "{}",
                    list::list_tasks(b, &config.run.tags, hosts_text(&config.run.extra_vars))
                );
            }
            return Ok(Outcome::Success);
        }
        PlaybookMode::ListHosts | PlaybookMode::Run => {}
    }
    let inventory = load_inventory(&config.inventory, &books, config.inventory_policy)?;
    if inventory.hosts.is_empty() && config.inventory_policy.localhost_warning {
        eprintln!(
            "[WARNING]: provided hosts list is empty, only localhost is available. Note that \
             the implicit localhost does not match 'all'"
        );
    }
    let runtime = crate::exec::session::runtime()?;
    runtime.block_on(run(config, loader, books, inventory, redactor))
}

async fn run(
    config: PlaybookConfig,
    loader: Arc<Loader>,
    books: Vec<Playbook>,
    inventory: Inventory,
    redactor: Redactor,
) -> Result<Outcome, Error> {
    if config.mode == PlaybookMode::ListHosts {
        let extra_vars = config.run.extra_vars.clone();
        let shown = hosts_text(&extra_vars);
        let exec = Executor::new(
            loader,
            inventory,
            config.run,
            EventSender::discard(),
            CancellationToken::new(),
        );
        for b in &books {
            print!(
                "{}",
                list::list_hosts(b, |p| exec.play_hosts(p).unwrap_or_default(), &shown)
            );
        }
        return Ok(Outcome::Success);
    }
    let session = Session::start(loader, inventory, config.run, config.reports, redactor)?;
    for b in &books {
        if session.executor().run(b).await {
            break;
        }
    }
    session.finish(false).await
}

/// Role folders from `KINIT_ROLES_PATH` (or `ANSIBLE_ROLES_PATH`), colon-separated.
fn roles_path() -> Vec<PathBuf> {
    std::env::var("KINIT_ROLES_PATH")
        .or_else(|_| std::env::var("ANSIBLE_ROLES_PATH"))
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default()
}

/// `-i` values (files, folders, `a,b,` host lists); none means an empty inventory, where
/// only the implicit `localhost` exists. The `group_vars/` and `host_vars/` beside the
/// playbooks come last.
/// The inventory from `sources`, with ansible-playbook's warnings: a source that is neither a
/// file, a folder nor a host list is warned of and skipped (or ends the run with
/// `any_unparsed_is_failed`), and so is having read none (`unparsed_is_failed`).
fn load_inventory(
    sources: &[String],
    books: &[Playbook],
    policy: crate::config::InventoryPolicy,
) -> Result<Inventory, Error> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for b in books {
        let dir = match b.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let mut inv = crate::inventory::load_for_playbooks(sources, &dirs)?;
    for w in std::mem::take(&mut inv.warnings) {
        eprintln!("[WARNING]: {w}");
    }
    for path in &inv.unparsed {
        if policy.any_unparsed_is_failed {
            return Err(InventoryError::Unparsed { path: path.clone() }.into());
        }
        eprintln!(
            "[WARNING]: Unable to parse {} as an inventory source",
            path.display()
        );
    }
    if sources.len() == inv.unparsed.len() {
        if policy.unparsed_is_failed {
            return Err(InventoryError::NoneParsed.into());
        }
        if policy.unparsed_warning {
            eprintln!("[WARNING]: No inventory was parsed, only implicit localhost is available");
        }
    }
    Ok(inv)
}

/// `-k` and `-K`, asked on the terminal with ansible-playbook's questions (with both, an empty
/// become password means the SSH password), or `--connection-password-file` and
/// `--become-password-file` (`CLI.ask_passwords`).
fn ask_passwords(
    c: &crate::cli::ConnectArgs,
) -> Result<(Option<Secret>, Option<Secret>), crate::Error> {
    let ask = |question: &str, what: &'static str, flag: &'static str| {
        crate::secret::ask_hidden(question).map_err(|source| crate::Error::AskPassword {
            what,
            flag,
            source,
        })
    };
    let from_file = |f: &Option<String>| {
        f.as_deref()
            .map(crate::secret::read_password_file)
            .transpose()
    };
    let ssh = match c.ask_pass {
        true => Some(ask("SSH password: ", "SSH password", "-k")?),
        false => from_file(&c.connection_password_file)?,
    };
    let become_ = match (c.ask_become_pass, c.ask_pass) {
        (false, _) => from_file(&c.become_password_file)?,
        (true, false) => Some(ask("BECOME password: ", "become password", "-K")?),
        (true, true) => {
            let b = ask(
                "BECOME password[defaults to SSH password]: ",
                "become password",
                "-K",
            )?;
            match b.is_empty() {
                true => ssh.clone(),
                false => Some(b),
            }
        }
    };
    Ok((ssh, become_))
}

/// A play's `hosts` as the listings show it: templated with the play's vars and `-e`, as
/// ansible-playbook shows the post-validated play (a template that fails is shown as
/// written), a list's items joined with `,` (`cli/playbook.py`: `','.join(play.hosts)`).
fn hosts_text(extra_vars: &crate::vars::VarMap) -> impl Fn(&Play) -> String + '_ {
    let templar = crate::template::Templar::new();
    move |play| {
        if !play.hosts.contains("{{") {
            return play.hosts_items.join(",");
        }
        let mut vars = play.vars.clone();
        crate::vars::overlay(&mut vars, extra_vars);
        let render = |h: &String| templar.render_str(h, &vars).unwrap_or_else(|_| h.clone());
        play.hosts_items
            .iter()
            .map(render)
            .collect::<Vec<_>>()
            .join(",")
    }
}
