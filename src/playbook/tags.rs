//! `--tags` / `--skip-tags` selection with Ansible's special tags: `always` runs unless
//! skipped by name, `never` runs only when asked for by name, `all` (the default) selects
//! every task not tagged `never`, `tagged`/`untagged` select by whether a task has tags.

#[derive(Debug, Clone, Default)]
pub struct TagFilter {
    pub only: Vec<String>,
    pub skip: Vec<String>,
}

impl TagFilter {
    /// From repeatable, comma-separated command-line values.
    pub fn new(only: &[String], skip: &[String]) -> Self {
        let split = |v: &[String]| -> Vec<String> {
            v.iter()
                .flat_map(|s| s.split(','))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        Self {
            only: split(only),
            skip: split(skip),
        }
    }

    /// Whether a task with these (effective) tags runs, decided as ansible-core's
    /// `Taggable.evaluate_tags`: an untagged task has the tag `untagged`; `tagged` selects a
    /// tagged task not tagged `never`; `--skip-tags all` skips everything but `always` (unless
    /// `always` is skipped too). No `--tags` is `--tags all`.
    pub fn selects(&self, tags: &[String]) -> bool {
        let untagged = tags.is_empty();
        let has = |t: &str| {
            if untagged {
                t == "untagged"
            } else {
                tags.iter().any(|x| x == t)
            }
        };
        let only_has = |t: &str| self.only.iter().any(|s| s == t);
        let skip_has = |t: &str| self.skip.iter().any(|s| s == t);
        let run = if self.only.is_empty() {
            !has("never")
        } else {
            has("always")
                || (only_has("all") && !has("never"))
                || self.only.iter().any(|s| has(s))
                || (only_has("tagged") && !untagged && !has("never"))
        };
        if !run || self.skip.is_empty() {
            return run;
        }
        if skip_has("all") {
            return has("always") && !skip_has("always");
        }
        !(self.skip.iter().any(|s| has(s)) || (skip_has("tagged") && !untagged))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn special_tags_follow_ansible() {
        let all = TagFilter::default();
        assert!(all.selects(&t(&[])));
        assert!(!all.selects(&t(&["never"])));
        let only = TagFilter::new(&t(&["a,b"]), &[]);
        assert!(only.selects(&t(&["b"])));
        assert!(only.selects(&t(&["always"])));
        assert!(!only.selects(&t(&["c"])));
        let never = TagFilter::new(&t(&["never"]), &[]);
        assert!(never.selects(&t(&["never", "x"])));
        let skip = TagFilter::new(&[], &t(&["always"]));
        assert!(!skip.selects(&t(&["always"])));
        // `tagged` leaves out `never` tasks (ansible-core's `tags` target lists no
        // `Task_with_never_tag` under `--tags tagged`); `untagged` is a tag of its own.
        let tagged = TagFilter::new(&t(&["tagged"]), &[]);
        assert!(tagged.selects(&t(&["x"])));
        assert!(!tagged.selects(&t(&["never", "donever"])));
        assert!(!tagged.selects(&t(&[])));
        assert!(TagFilter::new(&t(&["untagged"]), &[]).selects(&t(&[])));
        // `--skip-tags all` keeps `always` tasks only, unless `always` is skipped too.
        let skip_all = TagFilter::new(&[], &t(&["all"]));
        assert!(!skip_all.selects(&t(&[])));
        assert!(!skip_all.selects(&t(&["x"])));
        assert!(skip_all.selects(&t(&["always"])));
        assert!(!TagFilter::new(&[], &t(&["all", "always"])).selects(&t(&["always"])));
        let skip_untagged = TagFilter::new(&[], &t(&["untagged"]));
        assert!(!skip_untagged.selects(&t(&[])) && skip_untagged.selects(&t(&["x"])));
    }
}
