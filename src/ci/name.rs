//! Run names in KubeInit's form:
//! `<distro>-<driver>-<c>-<w>-<h>-<launch>-<jobtype>-<pipeline id>-<timestamp>-<result>`,
//! e.g. `k8s-libvirt-1-1-1-h-periodic-pid-2026.11.21.03.00.00-0`. The result field is `0`
//! (passed) or `1` (failed); `u` while the run is going.

use std::time::{SystemTime, UNIX_EPOCH};

use super::jobs::Job;

/// `periodic` for scheduled jobs, `pr` for label-triggered pull request jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobType {
    Periodic,
    Pr,
}

impl JobType {
    pub fn word(self) -> &'static str {
        match self {
            JobType::Periodic => "periodic",
            JobType::Pr => "pr",
        }
    }
}

/// A run's name without the result field.
pub fn run_prefix(job: &Job, job_type: JobType, pipeline_id: &str, timestamp: &str) -> String {
    let pid: String = pipeline_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!(
        "{}-{}-{}-{timestamp}",
        job.label,
        job_type.word(),
        if pid.is_empty() { "pid".into() } else { pid }
    )
}

pub fn with_result(prefix: &str, passed: Option<bool>) -> String {
    let r = match passed {
        Some(true) => "0",
        Some(false) => "1",
        None => "u",
    };
    format!("{prefix}-{r}")
}

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `%Y.%m.%d.%H.%M.%S` in UTC (KubeInit's PR job timestamps).
pub fn timestamp(epoch: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(epoch);
    format!("{y:04}.{mo:02}.{d:02}.{h:02}.{mi:02}.{s:02}")
}

/// `YYYY-MM-DD HH:MM:SS UTC`, for pages.
pub fn human(epoch: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(epoch);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// Days-from-civil inverse (Howard Hinnant's algorithm), so no date crate is needed.
fn civil(epoch: u64) -> (i64, u32, u32, u64, u64, u64) {
    let days = (epoch / 86_400) as i64;
    let rem = epoch % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp(0), "1970.01.01.00.00.00");
        assert_eq!(timestamp(1_700_000_000), "2023.11.14.22.13.20");
        assert_eq!(human(951_782_400), "2000-02-29 00:00:00 UTC");
    }
}
