//! Text that is shown rather than used, rendered as ansible-core 2.19 renders it: a part that
//! fails becomes a numbered marker in place, `<< error N - msg >>`, and the errors are told in
//! one warning (`_internal/_templating/_marker_behaviors.py` `ReplacingMarkerBehavior`).
//!
//! 2.19 does this for a task's banner name (`Task._post_validate_name`, templated with the
//! first host's variables for the callbacks) and for `debug: var=...` (its action plugin).
//! An undefined value printed by `{{ }}` is replaced and the template goes on; any other
//! error (an undefined value used in `{% if %}`, a division by zero) stops it, and a second
//! marker says so: `<< error N+1 - template potentially truncated >>` (`TruncationMarker`).

use super::{Templar, TemplateError};
use crate::vars::VarMap;

/// 2.19's hint for the rest of a template after an error stopped it.
const TRUNCATED: &str = "template potentially truncated";

/// Text rendered with its failing parts replaced by markers, and the errors they number.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Marked {
    pub text: String,
    /// The messages of markers 1, 2, ... in order.
    pub errors: Vec<String>,
}

impl Marked {
    /// The warning keeps the variable an error was met in (`while templating variable `a``);
    /// the marker in the value, which a playbook may compare, is ansible-core's reason alone.
    fn mark(&mut self, message: &str) {
        self.errors.push(message.to_string());
        let n = self.errors.len();
        let (reason, _) = super::scope::variable_context(message);
        self.text.push_str(&format!("<< error {n} - {reason} >>"));
    }

    fn stop(&mut self, message: &str) {
        self.mark(message);
        self.mark(TRUNCATED);
    }

    /// The marker text for a whole value that failed (`debug: var=undefined`).
    pub fn failed(e: &TemplateError) -> Self {
        let mut m = Self::default();
        m.mark(&e.to_string());
        m
    }

    /// 2.19's warning text: `Encountered N template error(s).` and one line per marker.
    pub fn warning(&self) -> Option<String> {
        if self.errors.is_empty() {
            return None;
        }
        let n = self.errors.len();
        let mut msg = format!(
            "Encountered {n} template error{}.",
            if n > 1 { "s" } else { "" }
        );
        for (i, e) in self.errors.iter().enumerate() {
            msg.push_str(&format!("\nerror {} - {e}", i + 1));
        }
        Some(msg)
    }
}

impl Templar {
    /// Render `source` for display: a whole render when it succeeds, else part by part with
    /// markers where parts fail (see the module doc).
    pub fn render_marked(&self, source: &str, vars: &VarMap) -> Marked {
        match self.render_str(source, vars) {
            Ok(text) => Marked {
                text,
                errors: Vec::new(),
            },
            Err(_) => self.render_parts(source, vars),
        }
    }

    fn render_parts(&self, source: &str, vars: &VarMap) -> Marked {
        let mut out = Marked::default();
        let mut rest = source;
        while !rest.is_empty() {
            let start = ["{{", "{%", "{#"]
                .iter()
                .filter_map(|open| rest.find(open))
                .min()
                .unwrap_or(rest.len());
            out.text.push_str(&rest[..start]);
            rest = &rest[start..];
            if rest.is_empty() {
                break;
            }
            // A statement or comment may span or shape what follows (`{% if %}...{% endif %}`):
            // the rest renders as one.
            let end = match rest.starts_with("{{") {
                true => super::scope::expression_end(rest).unwrap_or(rest.len()),
                false => rest.len(),
            };
            match self.render_str(&rest[..end], vars) {
                Ok(text) => out.text.push_str(&text),
                Err(TemplateError::Undefined { detail }) if rest.starts_with("{{") => {
                    out.mark(&detail);
                }
                Err(e) => {
                    out.stop(&e.to_string());
                    break;
                }
            }
            rest = &rest[end..];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(v: serde_json::Value) -> VarMap {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn undefined_parts_become_numbered_markers_and_the_rest_renders() {
        let t = Templar::new();
        let m = t.render_marked(
            "B {{ u1 }} and {{ u2 | default('d') }} and {{ {'a': {'b': 1}}.a.b }} {{ n }}",
            &vars(json!({"n": 1})),
        );
        assert_eq!(
            m.text, "B << error 1 - 'u1' is undefined >> and d and 1 1",
            "{m:?}"
        );
        assert_eq!(m.errors, ["'u1' is undefined"]);
        assert_eq!(
            m.warning().unwrap(),
            "Encountered 1 template error.\nerror 1 - 'u1' is undefined"
        );
    }

    #[test]
    fn an_error_that_stops_the_template_adds_the_truncation_marker() {
        let t = Templar::new();
        let m = t.render_marked("C {% if u4 %}y{% endif %} tail", &vars(json!({})));
        assert_eq!(
            m.text,
            "C << error 1 - 'u4' is undefined >><< error 2 - template potentially truncated >>"
        );
        let m = t.render_marked("D {{ [1, 2] }} {{ 1 / z }} {{ x }}", &vars(json!({"z": 0})));
        assert!(m.text.starts_with("D [1, 2] << error 1 - "), "{m:?}");
        assert!(
            m.text
                .ends_with(">><< error 2 - template potentially truncated >>"),
            "{m:?}"
        );
        assert_eq!(m.errors.len(), 2);
        assert!(
            m.warning()
                .unwrap()
                .starts_with("Encountered 2 template errors.\n")
        );
    }

    #[test]
    fn text_that_renders_has_no_markers() {
        let t = Templar::new();
        let m = t.render_marked("A {{ pv }}", &vars(json!({"pv": "play"})));
        assert_eq!(m.text, "A play");
        assert_eq!(m.warning(), None);
    }
}
