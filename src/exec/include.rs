//! Dynamic includes (`include_tasks`, `include_role`): the files are loaded when hosts reach
//! them. Hosts that include the same file with the same parameters run it together (in
//! lockstep); different includes run one after another.

use std::path::PathBuf;

use serde_json::Value;

use super::walk::Inherit;
use super::{Executor, PlayRun};
use crate::playbook::{Location, Task};
use crate::vars::VarMap;

/// One include a host asked for (one per loop item).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IncludeReq {
    Tasks {
        path: PathBuf,
        params: VarMap,
        loc: Location,
    },
    Role {
        name: String,
        tasks_from: Option<String>,
        params: VarMap,
        loc: Location,
    },
}

impl IncludeReq {
    fn key(&self) -> String {
        match self {
            IncludeReq::Tasks { path, params, .. } => {
                format!("t:{}:{}", path.display(), Value::Object(params.clone()))
            }
            IncludeReq::Role {
                name,
                tasks_from,
                params,
                ..
            } => format!("r:{name}:{tasks_from:?}:{}", Value::Object(params.clone())),
        }
    }
}

impl Executor {
    pub(crate) async fn run_includes(
        &self,
        pr: &PlayRun<'_>,
        includes: Vec<(String, Vec<IncludeReq>)>,
        inh: &Inherit,
    ) {
        let rounds = includes.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        for i in 0..rounds {
            // Group hosts by identical include, keeping first-seen order.
            let mut groups: Vec<(String, IncludeReq, Vec<String>)> = Vec::new();
            for (host, reqs) in &includes {
                let Some(req) = reqs.get(i) else { continue };
                let key = req.key();
                match groups.iter_mut().find(|g| g.0 == key) {
                    Some(g) => g.2.push(host.clone()),
                    None => groups.push((key, req.clone(), vec![host.clone()])),
                }
            }
            for (_, req, hosts) in groups {
                if self.cancel.is_cancelled() || pr.is_ended() {
                    return;
                }
                let hosts = self.active(&hosts);
                if hosts.is_empty() {
                    continue;
                }
                self.run_include(pr, &req, &hosts, inh).await;
            }
        }
    }

    async fn run_include(
        &self,
        pr: &PlayRun<'_>,
        req: &IncludeReq,
        hosts: &[String],
        inh: &Inherit,
    ) {
        let mut inner = inh.clone();
        let (loaded, loc) = match req {
            IncludeReq::Tasks { path, params, loc } => {
                crate::vars::overlay(&mut inner.params, params);
                let role = inh.roles.last().cloned();
                (
                    self.loader
                        .include_tasks_file(path, role)
                        .map(|(tasks, handlers)| {
                            (
                                Task {
                                    name: None,
                                    action: crate::playbook::Action::Block {
                                        block: tasks,
                                        rescue: Vec::new(),
                                        always: Vec::new(),
                                    },
                                    kw: Default::default(),
                                    loc: loc.clone(),
                                    role: None,
                                },
                                handlers,
                            )
                        }),
                    loc,
                )
            }
            IncludeReq::Role {
                name,
                tasks_from,
                params,
                loc,
            } => (
                self.loader
                    .include_role(name, params.clone(), tasks_from.as_deref(), loc)
                    .map(|r| (r.block, r.handlers)),
                loc,
            ),
        };
        match loaded {
            Ok((block, handlers)) => {
                pr.handlers.lock().unwrap().extend(handlers);
                self.run_tasks(pr, hosts, std::slice::from_ref(&block), &inner)
                    .await;
            }
            Err(e) => {
                for h in hosts {
                    self.fail_host(h, "include", &loc.to_string(), e.to_string());
                }
            }
        }
    }
}
