//! Filters over lists and dicts: `combine`, `dict2items`/`items2dict`, `flatten`,
//! `unique`/`union`/`difference`/`intersect`/`symmetric_difference`, `product`, `zip`.
//! They work on JSON copies of their inputs, which is what Ansible's Python does too.
//!
//! One family in one file: the set filters share the list coercion, the de-duplication and
//! Python's first-seen ordering, and `combine` shares the merge with nothing else; split, each
//! piece would be a screenful.

use minijinja::value::{Kwargs, Rest};
use minijinja::{Error, ErrorKind, Value};
use serde_json::{Map, Value as Json};

pub(crate) fn json(v: &Value) -> Result<Json, Error> {
    if v.is_undefined() {
        return Err(Error::new(ErrorKind::UndefinedError, "undefined value"));
    }
    serde_json::to_value(v).map_err(|e| invalid(format!("cannot convert value: {e}")))
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// Python's name for the type of a JSON value (`str`, `dict`, `NoneType`...).
pub fn type_name(j: &Json) -> &'static str {
    match j {
        Json::Null => "NoneType",
        Json::Bool(_) => "bool",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::String(_) => "str",
        Json::Array(_) => "list",
        Json::Object(_) => "dict",
    }
}

fn list(filter: &str, v: &Value) -> Result<Vec<Json>, Error> {
    match json(v)? {
        Json::Array(a) => Ok(a),
        Json::Object(m) => Ok(m.keys().cloned().map(Json::String).collect()),
        Json::String(s) => Ok(s.chars().map(|c| Json::String(c.to_string())).collect()),
        other => Err(invalid(format!(
            "{filter} expects a list, got {}",
            type_name(&other)
        ))),
    }
}

#[derive(Clone, Copy)]
enum ListMerge {
    Replace,
    Keep,
    Append,
    Prepend,
    AppendRp,
    PrependRp,
}

fn merge(base: &mut Map<String, Json>, over: &Map<String, Json>, recursive: bool, lm: ListMerge) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Json::Object(b)), Json::Object(o)) if recursive => merge(b, o, recursive, lm),
            (Some(Json::Array(b)), Json::Array(o)) => {
                let merged = match lm {
                    ListMerge::Replace => o.clone(),
                    ListMerge::Keep => b.clone(),
                    ListMerge::Append => [b.as_slice(), o.as_slice()].concat(),
                    ListMerge::Prepend => [o.as_slice(), b.as_slice()].concat(),
                    ListMerge::AppendRp => {
                        let mut out: Vec<Json> =
                            b.iter().filter(|x| !o.contains(x)).cloned().collect();
                        out.extend(o.iter().cloned());
                        out
                    }
                    ListMerge::PrependRp => {
                        let mut out = o.clone();
                        out.extend(b.iter().filter(|x| !o.contains(x)).cloned());
                        out
                    }
                };
                *b = merged;
            }
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `combine(*dicts, recursive=False, list_merge='replace')`; the input may be a list of dicts.
pub fn combine(value: Value, others: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let recursive = kwargs.get::<Option<bool>>("recursive")?.unwrap_or(false);
    let lm = match kwargs.get::<Option<String>>("list_merge")?.as_deref() {
        None | Some("replace") => ListMerge::Replace,
        Some("keep") => ListMerge::Keep,
        Some("append") => ListMerge::Append,
        Some("prepend") => ListMerge::Prepend,
        Some("append_rp") => ListMerge::AppendRp,
        Some("prepend_rp") => ListMerge::PrependRp,
        Some(other) => {
            return Err(invalid(format!(
                "combine: list_merge `{other}` is not one of replace, keep, append, prepend, \
                 append_rp, prepend_rp"
            )));
        }
    };
    if kwargs.args().any(|k| k != "recursive" && k != "list_merge") {
        return Err(invalid(
            "'recursive' and 'list_merge' are the only valid keyword arguments".into(),
        ));
    }
    // ansible-core's `flatten(terms, levels=1)`: a list among the terms gives its items, and
    // None, 'None' and 'null' are left out at both levels; no term is `{}`, one is itself.
    let null = |j: &Json| {
        matches!(j, Json::Null) || matches!(j, Json::String(s) if s == "None" || s == "null")
    };
    let mut terms = Vec::new();
    for v in std::iter::once(&value).chain(others.iter()) {
        // A dict holding an undefined value is an error naming it (its result would hold it).
        crate::template::undefined::check_items(v)?;
        match json(v)? {
            Json::Array(items) => terms.extend(items.into_iter().filter(|i| !null(i))),
            j if null(&j) => {}
            j => terms.push(j),
        }
    }
    match terms.len() {
        0 => return Ok(Value::from_serialize(Json::Object(Map::new()))),
        1 => return Ok(Value::from_serialize(terms.remove(0))),
        _ => {}
    }
    // Merged from the last (highest) term down, as ansible-core's `merge_hash` calls are, so
    // the first term that is not a dict is the one named beside what it met.
    let mut above = terms.pop().unwrap_or_default();
    let mut dicts = Vec::new();
    while let Some(term) = terms.pop() {
        match (&term, &above) {
            (Json::Object(_), Json::Object(_)) => {}
            (a, b) => {
                return Err(invalid(format!(
                    "failed to combine variables, expected dicts but got a '{}' and a '{}': \n{a}\n{b}",
                    type_name(a),
                    type_name(b)
                )));
            }
        }
        dicts.push(std::mem::replace(&mut above, term));
    }
    let Json::Object(mut out) = above else {
        return Err(invalid("combine expects dictionaries".into()));
    };
    for d in dicts.iter().rev() {
        if let Json::Object(d) = d {
            merge(&mut out, d, recursive, lm);
        }
    }
    Ok(Value::from_serialize(Json::Object(out)))
}

pub fn dict2items(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let key = kwargs
        .get::<Option<String>>("key_name")?
        .unwrap_or("key".into());
    let val = kwargs
        .get::<Option<String>>("value_name")?
        .unwrap_or("value".into());
    kwargs.assert_all_used()?;
    let Json::Object(m) = json(&value)? else {
        return Err(invalid(format!(
            "dict2items requires a dictionary, got {} instead",
            type_name(&json(&value)?)
        )));
    };
    let items: Vec<Json> = m
        .into_iter()
        .map(|(k, v)| {
            let mut o = Map::new();
            o.insert(key.clone(), Json::String(k));
            o.insert(val.clone(), v);
            Json::Object(o)
        })
        .collect();
    Ok(Value::from_serialize(items))
}

pub fn items2dict(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let key = kwargs
        .get::<Option<String>>("key_name")?
        .unwrap_or("key".into());
    let val = kwargs
        .get::<Option<String>>("value_name")?
        .unwrap_or("value".into());
    kwargs.assert_all_used()?;
    // ansible-core's checks and texts (`list_of_dict_key_value_elements_to_dict`).
    let given = json(&value)?;
    let Json::Array(items) = &given else {
        return Err(invalid(format!(
            "items2dict requires a list, got <class '{}'> instead.",
            type_name(&given)
        )));
    };
    let shown = || py_repr(&given);
    let mut out = Map::new();
    for item in items {
        let Json::Object(o) = item else {
            return Err(invalid(format!(
                "items2dict requires a list of dictionaries, got {} instead.",
                shown()
            )));
        };
        let (Some(k), Some(v)) = (o.get(&key), o.get(&val)) else {
            return Err(invalid(format!(
                "items2dict requires each dictionary in the list to contain the keys '{key}' \
                 and '{val}', got {} instead.",
                shown()
            )));
        };
        let k = match k {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(k, v.clone());
    }
    Ok(Value::from_serialize(Json::Object(out)))
}

fn flatten_into(out: &mut Vec<Json>, items: Vec<Json>, levels: Option<i64>, skip_nulls: bool) {
    for item in items {
        let is_null = matches!(&item, Json::Null)
            || matches!(&item, Json::String(s) if s == "None" || s == "null");
        match item {
            _ if skip_nulls && is_null => {}
            Json::Array(inner) => match levels {
                None => flatten_into(out, inner, None, skip_nulls),
                Some(l) if l >= 1 => flatten_into(out, inner, Some(l - 1), skip_nulls),
                Some(_) => out.push(Json::Array(inner)),
            },
            other => out.push(other),
        }
    }
}

/// `flatten(levels=None, skip_nulls=True)`.
pub fn flatten(value: Value, levels: Option<i64>, kwargs: Kwargs) -> Result<Value, Error> {
    let levels = kwargs.get::<Option<i64>>("levels")?.or(levels);
    let skip_nulls = kwargs.get::<Option<bool>>("skip_nulls")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    let mut out = Vec::new();
    flatten_into(&mut out, list("flatten", &value)?, levels, skip_nulls);
    Ok(Value::from_serialize(out))
}

fn dedup(items: Vec<Json>) -> Vec<Json> {
    let mut out: Vec<Json> = Vec::with_capacity(items.len());
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// `unique(case_sensitive=None, attribute=None)` as ansible-core's filter runs it
/// (`plugins/filter/mathstuff.py`): Jinja's `do_unique` first, which keys each item (its
/// `attribute`, strings lowered unless `case_sensitive`) in a Python set, keeping the first item
/// of each key; an unhashable key (a list or dict) fails there, and ansible-core then falls back
/// to plain equality, unless `case_sensitive=False` or `attribute` was given, which its
/// fallback cannot honour. A value that is not iterable fails both ways, in Python's words.
pub fn unique(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let attribute = kwargs.get::<Option<String>>("attribute")?;
    let case_sensitive = kwargs.get::<Option<bool>>("case_sensitive")?;
    kwargs.assert_all_used()?;
    let items = match json(&value)? {
        Json::Array(a) => a,
        Json::Object(m) => m.keys().cloned().map(Json::String).collect(),
        Json::String(s) => s.chars().map(|c| Json::String(c.to_string())).collect(),
        other => {
            return Err(invalid(format!(
                "'{}' object is not iterable",
                type_name(&other)
            )));
        }
    };
    let fold = !case_sensitive.unwrap_or(false);
    let mut seen: Vec<Json> = Vec::new();
    let mut out = Vec::new();
    for item in &items {
        let key = match &attribute {
            Some(path) => attribute_of(item, path),
            None => item.clone(),
        };
        let key = match key {
            Json::String(s) if fold => Json::String(s.to_lowercase()),
            unhashable @ (Json::Array(_) | Json::Object(_)) => {
                if case_sensitive == Some(false) || attribute.is_some() {
                    return Err(invalid(format!(
                        "Jinja2's unique filter failed and we cannot fall back to Ansible's \
                         version as it does not support the parameters supplied: unhashable \
                         type: '{}'",
                        type_name(&unhashable)
                    )));
                }
                return Ok(Value::from_serialize(dedup(items)));
            }
            other => other,
        };
        if !seen.iter().any(|k| python_eq(k, &key)) {
            seen.push(key);
            out.push(item.clone());
        }
    }
    Ok(Value::from_serialize(out))
}

/// Jinja's dotted attribute path (`a.b`, `items.0`) into a JSON value; a missing part is
/// `None` here, where Jinja's undefined values all hash alike.
fn attribute_of(item: &Json, path: &str) -> Json {
    let mut cur = item;
    for part in path.split('.') {
        let next = match cur {
            Json::Object(m) => m.get(part),
            Json::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match next {
            Some(v) => cur = v,
            None => return Json::Null,
        }
    }
    cur.clone()
}

/// Python's `==` for hashable scalars: `True == 1 == 1.0`.
fn python_eq(a: &Json, b: &Json) -> bool {
    fn num(j: &Json) -> Option<f64> {
        match j {
            Json::Bool(b) => Some(f64::from(u8::from(*b))),
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The set operations go through Python `set`s when the items are hashable, so their
/// order is the set's: ascending for integers (what CPython gives for small ones), and
/// unspecified for strings, where kinit keeps first-seen order.
fn set_order(mut items: Vec<Json>) -> Value {
    if items.iter().all(|x| x.as_i64().is_some()) {
        items.sort_by_key(|x| x.as_i64());
    }
    Value::from_serialize(items)
}

pub fn union(a: Value, b: Value) -> Result<Value, Error> {
    let mut items = list("union", &a)?;
    items.extend(list("union", &b)?);
    Ok(set_order(dedup(items)))
}

pub fn intersect(a: Value, b: Value) -> Result<Value, Error> {
    let other = list("intersect", &b)?;
    let items = dedup(list("intersect", &a)?);
    Ok(set_order(
        items.into_iter().filter(|x| other.contains(x)).collect(),
    ))
}

pub fn difference(a: Value, b: Value) -> Result<Value, Error> {
    let other = list("difference", &b)?;
    let items = dedup(list("difference", &a)?);
    Ok(set_order(
        items.into_iter().filter(|x| !other.contains(x)).collect(),
    ))
}

pub fn symmetric_difference(a: Value, b: Value) -> Result<Value, Error> {
    let (la, lb) = (
        list("symmetric_difference", &a)?,
        list("symmetric_difference", &b)?,
    );
    let both: Vec<Json> = dedup([la.clone(), lb.clone()].concat());
    Ok(set_order(
        both.into_iter()
            .filter(|x| !(la.contains(x) && lb.contains(x)))
            .collect(),
    ))
}

/// `product(*lists)`: the cartesian product, as a list of lists.
pub fn product(value: Value, others: Rest<Value>) -> Result<Value, Error> {
    let mut acc: Vec<Vec<Json>> = vec![Vec::new()];
    for v in std::iter::once(&value).chain(others.iter()) {
        let items = list("product", v)?;
        acc = acc
            .into_iter()
            .flat_map(|prefix| {
                items.iter().map(move |i| {
                    let mut p = prefix.clone();
                    p.push(i.clone());
                    p
                })
            })
            .collect();
    }
    Ok(Value::from_serialize(acc))
}

/// `zip(*lists)`: lists of the n-th items, as long as the shortest input.
pub fn zip(value: Value, others: Rest<Value>) -> Result<Value, Error> {
    let lists: Vec<Vec<Json>> = std::iter::once(&value)
        .chain(others.iter())
        .map(|v| list("zip", v))
        .collect::<Result<_, _>>()?;
    let n = lists.iter().map(Vec::len).min().unwrap_or(0);
    let out: Vec<Vec<Json>> = (0..n)
        .map(|i| lists.iter().map(|l| l[i].clone()).collect())
        .collect();
    Ok(Value::from_serialize(out))
}

/// `zip_longest(*lists, fillvalue=None)`.
pub fn zip_longest(value: Value, others: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let fill = match kwargs.get::<Option<Value>>("fillvalue")? {
        Some(v) => json(&v)?,
        None => Json::Null,
    };
    kwargs.assert_all_used()?;
    let lists: Vec<Vec<Json>> = std::iter::once(&value)
        .chain(others.iter())
        .map(|v| list("zip_longest", v))
        .collect::<Result<_, _>>()?;
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    let out: Vec<Vec<Json>> = (0..n)
        .map(|i| {
            lists
                .iter()
                .map(|l| l.get(i).cloned().unwrap_or_else(|| fill.clone()))
                .collect()
        })
        .collect();
    Ok(Value::from_serialize(out))
}

/// Python's `repr` of a JSON value (`'a'`, `{'k': 1}`).
fn py_repr(j: &Json) -> String {
    match j {
        Json::String(s) => crate::template::pyrepr::quote_str(s),
        other => crate::template::pyrepr::to_str(&Value::from_serialize(other))
            .unwrap_or_else(|_| other.to_string()),
    }
}

/// `subelements(path, skip_missing=false)`: each element of a list (or a dict's values)
/// paired with each item of the list at `path` inside it (a dotted string or a list of
/// keys), as ansible-core's filter pairs them, with its error texts.
pub fn subelements(
    value: Value,
    path: Value,
    skip_missing: Option<bool>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let skip_missing = match skip_missing {
        Some(s) => s,
        None => kwargs.get::<Option<bool>>("skip_missing")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    let elements = match json(&value)? {
        Json::Object(m) => m.into_iter().map(|(_, v)| v).collect(),
        Json::Array(a) => a,
        _ => {
            return Err(invalid(
                "obj must be a list of dicts or a nested dict".into(),
            ));
        }
    };
    let keys: Vec<Json> = match json(&path)? {
        Json::Array(a) => a,
        Json::String(s) => s.split('.').map(|k| Json::String(k.to_string())).collect(),
        _ => return Err(invalid("subelements must be a list or a string".into())),
    };
    let mut out = Vec::new();
    for element in elements {
        let mut values = element.clone();
        for key in &keys {
            let next = match (&values, key) {
                (Json::Object(m), Json::String(k)) => m.get(k).cloned(),
                (Json::Array(a), Json::Number(n)) => {
                    n.as_u64().and_then(|i| a.get(i as usize)).cloned()
                }
                (Json::Object(_), _) => None,
                _ => {
                    return Err(invalid(format!(
                        "the key {} should point to a dictionary, got '{}'",
                        crate::template::pyrepr::to_str(&Value::from_serialize(key))
                            .unwrap_or_default(),
                        crate::template::pyrepr::to_str(&Value::from_serialize(&values))
                            .unwrap_or_default()
                    )));
                }
            };
            match next {
                Some(v) => values = v,
                None if skip_missing => {
                    values = Json::Array(Vec::new());
                    break;
                }
                None => {
                    return Err(invalid(format!(
                        "could not find {} key in iterated item {}",
                        py_repr(key),
                        py_repr(&values)
                    )));
                }
            }
        }
        let Json::Array(items) = values else {
            return Err(invalid(format!(
                "the key {} should point to a list, got {}",
                keys.last().map(py_repr).unwrap_or_default(),
                py_repr(&values)
            )));
        };
        for item in items {
            out.push(Json::Array(vec![element.clone(), item]));
        }
    }
    Ok(Value::from_serialize(out))
}
