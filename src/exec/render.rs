//! Render mode (`kinit plan --render`): the executor walks the plays exactly as for a run
//! (variables, `when`, loops, includes, `set_fact`, `register`), but no task reaches a host.
//! A task whose module writes a file hands that file to the `RenderSink`
//! (`modules::render_files`); every other task gets the result the sink stands in for it.
//! Those results are no host's answer, so `until` loops make one attempt and
//! `changed_when`/`failed_when` are not evaluated on them. A `fail` task whose message holds
//! a placeholder (`PLACEHOLDER`) judged a stood-in answer (in the bundled playbooks: an
//! address another cluster holds) and does not fail the render; any other `fail` (a missing
//! digest, a bad variable) and every `assert` stop it as they stop the run. `pause` and
//! `wait_for_connection` return at once.

use std::fmt::Debug;

use serde_json::Value;

use super::Executor;
use super::host_task::{Attempt, OnHost};
use super::remote::TaskRender;
use crate::modules::render::{RenderCtx, Rendered};
use crate::report::TaskResult;
use crate::vars::VarMap;

/// How a value only a running deployment knows begins in a stood-in result.
pub const PLACEHOLDER: &str = "[deploy-time value: ";

/// Where render mode puts what tasks would write, and what it answers for the others.
pub trait RenderSink: Send + Sync + Debug {
    /// Keep `files` of task `task` running for inventory host `host` on `target` (its
    /// `delegate_to` machine, or `host`). Returns the task's result, or an error message.
    fn keep(&self, host: &str, target: &str, task: &str, files: Rendered) -> Result<Value, String>;
    /// The result of a task that writes no file (`module` with rendered `args`), standing
    /// in for what the host would have answered.
    fn stand_in(&self, host: &str, target: &str, task: &str, module: &str, args: &Value) -> Value;
}

impl Executor {
    /// `run_module` in render mode: `args` are rendered, `target` resolved.
    pub(crate) fn render_module(
        &self,
        sink: &dyn RenderSink,
        t: &OnHost<'_>,
        target: &str,
        name: &str,
        args: &Value,
        ctx: &VarMap,
    ) -> Attempt {
        let search = self.search_paths(t.task, t.inh);
        let templates = TaskRender {
            templar: &self.templar,
            vars: ctx,
        };
        let task = t.task.display_name();
        let rctx = RenderCtx {
            task: &task,
            search_paths: &search,
            render: &templates,
            vars: ctx,
        };
        match crate::modules::render_files(name, args, &rctx) {
            Ok(Some(files)) => match sink.keep(t.host, target, &task, files) {
                Ok(result) => Attempt::of(TaskResult::from_value(result)),
                Err(msg) => Attempt::failed(msg),
            },
            Ok(None) => Attempt::of(TaskResult::from_value(
                sink.stand_in(t.host, target, &task, name, args),
            )),
            Err(e) => Attempt::failed(e.to_string()),
        }
    }
}
