//! Variable maps: the one representation of Ansible variables (host vars, play vars,
//! registered results, facts) is an ordered JSON map.

/// Variables by name; values are JSON (strings may still hold Jinja until rendered).
pub type VarMap = serde_json::Map<String, serde_json::Value>;

/// Merge `over` into `base`: later wins, dicts replace (Ansible's default `hash_behaviour`).
pub fn overlay(base: &mut VarMap, over: &VarMap) {
    for (k, v) in over {
        base.insert(k.clone(), v.clone());
    }
}
