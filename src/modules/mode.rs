//! File modes as Ansible accepts them: an octal string (`"0644"`, `"644"`), a number, or a
//! symbolic mode (`u=rw,g=r,o=`, `a+x`, `u+X`), resolved against the current mode on the
//! controller so the modules can tell whether a `chmod` would change anything.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

/// A requested mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Octal(u32),
    /// The text as given (for `chmod -R`) and its parsed clauses.
    Symbolic(String, Vec<Clause>),
    /// `preserve` (copy/template): keep the source file's mode.
    Preserve,
}

/// A mode string that is neither octal nor symbolic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    #[error("`{mode}` is not an octal mode")]
    NotOctal { mode: String },
    #[error("`{clause}` is not a valid mode (expected octal like `0644` or `u=rw,g=r`)")]
    BadClause { clause: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    who: u32,
    op: char,
    perms: String,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Self, ModeError> {
        let s = s.trim();
        if s == "preserve" {
            return Ok(Mode::Preserve);
        }
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return u32::from_str_radix(s, 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .map(Mode::Octal)
                .ok_or_else(|| ModeError::NotOctal {
                    mode: s.to_string(),
                });
        }
        s.split(',')
            .map(parse_clause)
            .collect::<Result<_, _>>()
            .map(|c| Mode::Symbolic(s.to_string(), c))
    }

    /// The argument `chmod` takes for this mode (`None` for `preserve`).
    pub fn chmod_arg(&self) -> Option<String> {
        match self {
            Mode::Preserve => None,
            Mode::Octal(m) => Some(format!("{m:04o}")),
            Mode::Symbolic(text, _) => Some(text.clone()),
        }
    }

    /// The mode a file with `current` mode ends with (`None` for `preserve`).
    pub fn resolve(&self, current: u32, is_dir: bool) -> Option<u32> {
        match self {
            Mode::Preserve => None,
            Mode::Octal(m) => Some(*m),
            Mode::Symbolic(_, clauses) => Some(clauses.iter().fold(current & 0o7777, |m, c| {
                c.apply(m, is_dir || current & 0o111 != 0)
            })),
        }
    }
}

fn parse_clause(text: &str) -> Result<Clause, ModeError> {
    let bad = || ModeError::BadClause {
        clause: text.to_string(),
    };
    let op_at = text.find(['+', '-', '=']).ok_or_else(bad)?;
    let (who_s, rest) = text.split_at(op_at);
    let mut who = 0;
    for c in who_s.chars() {
        who |= match c {
            'u' => 0o4700,
            'g' => 0o2070,
            'o' => 0o1007,
            'a' => 0o7777,
            _ => return Err(bad()),
        };
    }
    if who == 0 {
        who = 0o7777;
    }
    let op = rest.chars().next().ok_or_else(bad)?;
    let perms = rest[1..].to_string();
    if !perms.chars().all(|c| "rwxXst".contains(c)) {
        return Err(bad());
    }
    Ok(Clause { who, op, perms })
}

impl Clause {
    fn apply(&self, mode: u32, x_applies: bool) -> u32 {
        let mut bits = 0;
        for c in self.perms.chars() {
            bits |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                'X' if x_applies => 0o111,
                's' => 0o6000,
                't' => 0o1000,
                _ => 0,
            };
        }
        let bits = bits & self.who;
        match self.op {
            '+' => mode | bits,
            '-' => mode & !bits,
            _ => (mode & !self.who) | bits,
        }
    }
}

/// Deserialize an optional mode from a string or a number.
///
/// A number is the mode's value, as in Ansible: YAML 1.1 reads `mode: 0644` as 420, which is
/// `0644`; `mode: 644` is the number 644 (`01204`), Ansible's well-known trap. A string is
/// octal or symbolic.
pub fn opt_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Mode>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) => Mode::parse(&s).map(Some).map_err(de::Error::custom),
        Value::Number(n) => n
            .as_u64()
            .filter(|m| *m <= 0o7777)
            .map(|m| Some(Mode::Octal(m as u32)))
            .ok_or_else(|| de::Error::custom(format!("`{n}` is not a valid mode"))),
        other => Err(de::Error::custom(format!("`{other}` is not a valid mode"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_strings() {
        assert_eq!(Mode::parse("0644").unwrap(), Mode::Octal(0o644));
        assert_eq!(Mode::parse("755").unwrap(), Mode::Octal(0o755));
        assert_eq!(
            Mode::parse("0999"),
            Err(ModeError::NotOctal {
                mode: "0999".into()
            })
        );
    }

    #[test]
    fn symbolic_modes_resolve_against_current() {
        let m = Mode::parse("u=rw,g=r,o=").unwrap();
        assert_eq!(m.resolve(0o777, false), Some(0o640));
        let m = Mode::parse("a+x").unwrap();
        assert_eq!(m.resolve(0o644, false), Some(0o755));
        let m = Mode::parse("u+X").unwrap();
        assert_eq!(m.resolve(0o644, false), Some(0o644));
        assert_eq!(m.resolve(0o644, true), Some(0o744));
        let m = Mode::parse("go-w").unwrap();
        assert_eq!(m.resolve(0o666, false), Some(0o644));
        assert_eq!(
            Mode::parse("u=rw,q+r"),
            Err(ModeError::BadClause {
                clause: "q+r".into()
            })
        );
    }

    #[test]
    fn numbers_are_values_strings_are_octal() {
        #[derive(Deserialize)]
        struct W {
            #[serde(deserialize_with = "opt_mode")]
            m: Option<Mode>,
        }
        let m = |v: Value| {
            serde_json::from_value::<W>(serde_json::json!({ "m": v }))
                .unwrap()
                .m
        };
        assert_eq!(m(serde_json::json!(420)), Some(Mode::Octal(0o644)));
        assert_eq!(m(serde_json::json!("0644")), Some(Mode::Octal(0o644)));
        assert_eq!(m(serde_json::json!("1777")), Some(Mode::Octal(0o1777)));
    }
}
