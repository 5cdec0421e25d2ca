//! Errors of the spec layer. Each names where the problem is (`at`: the option, and the rule
//! or entry number inside it), the value, and what was expected.

use super::input::InputError;
use super::shape::ShapeError;
use super::size::SizeError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error("{at}: {error}")]
    Syntax { at: String, error: InputError },
    #[error("{at} must be {expected}, not {found}")]
    WrongType {
        at: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{at}: unknown key `{key}`; expected one of {allowed}")]
    UnknownKey {
        at: String,
        key: String,
        allowed: String,
    },
    #[error("{at}: `{key}` is `{value}`; expected {expected}")]
    BadValue {
        at: String,
        key: String,
        value: String,
        expected: String,
    },
    #[error("{at}: `{key}`: {error}")]
    BadSize {
        at: String,
        key: String,
        error: SizeError,
    },
    #[error("`{option}` lists {given} hypervisor(s) but spec `{spec}` asks for {wanted}")]
    TooManyHypervisors {
        option: &'static str,
        spec: String,
        given: usize,
        wanted: u32,
    },
    #[error(
        "`--hypervisor-hosts`: host #{position} is empty; expected names such as `nyctea,tyto`"
    )]
    EmptyHost { position: usize },
    #[error("{at}: give only one of `{a}` and `{b}`")]
    Conflict {
        at: String,
        a: &'static str,
        b: &'static str,
    },
}
