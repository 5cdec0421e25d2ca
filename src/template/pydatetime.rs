//! Python's `datetime` and `timedelta` as template values, for what playbooks do with them:
//! `to_datetime` (`datetime.strptime`, default format `%Y-%m-%d %H:%M:%S`) and `now()` give a
//! datetime, whose `year` ... `microsecond`, `strftime()`, `isoformat()`, `timestamp()`,
//! `weekday()` and `isoweekday()` work; one datetime minus another is a timedelta with `days`,
//! `seconds`, `microseconds` and `total_seconds()`; a timedelta added to or taken from a
//! datetime moves it; datetimes and timedeltas order among themselves. Each prints as Python's
//! `str()` (`2016-08-14 20:00:12`, `10 days, 2:00:12`), which is also what a variable keeps.
//!
//! The arithmetic goes through `pyops`, which routes `+` and `-` here only in templates that
//! name `to_datetime` or `now(`: other templates keep minijinja's own operators, at no cost.

use std::fmt;
use std::sync::Arc;

use minijinja::value::{Kwargs, Object, ObjectRepr};
use minijinja::{Error, ErrorKind, State, Value};
use time::{Duration, PrimitiveDateTime};

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// A naive `datetime.datetime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PyDateTime(pub PrimitiveDateTime);

/// A `datetime.timedelta`, kept to the microsecond as Python keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PyTimeDelta(pub Duration);

impl PyDateTime {
    pub fn value(t: PrimitiveDateTime) -> Value {
        Value::from_object(PyDateTime(t))
    }
}

impl PyTimeDelta {
    /// Python's normalised parts: days (may be negative), seconds 0..86400, microseconds.
    fn parts(&self) -> (i64, i64, i64) {
        let micros = self.0.whole_microseconds() as i64;
        let days = micros.div_euclid(86_400_000_000);
        let rest = micros.rem_euclid(86_400_000_000);
        (days, rest / 1_000_000, rest % 1_000_000)
    }
}

impl fmt::Display for PyDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )?;
        match t.microsecond() {
            0 => Ok(()),
            us => write!(f, ".{us:06}"),
        }
    }
}

impl fmt::Display for PyTimeDelta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, secs, micros) = self.parts();
        if days != 0 {
            let plural = if days.abs() == 1 { "" } else { "s" };
            write!(f, "{days} day{plural}, ")?;
        }
        write!(f, "{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)?;
        match micros {
            0 => Ok(()),
            us => write!(f, ".{us:06}"),
        }
    }
}

fn no_args(method: &str, args: &[Value]) -> Result<(), Error> {
    match args {
        [] => Ok(()),
        _ => Err(invalid(format!(
            "{method}() takes no arguments ({} given)",
            args.len()
        ))),
    }
}

impl Object for PyDateTime {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let t = self.0;
        Some(Value::from(match key.as_str()? {
            "year" => i64::from(t.year()),
            "month" => i64::from(u8::from(t.month())),
            "day" => i64::from(t.day()),
            "hour" => i64::from(t.hour()),
            "minute" => i64::from(t.minute()),
            "second" => i64::from(t.second()),
            "microsecond" => i64::from(t.microsecond()),
            _ => return None,
        }))
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        let t = self.0;
        match method {
            "strftime" => match args {
                [fmt] => Ok(Value::from(super::now::strftime(
                    &t.assume_utc(),
                    &super::pyrepr::to_str(fmt)?,
                ))),
                _ => Err(invalid(format!(
                    "strftime() takes exactly one argument ({} given)",
                    args.len()
                ))),
            },
            "isoformat" => {
                no_args(method, args)?;
                Ok(Value::from(self.to_string().replacen(' ', "T", 1)))
            }
            "timestamp" => {
                no_args(method, args)?;
                // A naive datetime is local time to Python.
                let offset = super::now::local_now().offset();
                let at = t.assume_offset(offset);
                Ok(Value::from(
                    at.unix_timestamp() as f64 + f64::from(t.microsecond()) / 1e6,
                ))
            }
            "weekday" => {
                no_args(method, args)?;
                Ok(Value::from(t.weekday().number_days_from_monday()))
            }
            "isoweekday" => {
                no_args(method, args)?;
                Ok(Value::from(t.weekday().number_from_monday()))
            }
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_ref(), f)
    }
}

impl Object for PyTimeDelta {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let (days, secs, micros) = self.parts();
        Some(Value::from(match key.as_str()? {
            "days" => days,
            "seconds" => secs,
            "microseconds" => micros,
            _ => return None,
        }))
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "total_seconds" => {
                no_args(method, args)?;
                Ok(Value::from(self.0.whole_microseconds() as f64 / 1e6))
            }
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_ref(), f)
    }
}

/// `to_datetime(format='%Y-%m-%d %H:%M:%S')`: Python's `datetime.strptime`; the fields the
/// format leaves out are 1900-01-01 00:00:00, as there.
pub fn to_datetime(value: Value, format: Option<String>, kwargs: Kwargs) -> Result<Value, Error> {
    let format = kwargs.get::<Option<String>>("format")?.or(format);
    kwargs.assert_all_used()?;
    let text = super::pyrepr::to_str(&value)?;
    let format = format.unwrap_or_else(|| "%Y-%m-%d %H:%M:%S".into());
    let t = strptime(&text, &format).ok_or_else(|| {
        invalid(format!(
            "time data {} does not match format {}",
            super::pyrepr::quote_str(&text),
            super::pyrepr::quote_str(&format)
        ))
    })?;
    Ok(PyDateTime::value(t))
}

/// `datetime.strptime`, through chrono's parser (Python's `.%f`, one to six digits of a
/// second, is chrono's `%.f`).
fn strptime(text: &str, format: &str) -> Option<PrimitiveDateTime> {
    use chrono::format::{Parsed, StrftimeItems, parse};
    let format = format.replace(".%f", "%.f");
    let mut p = Parsed::new();
    parse(&mut p, text, StrftimeItems::new(&format)).ok()?;
    if p.year().is_none() && p.year_div_100().is_none() && p.year_mod_100().is_none() {
        p.set_year(1900).ok()?;
    }
    if p.month().is_none() && p.ordinal().is_none() && p.isoweek().is_none() {
        p.set_month(1).ok()?;
    }
    if p.day().is_none() && p.ordinal().is_none() && p.weekday().is_none() {
        p.set_day(1).ok()?;
    }
    if p.hour_div_12().is_none() && p.hour_mod_12().is_none() {
        p.set_hour(0).ok()?;
    }
    if p.minute().is_none() {
        p.set_minute(0).ok()?;
    }
    if p.second().is_none() {
        p.set_second(0).ok()?;
    }
    let n = p.to_naive_datetime_with_offset(0).ok()?;
    use chrono::{Datelike, Timelike};
    let date = time::Date::from_calendar_date(
        n.year(),
        time::Month::try_from(n.month() as u8).ok()?,
        n.day() as u8,
    )
    .ok()?;
    let clock = time::Time::from_hms_micro(
        n.hour() as u8,
        n.minute() as u8,
        n.second() as u8,
        n.nanosecond() / 1000,
    )
    .ok()?;
    Some(PrimitiveDateTime::new(date, clock))
}

/// `now(utc=False, fmt=None)`: the current time as a datetime, or formatted with `fmt`.
pub fn now(kwargs: Kwargs) -> Result<Value, Error> {
    let utc = kwargs.get::<Option<bool>>("utc")?.unwrap_or(false);
    let fmt = kwargs.get::<Option<String>>("fmt")?;
    kwargs.assert_all_used()?;
    let t = if utc {
        time::OffsetDateTime::now_utc()
    } else {
        super::now::local_now()
    };
    Ok(match fmt {
        Some(f) => Value::from(super::now::strftime(&t, &f)),
        None => PyDateTime::value(PrimitiveDateTime::new(t.date(), t.time())),
    })
}

/// Whether template text may make datetimes, so that its `+` and `-` go through `add`/`sub`.
pub(super) fn may_use(source: &str) -> bool {
    source.contains("to_datetime") || source.contains("now(")
}

/// `a - b` where a datetime or timedelta takes part; `None` leaves it to minijinja.
pub(super) fn sub(a: &Value, b: &Value) -> Option<Result<Value, Error>> {
    let (da, db) = (
        a.downcast_object_ref::<PyDateTime>(),
        b.downcast_object_ref::<PyDateTime>(),
    );
    let (ta, tb) = (
        a.downcast_object_ref::<PyTimeDelta>(),
        b.downcast_object_ref::<PyTimeDelta>(),
    );
    Some(match (da, db, ta, tb) {
        (Some(x), Some(y), _, _) => Ok(Value::from_object(PyTimeDelta(x.0 - y.0))),
        (Some(x), None, _, Some(d)) => Ok(PyDateTime::value(x.0 - d.0)),
        (None, None, Some(x), Some(y)) => Ok(Value::from_object(PyTimeDelta(x.0 - y.0))),
        (None, None, None, None) => return None,
        _ => Err(unsupported("-", a, b)),
    })
}

/// `a + b` where a datetime or timedelta takes part; `None` leaves it to minijinja.
pub(super) fn add(a: &Value, b: &Value) -> Option<Result<Value, Error>> {
    let (da, db) = (
        a.downcast_object_ref::<PyDateTime>(),
        b.downcast_object_ref::<PyDateTime>(),
    );
    let (ta, tb) = (
        a.downcast_object_ref::<PyTimeDelta>(),
        b.downcast_object_ref::<PyTimeDelta>(),
    );
    Some(match (da, db, ta, tb) {
        (Some(x), None, None, Some(d)) | (None, Some(x), Some(d), None) => {
            Ok(PyDateTime::value(x.0 + d.0))
        }
        (None, None, Some(x), Some(y)) => Ok(Value::from_object(PyTimeDelta(x.0 + y.0))),
        (None, None, None, None) => return None,
        _ => Err(unsupported("+", a, b)),
    })
}

/// The order of two datetimes or two timedeltas; `None` when they are not such a pair.
pub(super) fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    if let (Some(x), Some(y)) = (
        a.downcast_object_ref::<PyDateTime>(),
        b.downcast_object_ref::<PyDateTime>(),
    ) {
        return Some(x.cmp(y));
    }
    if let (Some(x), Some(y)) = (
        a.downcast_object_ref::<PyTimeDelta>(),
        b.downcast_object_ref::<PyTimeDelta>(),
    ) {
        return Some(x.cmp(y));
    }
    None
}

/// Python's name for a value's type, knowing these two.
pub(super) fn type_name(v: &Value) -> Option<&'static str> {
    if v.downcast_object_ref::<PyDateTime>().is_some() {
        Some("datetime.datetime")
    } else if v.downcast_object_ref::<PyTimeDelta>().is_some() {
        Some("datetime.timedelta")
    } else {
        None
    }
}

fn unsupported(op: &str, a: &Value, b: &Value) -> Error {
    let name = |v: &Value| type_name(v).unwrap_or_else(|| super::pyrepr::py_type(v));
    invalid(format!(
        "Error rendering template: unsupported operand type(s) for {op}: '{}' and '{}'",
        name(a),
        name(b)
    ))
}
