//! Plain output (no TTY, CI logs): Ansible-like headers and one line per task result.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

use super::event::{Event, Status, minutes_seconds};
use super::{Display, TaskResult};

pub struct Plain {
    pub verbose: u8,
    pub diff: bool,
    last_task: Option<usize>,
    /// The last progress status printed per host: plain output prints changes only.
    last_progress: HashMap<String, String>,
    /// `included:` lines of the current task, held until it is done so that the hosts that
    /// included the same file (and item) share one line, as ansible-core's strategy groups
    /// them (`IncludedFile`).
    pending: Vec<Included>,
    /// Each task's `file:line`, by task id, for the `[ERROR]` block of a failure.
    locations: HashMap<usize, String>,
    /// The playbook files those blocks quote, read once.
    sources: HashMap<std::path::PathBuf, String>,
    /// Which results are shown.
    display: Display,
    /// Banners held until their task's first shown result (when some results are not shown).
    banners: HashMap<usize, String>,
    /// The task whose banner waits for its first shown result: a warning its result brings
    /// prints the banner first, as ansible-playbook shows the warning under it.
    pending_banner: Option<usize>,
}

struct Included {
    task_id: usize,
    file: String,
    item: Option<String>,
    hosts: Vec<String>,
}

impl Plain {
    pub fn new(verbose: u8, diff: bool) -> Self {
        Self {
            verbose,
            diff,
            last_task: None,
            last_progress: HashMap::new(),
            pending: Vec::new(),
            locations: HashMap::new(),
            sources: HashMap::new(),
            display: Display::default(),
            banners: HashMap::new(),
            pending_banner: None,
        }
    }

    /// Show only the results `display` lets through.
    pub fn showing(mut self, display: Display) -> Self {
        self.display = display;
        self
    }

    /// Whether a result with `status` gets a line (an `included:` line always does).
    fn shown(&self, status: Status, result: &TaskResult) -> bool {
        match status {
            Status::Skipped => self.display.skipped,
            Status::Ok => self.display.ok || result.included.is_some(),
            _ => true,
        }
    }

    /// The held `included:` lines, when `ev` shows their task is done (another task, a play
    /// or the run ending): print this before `render(ev)`.
    pub fn flush_before(&mut self, ev: &Event) -> String {
        let same_task = match ev {
            Event::ItemResult { task_id, .. } | Event::TaskResult { task_id, .. } => {
                self.pending.first().is_some_and(|p| p.task_id == *task_id)
            }
            Event::HostTask { .. }
            | Event::Progress { .. }
            | Event::Retry { .. }
            | Event::AsyncPoll { .. }
            | Event::AsyncDone { .. } => true,
            _ => false,
        };
        if same_task {
            String::new()
        } else {
            self.flush()
        }
    }

    /// The held `included:` lines, now.
    pub fn flush(&mut self) -> String {
        let mut out = String::new();
        for inc in self.pending.drain(..) {
            let _ = write!(out, "included: {} for {}", inc.file, inc.hosts.join(", "));
            if let Some(item) = inc.item {
                let _ = write!(out, " => (item={item})");
            }
            out.push('\n');
        }
        out
    }

    fn hold_included(&mut self, task_id: usize, file: &str, item: Option<&str>, host: &str) {
        if let Some(inc) = self
            .pending
            .iter_mut()
            .find(|i| i.file == file && i.item.as_deref() == item)
        {
            inc.hosts.push(host.to_string());
        } else {
            self.pending.push(Included {
                task_id,
                file: file.to_string(),
                item: item.map(str::to_string),
                hosts: vec![host.to_string()],
            });
        }
    }

    /// The text for one event (possibly empty).
    pub fn render(&mut self, ev: &Event) -> String {
        let mut out = String::new();
        self.remember_location(ev);
        match ev {
            // As ansible-playbook at `-vv`: the playbook's banner, then how many plays it has.
            Event::PlaybookStart { path, plays } if self.verbose > 1 => {
                let base = std::path::Path::new(path)
                    .file_name()
                    .map_or(path.clone(), |b| b.to_string_lossy().into_owned());
                let _ = writeln!(out, "\nPLAYBOOK: {base}\n{plays} plays in {path}");
            }
            Event::PlayStart { name, .. } | Event::BatchStart { name } => {
                self.last_task = None;
                self.pending_banner = None;
                let _ = writeln!(out, "\nPLAY [{name}]");
            }
            Event::TaskStart {
                id, name, handler, ..
            } if self.last_task != Some(*id) => {
                let kind = if *handler { "RUNNING HANDLER" } else { "TASK" };
                let banner = format!("\n{kind} [{name}]");
                if self.display == Display::default() {
                    self.last_task = Some(*id);
                    let _ = writeln!(out, "{banner}");
                } else {
                    // Printed with the task's first shown result, if any.
                    self.banners.insert(*id, banner);
                    self.pending_banner = Some(*id);
                }
            }
            Event::Progress {
                host,
                status,
                elapsed,
                ..
            } if self.last_progress.get(host) != Some(status) => {
                self.last_progress.insert(host.clone(), status.clone());
                let _ = writeln!(out, "{host}  {status} {}", minutes_seconds(*elapsed));
            }
            // ansible-core's default callback (`v2_runner_on_async_poll`, `_async_ok`,
            // `_async_failed`), the host by its inventory name.
            Event::AsyncPoll { host, jid } => {
                let _ = writeln!(
                    out,
                    "ASYNC POLL on {host}: jid={jid} started=True finished=False"
                );
            }
            Event::AsyncDone { host, jid, failed } => {
                let word = if *failed { "FAILED" } else { "OK" };
                let _ = writeln!(out, "ASYNC {word} on {host}: jid={jid}");
            }
            Event::Retry {
                host,
                task,
                attempt,
                retries,
            } => {
                // `retries` counts the runs after the first, so one more run is left in total.
                let left = (retries + 1).saturating_sub(*attempt);
                let _ = writeln!(
                    out,
                    "FAILED - RETRYING: [{host}]: {task} ({left} retries left)."
                );
            }
            Event::ItemResult {
                host,
                task_id,
                task,
                item,
                status,
                result,
                module,
            } => {
                if !self.shown(*status, result) {
                    return out;
                }
                self.header_for(&mut out, *task_id, task);
                match &result.included {
                    Some(file) if *status == Status::Ok => {
                        self.hold_included(*task_id, file, Some(item), host);
                    }
                    _ => {
                        let line =
                            self.line(host, *status, Some(item), result, None, module.as_deref());
                        let at = self.locations.get(task_id).cloned();
                        let sources = &mut self.sources;
                        let block =
                            error_block(*status, result, module.as_deref(), at.as_deref(), sources);
                        out.push_str(&block);
                        let _ = writeln!(out, "{line}");
                    }
                }
            }
            Event::TaskResult {
                host,
                status,
                result,
                looped,
                delegated_to,
                task_id,
                task,
                module,
                location,
                ..
            } => {
                // A loop's items were shown one by one; only its skip (every item skipped, or
                // no items) or unreachable host gets a summary line, as in ansible-core's
                // default callback, and a failed `debug` loop (whose `results` the callback's
                // `_clean_results` drops, so `fatal: ... One or more items failed` is printed).
                // A meta task says what it did at `-vv` (`META: ...`); only a skipped one
                // gets a host line, as ansible-core's strategy reports meta tasks.
                if module.as_deref() == Some("meta") {
                    if self.verbose > 1 {
                        let what = result.str_field("skip_reason").or(result.msg_str());
                        let _ = writeln!(out, "META: {}", what.unwrap_or_default());
                    }
                    if *status != Status::Skipped {
                        return out;
                    }
                }
                let summary = (!looped
                    || matches!(status, Status::Unreachable | Status::Skipped)
                    || (*status == Status::Failed && module.as_deref() == Some("debug")))
                    && self.shown(*status, result);
                if summary {
                    self.header_for(&mut out, *task_id, task);
                }
                if summary {
                    match &result.included {
                        // ansible-playbook's `v2_playbook_on_include` line, once the task is
                        // done on every host.
                        Some(file) if *status == Status::Ok => {
                            self.hold_included(*task_id, file, None, host);
                        }
                        _ => {
                            let line = self.line(
                                host,
                                *status,
                                None,
                                result,
                                delegated_to.as_deref(),
                                module.as_deref(),
                            );
                            // A loop's failure was told item by item.
                            if !looped {
                                let at = self.locations.get(task_id).unwrap_or(location).clone();
                                let at = Some(at.as_str()).filter(|a| !a.is_empty());
                                let m = module.as_deref();
                                let block = error_block(*status, result, m, at, &mut self.sources);
                                out.push_str(&block);
                            }
                            let _ = writeln!(out, "{line}");
                        }
                    }
                }
                if *status == Status::Ignored {
                    out.push_str("...ignoring\n");
                }
            }
            Event::Error { message } => {
                let _ = writeln!(out, "[ERROR]: {message}");
            }
            Event::Warning { message } => {
                self.pending_banner_now(&mut out);
                let _ = writeln!(out, "[WARNING]: {message}");
            }
            Event::SourceWarning {
                message,
                location,
                key,
            } => out.push_str(&source_warning(message, location, key, &mut self.sources)),
            Event::NoHostsMatched => out.push_str("skipping: no hosts matched\n"),
            Event::Deprecation { message } => {
                self.pending_banner_now(&mut out);
                let _ = writeln!(out, "[DEPRECATION WARNING]: {message}");
            }
            Event::RunEnd { interrupted: true } => out.push_str("\n[interrupted]\n"),
            Event::PhaseStart { phase } => {
                let _ = writeln!(out, "\nPHASE [{phase}] {}", "*".repeat(40));
            }
            Event::PhaseEnd {
                phase,
                status,
                duration,
            } => {
                let _ = writeln!(
                    out,
                    "\nphase {phase}: {status} in {:.2}s",
                    duration.as_secs_f64()
                );
            }
            _ => {}
        }
        out
    }

    /// Print the banner of the task still waiting for a shown result (a result's warning).
    fn pending_banner_now(&mut self, out: &mut String) {
        if let Some(id) = self.pending_banner.take()
            && let Some(banner) = self.banners.remove(&id)
        {
            self.last_task = Some(id);
            let _ = writeln!(out, "{banner}");
        }
    }

    /// Keep a task's location for the `[ERROR]` block of its failures.
    fn remember_location(&mut self, ev: &Event) {
        if let Event::TaskStart { id, location, .. } = ev {
            self.locations.insert(*id, location.clone());
        }
    }

    /// Under the `free` strategy hosts are at different tasks at once: a result of a task other
    /// than the one whose header was printed last gets that task's header again, so no line
    /// appears under another task's name.
    fn header_for(&mut self, out: &mut String, task_id: usize, task: &str) {
        if self.last_task != Some(task_id) {
            self.last_task = Some(task_id);
            match self.banners.remove(&task_id) {
                Some(banner) => {
                    let _ = writeln!(out, "{banner}");
                }
                None => {
                    let _ = writeln!(out, "\nTASK [{task}]");
                }
            }
        }
    }

    fn line(
        &self,
        host: &str,
        status: Status,
        item: Option<&String>,
        result: &TaskResult,
        delegated: Option<&str>,
        module: Option<&str>,
    ) -> String {
        let word = match status {
            Status::Failed | Status::Ignored => "failed",
            Status::Unreachable => "fatal",
            s => s.word(),
        };
        // A skipped task names its host alone (`v2_runner_on_skipped`), delegated or not.
        let mut head = match delegated.filter(|_| status != Status::Skipped) {
            Some(d) => format!("{word}: [{host} -> {d}]"),
            None => format!("{word}: [{host}]"),
        };
        // An unreachable host under `ignore_unreachable` is still told as unreachable.
        let unreachable = status == Status::Unreachable || result.unreachable;
        if matches!(status, Status::Failed | Status::Ignored) && item.is_none() {
            head = head.replace("failed:", "fatal:");
            if !unreachable {
                head.push_str(": FAILED!");
            }
        }
        if unreachable {
            head.push_str(": UNREACHABLE!");
        }
        // `failed: [h] (item=x) => ...` but `ok: [h] => (item=x)`, as ansible-core's
        // callback words them.
        match (item, status) {
            (Some(i), Status::Failed | Status::Ignored) => head.push_str(&format!(" (item={i})")),
            // A skipped item's line ends in a space (`v2_runner_item_on_skipped`).
            (Some(i), Status::Skipped) => head.push_str(&format!(" => (item={i}) ")),
            (Some(i), _) => head.push_str(&format!(" => (item={i})")),
            (None, _) => {}
        }
        let mut tail = String::new();
        let msg = result.msg_str();
        // From `-v` on (and for a result that asks for it) the result itself, as
        // ansible-playbook prints it; without `-v` a failure is told in kinit's lines below.
        let whole = match status {
            // `debug` prints its own way below; facts are not dumped (ansible-core's
            // `_ansible_verbose_override` for `setup` and `gather_facts`).
            Status::Ok | Status::Changed => {
                (self.verbose > 0 || result.verbose_always)
                    && !matches!(module, Some("debug" | "setup" | "gather_facts"))
            }
            _ => self.verbose > 0,
        };
        if whole {
            let _ = write!(tail, " => {}", dump(result, module, self.verbose));
            if let Some(o) = result.origin.as_ref().filter(|_| result.is_failed()) {
                let _ = write!(tail, "\n    origin: {o}");
            }
        }
        match status {
            _ if whole => {}
            Status::Failed | Status::Ignored | Status::Unreachable => {
                // A `failed_when`/`changed_when` that could not be evaluated says why there.
                let why = ["failed_when_result", "changed_when_result"]
                    .iter()
                    .find_map(|k| result.str_field(k).filter(|w| !w.is_empty()));
                if let Some(m) = msg.filter(|m| !m.is_empty()).or(why) {
                    let _ = write!(tail, " => {m}");
                }
                if let Some(a) = result.str_field("assertion") {
                    let _ = write!(tail, " (assertion: {a})");
                }
                if let Some(o) = &result.origin {
                    let _ = write!(tail, "\n    origin: {o}");
                }
                if status != Status::Unreachable && self.verbose == 0 {
                    failure_details(&mut tail, result);
                }
            }
            Status::Ok | Status::Changed => {
                // A censored `debug` (`no_log`) is no debug output: nothing below `-v`, the
                // result in one line from it, as ansible-playbook shows it.
                if module == Some("debug") && result.fields.contains_key("censored") {
                    if self.verbose > 0 {
                        let _ = write!(tail, " => {}", dump(result, module, self.verbose));
                    }
                } else if module == Some("debug") {
                    match &result.msg {
                        // `{"msg": ...}` indented, a text too, as ansible-playbook prints it
                        // (scripts grep for `"msg": "..."`).
                        Some(m) => {
                            let shown = serde_json::json!({ "msg": m });
                            let _ = write!(tail, " => {}", pretty(&shown));
                        }
                        None => {
                            let mut shown = result.to_value();
                            if let Some(m) = shown.as_object_mut() {
                                // The keys ansible-core's callback hides in `debug: var=`.
                                m.retain(|k, _| !DEBUG_HIDDEN.contains(&k.as_str()));
                            }
                            let _ = write!(tail, " => {}", pretty(&shown));
                        }
                    }
                }
            }
            Status::Skipped => {}
        }
        let mut s = head + &tail;
        // A result carries a diff only where its task asked for one (`--diff` or `diff:`);
        // it is shown for a change only, before the host's line, as in ansible-playbook.
        if let Some(d) = result
            .fields
            .get("diff")
            .filter(|d| !d.is_null() && result.changed)
        {
            let diff = render_diff(d);
            if !diff.is_empty() {
                // A blank line follows a diff, as ansible-playbook's callback writes it.
                s = format!("{}\n\n{s}", diff.trim_start_matches('\n'));
            }
        }
        s
    }
}

/// Actions that run on the controller and no module: their failures are the action's
/// (ansible-core's action plugins that return a result of their own).
const CONTROLLER_ACTIONS: &[&str] = &[
    "debug",
    "assert",
    "fail",
    "set_fact",
    "set_stats",
    "add_host",
    "group_by",
    "include_vars",
    "include_tasks",
    "include_role",
    "pause",
    "wait_for_connection",
    "async_status",
    "validate_argument_spec",
    "meta",
];

/// The lines ansible-core 2.19 prints before a failed task's (or item's) result: what failed
/// (`[ERROR]: Task failed: Module failed: <msg>`; `Action failed` when an action or
/// `failed_when` failed it), where (`Origin: file:line:column`), and the task's source with
/// the two lines before it (`_error_utils.SourceContext.from_origin`).
fn error_block(
    status: Status,
    result: &TaskResult,
    module: Option<&str>,
    at: Option<&str>,
    sources: &mut HashMap<std::path::PathBuf, String>,
) -> String {
    if !matches!(status, Status::Failed | Status::Ignored) {
        return String::new();
    }
    // No module: an include that could not be loaded, a play-level error.
    let by_action = module.is_none_or(|m| CONTROLLER_ACTIONS.contains(&m))
        || result.fields.get("failed_when_result") == Some(&Value::Bool(true));
    let kind = if by_action { "Action" } else { "Module" };
    let msg = result.msg_str().unwrap_or_default().trim_end();
    let mut out = if msg.starts_with("Task failed") {
        format!("[ERROR]: {msg}\n")
    } else if msg.is_empty() {
        format!("[ERROR]: Task failed: {kind} failed.\n")
    } else {
        format!("[ERROR]: Task failed: {kind} failed: {msg}\n")
    };
    let Some((path, line, lines)) = task_source(at, sources) else {
        return out;
    };
    let Some(lines) = lines else {
        let _ = writeln!(
            out,
            "Origin: {}:{line}\n\n(source not shown: content encrypted)\n",
            path.display()
        );
        return out;
    };
    let Some(target) = line.checked_sub(1).and_then(|i| lines.get(i)) else {
        let _ = writeln!(out, "Origin: {}:{line}", path.display());
        return out;
    };
    // A task's origin is its mapping's first key: after the list's `- `.
    let indent = target.len() - target.trim_start().len();
    let rest = &target[indent..];
    let column = match rest.strip_prefix('-') {
        Some(after) => indent + 1 + (after.len() - after.trim_start().len()) + 1,
        None => indent + 1,
    };
    out.push_str(&excerpt(&path, &lines, line, column));
    out
}

/// A task's file (absolute), line, and the file's lines (`None` for a vaulted file, whose
/// text is not shown: `SourceContext.from_origin`), from its `file:line` location.
fn task_source<'a>(
    at: Option<&str>,
    sources: &'a mut HashMap<std::path::PathBuf, String>,
) -> Option<(std::path::PathBuf, usize, Option<Vec<&'a str>>)> {
    let (file, line) = at?.rsplit_once(':')?;
    let line = line.parse::<usize>().ok()?;
    let path = std::path::absolute(file).unwrap_or_else(|_| file.into());
    let text = sources
        .entry(path.clone())
        .or_insert_with(|| std::fs::read_to_string(&path).unwrap_or_default());
    let lines = (!text.starts_with("$ANSIBLE_VAULT")).then(|| text.lines().collect());
    Some((path, line, lines))
}

/// `Origin: file:line:column`, then the line with the two before it, numbered, and a `^`
/// under the column, as ansible-core 2.19 quotes a source position.
fn excerpt(path: &std::path::Path, lines: &[&str], line: usize, column: usize) -> String {
    let mut out = format!("Origin: {}:{line}:{column}\n\n", path.display());
    let width = line.to_string().len();
    for n in line.saturating_sub(2).max(1)..=line.min(lines.len()) {
        let src = masked_source_line(&lines[n - 1].replace('\t', " "));
        let sep = if src.is_empty() { "" } else { " " };
        let _ = writeln!(out, "{n:>width$}{sep}{src}");
    }
    let _ = writeln!(
        out,
        "{} {}^ column {column}\n",
        " ".repeat(width),
        " ".repeat(column - 1)
    );
    out
}

/// A warning about a value of a task (2.19's template markers): the message, then where the
/// value of the task's `key` is (`name: "{{ x }}"`, `debug: var=x`).
fn source_warning(
    message: &str,
    location: &str,
    key: &str,
    sources: &mut HashMap<std::path::PathBuf, String>,
) -> String {
    let mut out = format!("[WARNING]: {message}\n");
    let Some((path, line, Some(lines))) = task_source(Some(location), sources) else {
        return out;
    };
    if let Some((line, column)) = value_position(&lines, line, key) {
        out.push_str(&excerpt(&path, &lines, line, column));
    }
    out
}

/// Where the value of `key` is in the task that starts at `line` (1-based line and column):
/// a `key:` of the task or of its arguments, else the argument string holding `key=`.
fn value_position(lines: &[&str], line: usize, key: &str) -> Option<(usize, usize)> {
    let first = lines.get(line.checked_sub(1)?)?;
    let task_indent = first.len() - first.trim_start().len();
    let span = lines[line - 1..].iter().enumerate().take_while(|(i, l)| {
        *i == 0 || l.trim().is_empty() || l.len() - l.trim_start().len() > task_indent
    });
    fn body(l: &str) -> (usize, &str) {
        let t = l.trim_start();
        let t = t.strip_prefix("- ").map_or(t, str::trim_start);
        (l.len() - t.len(), t)
    }
    let value_at = |l: &str, after: usize| {
        let v = &l[after..];
        after + (v.len() - v.trim_start().len()) + 1
    };
    let span: Vec<(usize, &&str)> = span.collect();
    let colon = format!("{key}:");
    let keyed = span.iter().find_map(|(i, l)| {
        let (at, t) = body(l);
        t.starts_with(&colon)
            .then(|| (line + i, value_at(l, at + colon.len())))
    });
    keyed.or_else(|| {
        let eq = format!("{key}=");
        span.iter().find_map(|(i, l)| {
            let (at, t) = body(l);
            let colon = t.find(": ")?;
            t[colon..]
                .contains(&eq)
                .then(|| (line + i, value_at(l, at + colon + 1)))
        })
    })
}

/// A quoted source line with the value of a secret-named key masked (`db_password: x`,
/// `api_token=x`): the excerpt may show a play's `vars` above its first task, and no secret
/// reaches output.
fn masked_source_line(line: &str) -> String {
    let body = line.trim_start().trim_start_matches("- ");
    let key_end = body.find([':', '=']).unwrap_or(0);
    let key = body[..key_end].trim().trim_matches(['"', '\'']);
    let valid_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let value = body[key_end..].get(1..).unwrap_or_default().trim();
    if !valid_key || value.is_empty() || !super::redact::is_secret_name(key) {
        return line.to_string();
    }
    let head = &line[..line.len() - body.len() + key_end + 1];
    format!("{head} {}", super::redact::MASK)
}

/// Lines of a failed command's output shown without `-v`.
const FAILED_OUTPUT_LINES: usize = 10;

/// What an Ansible user looks for in a failed command without asking for `-v`: its `rc` and
/// `cmd`, then the end of its stderr (or of its stdout when stderr is empty).
fn failure_details(out: &mut String, result: &TaskResult) {
    if let Some(rc) = result.rc() {
        let _ = write!(out, "\n    rc: {rc}");
        match result.fields.get("cmd") {
            Some(Value::String(c)) => {
                let _ = write!(out, "\n    cmd: {c}");
            }
            // `command`'s argument list, joined as Python's `shlex.join` writes it (ansible-core
            // reports a failed command line that way): a word with anything but
            // `[\w@%+=:,./-]` in single quotes.
            Some(Value::Array(words)) => {
                let quoted: Vec<String> = words
                    .iter()
                    .map(|w| {
                        let w = show(w);
                        let safe = !w.is_empty()
                            && w.bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./-_".contains(&b));
                        if safe {
                            w
                        } else {
                            format!("'{}'", w.replace('\'', r"'\''"))
                        }
                    })
                    .collect();
                let _ = write!(out, "\n    cmd: {}", quoted.join(" "));
            }
            _ => {}
        }
    }
    for key in ["stderr", "stdout"] {
        let Some(text) = result.str_field(key).filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(FAILED_OUTPUT_LINES);
        if from > 0 {
            let _ = write!(out, "\n    {key}| ... ({from} earlier lines; -v shows all)");
        }
        for l in &lines[from..] {
            let _ = write!(out, "\n    {key}| {l}");
        }
        break;
    }
}

/// A result as ansible-core's callbacks dump it (`_dump_results`): keys sorted, Python's
/// separators, on one line (indented by four from `-vvv`, or when the result asks to be
/// shown whole); without `invocation` and `diff` below `-vvv`, and without `exception`,
/// `warnings` and `deprecations` (told on their own lines). A `debug` result keeps what its
/// callback keeps (`_clean_results`).
fn dump(result: &TaskResult, module: Option<&str>, verbose: u8) -> String {
    let mut v = result.to_value();
    if let Value::Object(m) = &mut v {
        // The status is the line's word (`as_callback_task_result` drops these two).
        m.retain(|k, _| {
            !matches!(k.as_str(), "failed" | "skipped")
                && !k.starts_with("_ansible")
                && !matches!(k.as_str(), "exception" | "warnings" | "deprecations")
                && (verbose >= 3 || !matches!(k.as_str(), "invocation" | "diff"))
        });
        // A meta task's result has no `changed` (`_execute_meta`).
        if module == Some("meta") {
            m.remove("changed");
        }
        if module == Some("debug") {
            match m.contains_key("msg") {
                true => m.retain(|k, _| k == "msg"),
                false => m.retain(|k, _| !DEBUG_HIDDEN.contains(&k.as_str())),
            }
        }
    }
    if verbose >= 3 || result.verbose_always {
        return pretty(&v);
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyCompact);
    match serde::Serialize::serialize(&sorted(&v), &mut ser) {
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(_) => show(&v),
    }
}

/// The keys ansible-core's callback hides in a `debug` result (`_hide_in_debug`).
const DEBUG_HIDDEN: &[&str] = &[
    "changed",
    "failed",
    "skipped",
    "invocation",
    "skip_reason",
    "ansible_loop_var",
    "ansible_index_var",
    "ansible_loop",
];

/// Python `json.dumps`' default separators (`", "` and `": "`) on one line.
struct PyCompact;

impl serde_json::ser::Formatter for PyCompact {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

/// `v` with every mapping's keys sorted, as `json.dumps(sort_keys=True)` writes them.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A value as ansible-playbook's default callback prints a `debug` variable or structure:
/// JSON indented by four spaces, keys sorted, non-ASCII as it is.
fn pretty(v: &Value) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    match serde::Serialize::serialize(&sorted(v), &mut ser) {
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(_) => show(v),
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// Lines of context around each change in a `--diff` hunk (Ansible's `DIFF_CONTEXT`).
const DIFF_CONTEXT: usize = 3;

/// A result's `diff` as Ansible's default callback shows it: a unified diff with hunk headers
/// (Python's `difflib.unified_diff`, `before: path`/`after: path` headers, a last line without
/// its newline marked `\ No newline at end of file`); nothing when the texts are equal.
fn render_diff(d: &Value) -> String {
    // A mapping side reads as ansible-playbook's callback shows it (`_get_diff`): sorted JSON
    // indented by four spaces, with a final newline.
    let text = |k: &str| match d.get(k) {
        Some(Value::String(t)) => t.clone(),
        Some(v @ (Value::Object(_) | Value::Array(_))) => pretty(v) + "\n",
        _ => String::new(),
    };
    let header = |side: &str| match d.get(format!("{side}_header")).and_then(Value::as_str) {
        Some(p) => format!("{side}: {p}"),
        None => side.to_string(),
    };
    let split = |t: &str| -> Vec<String> {
        let mut ls: Vec<String> = t.split_inclusive('\n').map(str::to_string).collect();
        if let Some(last) = ls.last_mut()
            && !last.ends_with('\n')
        {
            last.push_str("\n\\ No newline at end of file\n");
        }
        ls
    };
    let (before, after) = (split(&text("before")), split(&text("after")));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &before, &after);
    let groups = similar::group_diff_ops(ops, DIFF_CONTEXT);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = format!("\n--- {}\n+++ {}", header("before"), header("after"));
    // difflib's `_format_range_unified`.
    let range = |r: std::ops::Range<usize>| match r.len() {
        1 => format!("{}", r.start + 1),
        0 => format!("{},0", r.start),
        n => format!("{},{n}", r.start + 1),
    };
    for group in &groups {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let old = first.old_range().start..last.old_range().end;
        let new = first.new_range().start..last.new_range().end;
        let _ = write!(out, "\n@@ -{} +{} @@", range(old), range(new));
        let lines = |sign: char, ls: &[String]| -> String {
            ls.iter()
                .map(|l| format!("\n{sign}{}", l.strip_suffix('\n').unwrap_or(l)))
                .collect()
        };
        for op in group {
            let (old, new) = (op.old_range(), op.new_range());
            match op.tag() {
                similar::DiffTag::Equal => out.push_str(&lines(' ', &before[old])),
                similar::DiffTag::Delete => out.push_str(&lines('-', &before[old])),
                similar::DiffTag::Insert => out.push_str(&lines('+', &after[new])),
                similar::DiffTag::Replace => {
                    out.push_str(&lines('-', &before[old]));
                    out.push_str(&lines('+', &after[new]));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_failure_says_what_failed_and_shows_the_tasks_source() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path().join("site.yml");
        let text: String = (1..=8).map(|i| format!("# line {i}\n")).collect::<String>()
            + "\n  tasks:\n    - name: run it\n      command: /bin/false\n";
        std::fs::write(&book, text).unwrap();
        let at = format!("{}:11", book.display());
        let failed = TaskResult::failed("non-zero return code");
        let mut seen = HashMap::new();
        let block = error_block(
            Status::Failed,
            &failed,
            Some("command"),
            Some(&at),
            &mut seen,
        );
        let expected = format!(
            "[ERROR]: Task failed: Module failed: non-zero return code\n\
             Origin: {}:11:7\n\n\
             \x209\n\
             10   tasks:\n\
             11     - name: run it\n\
             \x20        ^ column 7\n\n",
            book.display()
        );
        assert_eq!(block, expected);
        // `failed_when` (or an action) fails it: the action's failure, its message or none.
        let mut forced = TaskResult::failed("");
        forced.set("failed_when_result", serde_json::json!(true));
        let block = error_block(Status::Ignored, &forced, Some("command"), None, &mut seen);
        assert_eq!(block, "[ERROR]: Task failed: Action failed.\n");
        let block = error_block(Status::Failed, &failed, Some("assert"), None, &mut seen);
        assert!(block.starts_with("[ERROR]: Task failed: Action failed: non-zero"));
        let unreachable = error_block(Status::Unreachable, &failed, None, Some(&at), &mut seen);
        assert_eq!(unreachable, "", "an unreachable host is no task failure");
    }

    #[test]
    fn quoted_source_hides_the_values_of_secret_named_keys() {
        assert_eq!(
            masked_source_line("    db_password: hunter2"),
            "    db_password: ********"
        );
        assert_eq!(
            masked_source_line("    - api_token=abc123"),
            "    - api_token= ********"
        );
        assert_eq!(masked_source_line("  vault_secret:"), "  vault_secret:");
        assert_eq!(
            masked_source_line("    - name: set the password"),
            "    - name: set the password"
        );
        assert_eq!(masked_source_line("  tasks:"), "  tasks:");
    }

    #[test]
    fn a_warned_values_origin_is_where_its_key_holds_it_in_the_task() {
        let lines = [
            "- hosts: all",
            "  tasks:",
            "    - debug: var=nope",
            "    - debug: msg=x",
            "      name: \"B {{ u }}\"",
            "    - name: C",
            "      debug:",
            "        var: d.b",
            "    - name: other",
        ];
        assert_eq!(value_position(&lines, 3, "var"), Some((3, 14)));
        assert_eq!(value_position(&lines, 4, "name"), Some((5, 13)));
        assert_eq!(value_position(&lines, 6, "var"), Some((8, 14)));
        // Not beyond the task: the next task's `name` is not this one's.
        assert_eq!(value_position(&lines, 3, "name"), None);
    }

    #[test]
    fn a_diff_is_unified_with_hunk_headers_as_difflib_writes_it() {
        let before: String = (1..=12).map(|i| format!("{i}\n")).collect();
        let after = before.replace("5\n", "five\n") + "13";
        let d = serde_json::json!({"before": before, "after": after,
            "before_header": "/f", "after_header": "/f"});
        assert_eq!(
            render_diff(&d),
            "\n--- before: /f\n+++ after: /f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\
             \n@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n\\ No newline at end of file"
        );
        let same = serde_json::json!({"before": "a\n", "after": "a\n"});
        assert_eq!(render_diff(&same), "");
        let new = serde_json::json!({"before": "", "after": "x\n"});
        assert_eq!(
            render_diff(&new),
            "\n--- before\n+++ after\n@@ -0,0 +1 @@\n+x"
        );
    }

    #[test]
    fn debug_structures_print_as_ansible_playbook_prints_them() {
        let v = serde_json::json!({"x": {"b": 1, "a": [1, {"z": 2, "c": "hé"}], "e": []}});
        assert_eq!(
            pretty(&v),
            "{\n    \"x\": {\n        \"a\": [\n            1,\n            {\n                \"c\": \"hé\",\n                \"z\": 2\n            }\n        ],\n        \"b\": 1,\n        \"e\": []\n    }\n}"
        );
    }

    fn start(id: usize, name: &str) -> Event {
        Event::TaskStart {
            id,
            name: name.into(),
            handler: false,
            location: String::new(),
        }
    }

    fn result(host: &str, id: usize, task: &str) -> Event {
        Event::TaskResult {
            host: host.into(),
            task_id: id,
            task: task.into(),
            location: String::new(),
            status: Status::Ok,
            module: Some("command".into()),
            delegated_to: None,
            looped: false,
            duration: Duration::ZERO,
            result: TaskResult::ok(),
        }
    }

    #[test]
    fn hosts_that_included_the_same_file_share_one_line_once_the_task_is_done() {
        let included = |host: &str, file: &str, item: Option<&str>| {
            let mut r = TaskResult::ok();
            r.included = Some(file.into());
            match item {
                Some(i) => Event::ItemResult {
                    host: host.into(),
                    task_id: 1,
                    task: "inc".into(),
                    item: i.into(),
                    status: Status::Ok,
                    module: Some("include_tasks".into()),
                    result: r,
                },
                None => Event::TaskResult {
                    host: host.into(),
                    task_id: 1,
                    task: "inc".into(),
                    location: String::new(),
                    status: Status::Ok,
                    module: Some("include_tasks".into()),
                    delegated_to: None,
                    looped: false,
                    duration: Duration::ZERO,
                    result: r,
                },
            }
        };
        let mut p = Plain::new(0, false);
        let mut out = String::new();
        for e in [
            start(1, "inc"),
            included("web1", "/p/a.yml", None),
            included("web2", "/p/b.yml", None),
            included("web3", "/p/a.yml", None),
            included("web1", "/p/l.yml", Some("x")),
            included("web2", "/p/l.yml", Some("x")),
            included("web2", "/p/l.yml", Some("y")),
            start(2, "next"),
        ] {
            out.push_str(&p.flush_before(&e));
            out.push_str(&p.render(&e));
        }
        assert_eq!(
            out,
            "\nTASK [inc]\n\
             included: /p/a.yml for web1, web3\n\
             included: /p/b.yml for web2\n\
             included: /p/l.yml for web1, web2 => (item=x)\n\
             included: /p/l.yml for web2 => (item=y)\n\
             \nTASK [next]\n"
        );
        // Nothing is held past the end of the run.
        let mut q = Plain::new(0, false);
        q.render(&start(1, "inc"));
        q.render(&included("web1", "/p/a.yml", None));
        assert_eq!(q.flush(), "included: /p/a.yml for web1\n");
        assert_eq!(q.flush(), "");
    }

    #[test]
    fn results_of_interleaved_tasks_appear_under_their_own_header() {
        let mut p = Plain::new(0, false);
        let out: String = [
            start(1, "first"),
            start(2, "second"),
            result("a", 2, "second"),
            result("b", 1, "first"),
            result("c", 1, "first"),
        ]
        .iter()
        .map(|e| p.render(e))
        .collect();
        assert_eq!(
            out,
            "\nTASK [first]\n\nTASK [second]\nok: [a]\n\nTASK [first]\nok: [b]\nok: [c]\n"
        );
    }
}
