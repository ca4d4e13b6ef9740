//! Values read from text: a CSV cell or a JSON string is a number, a boolean or an ISO 8601
//! date by the same rules whether inference is guessing a field's type or the plan is coercing
//! a value to it.

use serde_json::Number;

/// A finite number written in a CSV cell or a JSON string; integers stay integers.
pub fn parse_number(s: &str) -> Option<Number> {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Some(Number::from(i));
    }
    let looks_numeric = s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    if !looks_numeric {
        return None; // "inf", "NaN" and friends are not data
    }
    s.parse::<f64>().ok().and_then(Number::from_f64)
}

pub fn parse_bool(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// `YYYY-MM-DD`, optionally followed by a time (`T` or a space, then digits, `:`, `.`, a zone).
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 10 || b.len() > 40 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)) {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    (b[10] == b'T' || b[10] == b' ')
        && b.len() >= 16
        && digits(11..13)
        && b[13] == b':'
        && b[14..]
            .iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b'+' | b'-' | b'Z'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert!(is_iso_date("2013-01-01"));
        assert!(is_iso_date("2013-01-01T10:00:00Z"));
        assert!(is_iso_date("2021-03-31T01:12:12+08:00"));
        assert!(!is_iso_date("2013/01/01"));
        assert!(!is_iso_date("2013-01-01 is a day"));
    }
}
