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

    pub fn selects(&self, tags: &[String]) -> bool {
        let has = |t: &str| tags.iter().any(|x| x == t);
        if self.skip.iter().any(|s| has(s))
            || (self.skip.iter().any(|s| s == "tagged") && !tags.is_empty())
            || (self.skip.iter().any(|s| s == "untagged") && tags.is_empty())
        {
            return false;
        }
        if has("always") {
            return true;
        }
        if self.only.is_empty() || self.only.iter().any(|s| s == "all") {
            return !has("never");
        }
        self.only.iter().any(|s| {
            has(s) || (s == "tagged" && !tags.is_empty()) || (s == "untagged" && tags.is_empty())
        })
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
    }
}
