//! `kinit ci list|run|index`: the command line of the periodic CI jobs, turned into a job
//! selection, a `ci::RunOptions` for the launcher, or an index rebuild. The jobs, launcher and
//! reports are `crate::ci`'s.

use std::path::PathBuf;

use crate::Outcome;
use crate::ci::JobType;
use crate::ci::{self, CiError, Matrix, RunOptions, jobs, list};
use crate::cli::{CiArgs, CiCommand, CiJobType, CiListFormat};

pub fn command(args: CiArgs) -> Result<Outcome, crate::Error> {
    match args.command {
        CiCommand::List {
            jobs,
            schedule,
            runner,
            labels,
            format,
        } => {
            let m = Matrix::load(&jobs::locate(jobs.as_deref())).map_err(CiError::from)?;
            let wanted: Option<Vec<&str>> = labels
                .as_deref()
                .map(|l| l.split(',').map(str::trim).collect());
            let selected: Vec<&jobs::Job> = m
                .jobs
                .iter()
                .filter(|j| schedule.as_deref().is_none_or(|s| j.schedule.word() == s))
                .filter(|j| runner.as_deref().is_none_or(|r| j.runner == r))
                .filter(|j| {
                    wanted
                        .as_ref()
                        .is_none_or(|w| w.contains(&j.label.as_str()))
                })
                .collect();
            print!("{}", list::render(&selected, list_format(format)));
            Ok(Outcome::Success)
        }
        CiCommand::Run {
            label,
            jobs,
            hypervisor_hosts,
            out,
            dry_run,
            job_type,
            pipeline_id,
            kinit,
            extra_vars,
            stop_after,
        } => {
            let m = Matrix::load(&jobs::locate(jobs.as_deref())).map_err(CiError::from)?;
            let mut job = m.get(&label).map_err(CiError::from)?.clone();
            if let Some(hosts) = hypervisor_hosts {
                job.set_hypervisor_hosts(&hosts).map_err(CiError::from)?;
            }
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            let over =
                crate::extra_vars::parse_extra_vars(&extra_vars, &cwd).map_err(CiError::from)?;
            job.extra_vars.extend(over);
            let exe = match kinit {
                Some(p) => p,
                None => std::env::current_exe().map_err(CiError::Exe)?,
            };
            let pid = pipeline_id
                .or_else(|| std::env::var("CI_PIPELINE_ID").ok())
                .or_else(|| std::env::var("GITHUB_RUN_ID").ok())
                .unwrap_or_else(|| "pid".into());
            let rt = tokio::runtime::Runtime::new().map_err(CiError::Runtime)?;
            let opts = RunOptions {
                out,
                dry_run,
                job_type: match job_type {
                    CiJobType::Periodic => JobType::Periodic,
                    CiJobType::Pr => JobType::Pr,
                },
                pipeline_id: pid,
                exe,
                stop_after,
            };
            let s = rt.block_on(ci::run_job(&job, &opts))?;
            println!("{}", opts.out.join(&s.name).join("index.html").display());
            Ok(if s.interrupted {
                Outcome::Interrupted
            } else if s.passed {
                Outcome::Success
            } else {
                Outcome::HostFailed
            })
        }
        CiCommand::Index { out, history } => {
            let page = ci::index::write_index(&out, history)?;
            println!("{}", page.display());
            Ok(Outcome::Success)
        }
    }
}

fn list_format(f: CiListFormat) -> list::Format {
    match f {
        CiListFormat::Table => list::Format::Table,
        CiListFormat::Json => list::Format::Json,
        CiListFormat::Labels => list::Format::Labels,
    }
}
