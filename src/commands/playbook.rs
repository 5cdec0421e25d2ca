//! `kinit playbook`: load the inventory and playbooks, then syntax-check, list, or run them
//! with the reporter attached, and map the result onto ansible-playbook's exit codes.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::ansible_cfg;
use crate::cli::PlaybookArgs;
use crate::exec::session::{ReportFiles, Session};
use crate::exec::{Executor, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::playbook::{Loader, LoaderOptions, Playbook, list};
use crate::report::{EventSender, Redactor};
use crate::transport::HostKeyChecking;
use crate::{Error, Outcome};

pub fn playbook(args: PlaybookArgs) -> Result<Outcome, Error> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cfg = ansible_cfg::load(&|k| std::env::var(k).ok(), &cwd, home.as_deref())?;
    if let (Some(file), false) = (&cfg.file, cfg.ignored.is_empty()) {
        eprintln!(
            "[WARNING]: {}: kinit does not use these settings: {}",
            file.display(),
            cfg.ignored.join(", ")
        );
    }
    if let Some(m) = cfg.become_method.as_deref().filter(|m| *m != "sudo") {
        eprintln!(
            "[WARNING]: become_method `{m}` from ansible.cfg/ANSIBLE_BECOME_METHOD: kinit becomes with sudo"
        );
    }
    let forks = args
        .exec
        .forks
        .or(cfg.forks)
        .unwrap_or(crate::exec::DEFAULT_FORKS);
    if forks == 0 {
        return Err(Error::Forks);
    }
    let mut roles = roles_path();
    roles.extend(cfg.roles_path.iter().cloned());
    let loader = Arc::new(Loader::new(LoaderOptions {
        roles_path: roles,
        library_path: cfg.library.clone(),
    }));
    let mut books = Vec::new();
    for p in &args.playbooks {
        books.push(loader.load_playbook(p)?);
    }
    for w in loader.take_warnings() {
        eprintln!("[WARNING]: {w}");
    }
    if args.syntax_check {
        for b in &books {
            println!("\nplaybook: {}", b.path.display());
        }
        return Ok(Outcome::Success);
    }
    if args.list_tags {
        for b in &books {
            print!("{}", list::list_tags(b));
        }
        return Ok(Outcome::Success);
    }
    let tags = TagFilter::new(&args.tags, &args.skip_tags);
    if args.list_tasks {
        for b in &books {
            print!("{}", list::list_tasks(b, &tags));
        }
        return Ok(Outcome::Success);
    }
    // `-i` wins over ansible.cfg's `inventory` (and ANSIBLE_INVENTORY), as in Ansible.
    let sources = if args.inventory.is_empty() {
        &cfg.inventory
    } else {
        &args.inventory
    };
    let inventory = load_inventory(sources)?;
    let extra_vars = crate::extra_vars::parse_extra_vars(&args.extra_vars, &cwd)?;
    let c = &args.connect;
    let opts = RunOptions {
        forks,
        check: args.exec.check,
        diff: args.exec.diff,
        verbose: args.exec.verbose,
        tags,
        start_at_task: args.start_at_task.clone(),
        extra_vars,
        limit: args.limit.clone(),
        // Flags, then ANSIBLE_* variables, then ansible.cfg (`cfg` has merged those two).
        connect: crate::exec::ConnectDefaults {
            remote_user: c.remote_user.clone().or(cfg.remote_user.clone()),
            connection: c.connection.clone(),
            private_key: c.private_key.clone().or(cfg.private_key_file.clone()),
            timeout: c
                .timeout
                .or(cfg.timeout)
                .map(std::time::Duration::from_secs),
            become_: c.become_ || cfg.become_ == Some(true),
            become_user: c.become_user.clone().or(cfg.become_user.clone()),
            ssh_args: cfg.ssh_args.clone(),
            gathering: cfg.gathering,
        },
        host_key_checking: args
            .exec
            .host_key_checking
            .unwrap_or(match cfg.host_key_checking {
                Some(false) => HostKeyChecking::Off,
                _ => HostKeyChecking::Strict,
            }),
        winrm_ca_file: args.exec.winrm_ca_file.clone(),
    };
    let runtime = crate::exec::session::runtime()?;
    runtime.block_on(run(args, loader, books, inventory, opts))
}

async fn run(
    args: PlaybookArgs,
    loader: Arc<Loader>,
    books: Vec<Playbook>,
    inventory: Inventory,
    opts: RunOptions,
) -> Result<Outcome, Error> {
    if args.list_hosts {
        let exec = Executor::new(
            loader,
            inventory,
            opts,
            EventSender::discard(),
            CancellationToken::new(),
        );
        for b in &books {
            print!(
                "{}",
                list::list_hosts(b, |p| exec.play_hosts(p).unwrap_or_default())
            );
        }
        return Ok(Outcome::Success);
    }
    let files = ReportFiles {
        log_json: args.exec.log_json.clone(),
        junit: args.exec.junit.clone(),
    };
    let session = Session::start(loader, inventory, opts, files, Redactor::default())?;
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
/// only the implicit `localhost` exists.
fn load_inventory(sources: &[String]) -> Result<Inventory, Error> {
    Ok(crate::inventory::load(sources)?)
}
