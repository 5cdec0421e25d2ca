//! Variable maps: the one representation of Ansible variables (host vars, play vars,
//! registered results, facts) is an ordered JSON map.

/// Variables by name; values are JSON (strings may still hold Jinja until rendered).
pub type VarMap = serde_json::Map<String, serde_json::Value>;

/// Merge `over` into `base`: later wins, dicts replace (Ansible's default `hash_behaviour`).
/// `over` merged into `base` as Ansible's `merge_hash` merges (`hash_behaviour=merge`):
/// dicts key by key, all the way down; anything else (lists too) replaced.
pub fn merge_deep(base: &mut VarMap, over: &VarMap) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(serde_json::Value::Object(b)), serde_json::Value::Object(o)) => merge_deep(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

pub fn overlay(base: &mut VarMap, over: &VarMap) {
    for (k, v) in over {
        base.insert(k.clone(), v.clone());
    }
}
