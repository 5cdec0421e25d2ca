//! Reporting: workers send `Event`s over one channel; one reporter task owns the counters
//! (`RunStats`) and renders to every sink: live progress on a TTY (`progress`), plain lines
//! otherwise (`plain`), the JSON event log (`--log-json`) and JUnit XML (`--junit`). Every
//! sink's text passes through the `Redactor` first.

pub mod event;
pub mod junit;
mod outcome;
pub mod plain;
mod progress;
pub mod recap;
pub mod redact;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

pub use event::{Event, PhaseStatus, Status};
pub use outcome::TaskResult;
pub use recap::{HostStats, RunStats};
pub use redact::Redactor;

#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    pub verbose: u8,
    pub diff: bool,
    /// Which results are shown (ansible.cfg's `display_ok_hosts`/`display_skipped_hosts`).
    pub display: Display,
    pub log_json: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    /// Live progress bars (stdout is a terminal).
    pub progress: bool,
    /// Report every duration as zero, so output is reproducible (tests, snapshots).
    pub frozen_time: bool,
}

/// Which results the output shows, as ansible-core's default callback options choose them:
/// without `ok`, a result that changed nothing is not shown; without `skipped`, a skipped one
/// is not; either way a task's banner waits for its first shown result, so a task nobody
/// sees a line of has none. The recap counts every result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Display {
    pub ok: bool,
    pub skipped: bool,
    /// `show_custom_stats`: the `set_stats` data after the recap.
    pub custom_stats: bool,
}

impl Default for Display {
    fn default() -> Self {
        Self {
            ok: true,
            skipped: true,
            custom_stats: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write report `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The workers' end of the event channel.
#[derive(Clone)]
pub struct EventSender {
    tx: mpsc::UnboundedSender<Event>,
    pub redactor: Redactor,
    /// The live progress bars, when the reporter draws them: hidden while a question is
    /// asked on the terminal (`suspend`).
    bars: Option<indicatif::MultiProgress>,
}

impl EventSender {
    pub fn send(&self, ev: Event) {
        // The reporter only goes away at shutdown; a lost event then is harmless.
        let _ = self.tx.send(ev);
    }

    /// Run `f` (a question on the terminal, `vars_prompt`) with the progress bars hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bars {
            Some(m) => m.suspend(f),
            None => f(),
        }
    }

    /// A sender with no reporter behind it: for commands that only inspect a playbook
    /// (`--list-hosts`) and must print nothing but their own listing, not a recap.
    pub fn discard() -> EventSender {
        let (tx, _) = mpsc::unbounded_channel();
        EventSender {
            tx,
            redactor: Redactor::default(),
            bars: None,
        }
    }

    /// A sender whose events the caller reads itself instead of a reporter (`kinit plan
    /// --render` prints its own listing and reports only failed tasks).
    pub fn collect() -> (EventSender, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            EventSender {
                tx,
                redactor: Redactor::default(),
                bars: None,
            },
            rx,
        )
    }
}

/// Start the reporter task. It ends (returning the stats) when every `EventSender` is dropped.
pub fn start(
    opts: ReportOptions,
    redactor: Redactor,
) -> Result<
    (
        EventSender,
        tokio::task::JoinHandle<Result<RunStats, ReportError>>,
    ),
    ReportError,
> {
    let (tx, rx) = mpsc::unbounded_channel();
    let json = match &opts.log_json {
        Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p).map_err(
            |source| ReportError::Write {
                path: p.clone(),
                source,
            },
        )?)),
        None => None,
    };
    let r = redactor.clone();
    let progress = opts.progress.then(progress::Progress::new);
    let bars = progress.as_ref().map(progress::Progress::bars);
    let handle = tokio::spawn(async move { run(opts, r, rx, json, progress).await });
    Ok((EventSender { tx, redactor, bars }, handle))
}

async fn run(
    opts: ReportOptions,
    redactor: Redactor,
    mut rx: mpsc::UnboundedReceiver<Event>,
    mut json: Option<std::io::BufWriter<std::fs::File>>,
    mut progress: Option<progress::Progress>,
) -> Result<RunStats, ReportError> {
    let mut stats = RunStats::default();
    let mut plain = plain::Plain::new(opts.verbose, opts.diff).showing(opts.display);
    let mut junit = junit::Junit::default();
    // The first error writing the JSON log (a full disk, `/dev/full`): the log stops there and
    // the run ends with that error after its recap, instead of a cut log and exit 0.
    let mut json_error: Option<std::io::Error> = None;
    let stdout = std::io::stdout();
    while let Some(mut ev) = rx.recv().await {
        // Results are masked as values first, so no sink's own encoding of them (JSON in the
        // log, a `debug` message as JSON) can carry a secret past the text masking below.
        if let Event::TaskResult { result, .. } | Event::ItemResult { result, .. } = &mut ev {
            result.redact(&redactor);
        }
        if opts.frozen_time
            && let Event::TaskResult { duration, .. }
            | Event::PhaseEnd { duration, .. }
            | Event::Progress {
                elapsed: duration, ..
            } = &mut ev
        {
            *duration = Duration::ZERO;
        }
        match &ev {
            Event::TaskResult {
                host,
                status,
                task,
                location,
                duration,
                module,
                result,
                looped,
                ..
            } => {
                // Meta tasks steer the run; ansible-playbook leaves them out of the recap. An
                // include counts `ok` once per file it included (ansible-core counts each
                // `IncludedFile`), so a looped one counts by its items, not as a task.
                let included_items = *looped && result.included.is_some();
                if module.as_deref() != Some("meta") && !included_items {
                    stats.record(host, *status);
                    if *status == Status::Ignored && result.changed {
                        stats.hosts.entry(host.clone()).or_default().changed += 1;
                    }
                }
                stats.time(&format!("{task} ({location})"), *duration);
                if let Some(custom) = result.fields.get("ansible_stats")
                    && !result.is_failed()
                {
                    stats.custom_stats(host, custom);
                }
            }
            Event::ItemResult {
                host,
                status: Status::Ok,
                result,
                ..
            } if result.included.is_some() => stats.record(host, Status::Ok),
            Event::Rescued { host } => stats.rescued(host),
            Event::RunEnd { interrupted } => stats.interrupted = *interrupted,
            Event::PhaseEnd {
                phase,
                status,
                duration,
            } => stats.phase(phase, *status, *duration),
            _ => {}
        }
        junit.observe(&ev);
        if let Some(w) = json.as_mut() {
            let line = serde_json::to_string(&ev).unwrap_or_default();
            // Flushed per event, so the log can be followed while a run is going.
            if let Err(e) = writeln!(w, "{}", redactor.apply(&line)).and_then(|()| w.flush()) {
                json_error = Some(e);
                json = None;
            }
        }
        // Lines held for a task that is now done come first, on stdout.
        let held = terminal_safe(&redactor.apply(&plain.flush_before(&ev))).into_owned();
        let text = terminal_safe(&redactor.apply(&plain.render(&ev))).into_owned();
        match progress.as_mut() {
            Some(p) => p.handle(&ev, &(held + &text)),
            None if !held.is_empty() || !text.is_empty() => {
                if !held.is_empty() {
                    let mut out = stdout.lock();
                    let _ = out.write_all(held.as_bytes());
                    let _ = out.flush();
                }
                if text.is_empty() {
                    continue;
                }
                // Warnings go to stderr, as ansible-playbook's `Display.warning` writes them
                // (utils/display.py), so a task's lines on stdout stay together.
                if matches!(
                    ev,
                    Event::Warning { .. }
                        | Event::SourceWarning { .. }
                        | Event::Deprecation { .. }
                        | Event::Error { .. }
                ) {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(text.as_bytes());
                    let _ = err.flush();
                } else {
                    let mut out = stdout.lock();
                    let _ = out.write_all(text.as_bytes());
                    let _ = out.flush();
                }
            }
            None => {}
        }
    }
    let held = terminal_safe(&redactor.apply(&plain.flush())).into_owned();
    if !held.is_empty() {
        match progress.as_mut() {
            Some(p) => p.print(&held),
            None => print!("{held}"),
        }
    }
    if let Some(p) = progress.take() {
        p.finish();
    }
    if let Some(mut w) = json.take()
        && let Err(e) = w
            .flush()
            .and_then(|()| w.get_ref().sync_data().or_else(ignore_unsyncable))
    {
        json_error = Some(e);
    }
    let mut summary = stats.recap();
    if opts.display.custom_stats {
        summary.push_str(&stats.custom_summary());
    }
    let mut summary = format!("\n{summary}\n{}", stats.timing_summary(20));
    if !stats.phases.is_empty() {
        summary = format!("{summary}\n{}", stats.phase_summary());
    }
    print!("{}", terminal_safe(&redactor.apply(&summary)));
    if let Some(path) = &opts.junit {
        let xml = redactor.apply(&junit.render());
        std::fs::write(path, xml).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
    }
    if let (Some(source), Some(path)) = (json_error, &opts.log_json) {
        return Err(ReportError::Write {
            path: path.clone(),
            source,
        });
    }
    Ok(stats)
}

/// `fsync` on a file that cannot be synced (a pipe, a terminal, `/dev/null`) is not a lost
/// write.
fn ignore_unsyncable(e: std::io::Error) -> std::io::Result<()> {
    match e.kind() {
        std::io::ErrorKind::InvalidInput => Ok(()),
        _ => Err(e),
    }
}

/// Text for the terminal: control characters other than newline and tab, which a managed
/// host's output may carry (escape sequences that recolour, move the cursor, set the window
/// title or rewrite the line with `\r`), are shown as `\xNN` instead of acted on.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod terminal_tests {
    use super::terminal_safe;

    /// Regression: with `-v` a host's escape sequences reached the user's terminal as is.
    #[test]
    fn escape_sequences_from_a_host_are_shown_not_acted_on() {
        assert_eq!(terminal_safe("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            terminal_safe("\u{1b}]0;owned\u{7}\u{1b}[2J\rX\u{9b}"),
            "\\x1b]0;owned\\x07\\x1b[2J\\x0dX\\x9b"
        );
    }
}
