//! Date values as instants (contract §12.1: date ranges compare instants; §12.2: date buckets in
//! UTC). Stores keep a date as the text the file gave (`2013-01-01T10:00:00Z`,
//! `2021-03-31T01:12:12+08:00`, `2013-01-01`); this module reads that text into a point in time,
//! the same way on every path, so a range or a bucket means the same on both stores and in
//! memory. A date without a time is midnight; a time without a zone is UTC.

use serde::Serialize;
use time::{Date, Month, OffsetDateTime};

/// A point in time: seconds since 1970-01-01T00:00:00Z and nanoseconds; ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Instant {
    pub seconds: i64,
    pub nanos: u32,
}

/// The bucket sizes of `group_by=<date field>[<bucket>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DateBucket {
    Year,
    Month,
    Day,
    Hour,
}

impl DateBucket {
    /// Every bucket name, for messages and documents.
    pub const NAMES: [&'static str; 4] = ["year", "month", "day", "hour"];

    /// The bucket called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "year" => Some(DateBucket::Year),
            "month" => Some(DateBucket::Month),
            "day" => Some(DateBucket::Day),
            "hour" => Some(DateBucket::Hour),
            _ => None,
        }
    }

    /// The bucket's name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The key of the bucket holding `instant`, in UTC: `2013`, `2013-01`, `2013-01-31`,
    /// `2013-01-31T05`. These keys sort in time order as text.
    pub fn key(self, instant: Instant) -> Option<String> {
        let t = OffsetDateTime::from_unix_timestamp(instant.seconds).ok()?;
        let (y, m, d, h) = (t.year(), t.month() as u8, t.day(), t.hour());
        Some(match self {
            DateBucket::Year => format!("{y:04}"),
            DateBucket::Month => format!("{y:04}-{m:02}"),
            DateBucket::Day => format!("{y:04}-{m:02}-{d:02}"),
            DateBucket::Hour => format!("{y:04}-{m:02}-{d:02}T{h:02}"),
        })
    }
}

/// Reads an ISO 8601 date or date-time (`YYYY-MM-DD`, then optionally `T` or a space,
/// `HH:MM[:SS[.fraction]]` and a zone `Z`, `±HH`, `±HHMM` or `±HH:MM`). `None` when the text is
/// not one: such a value is in no range and no bucket.
pub fn parse(text: &str) -> Option<Instant> {
    let b = text.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let date = Date::from_calendar_date(
        num(0..4)? as i32,
        Month::try_from(num(5..7)? as u8).ok()?,
        num(8..10)? as u8,
    )
    .ok()?;
    let days = i64::from(date.to_julian_day()) - i64::from(UNIX_EPOCH_JULIAN_DAY);
    let mut seconds = days * 86_400;
    let mut nanos = 0u32;
    let mut i = 10;
    if i < b.len() {
        if !matches!(b[i], b'T' | b't' | b' ') || b.len() < i + 6 || b[i + 3] != b':' {
            return None;
        }
        let (hour, minute) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
        if hour > 23 || minute > 59 {
            return None;
        }
        seconds += i64::from(hour * 3600 + minute * 60);
        i += 6;
        if b.get(i) == Some(&b':') {
            let second = num(i + 1..i + 3)?;
            if second > 60 {
                return None;
            }
            seconds += i64::from(second.min(59));
            i += 3;
            if b.get(i) == Some(&b'.') {
                let start = i + 1;
                let mut end = start;
                while end < b.len() && b[end].is_ascii_digit() {
                    end += 1;
                }
                if end == start {
                    return None;
                }
                let digits = &text.trim()[start..end.min(start + 9)];
                nanos = digits.parse::<u32>().ok()? * 10u32.pow(9 - digits.len() as u32);
                i = end;
            }
        }
        match b.get(i) {
            None => {}
            Some(b'Z' | b'z') if i + 1 == b.len() => {}
            Some(&sign @ (b'+' | b'-')) => {
                let rest = &b[i + 1..];
                let (h, m) = match rest.len() {
                    2 => (num(i + 1..i + 3)?, 0),
                    4 => (num(i + 1..i + 3)?, num(i + 3..i + 5)?),
                    5 if rest[2] == b':' => (num(i + 1..i + 3)?, num(i + 4..i + 6)?),
                    _ => return None,
                };
                if h > 23 || m > 59 {
                    return None;
                }
                let offset = i64::from(h * 3600 + m * 60);
                seconds -= if sign == b'+' { offset } else { -offset };
            }
            _ => return None,
        }
    }
    Some(Instant { seconds, nanos })
}

/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        parse(text).unwrap().seconds
    }

    #[test]
    fn instants_honour_zones() {
        assert_eq!(at("1970-01-01"), 0);
        assert_eq!(at("2013-01-01T10:00:00Z"), 1_357_034_400);
        assert_eq!(at("2013-01-01 10:00"), 1_357_034_400);
        assert_eq!(at("2013-01-01T18:00:00+08:00"), 1_357_034_400);
        assert_eq!(at("2013-01-01T18:00:00+0800"), 1_357_034_400);
        assert_eq!(at("2013-01-01T05:00:00-05"), 1_357_034_400);
        assert_eq!(parse("2013-01-01T10:00:00.25Z").unwrap().nanos, 250_000_000);
        assert!(parse("2013-01-01T10:00:00.25Z") > parse("2013-01-01T10:00:00Z"));
        for bad in [
            "2013-02-30",
            "2013/01/01",
            "2013-01-01T25:00",
            "2013-01-01T10:00:00+8",
            "2013-01-01Tnoon",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn buckets_are_utc() {
        let t = parse("2013-01-01T02:30:00+08:00").unwrap();
        assert_eq!(DateBucket::Year.key(t).unwrap(), "2012");
        assert_eq!(DateBucket::Month.key(t).unwrap(), "2012-12");
        assert_eq!(DateBucket::Day.key(t).unwrap(), "2012-12-31");
        assert_eq!(DateBucket::Hour.key(t).unwrap(), "2012-12-31T18");
        assert_eq!(DateBucket::parse("month"), Some(DateBucket::Month));
        assert_eq!(DateBucket::Hour.as_str(), "hour");
    }
}
