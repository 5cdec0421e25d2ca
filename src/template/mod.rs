//! Templating: a minijinja environment with Ansible's filters, tests and lookups, and the
//! rules for rendering task arguments (a string that is exactly one `{{ expr }}` keeps the
//! expression's native type, as in Ansible).

use serde_json::Value;

use crate::vars::VarMap;

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("{detail}")]
    Render { detail: String },
}

/// The templating engine shared by every host and task of a run.
pub struct Templar {
    env: minijinja::Environment<'static>,
}

impl Default for Templar {
    fn default() -> Self {
        Self::new()
    }
}

impl Templar {
    pub fn new() -> Self {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        Self { env }
    }

    /// Render template text with `vars` as the context.
    pub fn render_str(&self, source: &str, vars: &VarMap) -> Result<String, TemplateError> {
        if !source.contains("{{") && !source.contains("{%") {
            return Ok(source.to_string());
        }
        self.env
            .render_str(source, vars)
            .map_err(|e| TemplateError::Render {
                detail: e.to_string(),
            })
    }

    /// Evaluate a bare expression (`when:`, `that:`, `failed_when:`) to a value.
    pub fn eval(&self, expr: &str, vars: &VarMap) -> Result<Value, TemplateError> {
        let compiled = self
            .env
            .compile_expression(expr)
            .map_err(|e| TemplateError::Render {
                detail: e.to_string(),
            })?;
        let v = compiled.eval(vars).map_err(|e| TemplateError::Render {
            detail: e.to_string(),
        })?;
        serde_json::to_value(&v).map_err(|e| TemplateError::Render {
            detail: e.to_string(),
        })
    }

    /// Evaluate a condition to a boolean (Jinja truthiness).
    pub fn eval_bool(&self, expr: &str, vars: &VarMap) -> Result<bool, TemplateError> {
        let compiled = self
            .env
            .compile_expression(expr)
            .map_err(|e| TemplateError::Render {
                detail: e.to_string(),
            })?;
        compiled
            .eval(vars)
            .map(|v| v.is_true())
            .map_err(|e| TemplateError::Render {
                detail: e.to_string(),
            })
    }

    /// Render every string inside `value`; a string that is exactly `{{ expr }}` becomes the
    /// expression's value with its type (list, dict, number).
    pub fn render_value(&self, value: &Value, vars: &VarMap) -> Result<Value, TemplateError> {
        Ok(match value {
            Value::String(s) => {
                let t = s.trim();
                if let Some(inner) = t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}"))
                    && !inner.contains("{{")
                    && !inner.contains("}}")
                {
                    self.eval(inner.trim(), vars)?
                } else {
                    Value::String(self.render_str(s, vars)?)
                }
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.render_value(v, vars))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    out.insert(self.render_str(k, vars)?, self.render_value(v, vars)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }
}
