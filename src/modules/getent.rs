//! `getent`: a database of the host's name service switch (`passwd`, `group`, `hosts`,
//! `services`...) read with the host's `getent`, as ansible-core's `getent` module reads it,
//! returned as the fact `getent_<database>`: each line's first field -> its other fields
//! (a list of such lists when a first field repeats). Read-only: check mode runs the same.
//!
//! `passwd`, `shadow`, `group` and `gshadow` split on `:`, other databases on runs of
//! whitespace, unless `split` says otherwise. getent's exit codes keep upstream's messages;
//! with `fail_key: false` a missing key is `null` in the fact and the task succeeds.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::transport::quote::sh;

use super::args::boolish;
use super::{ModuleCtx, ModuleError, ModuleResult, typed_module};

typed_module!(Getent, "getent", Params, run);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The database: `passwd`, `group`, `hosts`, `services`...
    database: String,
    /// One entry to look up; every entry when unset.
    key: Option<String>,
    /// getent's `-s` service (`files`, `dns`...).
    service: Option<String>,
    /// The field separator; `:` for the colon databases, whitespace otherwise.
    split: Option<String>,
    /// Whether a missing key fails the task.
    #[serde(default = "super::command::yes", deserialize_with = "boolish")]
    fail_key: bool,
}

const COLON: &[&str] = &["passwd", "shadow", "group", "gshadow"];

/// The fields of one line, split as Python's `str.split(sep)` does.
fn fields(line: &str, sep: Option<&str>) -> Vec<String> {
    match sep {
        Some(s) if !s.is_empty() => line.split(s).map(str::to_string).collect(),
        _ => line.split_whitespace().map(str::to_string).collect(),
    }
}

/// `getent_<database>` from getent's output.
fn parse(out: &str, sep: Option<&str>) -> Map<String, Value> {
    let mut tree = Map::new();
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    for line in out.lines() {
        let record = fields(line, sep);
        let Some((first, rest)) = record.split_first() else {
            continue;
        };
        let rest = json!(rest);
        match seen.get_mut(first) {
            Some(n) => {
                if *n == 1 {
                    let one = tree.remove(first).unwrap_or_default();
                    tree.insert(first.clone(), json!([one]));
                }
                if let Some(Value::Array(all)) = tree.get_mut(first) {
                    all.push(rest);
                }
                *n += 1;
            }
            None => {
                tree.insert(first.clone(), rest);
                seen.insert(first.clone(), 1);
            }
        }
    }
    tree
}

async fn run(ctx: &ModuleCtx<'_>, p: Params) -> Result<ModuleResult, ModuleError> {
    let mut cmd = format!("getent {}", sh(&p.database));
    if let Some(k) = &p.key {
        cmd.push_str(&format!(" {}", sh(k)));
    }
    if let Some(s) = &p.service {
        cmd.push_str(&format!(" -s {}", sh(s)));
    }
    let sep = p.split.clone().or_else(|| {
        COLON
            .contains(&p.database.as_str())
            .then(|| ":".to_string())
    });
    let out = ctx.run(cmd).await?;
    let tree_name = format!("getent_{}", p.database);
    let fail = |msg: &str| {
        let mut r = ModuleResult::ok();
        r.failed = true;
        r.msg = Some(msg.into());
        Ok(r)
    };
    match Some(out.rc) {
        Some(0) => {
            let tree = parse(&out.stdout_str(), sep.as_deref());
            Ok(ModuleResult::ok().with("ansible_facts", json!({ tree_name: tree })))
        }
        Some(127) => fail("Failed to find required executable \"getent\""),
        Some(1) => fail("Missing arguments, or database unknown."),
        Some(2) => {
            let msg = "One or more supplied key could not be found in the database.";
            if p.fail_key {
                return fail(msg);
            }
            let mut tree = Map::new();
            tree.insert(p.key.clone().unwrap_or_default(), Value::Null);
            let mut r = ModuleResult::ok().with("ansible_facts", json!({ tree_name: tree }));
            r.msg = Some(msg.into());
            Ok(r)
        }
        Some(3) => fail("Enumeration not supported on this database."),
        _ => fail("Unexpected failure!"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_first_field_to_the_rest_and_repeats_become_lists() {
        let out = "root:x:0:0:root:/root:/bin/bash\nbin:x:1:1::/bin:/usr/sbin/nologin\n";
        let tree = parse(out, Some(":"));
        assert_eq!(
            tree["root"],
            json!(["x", "0", "0", "root", "/root", "/bin/bash"])
        );
        assert_eq!(tree["bin"][3], json!(""));
        let hosts = "127.0.0.1       localhost\n127.0.0.1  other alias\n::1 localhost ip6\n";
        let tree = parse(hosts, None);
        assert_eq!(
            tree["127.0.0.1"],
            json!([["localhost"], ["other", "alias"]])
        );
        assert_eq!(tree["::1"], json!(["localhost", "ip6"]));
    }
}
