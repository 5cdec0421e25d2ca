//! `--list-tasks` and `--list-hosts` output, in ansible-playbook's layout.

use std::fmt::Write;

use super::TagFilter;
use super::{Action, Play, Playbook, Task};

fn tags_str(tags: &[String]) -> String {
    format!("[{}]", tags.join(", "))
}

/// A play's own tags as the listings show them: joined with `,` alone
/// (`cli/playbook.py`: `','.join(set(play.tags))`; a set, so ansible-playbook's order of two
/// or more varies from run to run, kinit keeps the written one).
fn play_tags_str(tags: &[String]) -> String {
    format!("[{}]", tags.join(","))
}

/// One line of `--list-tasks`: the task as ansible-playbook names it (`role : name`) and its
/// effective tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTask {
    pub name: String,
    pub tags: Vec<String>,
}

/// Every task a run of `play` would consider under `filter` (static imports expanded;
/// dynamic includes listed as themselves).
pub fn play_tasks(play: &Play, filter: &TagFilter) -> Vec<ListedTask> {
    let mut out = Vec::new();
    for section in [&play.pre_tasks, &play.tasks, &play.post_tasks] {
        walk(section, &play.kw.tags, None, filter, &mut out);
    }
    out
}

/// Every task a run would consider, by play, with their effective tags. `hosts_text` gives
/// a play's `hosts` as ansible-playbook shows it (templated with the play's and `-e` vars).
pub fn list_tasks(
    pb: &Playbook,
    filter: &TagFilter,
    hosts_text: impl Fn(&Play) -> String,
) -> String {
    let mut out = format!("\nplaybook: {}\n", pb.path.display());
    for (i, play) in pb.plays.iter().enumerate() {
        let _ = writeln!(
            out,
            "\n  play #{} ({}): {}\tTAGS: {}",
            i + 1,
            hosts_text(play),
            play.name,
            play_tags_str(&play.kw.tags)
        );
        out.push_str("    tasks:\n");
        for t in play_tasks(play, filter) {
            // Sorted, as ansible-playbook prints them (`cli/playbook.py`: `cur_tags.sort()`).
            let mut tags = t.tags;
            tags.sort();
            let _ = writeln!(out, "      {}\tTAGS: {}", t.name, tags_str(&tags));
        }
    }
    out
}

fn walk(
    tasks: &[Task],
    inherited: &[String],
    role: Option<&str>,
    filter: &TagFilter,
    out: &mut Vec<ListedTask>,
) {
    for t in tasks {
        let mut tags = inherited.to_vec();
        for tag in &t.kw.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        match &t.action {
            // Only the `block` part, as ansible-playbook lists a block (`_process_block`
            // walks `b.block`): `rescue` and `always` tasks are not listed.
            Action::Block { block, .. } => {
                let full = t.role.as_ref().map(|r| r.full_name());
                let role = full.as_deref().or(role);
                walk(block, &tags, role, filter, out);
            }
            _ => {
                if !filter.selects(&tags) {
                    continue;
                }
                // ansible-playbook lists a task by `Task.get_name`: an unnamed task is its
                // action as written alone, even inside a role and for an `include_role` (only
                // the run's banner adds the role).
                let name = match &t.name {
                    None => t.display_name(),
                    Some(_) => t.title(role),
                };
                out.push(ListedTask { name, tags });
            }
        }
    }
}

/// `--list-tags`: each play with the tags its tasks carry (their own and inherited ones),
/// sorted, as ansible-playbook lists them.
pub fn list_tags(pb: &Playbook, hosts_text: impl Fn(&Play) -> String) -> String {
    let mut out = format!("\nplaybook: {}\n", pb.path.display());
    let all = TagFilter::default();
    for (i, play) in pb.plays.iter().enumerate() {
        let mut tags: Vec<String> = play_tasks(play, &all)
            .into_iter()
            .flat_map(|t| t.tags)
            .collect();
        tags.sort();
        tags.dedup();
        let _ = writeln!(
            out,
            "\n  play #{} ({}): {}\tTAGS: {}\n      TASK TAGS: {}",
            i + 1,
            hosts_text(play),
            play.name,
            play_tags_str(&play.kw.tags),
            tags_str(&tags)
        );
    }
    out
}

/// `--list-hosts`: each play's pattern and the hosts it selects.
pub fn list_hosts(
    pb: &Playbook,
    hosts_of: impl Fn(&Play) -> Vec<String>,
    hosts_text: impl Fn(&Play) -> String,
) -> String {
    let mut out = format!("\nplaybook: {}\n", pb.path.display());
    for (i, play) in pb.plays.iter().enumerate() {
        let hosts = hosts_of(play);
        let pattern = hosts_text(play);
        let _ = writeln!(
            out,
            "\n  play #{} ({}): {}\tTAGS: {}\n    pattern: ['{}']\n    hosts ({}):",
            i + 1,
            pattern,
            play.name,
            play_tags_str(&play.kw.tags),
            pattern,
            hosts.len()
        );
        for h in hosts {
            let _ = writeln!(out, "      {h}");
        }
    }
    out
}
