//! The access and modification times the `file` module sets (`access_time`,
//! `modification_time` and their `_format`s), decided as ansible-core's
//! `update_timestamp_for_file` (`modules/file.py`) decides them:
//!
//! - `preserve` leaves a time alone; both preserved is no change at all;
//! - `now` on both is always a change (`utime(path, None)`), as is `now` on one;
//! - a fixed time is read with Python's `strptime` directives and taken as the host's local
//!   time (`time.mktime`); it is a change only when it differs from the current time;
//! - the diff holds `atime`/`mtime` before and after, for the times that differ.
//!
//! Times are those of the path with links followed (`os.stat`/`os.utime`). The host reads
//! them and turns the fixed time into seconds (`stat`, `date -d`) within the module's single
//! probe; the change is one `touch`.

use chrono::{NaiveDate, NaiveDateTime};

use crate::transport::quote::sh;

use super::ModuleError;

/// One of the two times, as asked.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeSpec {
    Preserve,
    Now,
    /// A local date and time, written as `date -d` and `touch -d` read it.
    At(String),
}

impl TimeSpec {
    /// `value` in `format` (default `%Y%m%d%H%M.%S`); a missing value is `now` where the
    /// state defaults to it (`touch`), else `preserve`.
    pub fn parse(
        option: &str,
        value: Option<&str>,
        format: Option<&str>,
        default_now: bool,
    ) -> Result<TimeSpec, ModuleError> {
        let format = format.unwrap_or("%Y%m%d%H%M.%S");
        Ok(match value {
            None if default_now => TimeSpec::Now,
            None | Some("preserve") => TimeSpec::Preserve,
            Some("now") => TimeSpec::Now,
            Some(t) => {
                let at = NaiveDateTime::parse_from_str(t, format)
                    .or_else(|_| {
                        NaiveDate::parse_from_str(t, format).map(|d| d.and_time(Default::default()))
                    })
                    .map_err(|e| ModuleError::BadArgs {
                        module: "file",
                        detail: format!(
                            "{option} `{t}` does not match the format `{format}` ({e}); \
                             give a time in that format, `now` or `preserve`"
                        ),
                    })?;
                TimeSpec::At(at.format("%Y-%m-%d %H:%M:%S").to_string())
            }
        })
    }
}

/// The times asked for one path.
#[derive(Debug, Clone)]
pub struct Times {
    pub atime: TimeSpec,
    pub mtime: TimeSpec,
}

/// What the probe learnt: the path's current times (when it exists), the host's clock and
/// the fixed times as seconds since the epoch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Probed {
    current: Option<(f64, f64)>,
    now: f64,
    at_a: Option<f64>,
    at_m: Option<f64>,
}

/// What to do about the times: the diff entries and the command that sets them.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// `(key, before, after)` for each time that changes.
    pub diff: Vec<(&'static str, f64, f64)>,
    /// The `touch` that sets them, when anything changes.
    pub command: Option<String>,
}

impl Times {
    fn untouched(&self) -> bool {
        self.atime == TimeSpec::Preserve && self.mtime == TimeSpec::Preserve
    }

    /// Probe lines (for the module's one probe) that print what [`Times::plan`] needs.
    pub fn probe(&self, path: &str) -> String {
        if self.untouched() {
            return String::new();
        }
        let mut s = format!(
            "printf 'kinit-times:%s|%s\\n' \"$(stat -L -c '%.9X %.9Y' -- {} 2>/dev/null)\" \"$(date +%s.%N)\"\n",
            sh(path)
        );
        for (tag, spec) in [("a", &self.atime), ("m", &self.mtime)] {
            if let TimeSpec::At(t) = spec {
                s.push_str(&format!(
                    "printf 'kinit-at-{tag}:%s\\n' \"$(date -d {} +%s 2>/dev/null)\"\n",
                    sh(t)
                ));
            }
        }
        s
    }

    /// Read the probe's lines (from the output after the stat records).
    pub fn read(&self, rest: &str) -> Probed {
        let mut p = Probed::default();
        for line in rest.lines() {
            if let Some(v) = line.strip_prefix("kinit-times:") {
                let (cur, now) = v.split_once('|').unwrap_or((v, ""));
                let mut ts = cur.split(' ').filter_map(seconds);
                p.current = ts.next().zip(ts.next());
                p.now = seconds(now).unwrap_or(0.0);
            } else if let Some(v) = line.strip_prefix("kinit-at-a:") {
                p.at_a = seconds(v);
            } else if let Some(v) = line.strip_prefix("kinit-at-m:") {
                p.at_m = seconds(v);
            }
        }
        p
    }

    /// The change, if any, for `path` given what the probe saw. A path the task creates has
    /// no times yet: they are taken as the host's clock.
    pub fn plan(&self, path: &str, probed: &Probed) -> Result<Plan, ModuleError> {
        if self.untouched() {
            return Ok(Plan::default());
        }
        let (prev_a, prev_m) = probed.current.unwrap_or((probed.now, probed.now));
        let target = |spec: &TimeSpec, at: Option<f64>, prev: f64| -> Result<f64, ModuleError> {
            match spec {
                TimeSpec::Preserve => Ok(prev),
                TimeSpec::Now => Ok(probed.now),
                TimeSpec::At(t) => at.ok_or_else(|| ModuleError::Failed {
                    msg: format!("the host cannot read the time `{t}` (date -d)"),
                }),
            }
        };
        let a = target(&self.atime, probed.at_a, prev_a)?;
        let m = target(&self.mtime, probed.at_m, prev_m)?;
        let both_now = self.atime == TimeSpec::Now && self.mtime == TimeSpec::Now;
        if !both_now && a == prev_a && m == prev_m {
            return Ok(Plan::default());
        }
        let mut diff = Vec::new();
        if m != prev_m || both_now {
            diff.push(("mtime", prev_m, m));
        }
        if a != prev_a || both_now {
            diff.push(("atime", prev_a, a));
        }
        let command = if both_now {
            format!("touch -c -- {}", sh(path))
        } else {
            let mut cmds = Vec::new();
            for (flag, spec) in [("-a", &self.atime), ("-m", &self.mtime)] {
                match spec {
                    TimeSpec::Preserve => {}
                    TimeSpec::Now => cmds.push(format!("touch -c {flag} -- {}", sh(path))),
                    TimeSpec::At(t) => {
                        cmds.push(format!("touch -c {flag} -d {} -- {}", sh(t), sh(path)))
                    }
                }
            }
            cmds.join(" && ")
        };
        Ok(Plan {
            diff,
            command: Some(command),
        })
    }
}

/// `1644329640.000000000` as Python's `st_mtime` holds it: the seconds plus the nanoseconds
/// times 1e-9, in double precision.
fn seconds(text: &str) -> Option<f64> {
    let text = text.trim();
    let (s, frac) = text.split_once('.').unwrap_or((text, ""));
    let secs: i64 = s.parse().ok()?;
    let nanos: f64 = if frac.is_empty() {
        0.0
    } else {
        let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
        digits.parse::<u64>().ok()? as f64
    };
    Some(secs as f64 + nanos * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(a: TimeSpec, m: TimeSpec) -> Times {
        Times { atime: a, mtime: m }
    }

    #[test]
    fn fixed_times_are_read_with_python_directives() {
        let t = TimeSpec::parse("modification_time", Some("202202081414.00"), None, false);
        assert_eq!(t.unwrap(), TimeSpec::At("2022-02-08 14:14:00".into()));
        let d = TimeSpec::parse("access_time", Some("2022-02-08"), Some("%Y-%m-%d"), false);
        assert_eq!(d.unwrap(), TimeSpec::At("2022-02-08 00:00:00".into()));
        let e = TimeSpec::parse("access_time", Some("yesterday"), None, false).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("access_time `yesterday`"), "{msg}");
        assert!(msg.contains("%Y%m%d%H%M.%S"), "{msg}");
        assert_eq!(
            TimeSpec::parse("access_time", None, None, true).unwrap(),
            TimeSpec::Now
        );
        assert_eq!(
            TimeSpec::parse("access_time", None, None, false).unwrap(),
            TimeSpec::Preserve
        );
    }

    #[test]
    fn a_fixed_time_equal_to_the_current_one_is_no_change() {
        let t = times(
            TimeSpec::Preserve,
            TimeSpec::At("2022-02-08 14:14:00".into()),
        );
        let probed = t.read("kinit-times:1.5 1644329640.000000000|9.25\nkinit-at-m:1644329640\n");
        assert_eq!(t.plan("/p", &probed).unwrap(), Plan::default());
        let moved = t.read("kinit-times:1.5 1577836800.500000000|9.25\nkinit-at-m:1644329640\n");
        let plan = t.plan("/p", &moved).unwrap();
        assert_eq!(plan.diff, vec![("mtime", 1577836800.5, 1644329640.0)]);
        assert_eq!(
            plan.command.as_deref(),
            Some("touch -c -m -d '2022-02-08 14:14:00' -- /p")
        );
    }

    #[test]
    fn now_on_both_is_always_a_change_and_preserve_on_both_never_probes() {
        let t = times(TimeSpec::Now, TimeSpec::Now);
        let plan = t.plan("/p", &t.read("kinit-times:5 5|5\n")).unwrap();
        assert_eq!(plan.command.as_deref(), Some("touch -c -- /p"));
        assert_eq!(plan.diff.len(), 2);
        let none = times(TimeSpec::Preserve, TimeSpec::Preserve);
        assert_eq!(none.probe("/p"), "");
        assert_eq!(
            none.plan("/p", &Probed::default()).unwrap(),
            Plan::default()
        );
    }

    #[test]
    fn seconds_are_summed_as_python_stats_them() {
        assert_eq!(seconds("1577836800.500000000"), Some(1577836800.5));
        assert_eq!(seconds("12"), Some(12.0));
        assert_eq!(seconds("x"), None);
        // A time the host cannot read stops the task rather than being taken as zero.
        let t = times(
            TimeSpec::At("2022-02-08 14:14:00".into()),
            TimeSpec::Preserve,
        );
        assert!(
            t.plan("/p", &t.read("kinit-times:1 1|1\nkinit-at-a:\n"))
                .is_err()
        );
    }
}
