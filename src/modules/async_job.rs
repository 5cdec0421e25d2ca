//! Fire-and-forget jobs (`async: N` with `poll: 0`) of `command` and `shell` on POSIX hosts,
//! as ansible-core's `async_wrapper` runs them: the command is started in the background on
//! the host, detached from the connection, and the task goes on at once. Its files live in
//! the async folder (`ansible_async_dir`, `~/.ansible_async` by default): `<jid>` holds
//! `{"started": true, "finished": false, "ansible_job_id": ...}` from the start, as
//! Ansible's results file does; `<jid>.out`, `<jid>.err` and `<jid>.in` the command's output
//! and input; `<jid>.rc` appears when it ends (`rc start end`, epoch seconds); `<jid>.timeout`
//! when the time limit stopped it. `async_status` reads them (`read`).
//!
//! The time limit is the wrapper's: it looks every 5 seconds, after a first 5 (`step = 5` in
//! `ansible/modules/async_wrapper.py`), so a job is stopped after `5 + 5 * ceil(N / 5)`
//! seconds. That is why the common `shell: sleep 2 && reboot` with `async: 1, poll: 0` gets to
//! reboot. Only the job's shell is stopped; the wrapper stops the job's process group.

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::{ModuleCtx, ModuleError, ModuleResult};
use crate::transport::ExecOutput;
use crate::transport::quote::sh;

/// A job to start in the background instead of running the command to its end.
#[derive(Debug)]
pub struct AsyncJob {
    pub jid: String,
    /// The async folder as given (`~` is the remote user's home).
    pub dir: String,
    /// `async:` seconds.
    pub limit: u64,
    /// Set by the module that started it: what `async_status` needs to build its result.
    pub launched: OnceLock<Launched>,
}

/// A started job.
#[derive(Debug, Clone)]
pub struct Launched {
    /// The results file, by its absolute path on the host.
    pub file: String,
    /// The command as the module reports it (`cmd`).
    pub cmd: Value,
    pub strip_empty_ends: bool,
}

tokio::task_local! {
    /// Set around a task that runs with `async` (any `poll`): a Python module's stderr goes
    /// into its result then, as ansible-core's `async_wrapper` puts it there.
    pub static UNDER_ASYNC: ();
}

/// Whether the running task has `async`.
pub fn under_async() -> bool {
    UNDER_ASYNC.try_with(|_| ()).is_ok()
}

/// A job id shaped like Ansible's: `j` + up to 12 random digits + `.` + a process id.
pub fn new_jid() -> String {
    let mut b = [0u8; 8];
    // An id only needs to be unlikely to repeat; the time is enough when randomness fails.
    if getrandom::fill(&mut b).is_err() {
        b = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
            .to_le_bytes()[..8]
            .try_into()
            .unwrap_or_default();
    }
    format!(
        "j{}.{}",
        u64::from_le_bytes(b) % 1_000_000_000_000,
        std::process::id()
    )
}

impl AsyncJob {
    /// A new job with an id shaped like Ansible's (see `new_jid`).
    pub fn new(dir: String, limit: u64) -> AsyncJob {
        AsyncJob {
            jid: new_jid(),
            dir,
            limit,
            launched: OnceLock::new(),
        }
    }
}

/// Seconds after which the wrapper stops a job given `async: limit`.
fn kill_after(limit: u64) -> u64 {
    5 + limit.div_ceil(5) * 5
}

/// The async folder as a shell word: `~` and `~/...` become `$HOME`, the rest is quoted.
fn dir_word(dir: &str) -> String {
    match dir.strip_prefix('~') {
        Some("") => "\"$HOME\"".into(),
        Some(rest) if rest.starts_with('/') => format!("\"$HOME\"{}", sh(rest)),
        _ => sh(dir),
    }
}

/// Start `script` (the module's whole sh text, `chdir` included) as `job`, with `stdin`; the
/// result says the job started, as Ansible's does.
pub async fn launch(
    ctx: &ModuleCtx<'_>,
    job: &AsyncJob,
    script: &str,
    cmd: &Value,
    stdin: Option<Vec<u8>>,
    strip_empty_ends: bool,
) -> Result<ModuleResult, ModuleError> {
    let jid = sh(&job.jid);
    let started = sh(&format!(
        "{{\"started\": true, \"finished\": false, \"ansible_job_id\": \"{}\"}}",
        job.jid
    ));
    let launcher = format!(
        "d={dir}; mkdir -p \"$d\" || exit 1; f=\"$d\"/{jid}\n\
         printf '%s' {started} > \"$f\" || exit 1\n\
         cat > \"$f.in\"\n\
         (\n\
           trap '' HUP\n\
           s=$(date +%s.%N)\n\
           sh -c {script} < \"$f.in\" > \"$f.out\" 2> \"$f.err\" &\n\
           p=$!\n\
           ( i=0; while [ $i -lt {kill} ]; do sleep 1; kill -0 $p 2>/dev/null || exit 0; i=$((i+1)); done\n\
             : > \"$f.timeout\"; kill -KILL $p ) &\n\
           wait $p; rc=$?\n\
           printf '%s %s %s\\n' \"$rc\" \"$s\" \"$(date +%s.%N)\" > \"$f.rc.tmp\" && mv \"$f.rc.tmp\" \"$f.rc\"\n\
         ) > /dev/null 2>&1 < /dev/null &\n\
         printf '%s' \"$f\"\n",
        dir = dir_word(&job.dir),
        script = sh(script),
        kill = kill_after(job.limit),
    );
    let out = ctx
        .run_with_stdin(launcher, Some(stdin.unwrap_or_default()))
        .await?;
    if !out.success() {
        return Ok(ModuleResult::failed(format!(
            "could not start the async job in `{}`: {}",
            job.dir,
            out.stderr_str().trim()
        )));
    }
    let file = out.stdout_str();
    let _ = job.launched.set(Launched {
        file: file.clone(),
        cmd: cmd.clone(),
        strip_empty_ends,
    });
    Ok(ModuleResult::changed()
        .with("ansible_job_id", job.jid.clone())
        .with("started", true)
        .with("finished", false)
        .with("results_file", file))
}

/// What the files of a job say.
pub enum JobState {
    /// No results file: no such job on the host (or it was cleaned up).
    Missing,
    Running,
    /// Stopped by the time limit.
    TimedOut,
    /// Ended: its output, and when it started and ended (nanoseconds since the epoch, by
    /// the host's clock; whole seconds where `date` has no `%N`).
    Ended {
        out: ExecOutput,
        start: i128,
        end: i128,
    },
}

/// The shell text that reports job `jid` in folder `dir` (for `read_state`).
pub fn state_script(dir: &str, jid: &str) -> String {
    format!(
        "f={dir}/{jid}\n\
         if [ -f \"$f.timeout\" ]; then echo timeout\n\
         elif [ -f \"$f.rc\" ]; then\n\
           printf 'ended %s %s %s\\n' \"$(cat \"$f.rc\")\" \"$(wc -c < \"$f.out\")\" \"$(wc -c < \"$f.err\")\"\n\
           cat \"$f.out\" \"$f.err\"\n\
         elif [ -f \"$f\" ]; then echo running\n\
         else echo missing; fi\n",
        dir = dir_word(dir),
        jid = sh(jid),
    )
}

/// Parse what `state_script` printed.
pub fn read_state(printed: &[u8]) -> Option<JobState> {
    let nl = printed.iter().position(|b| *b == b'\n')?;
    let head = std::str::from_utf8(&printed[..nl]).ok()?;
    let body = &printed[nl + 1..];
    let words: Vec<&str> = head.split_whitespace().collect();
    match words.as_slice() {
        ["missing"] => Some(JobState::Missing),
        ["running"] => Some(JobState::Running),
        ["timeout"] => Some(JobState::TimedOut),
        ["ended", rc, start, end, n_out, n_err] => {
            let (n_out, n_err): (usize, usize) = (n_out.parse().ok()?, n_err.parse().ok()?);
            if body.len() < n_out + n_err {
                return None;
            }
            Some(JobState::Ended {
                out: ExecOutput {
                    rc: rc.parse().ok()?,
                    stdout: body[..n_out].to_vec(),
                    stderr: body[n_out..n_out + n_err].to_vec(),
                },
                start: epoch_nanos(start)?,
                end: epoch_nanos(end)?,
            })
        }
        _ => None,
    }
}

/// `date +%s.%N` as nanoseconds (a `date` without `%N` prints it as it is: whole seconds).
fn epoch_nanos(text: &str) -> Option<i128> {
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    let secs: i128 = secs.parse().ok()?;
    let frac: String = frac.chars().take_while(char::is_ascii_digit).collect();
    let nanos: i128 = format!("{frac:0<9}").get(..9)?.parse().unwrap_or(0);
    Some(secs * 1_000_000_000 + nanos)
}

/// The shell text that removes job `jid`'s files (`async_status: mode=cleanup`); it prints the
/// results file's path.
pub fn cleanup_script(dir: &str, jid: &str) -> String {
    format!(
        "f={dir}/{jid}; rm -f \"$f\" \"$f.in\" \"$f.out\" \"$f.err\" \"$f.rc\" \"$f.timeout\"; printf '%s' \"$f\"\n",
        dir = dir_word(dir),
        jid = sh(jid),
    )
}

/// The shell text that makes sure the async folder exists for a job polled to its end and
/// prints the path its results file had: ansible-core's `async_wrapper` writes the file there
/// and the action removes it once the job is polled to its end, so the folder stays and the
/// file does not. kinit answers `async_status` for such a job from memory.
pub fn record_script(dir: &str, jid: &str) -> String {
    format!(
        "d={dir}; mkdir -p \"$d\" && printf '%s' \"$d\"/{jid}\n",
        dir = dir_word(dir),
        jid = sh(jid),
    )
}

/// The fields every `async_status` result has, as ansible-core 2.19 returns them.
pub fn status_fields(jid: &str, file: &str, started: bool, finished: bool) -> Value {
    json!({
        "ansible_job_id": jid,
        "results_file": file,
        "started": started,
        "finished": finished,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_limit_is_the_wrappers() {
        assert_eq!(kill_after(1), 10);
        assert_eq!(kill_after(5), 10);
        assert_eq!(kill_after(30), 35);
        assert_eq!(kill_after(31), 40);
    }

    #[test]
    fn states_parse() {
        assert!(matches!(read_state(b"running\n"), Some(JobState::Running)));
        assert!(matches!(read_state(b"missing\n"), Some(JobState::Missing)));
        match read_state(b"ended 3 100.5 102.%N 3 4\nhi\nerr\n") {
            Some(JobState::Ended { out, start, end }) => {
                assert_eq!((out.rc, start, end), (3, 100_500_000_000, 102_000_000_000));
                assert_eq!(
                    (out.stdout.as_slice(), out.stderr.as_slice()),
                    (&b"hi\n"[..], &b"err\n"[..])
                );
            }
            _ => panic!("an ended job"),
        }
        assert!(read_state(b"ended 3 100 102 30 4\nhi\n").is_none());
        assert!(read_state(b"what\n").is_none());
    }

    #[test]
    fn the_folder_expands_home_on_the_host() {
        assert_eq!(dir_word("~/.ansible_async"), "\"$HOME\"/.ansible_async");
        assert_eq!(dir_word("~"), "\"$HOME\"");
        assert_eq!(dir_word("/tmp/a b"), "'/tmp/a b'");
    }
}
