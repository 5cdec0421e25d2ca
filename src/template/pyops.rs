//! Python's rules for the operators where minijinja answers and Jinja2 under Ansible raises
//! a `TypeError` or `ZeroDivisionError`: ordering values of unrelated types (`'10' < 5`,
//! `none > 1`), multiplying a string or list by a float, even a whole one (`2.0 * 'ab'`), and
//! dividing a number by zero (`1 / 0`). `==` and `!=` between unrelated types stay false and
//! true, as in Python. `~` joins Python's `str()` of each side (`'x' ~ ['a']` is `x['a']`),
//! which refuses an undefined item.
//!
//! minijinja has no hook for operators, so templates are compiled here (with its
//! `unstable_machinery` API, pinned by Cargo.lock) and their `<`, `<=`, `>`, `>=`, `*`, `/`,
//! `//`, `%` and `~` instructions are replaced by calls to the functions `register` adds,
//! which check the operand types and then do what minijinja would have done. An operation on
//! two literals (`2.0 * 'ab'`) is computed by minijinja's compiler instead, so expressions are
//! checked for those first (`check_literals`); in template text around other text they are
//! not.

use std::cmp::Ordering;
use std::sync::Arc;

use minijinja::machinery::ast::{BinOpKind, CallArg, CompareOpKind, Expr};
use minijinja::machinery::{
    CodeGenerator, CompiledTemplate, Instruction, Instructions, TemplateConfig, WhitespaceConfig,
    parse_expr,
};
use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior, Value};

use super::pymut;
use super::pyrepr::py_type;

const LT: &str = "__kinit_op_lt";
const LTE: &str = "__kinit_op_lte";
const GT: &str = "__kinit_op_gt";
const GTE: &str = "__kinit_op_gte";
const MUL: &str = "__kinit_op_mul";
const CONCAT: &str = "__kinit_op_concat";
const DIV: &str = "__kinit_op_div";
const FLOORDIV: &str = "__kinit_op_floordiv";
const MOD: &str = "__kinit_op_mod";
const ADD: &str = "__kinit_op_add";
const SUB: &str = "__kinit_op_sub";

/// Add the functions the patched instructions call.
pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function(LT, |s: &State<'_, '_>, a: Value, b: Value| {
        order(s, "<", &a, &b, Ordering::is_lt)
    });
    env.add_function(LTE, |s: &State<'_, '_>, a: Value, b: Value| {
        order(s, "<=", &a, &b, Ordering::is_le)
    });
    env.add_function(GT, |s: &State<'_, '_>, a: Value, b: Value| {
        order(s, ">", &a, &b, Ordering::is_gt)
    });
    env.add_function(GTE, |s: &State<'_, '_>, a: Value, b: Value| {
        order(s, ">=", &a, &b, Ordering::is_ge)
    });
    env.add_function(MUL, mul);
    env.add_function(CONCAT, concat);
    env.add_function(DIV, |s: &State<'_, '_>, a: Value, b: Value| {
        divide(s, "/", a, b)
    });
    env.add_function(FLOORDIV, |s: &State<'_, '_>, a: Value, b: Value| {
        divide(s, "//", a, b)
    });
    env.add_function(MOD, |s: &State<'_, '_>, a: Value, b: Value| {
        divide(s, "%", a, b)
    });
    env.add_function(
        ADD,
        |s: &State<'_, '_>, a: Value, b: Value| match super::pydatetime::add(&a, &b) {
            Some(r) => r,
            None => plain(s, "a + b", a, b),
        },
    );
    env.add_function(
        SUB,
        |s: &State<'_, '_>, a: Value, b: Value| match super::pydatetime::sub(&a, &b) {
            Some(r) => r,
            None => plain(s, "a - b", a, b),
        },
    );
    pymut::register(env);
}

/// minijinja's own operator, for operands a replaced `+` or `-` leaves to it.
fn plain(state: &State<'_, '_>, expr: &str, a: Value, b: Value) -> Result<Value, Error> {
    check_defined(state, &a, &b)?;
    let expr = state.env().compile_expression(expr)?;
    expr.eval(minijinja::context! { a, b })
}

/// Compile template text the way `env` would, with Python's operators.
pub(super) fn compile_template<'s>(
    env: &Environment<'_>,
    source: &'s str,
) -> Result<CompiledTemplate<'s>, Error> {
    let config = TemplateConfig {
        // The environment's delimiters (the `template` module's `*_string` options).
        syntax_config: env.syntax().clone(),
        ws_config: WhitespaceConfig {
            keep_trailing_newline: env.keep_trailing_newline(),
            lstrip_blocks: env.lstrip_blocks(),
            trim_blocks: env.trim_blocks(),
        },
        default_auto_escape: Arc::new(|_: &str| AutoEscape::None),
    };
    let mut compiled = CompiledTemplate::new("<string>", source, &config)?;
    let dates = super::pydatetime::may_use(source);
    patch(&mut compiled.instructions, dates);
    compiled.blocks.values_mut().for_each(|b| patch(b, dates));
    if mutates(&compiled.instructions) || compiled.blocks.values().any(mutates) {
        compiled.instructions = mutable_literals(&compiled.instructions);
        for block in compiled.blocks.values_mut() {
            *block = mutable_literals(block);
        }
    }
    Ok(compiled)
}

/// Compile an expression, with Python's operators.
pub(super) fn compile_expression(source: &str) -> Result<Instructions<'_>, Error> {
    let ast = parse_expr(source)?;
    check_literals(&ast)?;
    let mut g = CodeGenerator::new("<expression>", source);
    g.compile_expr(&ast);
    let mut instructions = g.finish().0;
    patch(&mut instructions, super::pydatetime::may_use(source));
    Ok(instructions)
}

/// Apply the type rules to operations whose operands are both literals, which minijinja's
/// compiler computes itself.
fn check_literals(expr: &Expr<'_>) -> Result<(), Error> {
    let args = |args: &[CallArg<'_>]| {
        args.iter().try_for_each(|a| match a {
            CallArg::Pos(e)
            | CallArg::Kwarg(_, e)
            | CallArg::PosSplat(e)
            | CallArg::KwargSplat(e) => check_literals(e),
        })
    };
    let pair = |op: &str, a: &Expr<'_>, b: &Expr<'_>| match (a.as_const(), b.as_const()) {
        (Some(a), Some(b)) if op == "*" => mul_types(&a, &b),
        (Some(a), Some(b)) if matches!(op, "/" | "//" | "%") => nonzero(op, &a, &b),
        (Some(a), Some(b)) => orderable(op, &a, &b),
        _ => Ok(()),
    };
    match expr {
        Expr::Var(_) | Expr::Const(_) => Ok(()),
        Expr::Slice(s) => {
            check_literals(&s.expr)?;
            [&s.start, &s.stop, &s.step]
                .into_iter()
                .flatten()
                .try_for_each(check_literals)
        }
        Expr::UnaryOp(u) => check_literals(&u.expr),
        Expr::BinOp(b) => {
            check_literals(&b.left)?;
            check_literals(&b.right)?;
            match b.op {
                BinOpKind::Lt => pair("<", &b.left, &b.right),
                BinOpKind::Lte => pair("<=", &b.left, &b.right),
                BinOpKind::Gt => pair(">", &b.left, &b.right),
                BinOpKind::Gte => pair(">=", &b.left, &b.right),
                BinOpKind::Mul => pair("*", &b.left, &b.right),
                BinOpKind::Div => pair("/", &b.left, &b.right),
                BinOpKind::FloorDiv => pair("//", &b.left, &b.right),
                BinOpKind::Rem => pair("%", &b.left, &b.right),
                _ => Ok(()),
            }
        }
        Expr::Compare(c) => {
            check_literals(&c.expr)?;
            let mut left = &c.expr;
            for op in &c.ops {
                check_literals(&op.expr)?;
                let name = match op.op {
                    CompareOpKind::Lt => "<",
                    CompareOpKind::Lte => "<=",
                    CompareOpKind::Gt => ">",
                    CompareOpKind::Gte => ">=",
                    _ => "",
                };
                if !name.is_empty() {
                    pair(name, left, &op.expr)?;
                }
                left = &op.expr;
            }
            Ok(())
        }
        Expr::IfExpr(i) => {
            check_literals(&i.test_expr)?;
            check_literals(&i.true_expr)?;
            i.false_expr.iter().try_for_each(check_literals)
        }
        Expr::Filter(f) => {
            f.expr.iter().try_for_each(check_literals)?;
            args(&f.args)
        }
        Expr::Test(t) => {
            check_literals(&t.expr)?;
            args(&t.args)
        }
        Expr::GetAttr(g) => check_literals(&g.expr),
        Expr::GetItem(g) => {
            check_literals(&g.expr)?;
            check_literals(&g.subscript_expr)
        }
        Expr::Call(c) => {
            check_literals(&c.expr)?;
            args(&c.args)
        }
        Expr::List(l) => l.items.iter().try_for_each(check_literals),
        Expr::Map(m) => m.keys.iter().chain(&m.values).try_for_each(check_literals),
    }
}

/// `dates`: the template may make datetimes (`pydatetime::may_use`), so `+` and `-` are
/// replaced too.
fn patch(instructions: &mut Instructions<'_>, dates: bool) {
    for idx in 0..instructions.len() as u32 {
        // `{{ x if cond }}` printed with `cond` false prints nothing, as Jinja2's plain
        // undefined value does (the missing `else` is the only undefined constant minijinja
        // compiles): kinit's formatter refuses undefined values, so it gets `None`.
        let emitted = matches!(instructions.get(idx + 1), Some(Instruction::Emit));
        if let Some(Instruction::LoadConst(v)) = instructions.get_mut(idx)
            && v.is_undefined()
            && emitted
        {
            *v = Value::from(());
            continue;
        }
        let Some(instr) = instructions.get_mut(idx) else {
            break;
        };
        let name = match instr {
            Instruction::Lt => LT,
            Instruction::Lte => LTE,
            Instruction::Gt => GT,
            Instruction::Gte => GTE,
            Instruction::Mul => MUL,
            Instruction::StringConcat => CONCAT,
            Instruction::Div => DIV,
            Instruction::IntDiv => FLOORDIV,
            Instruction::Rem => MOD,
            Instruction::Add if dates => ADD,
            Instruction::Sub if dates => SUB,
            _ => continue,
        };
        // Both pop two operands and push one result, so nothing else moves.
        *instr = Instruction::CallFunction(name, Some(2));
    }
}

/// Whether a template calls one of Python's mutating methods (`l.append(x)`).
fn mutates(instructions: &Instructions<'_>) -> bool {
    (0..instructions.len() as u32).any(|idx| {
        matches!(instructions.get(idx), Some(Instruction::CallMethod(name, _))
            if pymut::MUTATING.contains(name))
    })
}

/// `instructions` with each list and dict literal building a mutable object (`pymut`): a
/// built one calls `LIST`/`DICT` in place of `BuildList`/`BuildMap`, and a constant one
/// (folded by the compiler into a single value shared by every run) is followed by a call
/// of `FRESH`, which copies it. That call is an instruction more, so the instructions are
/// copied with their lines and spans, and jump targets moved.
fn mutable_literals<'s>(old: &Instructions<'s>) -> Instructions<'s> {
    let constant = |i: &Instruction<'_>| {
        // Keyword arguments with constant values are a folded map too.
        matches!(i, Instruction::LoadConst(v)
            if matches!(v.kind(), ValueKind::Seq | ValueKind::Map) && !v.is_kwargs())
    };
    // Where each old instruction lands (and one past the end).
    let mut moved = Vec::with_capacity(old.len() + 1);
    let mut at = 0u32;
    for idx in 0..old.len() as u32 {
        moved.push(at);
        at += if old.get(idx).is_some_and(constant) {
            2
        } else {
            1
        };
    }
    moved.push(at);
    let target = |t: &mut u32| *t = moved.get(*t as usize).copied().unwrap_or(at);
    let mut new = Instructions::new(old.name(), old.source());
    for idx in 0..old.len() as u32 {
        let Some(mut instr) = old.get(idx).cloned() else {
            break;
        };
        let fresh = constant(&instr);
        match &mut instr {
            Instruction::Iterate(t)
            | Instruction::Jump(t)
            | Instruction::JumpIfFalse(t)
            | Instruction::JumpIfFalseOrPop(t)
            | Instruction::JumpIfTrueOrPop(t)
            | Instruction::BuildMacro(_, t, _) => target(t),
            Instruction::BuildList(Some(n)) => {
                if let Ok(n) = u16::try_from(*n) {
                    instr = Instruction::CallFunction(pymut::LIST, Some(n));
                }
            }
            Instruction::BuildMap(n) => {
                if let Some(n) = n.checked_mul(2).and_then(|n| u16::try_from(n).ok()) {
                    instr = Instruction::CallFunction(pymut::DICT, Some(n));
                }
            }
            _ => {}
        }
        let add = |new: &mut Instructions<'s>, instr| match (old.get_span(idx), old.get_line(idx)) {
            (Some(span), _) => new.add_with_span(instr, span),
            (None, Some(line)) => new.add_with_line(instr, line as u16),
            (None, None) => new.add(instr),
        };
        add(&mut new, instr);
        if fresh {
            add(&mut new, Instruction::CallFunction(pymut::FRESH, Some(1)));
        }
    }
    new
}

/// What the replaced instruction would refuse first: an undefined operand, in strict mode.
fn check_defined(state: &State<'_, '_>, a: &Value, b: &Value) -> Result<(), Error> {
    let strict = state.undefined_behavior() != UndefinedBehavior::Chainable;
    if strict && (a.is_undefined() || b.is_undefined()) {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    Ok(())
}

fn order(
    state: &State<'_, '_>,
    op: &str,
    a: &Value,
    b: &Value,
    holds: fn(Ordering) -> bool,
) -> Result<Value, Error> {
    check_defined(state, a, b)?;
    if let Some(o) = super::pydatetime::compare(a, b) {
        return Ok(Value::from(holds(o)));
    }
    orderable(op, a, b)?;
    Ok(Value::from(holds(a.cmp(b))))
}

/// Whether Python can order `a` against `b`: numbers (and booleans) with each other,
/// strings with strings, lists with lists whose items up to the first difference can be
/// ordered. Kinds Python has no counterpart for are left to minijinja.
fn orderable(op: &str, a: &Value, b: &Value) -> Result<(), Error> {
    let numeric = |v: &Value| matches!(v.kind(), ValueKind::Number | ValueKind::Bool);
    let known = |v: &Value| {
        matches!(
            v.kind(),
            ValueKind::Number
                | ValueKind::Bool
                | ValueKind::String
                | ValueKind::None
                | ValueKind::Seq
                | ValueKind::Map
                | ValueKind::Bytes
        )
    };
    if (numeric(a) && numeric(b)) || !known(a) || !known(b) {
        return Ok(());
    }
    match (a.kind(), b.kind()) {
        (ValueKind::String, ValueKind::String) | (ValueKind::Bytes, ValueKind::Bytes) => Ok(()),
        (ValueKind::Seq, ValueKind::Seq) => {
            for (x, y) in a.try_iter()?.zip(b.try_iter()?) {
                if x != y {
                    return orderable(op, &x, &y);
                }
            }
            Ok(())
        }
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "Error rendering template: '{op}' not supported between instances of '{}' and \
                 '{}'",
                py_type(a),
                py_type(b)
            ),
        )),
    }
}

/// `a * b`: a string or list times a float is Python's `TypeError`; everything else is
/// minijinja's own `*`.
fn mul(state: &State<'_, '_>, a: Value, b: Value) -> Result<Value, Error> {
    check_defined(state, &a, &b)?;
    mul_types(&a, &b)?;
    // The plain `*` of an expression compiled without the patch.
    let expr = state.env().compile_expression("a * b")?;
    expr.eval(minijinja::context! { a, b })
}

fn mul_types(a: &Value, b: &Value) -> Result<(), Error> {
    let sequence = |v: &Value| matches!(v.kind(), ValueKind::String | ValueKind::Seq);
    let float = |v: &Value| v.kind() == ValueKind::Number && !v.is_integer();
    if (sequence(a) && float(b)) || (float(a) && sequence(b)) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "Error rendering template: can't multiply sequence by non-int of type 'float'",
        ));
    }
    Ok(())
}

/// `a / b`, `a // b`, `a % b`: a number divided by zero is Python's `ZeroDivisionError`
/// (minijinja answers `inf` or its own words), and a string's `%` formats it
/// (`pyformat`); everything else is minijinja's own operator.
fn divide(state: &State<'_, '_>, op: &str, a: Value, b: Value) -> Result<Value, Error> {
    check_defined(state, &a, &b)?;
    if op == "%"
        && let Some(fmt) = a.as_str()
    {
        return super::pyformat::percent(fmt, &b).map(Value::from);
    }
    nonzero(op, &a, &b)?;
    let expr = state.env().compile_expression(match op {
        "/" => "a / b",
        "//" => "a // b",
        _ => "a % b",
    })?;
    expr.eval(minijinja::context! { a, b })
}

/// Python 3.11's `ZeroDivisionError` for `a op b` when both are numbers and `b` is zero (a
/// string's `%` formats instead).
fn nonzero(op: &str, a: &Value, b: &Value) -> Result<(), Error> {
    let number = |v: &Value| matches!(v.kind(), ValueKind::Number | ValueKind::Bool);
    let zero = f64::try_from(b.clone()).is_ok_and(|z| z == 0.0);
    if !(number(a) && number(b) && zero) {
        return Ok(());
    }
    let ints = a.is_integer() && b.is_integer() || a.kind() == ValueKind::Bool;
    let why = match (op, ints) {
        ("/", true) => "division by zero",
        ("/", false) => "float division by zero",
        ("//", true) => "integer division or modulo by zero",
        ("//", false) => "float floor division by zero",
        (_, true) => "integer modulo by zero",
        (_, false) => "float modulo",
    };
    Err(Error::new(
        ErrorKind::InvalidOperation,
        format!("Error rendering template: {why}"),
    ))
}

/// `a ~ b`: Python's `str()` of each side, as Jinja2 joins them.
fn concat(state: &State<'_, '_>, a: Value, b: Value) -> Result<Value, Error> {
    check_defined(state, &a, &b)?;
    // Only chainable undefined values get here (`u.v ~ 'x'` in a `default` fallback).
    let text = |v: &Value| match v.is_undefined() {
        true => Ok(String::new()),
        false => super::pyrepr::to_str(v),
    };
    Ok(Value::from(text(&a)? + &text(&b)?))
}
