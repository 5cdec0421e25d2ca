//! `vars_prompt`: a play's questions, asked on the terminal before the play starts (Ansible
//! 2.19 `PlaybookExecutor.run` and `Display.do_var_prompt`). A variable given with `-e` is not
//! asked. Without a terminal on stdin nothing is asked: one warning, and each variable takes
//! its `default`, or the text `None` when it has none, as Ansible does. `prompt` and `default`
//! are templates over the play's variables; `encrypt` hashes the answer as `password_hash`
//! does (`salt_size` is accepted; the generated salt is always 16 characters). A private
//! answer typed at the terminal is masked in every output like a password.

use std::io::IsTerminal;

use serde_json::Value;

use super::Executor;
use crate::playbook::{Play, VarPrompt};
use crate::report::Event;

impl Executor {
    /// The play with its prompted variables among its `vars`, or `None` when it asks nothing.
    pub(super) fn with_prompted_vars(&self, play: &Play) -> Option<Play> {
        let asked: Vec<&VarPrompt> = play
            .vars_prompt
            .iter()
            .filter(|p| !self.opts.extra_vars.contains_key(&p.name))
            .collect();
        if asked.is_empty() {
            return None;
        }
        let vars = self.play_level_vars(play);
        let render = |text: &str| {
            self.templar
                .render_str(text, &vars)
                .unwrap_or_else(|_| text.to_string())
        };
        let interactive = std::io::stdin().is_terminal();
        if !interactive {
            self.emit(Event::Warning {
                message: "Not prompting as we are not in interactive mode".into(),
            });
        }
        let mut play = play.clone();
        for p in asked {
            let default = p.default.as_ref().map(|d| match d {
                Value::String(s) => render(s),
                // Ansible keeps the default as Python's `str()` of it.
                Value::Bool(true) => "True".into(),
                Value::Bool(false) => "False".into(),
                Value::Null => "None".into(),
                other => other.to_string(),
            });
            let mut answer = String::new();
            if interactive {
                let question = match (&p.prompt, &default) {
                    (Some(q), Some(d)) => format!("{} [{d}]: ", render(q)),
                    (Some(q), None) => format!("{}: ", render(q)),
                    (None, _) => format!("input for {}: ", p.name),
                };
                answer = self.events.suspend(|| ask(&question, p.private, p.confirm));
                if p.private && !answer.is_empty() {
                    self.events.redactor.add(&answer);
                }
            }
            let mut value = match (answer.is_empty(), default) {
                (true, Some(d)) => d,
                (true, None) if !interactive => "None".to_string(),
                _ => answer,
            };
            if let Some(kind) = &p.encrypt {
                value = self.hash_answer(&value, kind, p.salt.as_deref(), p);
            }
            play.vars.insert(p.name.clone(), Value::String(value));
        }
        Some(play)
    }

    fn hash_answer(&self, value: &str, kind: &str, salt: Option<&str>, p: &VarPrompt) -> String {
        let mut vars = crate::vars::VarMap::new();
        vars.insert("answer".into(), Value::String(value.into()));
        vars.insert("kind".into(), Value::String(kind.into()));
        let source = match salt {
            Some(s) => {
                vars.insert("salt".into(), Value::String(s.into()));
                "{{ answer | password_hash(kind, salt) }}"
            }
            None => "{{ answer | password_hash(kind) }}",
        };
        self.templar.render_str(source, &vars).unwrap_or_else(|e| {
            self.emit(Event::Warning {
                message: format!(
                    "{}: vars_prompt `{}`: cannot hash with `{kind}` ({e}); the answer is kept as typed",
                    p.loc, p.name
                ),
            });
            value.to_string()
        })
    }
}

/// Ask on the terminal; with `confirm`, until the two answers match.
pub(super) fn ask(question: &str, private: bool, confirm: bool) -> String {
    loop {
        let first = read_answer(question, private);
        if !confirm {
            return first;
        }
        if read_answer(&format!("confirm {question}"), private) == first {
            return first;
        }
        eprintln!("***** VALUES ENTERED DO NOT MATCH ****");
    }
}

fn read_answer(question: &str, private: bool) -> String {
    let term = console::Term::stderr();
    let _ = term.write_str(question);
    let line = if private {
        term.read_secure_line()
    } else {
        term.read_line()
    };
    line.unwrap_or_default()
}
