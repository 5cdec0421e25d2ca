//! `kinit playbook`: load the inventory and playbooks, then syntax-check, list, or run them
//! with the reporter attached, and map the result onto ansible-playbook's exit codes.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Executor, RunOptions, TagFilter};
use crate::cli::PlaybookArgs;
use crate::inventory::Inventory;
use crate::playbook::{Loader, LoaderOptions, Playbook, list};
use crate::report::{self, EventSender, ReportOptions};
use crate::{Error, Outcome};

pub fn playbook(args: PlaybookArgs) -> Result<Outcome, Error> {
    let loader = Arc::new(Loader::new(LoaderOptions {
        roles_path: roles_path(),
    }));
    let mut books = Vec::new();
    for p in &args.playbooks {
        books.push(loader.load_playbook(p)?);
    }
    if args.syntax_check {
        for b in &books {
            println!("\nplaybook: {}", b.path.display());
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
    let inventory = load_inventory(&args.inventory)?;
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let extra_vars = crate::extra_vars::parse_extra_vars(&args.extra_vars, &base)?;
    let opts = RunOptions {
        forks: args.exec.forks,
        check: args.exec.check,
        diff: args.exec.diff,
        verbose: args.exec.verbose,
        tags,
        start_at_task: args.start_at_task.clone(),
        extra_vars,
        limit: args.limit.clone(),
        host_key_checking: args.exec.host_key_checking,
        winrm_ca_file: args.exec.winrm_ca_file.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(crate::exec::WORKER_STACK)
        .build()
        .map_err(|source| Error::Runtime { source })?;
    runtime.block_on(run(args, loader, books, inventory, opts))
}

async fn run(
    args: PlaybookArgs,
    loader: Arc<Loader>,
    books: Vec<Playbook>,
    inventory: Inventory,
    opts: RunOptions,
) -> Result<Outcome, Error> {
    let cancel = CancellationToken::new();
    if args.list_hosts {
        let exec = Executor::new(loader, inventory, opts, EventSender::discard(), cancel);
        for b in &books {
            print!(
                "{}",
                list::list_hosts(b, |p| exec.play_hosts(p).unwrap_or_default())
            );
        }
        return Ok(Outcome::Success);
    }
    let ropts = ReportOptions {
        verbose: args.exec.verbose,
        diff: args.exec.diff,
        log_json: args.exec.log_json.clone(),
        junit: args.exec.junit.clone(),
        progress: std::io::stdout().is_terminal()
            && std::env::var("TERM").map(|t| t != "dumb").unwrap_or(false),
        frozen_time: std::env::var_os("KINIT_FROZEN_TIME").is_some(),
    };
    let (events, reporter) = report::start(ropts, Default::default())?;
    let ctrl_c = crate::interrupt::watch(cancel.clone());
    let exec = Executor::new(loader, inventory, opts, events, cancel.clone());
    for b in &books {
        if exec.run(b).await {
            break;
        }
    }
    drop(exec);
    ctrl_c.abort();
    let stats = reporter.await.map_err(|e| Error::Runtime {
        source: std::io::Error::other(e),
    })??;
    Ok(if cancel.is_cancelled() {
        Outcome::Interrupted
    } else if stats.any_failed() {
        Outcome::HostFailed
    } else if stats.any_unreachable() {
        Outcome::HostUnreachable
    } else {
        Outcome::Success
    })
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
