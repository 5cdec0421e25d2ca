//! `kinit playbook`: load the inventory and playbooks, then syntax-check, list, or run them
//! with the reporter attached, and map the result onto ansible-playbook's exit codes.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cli::PlaybookArgs;
use crate::exec::session::{ReportFiles, Session};
use crate::exec::{Executor, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::playbook::{Loader, LoaderOptions, Playbook, list};
use crate::report::{EventSender, Redactor};
use crate::{Error, Outcome};

pub fn playbook(args: PlaybookArgs) -> Result<Outcome, Error> {
    if args.exec.forks == 0 {
        return Err(Error::Forks);
    }
    let loader = Arc::new(Loader::new(LoaderOptions {
        roles_path: roles_path(),
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
        connect: crate::exec::ConnectDefaults {
            remote_user: args.connect.remote_user.clone(),
            connection: args.connect.connection.clone(),
            private_key: args.connect.private_key.clone(),
            timeout: args.connect.timeout.map(std::time::Duration::from_secs),
            become_: args.connect.become_,
            become_user: args.connect.become_user.clone(),
        },
        host_key_checking: args.exec.host_key_checking,
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
