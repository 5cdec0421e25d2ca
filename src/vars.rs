//! Variable maps: the one representation of Ansible variables (host vars, play vars,
//! registered results, facts) is an ordered JSON map.

/// Variables by name; values are JSON (strings may still hold Jinja until rendered).
pub type VarMap = serde_json::Map<String, serde_json::Value>;

use std::sync::atomic::{AtomicBool, Ordering};

/// `hash_behaviour = merge` for this run (ansible.cfg or `ANSIBLE_HASH_BEHAVIOUR`): one
/// setting for the whole process, as it is in ansible-core, set before anything is loaded.
static HASH_MERGE: AtomicBool = AtomicBool::new(false);

/// Set `hash_behaviour` for the run: `true` is `merge`, `false` the default `replace`.
pub fn set_hash_merge(merge: bool) {
    HASH_MERGE.store(merge, Ordering::Relaxed);
}

/// Combine two layers of variables as ansible-core's `combine_vars` does: `over` wins, and a
/// mapping in both replaces (`hash_behaviour = replace`) or merges (`merge`) per the run's
/// setting. Used where ansible-core combines variable sources (inventory, vars files, role
/// vars and defaults, play and task vars, extra vars); facts and `set_fact` results
/// accumulate with `overlay` whatever the setting.
pub fn combine(base: &mut VarMap, over: &VarMap) {
    if HASH_MERGE.load(Ordering::Relaxed) {
        merge_deep(base, over);
    } else {
        overlay(base, over);
    }
}

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

/// Merge `over` into `base`: later wins, dicts replace (Ansible's default `hash_behaviour`).
pub fn overlay(base: &mut VarMap, over: &VarMap) {
    for (k, v) in over {
        base.insert(k.clone(), v.clone());
    }
}
