//! Python's mutable `list` and `dict` for the literals of a template that changes them.
//!
//! Jinja2 under Ansible evaluates `[]` and `{}` to new Python objects each time they run, so
//! two idioms work that minijinja's immutable values refuse (`map has no method named
//! update`): collecting across a loop,
//! `{% set l = [] %}{% for x in xs %}{% set _ = l.append(x) %}{% endfor %}`, and counting,
//! `{% set n = {'i': 0} %}...{% set _ = n.update({'i': n.i + 1}) %}` (kubespray's
//! `openssl.conf.j2`). A template that calls one of Python's mutating methods has its list
//! and dict literals compiled to calls of [`LIST`], [`DICT`] and [`FRESH`] (`pyops`), which
//! build the objects here: a new one each time the literal runs, a `{% set %}` inside a loop
//! included. Their methods are Python's (`append`, `extend`, `insert`, `pop`, `remove`,
//! `clear`, `reverse`, `sort`, `copy`, `index`, `count`; `update`, `pop`, `setdefault`,
//! `popitem`, `clear`, `copy`); the rest (`items`, `get`, `keys`...) are the ones every
//! value has. Templates that mutate nothing compile as before, without the cost.
//!
//! A method Python refuses (`[].pop()`) fails the template at once, with Python's words;
//! ansible-core 2.19 keeps the exception as a marker that fails only where the result is
//! used, so `{% set _ = [].pop() %}` alone passes there.
//!
//! Values that come from variables stay immutable: `groups.all.append(x)` is refused, where
//! Python would change a copy that the next template does not see anyway.

use std::cmp::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use indexmap::IndexMap;
use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

use super::pyrepr;
use super::pyrepr::py_type;

/// `[a, b]`: the items on the stack, in order.
pub(super) const LIST: &str = "__kinit_list";
/// `{k: v, ...}`: keys and values alternating on the stack.
pub(super) const DICT: &str = "__kinit_dict";
/// A literal minijinja folded into a constant: a mutable copy of it, made afresh each time.
pub(super) const FRESH: &str = "__kinit_fresh";

/// The methods that change a list or dict: a template calling one gets mutable literals.
pub(super) const MUTATING: &[&str] = &[
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "reverse",
    "sort",
    "update",
    "setdefault",
    "popitem",
];

/// Add the functions the patched literals call.
pub(super) fn register(env: &mut minijinja::Environment<'static>) {
    env.add_function(LIST, |items: minijinja::value::Rest<Value>| {
        PyList::value(items.0)
    });
    env.add_function(DICT, |items: minijinja::value::Rest<Value>| {
        let mut map = IndexMap::with_capacity(items.len() / 2);
        for pair in items.0.chunks(2) {
            if let [k, v] = pair {
                map.insert(k.clone(), v.clone());
            }
        }
        PyDict::value(map)
    });
    env.add_function(FRESH, |constant: Value| fresh(&constant));
}

/// `dict(...)`: a new dict, which a template may change as Python's.
pub(super) fn dict_function(value: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let d = super::filters::core::dict(value, kwargs)?;
    Ok(PyDict::value(
        d.try_iter()?
            .map(|k| d.get_item(&k).map(|v| (k, v)))
            .collect::<Result<_, _>>()?,
    ))
}

/// A mutable copy of a constant, its nested lists and dicts mutable too.
fn fresh(value: &Value) -> Value {
    match value.kind() {
        ValueKind::Seq => PyList::value(value.try_iter().into_iter().flatten().map(|v| fresh(&v))),
        ValueKind::Map => PyDict::value(
            value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|k| {
                    let v = value.get_item(&k).unwrap_or_default();
                    (k, fresh(&v))
                })
                .collect(),
        ),
        _ => value.clone(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn none() -> Result<Value, Error> {
    Ok(Value::from(()))
}

fn type_error(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// The positional arguments of a call and its keyword arguments, if any.
fn split_kwargs(args: &[Value]) -> Result<(&[Value], Option<Kwargs>), Error> {
    match args.split_last() {
        Some((last, rest)) if last.is_kwargs() => Ok((rest, Some(Kwargs::try_from(last.clone())?))),
        _ => Ok((args, None)),
    }
}

/// Refuse more than `most` positional arguments, or any keyword, as Python does.
fn positional<'a>(method: &str, args: &'a [Value], most: usize) -> Result<&'a [Value], Error> {
    let (args, kwargs) = split_kwargs(args)?;
    if kwargs.is_some() {
        return Err(type_error(format!("{method}() takes no keyword arguments")));
    }
    if args.len() > most {
        return Err(type_error(format!(
            "{method}() takes at most {most} argument{} ({} given)",
            if most == 1 { "" } else { "s" },
            args.len()
        )));
    }
    Ok(args)
}

fn exactly<'a>(method: &str, args: &'a [Value], n: usize) -> Result<&'a [Value], Error> {
    let args = positional(method, args, n)?;
    if args.len() != n {
        return Err(type_error(format!(
            "{method}() takes exactly {} ({} given)",
            match n {
                0 => "no arguments".to_string(),
                1 => "one argument".to_string(),
                n => format!("{n} arguments"),
            },
            args.len()
        )));
    }
    Ok(args)
}

/// Python's index rules for `insert` and `pop`: negative counts from the end.
fn index_arg(value: &Value) -> Result<i64, Error> {
    value.as_i64().ok_or_else(|| {
        type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            py_type(value)
        ))
    })
}

fn repr(v: &Value) -> String {
    pyrepr::to_repr(v).unwrap_or_else(|_| v.to_string())
}

/// A Python `list` a template made and may change.
#[derive(Debug, Default)]
pub(crate) struct PyList(Mutex<Vec<Value>>);

impl PyList {
    fn value(items: impl IntoIterator<Item = Value>) -> Value {
        Value::from_object(PyList(Mutex::new(items.into_iter().collect())))
    }

    fn items(&self) -> MutexGuard<'_, Vec<Value>> {
        lock(&self.0)
    }
}

impl Object for PyList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.items().get(key.as_usize()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.items().clone())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.items().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "append" => {
                let [x] = exactly("list.append", args, 1)? else {
                    unreachable!("checked to be one argument")
                };
                self.items().push(x.clone());
                none()
            }
            "extend" => {
                let [from] = exactly("list.extend", args, 1)? else {
                    unreachable!("checked to be one argument")
                };
                // Collected first: `l.extend(l)` reads the list it changes.
                let new: Vec<Value> = from
                    .try_iter()
                    .map_err(|_| type_error(format!("'{}' object is not iterable", py_type(from))))?
                    .collect();
                self.items().extend(new);
                none()
            }
            "insert" => {
                let [at, x] = exactly("insert", args, 2)? else {
                    unreachable!("checked to be two arguments")
                };
                let at = index_arg(at)?;
                let mut items = self.items();
                let len = items.len() as i64;
                let at = if at < 0 {
                    (len + at).max(0)
                } else {
                    at.min(len)
                };
                items.insert(at as usize, x.clone());
                none()
            }
            "pop" => {
                let args = positional("pop", args, 1)?;
                let mut items = self.items();
                if items.is_empty() {
                    return Err(type_error("IndexError: pop from empty list".into()));
                }
                let len = items.len() as i64;
                let at = match args.first() {
                    Some(i) => index_arg(i)?,
                    None => -1,
                };
                let at = if at < 0 { len + at } else { at };
                if !(0..len).contains(&at) {
                    return Err(type_error("IndexError: pop index out of range".into()));
                }
                Ok(items.remove(at as usize))
            }
            "remove" => {
                let [x] = exactly("list.remove", args, 1)? else {
                    unreachable!("checked to be one argument")
                };
                let mut items = self.items();
                let Some(at) = items.iter().position(|v| v == x) else {
                    return Err(type_error(
                        "ValueError: list.remove(x): x not in list".into(),
                    ));
                };
                items.remove(at);
                none()
            }
            "clear" => {
                exactly("list.clear", args, 0)?;
                self.items().clear();
                none()
            }
            "reverse" => {
                exactly("list.reverse", args, 0)?;
                self.items().reverse();
                none()
            }
            "sort" => {
                let (args, kwargs) = split_kwargs(args)?;
                if !args.is_empty() {
                    return Err(type_error(
                        "sort() takes no positional arguments".to_string(),
                    ));
                }
                let reverse = match &kwargs {
                    Some(kw) => {
                        if kw.has("key") {
                            return Err(type_error(
                                "list.sort(key=...) is not supported in templates; use the \
                                 sort filter's attribute"
                                    .into(),
                            ));
                        }
                        let reverse: Option<bool> = kw.get("reverse")?;
                        kw.assert_all_used()?;
                        reverse.unwrap_or(false)
                    }
                    None => false,
                };
                let mut items = self.items();
                let mut sorted = items.clone();
                let mut refused = None;
                sorted.sort_by(|a, b| {
                    if refused.is_none() && !comparable(a, b) {
                        refused = Some(type_error(format!(
                            "'<' not supported between instances of '{}' and '{}'",
                            py_type(a),
                            py_type(b)
                        )));
                    }
                    a.cmp(b)
                });
                if let Some(e) = refused {
                    return Err(e);
                }
                if reverse {
                    sorted.reverse();
                }
                *items = sorted;
                none()
            }
            "copy" => {
                exactly("list.copy", args, 0)?;
                Ok(PyList::value(self.items().clone()))
            }
            "count" => {
                let [x] = exactly("list.count", args, 1)? else {
                    unreachable!("checked to be one argument")
                };
                Ok(Value::from(self.items().iter().filter(|v| *v == x).count()))
            }
            "index" => {
                let args = positional("index", args, 3)?;
                let Some(x) = args.first() else {
                    return Err(type_error(
                        "index expected at least 1 argument, got 0".into(),
                    ));
                };
                let items = self.items();
                let len = items.len() as i64;
                let bound = |i: Option<&Value>, default: i64| -> Result<usize, Error> {
                    let i = match i {
                        Some(i) => index_arg(i)?,
                        None => default,
                    };
                    Ok((if i < 0 { len + i } else { i }).clamp(0, len) as usize)
                };
                let (start, end) = (bound(args.get(1), 0)?, bound(args.get(2), len)?);
                items
                    .iter()
                    .enumerate()
                    .skip(start)
                    .take(end.saturating_sub(start))
                    .find(|(_, v)| *v == x)
                    .map(|(i, _)| Value::from(i))
                    .ok_or_else(|| type_error(format!("ValueError: {} is not in list", repr(x))))
            }
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// Whether Python orders `a` against `b` (numbers with numbers, strings with strings,
/// lists with lists).
fn comparable(a: &Value, b: &Value) -> bool {
    let numeric = |v: &Value| matches!(v.kind(), ValueKind::Number | ValueKind::Bool);
    (numeric(a) && numeric(b))
        || (a.kind() == b.kind() && matches!(a.kind(), ValueKind::String | ValueKind::Seq))
        || a.cmp(b) == Ordering::Equal
}

/// A Python `dict` a template made and may change, in insertion order.
#[derive(Debug, Default)]
pub(crate) struct PyDict(Mutex<IndexMap<Value, Value>>);

impl PyDict {
    fn value(map: IndexMap<Value, Value>) -> Value {
        Value::from_object(PyDict(Mutex::new(map)))
    }

    fn map(&self) -> MutexGuard<'_, IndexMap<Value, Value>> {
        lock(&self.0)
    }
}

impl Object for PyDict {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.map().get(key).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.map().keys().cloned().collect())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.map().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "update" => {
                let (args, kwargs) = split_kwargs(args)?;
                if args.len() > 1 {
                    return Err(type_error(format!(
                        "update expected at most 1 argument, got {}",
                        args.len()
                    )));
                }
                // What `dict(other, **kwargs)` holds, in its order.
                let kwargs =
                    kwargs.unwrap_or_else(|| Kwargs::from_iter(Vec::<(&str, Value)>::new()));
                let new = super::filters::core::dict(args.first().cloned(), kwargs)?;
                let pairs: Vec<(Value, Value)> = new
                    .try_iter()?
                    .map(|k| new.get_item(&k).map(|v| (k, v)))
                    .collect::<Result<_, _>>()?;
                self.map().extend(pairs);
                none()
            }
            "pop" => {
                let args = positional("pop", args, 2)?;
                let Some(key) = args.first() else {
                    return Err(type_error("pop expected at least 1 argument, got 0".into()));
                };
                match (self.map().shift_remove(key), args.get(1)) {
                    (Some(v), _) => Ok(v),
                    (None, Some(default)) => Ok(default.clone()),
                    (None, None) => Err(type_error(format!("KeyError: {}", repr(key)))),
                }
            }
            "setdefault" => {
                let args = positional("setdefault", args, 2)?;
                let Some(key) = args.first() else {
                    return Err(type_error(
                        "setdefault expected at least 1 argument, got 0".into(),
                    ));
                };
                let default = args.get(1).cloned().unwrap_or(Value::from(()));
                Ok(self.map().entry(key.clone()).or_insert(default).clone())
            }
            "popitem" => {
                exactly("popitem", args, 0)?;
                match self.map().pop() {
                    Some((k, v)) => Ok(Value::from(vec![k, v])),
                    None => Err(type_error(
                        "KeyError: 'popitem(): dictionary is empty'".into(),
                    )),
                }
            }
            "clear" => {
                exactly("dict.clear", args, 0)?;
                self.map().clear();
                none()
            }
            "copy" => {
                exactly("dict.copy", args, 0)?;
                Ok(PyDict::value(self.map().clone()))
            }
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(source: &str) -> String {
        let t = crate::template::Templar::new();
        match t.render_str(source, &Default::default()) {
            Ok(text) => text,
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn literals_are_new_objects_each_time_they_run() {
        // A `{% set %}` inside a loop starts afresh; the outer list keeps what was added.
        assert_eq!(
            render(
                "{% set all = [] %}{% for g in [1, 2] %}{% set one = [] %}\
                 {% set _ = one.append(g) %}{% set _ = all.append(one) %}{% endfor %}{{ all }}"
            ),
            "[[1], [2]]"
        );
        // Branches and loops around the added instructions still jump where they should.
        assert_eq!(
            render(
                "{% set d = {} %}{% for i in range(4) %}{% if i is even %}\
                 {% set _ = d.update({i: [i]}) %}{% else %}{% set _ = d.setdefault('odd', []).append(i) %}\
                 {% endif %}{% endfor %}{{ d }}|{{ 'x' if d else 'y' }}"
            ),
            "{0: [0], 'odd': [1, 3], 2: [2]}|x"
        );
        // A macro's body, reached through a moved offset, builds its own list per call.
        assert_eq!(
            render(
                "{% macro m(x) %}{% set l = [] %}{% set _ = l.append(x) %}{{ l }}{% endmacro %}\
                 {{ m(1) }}{{ m(2) }}"
            ),
            "[1][2]"
        );
    }

    #[test]
    fn keyword_arguments_and_dict_calls_keep_working() {
        assert_eq!(
            render("{% set s = [2, 3, 1] %}{% set _ = s.sort(reverse=true) %}{{ s }}"),
            "[3, 2, 1]"
        );
        assert_eq!(
            render("{% set d = dict(a=1) %}{% set _ = d.update(b=2) %}{{ d | to_json }}"),
            "{\"a\": 1, \"b\": 2}"
        );
        assert_eq!(
            render(
                "{% set d = {'a': 1} %}{% set _ = d.update([['b', 2]]) %}{{ d.items() | list }}"
            ),
            "[['a', 1], ['b', 2]]"
        );
    }

    #[test]
    fn refusals_speak_as_python_does() {
        assert!(
            render("{% set l = [] %}{{ l.pop() }}").contains("IndexError: pop from empty list"),
        );
        assert!(render("{% set l = [1] %}{{ l.remove(2) }}").contains("x not in list"));
        assert!(render("{% set d = {} %}{{ d.pop('k') }}").contains("KeyError: 'k'"));
        assert!(
            render("{% set d = {} %}{% set _ = d.update([[1]]) %}")
                .contains("element #0 has length 1; 2 is required")
        );
        assert!(
            render("{% set l = [1, 'a'] %}{% set _ = l.sort() %}").contains("'<' not supported")
        );
    }

    #[test]
    fn fresh_copies_nested_constants_into_mutable_objects() {
        let constant = Value::from_serialize(serde_json::json!({"a": [1, {"b": 2}]}));
        let copy = fresh(&constant);
        assert!(copy.downcast_object_ref::<PyDict>().is_some());
        let inner = copy.get_attr("a").unwrap();
        assert!(inner.downcast_object_ref::<PyList>().is_some());
        assert!(
            inner
                .get_item(&Value::from(1))
                .unwrap()
                .downcast_object_ref::<PyDict>()
                .is_some()
        );
        assert_eq!(
            serde_json::to_value(&copy).unwrap(),
            serde_json::json!({"a": [1, {"b": 2}]})
        );
    }
}
