//! `now(utc=false, fmt=None)`, Ansible's template global: the current time as Python's
//! `str(datetime)` (`2026-11-25 23:59:01.123456`), or formatted with `fmt` (Python's
//! `strftime` directives). The local offset comes from the `time` crate when it can tell it
//! safely, else the time is UTC (as it is on most CI machines anyway).

use minijinja::Error;
use minijinja::value::Kwargs;
use time::OffsetDateTime;

/// The local time, or UTC where the offset cannot be told safely.
pub fn local_now() -> OffsetDateTime {
    OffsetDateTime::now_local().unwrap_or_else(|_| OffsetDateTime::now_utc())
}

/// Python's `str(datetime)`: `2026-11-25 23:59:01.123456`.
pub fn datetime_str(t: &OffsetDateTime) -> String {
    strftime(t, "%Y-%m-%d %H:%M:%S.%f")
}

/// The `strftime(second=None, utc=false)` filter, as ansible-core's: the format applied to
/// the time `second` seconds after the epoch (a number or numeric text; now when none),
/// local time unless `utc`.
pub fn strftime_filter(
    fmt: String,
    second: Option<minijinja::Value>,
    utc: Option<bool>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let utc = match utc {
        Some(u) => u,
        None => kwargs.get::<Option<bool>>("utc")?.unwrap_or(false),
    };
    let second = match kwargs.get::<Option<minijinja::Value>>("second")? {
        Some(s) => Some(s),
        None => second,
    };
    kwargs.assert_all_used()?;
    let invalid = |v: &minijinja::Value| {
        Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("Invalid value for epoch value ({v})"),
        )
    };
    let t = match second.filter(|s| !s.is_none()) {
        None => OffsetDateTime::now_utc(),
        Some(v) => {
            let secs = match v.as_str() {
                Some(text) => text.trim().parse::<f64>().map_err(|_| invalid(&v))?,
                None => f64::try_from(v.clone()).map_err(|_| invalid(&v))?,
            };
            let nanos = (secs * 1e9).round() as i128;
            OffsetDateTime::from_unix_timestamp_nanos(nanos).map_err(|_| invalid(&v))?
        }
    };
    let t = if utc {
        t
    } else {
        time::UtcOffset::local_offset_at(t)
            .map(|o| t.to_offset(o))
            .unwrap_or(t)
    };
    Ok(strftime(&t, &fmt))
}

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Python's `strftime` for the directives playbooks use; an unknown directive stays as
/// written, as glibc leaves it.
pub fn strftime(t: &OffsetDateTime, fmt: &str) -> String {
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('%');
            break;
        };
        let day = DAYS[t.weekday().number_days_from_monday() as usize];
        let month = MONTHS[u8::from(t.month()) as usize - 1];
        let s = match d {
            'Y' => format!("{:04}", t.year()),
            'y' => format!("{:02}", t.year().rem_euclid(100)),
            'm' => format!("{:02}", u8::from(t.month())),
            'd' => format!("{:02}", t.day()),
            'e' => format!("{:2}", t.day()),
            'H' => format!("{:02}", t.hour()),
            'I' => format!("{:02}", (t.hour() + 11) % 12 + 1),
            'M' => format!("{:02}", t.minute()),
            'S' => format!("{:02}", t.second()),
            'f' => format!("{:06}", t.microsecond()),
            'p' => (if t.hour() < 12 { "AM" } else { "PM" }).to_string(),
            'j' => format!("{:03}", t.ordinal()),
            's' => t.unix_timestamp().to_string(),
            'a' => day[..3].to_string(),
            'A' => day.to_string(),
            'b' | 'h' => month[..3].to_string(),
            'B' => month.to_string(),
            'w' => t.weekday().number_days_from_sunday().to_string(),
            'u' => t.weekday().number_from_monday().to_string(),
            // Ansible's `now()` is a naive datetime (`datetime.now()`/`utcnow()`), which
            // has no zone: Python prints nothing for these (checked with ansible-core 2.19).
            'z' | 'Z' => String::new(),
            'F' => format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day()),
            'T' => format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
            '%' => "%".to_string(),
            other => format!("%{other}"),
        };
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn strftime_speaks_pythons_directives() {
        let t = datetime!(2026-11-05 07:08:09.012345 UTC);
        assert_eq!(
            strftime(&t, "%Y-%m-%d %H:%M:%S.%f"),
            "2026-11-05 07:08:09.012345"
        );
        assert_eq!(strftime(&t, "%a %b %e %I%p %j %%"), "Thu Nov  5 07AM 309 %");
        assert_eq!(strftime(&t, "%s"), "1793862489");
        assert_eq!(strftime(&t, "[%z%Z] %q"), "[] %q");
    }
}
