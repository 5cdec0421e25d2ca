//! `groupby` as Ansible's filter returns it (plugins/filter/core.py `_cleansed_groupby`): a
//! list of `(grouper, list)` named tuples, reachable as `[0]`/`[1]` and `.grouper`/`.list`,
//! that print as Python tuples (`(1, [{'a': 1}])`) and serialize as two-item lists.

use std::sync::Arc;

use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr};
use minijinja::{Error, Value};

/// One group: the shared attribute value and the items that have it.
#[derive(Debug)]
pub struct GroupTuple {
    pub grouper: Value,
    pub list: Value,
}

impl Object for GroupTuple {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match (key.as_i64(), key.as_str()) {
            (Some(0 | -2), None) | (None, Some("grouper")) => Some(self.grouper.clone()),
            (Some(1 | -1), None) | (None, Some("list")) => Some(self.list.clone()),
            _ => None,
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(2)
    }
}

/// Jinja's `groupby` (sorted by the attribute, `default`, `case_sensitive`), each group as a
/// `GroupTuple` whose list is a plain list.
pub fn groupby(value: Value, attribute: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    if value.is_undefined() {
        return Err(Error::new(
            minijinja::ErrorKind::UndefinedError,
            "undefined value",
        ));
    }
    let attr = attribute.as_ref().and_then(Value::as_str);
    let groups = minijinja::filters::groupby(value, attr, kwargs)?;
    let mut out = Vec::new();
    for g in groups.try_iter()? {
        let list: Vec<Value> = g.get_item(&Value::from(1))?.try_iter()?.collect();
        out.push(Value::from_object(GroupTuple {
            grouper: g.get_item(&Value::from(0))?,
            list: Value::from(list),
        }));
    }
    Ok(Value::from(out))
}
