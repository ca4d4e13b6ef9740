//! Property test: the REST read API against an in-memory model.
//!
//! A seeded generator writes ~400 NDJSON records (keywords that differ only by case, missing,
//! null and empty values, integers and fractions written as `5` and `5.0`, a boolean, dates
//! with and without a time and in several zones (`+08:00`, `-05:00`, `+0530`, so that instant
//! order differs from text order) and a few texts that look like dates but are not, two text
//! fields with mixed-case and Chinese words, a nested keyword `geo.hash`), imports them, and
//! then sends ~400 random records queries and ~200 random agg queries. Each answer is compared
//! with what contract §5 / §6 / §12.1 / §12.2 say it must be, computed here straight from the
//! generated records: totals, the sequence of `_id`s, projected keys, groups, their keys and
//! statistics.
//!
//! The queries use every filter operator of §12.1 on every type that takes it (ranges with
//! merged bounds on numbers, dates and keywords, `ne`, `in`, `exists` true/false, `prefix`)
//! and every option of §12.2 (several `group_by` items, date buckets, number bins, chosen
//! percentiles, `missing`, `ungrouped_records`, `keys`, every group sort and `limit`); a tally
//! of what was exercised is asserted at the end so that no feature silently drops out.
//!
//! The seed is fixed so that a failure is reproducible; `ODQS_PROPERTY_SEED=<n>` picks another
//! one. Every failure message starts with the seed and the request.
//!
//! What the model assumes where the contract leaves room (the import's and the query layer's
//! documented choices): an empty string is no value (like a missing key or `null`), so such
//! records sort last, match no exact filter and fall in no group; dates sort as their text but
//! ranges and buckets read them as instants (no time = midnight, no zone = UTC), and a date text
//! that is not a date is in no range and no bucket; repeated `prefix` is OR, repeated `ne` is
//! none-of, `in` adds to the values of `name=`; group keys compare typed (bins as numbers),
//! ties in any group order break by key ascending, and groups without the sorted statistic come
//! last in both directions.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use crate::helpers::{TestStore, api_token, get_with, import_file, write_file};
use query::memory::IndexPolicy;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};

const RECORDS: usize = 400;
const RECORD_QUERIES: usize = 400;
const AGG_QUERIES: usize = 200;
const SLUG: &str = "prop";
const DEFAULT_SEED: u64 = 0x0d95_5eed_2024;

// ---------------------------------------------------------------------------------------------
// The dataset

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Type {
    Keyword,
    Number,
    Boolean,
    Date,
    Text,
}

/// The schema, in file order. `_id` comes from `id`.
const FIELDS: &[(&str, Type)] = &[
    ("id", Type::Keyword),
    ("kind", Type::Keyword),
    ("color", Type::Keyword),
    ("geo.hash", Type::Keyword),
    ("n1", Type::Number),
    ("n2", Type::Number),
    ("flag", Type::Boolean),
    ("day", Type::Date),
    ("note", Type::Text),
    ("title", Type::Text),
];

fn field_type(name: &str) -> Type {
    if name == "_id" {
        return Type::Keyword;
    }
    FIELDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .unwrap_or_else(|| panic!("no field {name}"))
}

/// Fields usable as `<name>=value` and in `sort`.
const EXACT: &[&str] = &[
    "_id", "id", "kind", "color", "geo.hash", "n1", "n2", "flag", "day",
];
/// Names `fields=` may list.
const PROJECTABLE: &[&str] = &[
    "_id", "id", "kind", "color", "geo", "geo.hash", "n1", "n2", "flag", "day", "note", "title",
];
const TEXT_FIELDS: &[&str] = &["note", "title"];

const KINDS: &[&str] = &[
    "alpha", "Alpha", "ALPHA", "beta", "Beta", "gamma", "Ωmega", "édith", "zeta", "Zeta", "b",
];
const COLORS: &[&str] = &["red", "Red", "red ", "blue", "green", "紅", "藍", "Ärger"];
const HASHES: &[&str] = &["wsq", "wsQ", "WSQ", "wsq9", "wsm", "u4pr", "台北"];
const VOCABULARY: &[&str] = &[
    "apple",
    "Banana",
    "cherry",
    "dog",
    "Éclair",
    "night",
    "market",
    "Night",
    "ham",
    "hamster",
    "hot",
    "spring",
    "台北",
    "高雄",
    "夜市",
    "溫泉",
    "老街",
    "台北101",
    // Characters with a meaning in LIKE patterns and FTS5 queries.
    "100%",
    "snake_case",
    "say\"hi\"",
    "back\\slash",
];
const FRACTIONS: &[f64] = &[
    0.1, 0.2, 0.3, -1.5, 2.75, 1000.0, 12345.678, -0.001, 0.5, -7.25, 3.0,
];

/// A typed value of an exact/sort field.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Str(String),
    Num(f64),
}

fn cmp_val(a: &Val, b: &Val) -> Ordering {
    match (a, b) {
        // Keywords, booleans and dates: Unicode code point order, which is UTF-8 byte order.
        (Val::Str(a), Val::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Val::Num(a), Val::Num(b)) => a.partial_cmp(b).expect("no NaN in the data"),
        _ => panic!("mixed value types"),
    }
}

/// One generated record and what the model knows of it.
#[derive(Clone, Debug)]
struct Rec {
    /// 1-based position in the file.
    pos: usize,
    id: String,
    /// The object as written to the file (without `_id`).
    doc: Map<String, Value>,
    kind: Option<String>,
    color: Option<String>,
    hash: Option<String>,
    n1: Option<f64>,
    n2: Option<f64>,
    flag: Option<bool>,
    day: Option<String>,
    /// The instant `day` names, in milliseconds since 1970 (`None`: no value, or not a date).
    day_at: Option<i64>,
    note: Option<String>,
    title: Option<String>,
}

impl Rec {
    /// The value of an exact/sort field; `None` when the record has none.
    fn value(&self, name: &str) -> Option<Val> {
        let s = |v: &Option<String>| v.clone().map(Val::Str);
        match name {
            "_id" | "id" => Some(Val::Str(self.id.clone())),
            "kind" => s(&self.kind),
            "color" => s(&self.color),
            "geo.hash" => s(&self.hash),
            "n1" => self.n1.map(Val::Num),
            "n2" => self.n2.map(Val::Num),
            "flag" => self.flag.map(|b| Val::Str(b.to_string())),
            "day" => s(&self.day),
            other => panic!("not an exact field: {other}"),
        }
    }

    fn text(&self, name: &str) -> Option<&str> {
        match name {
            "note" => self.note.as_deref(),
            "title" => self.title.as_deref(),
            other => panic!("not a text field: {other}"),
        }
    }

    fn number(&self, name: &str) -> Option<f64> {
        match name {
            "n1" => self.n1,
            "n2" => self.n2,
            other => panic!("not a number field: {other}"),
        }
    }
}

/// An optional string: absent, `null`, `""` or one of `choices`.
fn maybe_str(
    rng: &mut StdRng,
    doc: &mut Map<String, Value>,
    key: &str,
    choices: &[&str],
    p_absent: f64,
) -> Option<String> {
    let roll: f64 = rng.random();
    if roll < p_absent {
        None
    } else if roll < p_absent + 0.04 {
        doc.insert(key.into(), Value::Null);
        None
    } else if roll < p_absent + 0.08 {
        doc.insert(key.into(), json!(""));
        None
    } else {
        let v = choices[rng.random_range(0..choices.len())].to_string();
        doc.insert(key.into(), json!(v));
        Some(v)
    }
}

fn random_case(rng: &mut StdRng, word: &str) -> String {
    match rng.random_range(0..4) {
        0 => word.to_uppercase(),
        1 => word.to_lowercase(),
        2 => {
            let mut chars = word.chars();
            match chars.next() {
                Some(c) => c.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        }
        _ => word.to_string(),
    }
}

fn words(rng: &mut StdRng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max);
    let mut out = Vec::new();
    for _ in 0..n {
        let w = VOCABULARY[rng.random_range(0..VOCABULARY.len())];
        out.push(random_case(rng, w));
    }
    // Chinese is often written without spaces.
    let sep = if rng.random_bool(0.2) { "" } else { " " };
    out.join(sep)
}

/// A number written in one of several ways: `5`, `5.0`, `"5"` (coerced at import).
fn write_number(rng: &mut StdRng, n: f64) -> Value {
    let integral = n.fract() == 0.0 && n.abs() < 1e15;
    match rng.random_range(0..10) {
        0..=3 if integral => json!(n as i64),
        4 if integral => json!(n as i64).to_string().into(), // "5", a numeric string
        5 => Value::String(format!("{n}")),
        _ => json!(n), // an f64: 5.0 is written "5.0"
    }
}

fn generate(rng: &mut StdRng) -> Vec<Rec> {
    let mut numbers: Vec<usize> = (0..RECORDS).collect();
    numbers.shuffle(rng);
    let mut recs = Vec::with_capacity(RECORDS);
    for (i, number) in numbers.into_iter().enumerate() {
        let mut doc = Map::new();
        let prefix = ["r", "R", "x", "r-"][rng.random_range(0..4)];
        let id = format!("{prefix}{number:04}");
        doc.insert("id".into(), json!(id));
        let kind = maybe_str(rng, &mut doc, "kind", KINDS, 0.08);
        let color = maybe_str(rng, &mut doc, "color", COLORS, 0.12);
        let hash = match rng.random_range(0..20) {
            0 | 1 => None, // no geo at all
            2 => {
                doc.insert("geo".into(), json!({}));
                None
            }
            3 => {
                doc.insert("geo".into(), json!({"hash": null}));
                None
            }
            4 => {
                doc.insert("geo".into(), json!({"hash": ""}));
                None
            }
            _ => {
                let h = HASHES[rng.random_range(0..HASHES.len())];
                doc.insert("geo".into(), json!({"hash": h}));
                Some(h.to_string())
            }
        };
        let n1 = match rng.random_range(0..20) {
            0 | 1 => None,
            2 => {
                doc.insert("n1".into(), Value::Null);
                None
            }
            3 => {
                doc.insert("n1".into(), json!(-0.0));
                Some(-0.0)
            }
            _ => {
                let n = rng.random_range(-5i64..=5) as f64;
                doc.insert("n1".into(), write_number(rng, n));
                Some(n)
            }
        };
        let n2 = match rng.random_range(0..10) {
            0 => None,
            1..=4 => {
                let n = FRACTIONS[rng.random_range(0..FRACTIONS.len())];
                doc.insert("n2".into(), write_number(rng, n));
                Some(n)
            }
            _ => {
                let n = rng.random_range(-40i64..=40) as f64 / 8.0;
                doc.insert("n2".into(), write_number(rng, n));
                Some(n)
            }
        };
        let flag = if rng.random_bool(0.15) {
            None
        } else {
            let b = rng.random_bool(0.5);
            doc.insert("flag".into(), json!(b));
            Some(b)
        };
        let day = match rng.random_range(0..20) {
            0 | 1 => None,
            2 => {
                doc.insert("day".into(), json!(""));
                None
            }
            3 if rng.random_bool(0.5) => {
                let d = pick(rng, NOT_DATES).to_string();
                doc.insert("day".into(), json!(d));
                Some(d)
            }
            _ => {
                let d = date_text(rng);
                doc.insert("day".into(), json!(d));
                Some(d)
            }
        };
        let note = match rng.random_range(0..20) {
            0 | 1 => None,
            2 => {
                doc.insert("note".into(), json!(""));
                None
            }
            _ => {
                let t = words(rng, 1, 4);
                doc.insert("note".into(), json!(t));
                Some(t)
            }
        };
        let title = if rng.random_bool(0.25) {
            None
        } else {
            let t = words(rng, 1, 2);
            doc.insert("title".into(), json!(t));
            Some(t)
        };
        recs.push(Rec {
            pos: i + 1,
            id,
            doc,
            kind,
            color,
            hash,
            n1,
            n2,
            flag,
            day_at: day.as_deref().and_then(instant_ms),
            day,
            note,
            title,
        });
    }
    recs
}

/// Texts the import takes for a date field (they have a date's shape) that name no instant:
/// in no range and no bucket, but a value for `exists`, `ne` and exact matches.
const NOT_DATES: &[&str] = &[
    "2021-02-30",
    "2021-04-31T10:00:00Z",
    "2021-06-01T24:00",
    "2021-13-01",
];
/// Zones written after a time; most make the text order of two dates differ from their order
/// in time.
const ZONES: &[&str] = &["Z", "+08:00", "-05:00", "+05:30", "+0800", "-03", "+14:00"];

/// A date as a file may write it: a day, or a day and a time with or without a zone (a space
/// for `T`, fractions of a second). Times cluster around month and year ends, so that zones
/// move instants into another UTC day, month or year.
fn date_text(rng: &mut StdRng) -> String {
    if rng.random_bool(0.4) {
        return format!(
            "{}-{:02}-{:02}",
            rng.random_range(2020..=2023),
            rng.random_range(1..=12),
            rng.random_range(1..=28)
        );
    }
    let (month, last) = *pick(rng, &[(1, 31), (6, 30), (12, 31)]);
    let day = *pick(rng, &[1, 1, 2, last, last]);
    let year = *pick(rng, &[2020, 2021, 2021]);
    let (hour, minute) = (rng.random_range(0..24), *pick(rng, &[0, 0, 30, 45]));
    let date = format!("{year}-{month:02}-{day:02}");
    match rng.random_range(0..6) {
        0 => format!("{date} {hour:02}:{minute:02}"),
        1 => format!("{date}T{hour:02}:{minute:02}:07.250Z"),
        2 => format!("{date}T{hour:02}:{minute:02}"),
        _ => format!("{date}T{hour:02}:{minute:02}:00{}", pick(rng, ZONES)),
    }
}

/// Days from 1970-01-01 to a day of the proleptic Gregorian calendar (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The day (year, month, day) `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The instant an ISO 8601 date text names, in milliseconds since 1970 (contract §12.1: a day
/// is its midnight, a time without a zone is UTC); `None` when the text names no instant. The
/// model's own reading, for the forms [`date_text`] and [`date_bound`] write.
fn instant_ms(text: &str) -> Option<i64> {
    let num = |range: std::ops::Range<usize>, of: &str| -> Option<i64> {
        let part = of.get(range)?;
        (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse().ok())
            .flatten()
    };
    if text.get(4..5)? != "-" || text.get(7..8)? != "-" {
        return None;
    }
    let (y, m, d) = (num(0..4, text)?, num(5..7, text)?, num(8..10, text)?);
    let month_days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if d < 1 || d > month_days {
        return None;
    }
    let mut ms = days_from_civil(y, m, d) * 86_400_000;
    let rest = &text[10..];
    if rest.is_empty() {
        return Some(ms);
    }
    let rest = rest.strip_prefix(['T', ' '])?;
    if rest.get(2..3)? != ":" {
        return None;
    }
    let (hour, minute) = (num(0..2, rest)?, num(3..5, rest)?);
    if hour > 23 || minute > 59 {
        return None;
    }
    ms += (hour * 3600 + minute * 60) * 1000;
    let mut rest = &rest[5..];
    if let Some(r) = rest.strip_prefix(':') {
        let second = num(0..2, r)?;
        if second > 59 {
            return None;
        }
        ms += second * 1000;
        rest = &r[2..];
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            let digits = format!("{:0<3}", r.get(..n.min(3))?);
            ms += digits.parse::<i64>().ok()?;
            rest = &r[n..];
        }
    }
    let offset = match rest {
        "" | "Z" => 0,
        zone => {
            let sign = match &zone[..1] {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let z = &zone[1..];
            let (h, m) = match z.len() {
                2 => (num(0..2, z)?, 0),
                4 => (num(0..2, z)?, num(2..4, z)?),
                5 if &z[2..3] == ":" => (num(0..2, z)?, num(3..5, z)?),
                _ => return None,
            };
            sign * (h * 3600 + m * 60) * 1000
        }
    };
    Some(ms - offset)
}

/// The UTC bucket key of an instant (contract §12.2): `2013`, `2013-01`, `2013-01-31`,
/// `2013-01-31T05`.
fn bucket_key(ms: i64, bucket: &str) -> String {
    let seconds = ms.div_euclid(1000);
    let (y, m, d) = civil_from_days(seconds.div_euclid(86_400));
    let hour = seconds.rem_euclid(86_400) / 3600;
    match bucket {
        "year" => format!("{y:04}"),
        "month" => format!("{y:04}-{m:02}"),
        "day" => format!("{y:04}-{m:02}-{d:02}"),
        "hour" => format!("{y:04}-{m:02}-{d:02}T{hour:02}"),
        other => panic!("no bucket {other}"),
    }
}

#[test]
fn the_models_dates_read_as_the_contract_says() {
    assert_eq!(instant_ms("1970-01-01"), Some(0));
    assert_eq!(instant_ms("2013-01-01T10:00:00Z"), Some(1_357_034_400_000));
    assert_eq!(instant_ms("2013-01-01 10:00"), Some(1_357_034_400_000));
    assert_eq!(
        instant_ms("2013-01-01T18:00:00+08:00"),
        Some(1_357_034_400_000)
    );
    assert_eq!(
        instant_ms("2013-01-01T18:00:00+0800"),
        Some(1_357_034_400_000)
    );
    assert_eq!(
        instant_ms("2013-01-01T07:00:00-03"),
        Some(1_357_034_400_000)
    );
    assert_eq!(
        instant_ms("2013-01-01T10:00:00.250Z"),
        Some(1_357_034_400_250)
    );
    assert_eq!(
        instant_ms("2022-06-01T12:30:00+08:00"),
        instant_ms("2022-06-01T04:30:00Z")
    );
    for bad in NOT_DATES {
        assert_eq!(instant_ms(bad), None, "{bad}");
    }
    assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    assert_eq!(
        civil_from_days(days_from_civil(2020, 12, 31) + 1),
        (2021, 1, 1)
    );
    let t = instant_ms("2013-01-01T02:30:00+08:00").unwrap();
    assert_eq!(bucket_key(t, "year"), "2012");
    assert_eq!(bucket_key(t, "month"), "2012-12");
    assert_eq!(bucket_key(t, "day"), "2012-12-31");
    assert_eq!(bucket_key(t, "hour"), "2012-12-31T18");
    assert_eq!(
        bucket_key(instant_ms("2020-12-31T20:00:00-05:00").unwrap(), "year"),
        "2021"
    );
}

fn schema_json() -> String {
    let fields: Vec<Value> = FIELDS
        .iter()
        .map(|(name, t)| {
            let t = match t {
                Type::Keyword => "keyword",
                Type::Number => "number",
                Type::Boolean => "boolean",
                Type::Date => "date",
                Type::Text => "text",
            };
            json!({"name": name, "type": t})
        })
        .collect();
    json!({"title": "Property test", "id_field": "id", "fields": fields}).to_string()
}

// ---------------------------------------------------------------------------------------------
// Requests

/// The conditions shared by records and agg queries.
#[derive(Clone, Debug, Default)]
struct Filter {
    /// `q`, as sent (terms separated by spaces).
    q: Option<String>,
    /// `q[name]`, as sent.
    q_field: Option<(String, String)>,
    /// `name=value` pairs, as sent (the same name may repeat).
    exact: Vec<(String, String)>,
    /// `_ids`, as sent.
    ids: Option<String>,
    /// `name[op]=value` conditions of contract §12.1, as sent (name, op, value).
    ops: Vec<(String, &'static str, String)>,
}

#[derive(Clone, Debug, Default)]
struct RecordsQuery {
    filter: Filter,
    /// (name, descending).
    sort: Vec<(String, bool)>,
    page: Option<u64>,
    per_page: Option<u64>,
    fields: Option<Vec<String>>,
    /// `facet` (keyword fields) and `facet_size`.
    facets: Option<(Vec<String>, Option<u64>)>,
}

/// The keyword fields `facet` takes.
const FACETS: &[&str] = &["kind", "color", "geo.hash"];

/// One `group_by` item (contract §12.2).
#[derive(Clone, Debug, PartialEq)]
enum GroupItem {
    /// A keyword field: its values.
    Value(&'static str),
    /// The `day` field in UTC buckets: `year`, `month`, `day` or `hour`.
    Bucket(&'static str),
    /// A number field in bins of a width (as written).
    Bin(&'static str, &'static str),
}

/// The `group_by` items the generator draws from.
const GROUP_ITEMS: &[GroupItem] = &[
    GroupItem::Value("kind"),
    GroupItem::Value("kind"),
    GroupItem::Value("color"),
    GroupItem::Value("geo.hash"),
    GroupItem::Value("id"),
    GroupItem::Bucket("year"),
    GroupItem::Bucket("month"),
    GroupItem::Bucket("day"),
    GroupItem::Bucket("hour"),
    GroupItem::Bin("n1", "1"),
    GroupItem::Bin("n1", "2.5"),
    GroupItem::Bin("n1", "3"),
    GroupItem::Bin("n2", "0.5"),
    GroupItem::Bin("n2", "2"),
    GroupItem::Bin("n2", "1000"),
];

impl GroupItem {
    /// The item as written in `group_by`, and the name of its member in a group's `keys`.
    fn label(&self) -> String {
        match self {
            GroupItem::Value(name) => name.to_string(),
            GroupItem::Bucket(bucket) => format!("day[{bucket}]"),
            GroupItem::Bin(name, width) => format!("{name}[{width}]"),
        }
    }

    /// The record's part of a group key; `None`: the record is in no group.
    fn part(&self, rec: &Rec) -> Option<Part> {
        match self {
            GroupItem::Value(name) => match rec.value(name)? {
                Val::Str(s) => Some(Part::Str(s)),
                Val::Num(_) => panic!("{name} is not a keyword"),
            },
            GroupItem::Bucket(bucket) => Some(Part::Str(bucket_key(rec.day_at?, bucket))),
            GroupItem::Bin(name, width) => {
                let width: f64 = width.parse().unwrap();
                let low = (rec.number(name)? / width).floor() * width;
                // The bin of -0.0 is 0: a key is written without a sign of zero.
                Some(Part::Num(if low == 0.0 { 0.0 } else { low }))
            }
        }
    }
}

/// A part of a group key: a keyword value or date bucket, or a bin's lower bound.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    Str(String),
    Num(f64),
}

impl Part {
    /// Typed order: text in byte order, bins as numbers.
    fn compare(&self, other: &Part) -> Ordering {
        match (self, other) {
            (Part::Str(a), Part::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Part::Num(a), Part::Num(b)) => a.partial_cmp(b).unwrap(),
            _ => panic!("parts of different items"),
        }
    }

    /// As shown in a group's `key` (a bin as the shortest JSON number).
    fn text(&self) -> String {
        match self {
            Part::Str(s) => s.clone(),
            Part::Num(n) => number_text(*n),
        }
    }
}

/// A number as JSON writes it: integral values without a fraction.
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        serde_json::Number::from_f64(n).unwrap().to_string()
    }
}

#[derive(Clone, Debug)]
struct AggQuery {
    filter: Filter,
    group_by: Vec<GroupItem>,
    field: Option<String>,
    /// `percentiles`, as sent (labels may repeat and come in any order).
    percentiles: Option<Vec<&'static str>>,
    /// The group order (`count`, `key`, `sum`, `avg`, `min`, `max`, `p<label>`), descending.
    sort: Option<(String, bool)>,
    limit: Option<u64>,
    /// `min_count`: groups of fewer records are left out.
    min_count: Option<u64>,
}

impl AggQuery {
    /// The percentile labels of the answer: ascending, each once.
    fn labels(&self) -> Vec<f64> {
        let mut labels: Vec<f64> = match &self.percentiles {
            None => vec![25.0, 50.0, 75.0],
            Some(list) => list.iter().map(|l| l.parse().unwrap()).collect(),
        };
        labels.sort_by(|a, b| a.partial_cmp(b).unwrap());
        labels.dedup();
        labels
    }
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

/// A term that occurs in the data (or, sometimes, not): a vocabulary word, maybe cut down to
/// a substring, maybe upper-cased.
fn term(rng: &mut StdRng) -> String {
    if rng.random_bool(0.05) {
        return "zzq".into();
    }
    let word: Vec<char> = pick(rng, VOCABULARY).chars().collect();
    let mut t: String = if rng.random_bool(0.35) {
        let start = rng.random_range(0..word.len());
        let end = rng.random_range(start + 1..=word.len());
        word[start..end].iter().collect()
    } else {
        word.iter().collect()
    };
    if rng.random_bool(0.3) {
        t = t.to_uppercase();
    }
    t
}

fn terms_text(rng: &mut StdRng) -> String {
    let n = rng.random_range(1..=2);
    let terms: Vec<String> = (0..n).map(|_| term(rng)).collect();
    let sep = if rng.random_bool(0.2) { "  " } else { " " };
    let mut text = terms.join(sep);
    if rng.random_bool(0.1) {
        text = format!(" {text} ");
    }
    text
}

/// A value to match `name` exactly: usually one of the data, written in one of its forms.
fn exact_value(rng: &mut StdRng, recs: &[Rec], name: &str) -> String {
    let found = recs[rng.random_range(0..recs.len())].value(name);
    match (field_type(name), found) {
        (_, None) if rng.random_bool(0.5) => match field_type(name) {
            Type::Number => "42.5".into(),
            Type::Boolean => "TRUE".into(),
            Type::Date => "1999-01-01".into(),
            _ => "omega".into(),
        },
        (_, None) => exact_value(rng, recs, name),
        (Type::Number, Some(Val::Num(n))) => {
            let integral = n.fract() == 0.0;
            match rng.random_range(0..5) {
                0 if integral => format!("{}.0", n as i64),
                1 if integral => format!("{}", n as i64),
                2 => format!("{n:e}"),
                _ => format!("{n}"),
            }
        }
        (Type::Boolean, Some(Val::Str(s))) if rng.random_bool(0.3) => s.to_uppercase(),
        (_, Some(Val::Str(s))) => s,
        (t, v) => panic!("unexpected {t:?} {v:?}"),
    }
}

fn random_filter(rng: &mut StdRng, recs: &[Rec]) -> Filter {
    let mut filter = Filter::default();
    if rng.random_bool(0.4) {
        // Operators alone: their answers are seldom empty.
        while filter.ops.is_empty() {
            filter.ops = random_ops(rng, recs);
        }
        return filter;
    }
    if rng.random_bool(0.25) {
        filter.q = Some(terms_text(rng));
    }
    if rng.random_bool(0.12) {
        filter.q_field = Some((pick(rng, TEXT_FIELDS).to_string(), terms_text(rng)));
    }
    let mut names: Vec<&str> = EXACT.to_vec();
    names.shuffle(rng);
    let n = *pick(rng, &[0, 0, 0, 1, 1, 1, 2, 3]);
    for name in names.into_iter().take(n) {
        let repeats = *pick(rng, &[1, 1, 1, 2, 3]);
        for _ in 0..repeats {
            filter
                .exact
                .push((name.to_string(), exact_value(rng, recs, name)));
        }
    }
    filter.exact.shuffle(rng);
    filter.ops = random_ops(rng, recs);
    if rng.random_bool(0.15) {
        let n = rng.random_range(1..=10);
        let mut ids: Vec<String> = (0..n)
            .map(|_| recs[rng.random_range(0..recs.len())].id.clone())
            .collect();
        if rng.random_bool(0.3) {
            ids.push("no-such-id".into());
        }
        let sep = if rng.random_bool(0.3) { ", " } else { "," };
        filter.ids = Some(ids.join(sep));
    }
    filter
}

/// Fields a condition of §12.1 may name, and the operators the contract gives each type.
const OP_FIELDS: &[&str] = &[
    "_id", "id", "kind", "color", "geo.hash", "n1", "n2", "flag", "day", "note", "title",
];
const RANGE_OPS: &[&str] = &["gt", "gte", "lt", "lte"];

fn operators(t: Type) -> &'static [&'static str] {
    match t {
        Type::Keyword => &[
            "gt", "gte", "lt", "lte", "ne", "in", "nin", "exists", "prefix",
        ],
        Type::Number | Type::Date => &["gt", "gte", "lt", "lte", "ne", "in", "nin", "exists"],
        Type::Boolean => &["ne", "in", "nin", "exists"],
        Type::Text => &["exists"],
    }
}

/// Zero to three fields with one to three operator conditions each; ranges often come two or
/// three to a field (bounds that merge into one interval, or leave it empty).
fn random_ops(rng: &mut StdRng, recs: &[Rec]) -> Vec<(String, &'static str, String)> {
    let n = *pick(rng, &[0, 0, 1, 1, 1, 2, 2, 3]);
    let mut names: Vec<&str> = Vec::new();
    while names.len() < n {
        // A type first, then one of its fields: each type gets its share.
        let t = *pick(
            rng,
            &[
                Type::Keyword,
                Type::Number,
                Type::Date,
                Type::Boolean,
                Type::Text,
            ],
        );
        let of_type: Vec<&str> = OP_FIELDS
            .iter()
            .copied()
            .filter(|f| field_type(f) == t)
            .collect();
        let name = *pick(rng, &of_type);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut ops = Vec::new();
    for name in names {
        let allowed = operators(field_type(name));
        let (op, times) = if allowed.contains(&"gt") && rng.random_bool(0.4) {
            // Two or three bounds on one field merge into one interval (or leave it empty).
            (None, *pick(rng, &[1, 2, 2, 3]))
        } else {
            let op = if rng.random_bool(0.25) {
                "exists"
            } else {
                *pick(rng, allowed)
            };
            // `ne` repeated: none of them; `prefix` and `in` repeated: any of them.
            let times = match op {
                "ne" | "prefix" | "in" | "nin" => *pick(rng, &[1, 2, 2, 3]),
                _ => 1,
            };
            (Some(op), times)
        };
        for _ in 0..times {
            let op = op.unwrap_or_else(|| *pick(rng, RANGE_OPS));
            ops.push((name.to_string(), op, op_value(rng, recs, name, op)));
        }
    }
    ops.shuffle(rng);
    ops
}

/// A value for `name[op]`: usually drawn from the data (or a part of it), sometimes not.
fn op_value(rng: &mut StdRng, recs: &[Rec], name: &str, op: &str) -> String {
    let t = field_type(name);
    match op {
        "exists" => pick(rng, &["true", "false", "true", "false", "TRUE", "False"]).to_string(),
        "ne" => exact_value(rng, recs, name),
        "in" | "nin" => {
            let n = rng.random_range(1..=3);
            let values: Vec<String> = (0..n).map(|_| exact_value(rng, recs, name)).collect();
            values.join(if rng.random_bool(0.3) { ", " } else { "," })
        }
        "prefix" => {
            let found = recs[rng.random_range(0..recs.len())].value(name);
            match found {
                Some(Val::Str(s)) if rng.random_bool(0.8) => {
                    let chars: Vec<char> = s.chars().collect();
                    let n = rng.random_range(1..=chars.len());
                    chars[..n].iter().collect()
                }
                _ => pick(
                    rng,
                    &["r", "R", "x0", "Ω", "紅", "ws", "台", "b", "Z", "r-0"],
                )
                .to_string(),
            }
        }
        _ => match t {
            Type::Number if rng.random_bool(0.5) => exact_value(rng, recs, name),
            Type::Number => pick(
                rng,
                &[
                    "-2.5",
                    "0",
                    "-0",
                    "3.25",
                    "1e1",
                    "-5",
                    "5",
                    "0.15",
                    "12345.678",
                    "-0.001",
                    "2.75",
                ],
            )
            .to_string(),
            Type::Date => {
                let valid: Vec<&Rec> = recs.iter().filter(|r| r.day_at.is_some()).collect();
                if rng.random_bool(0.5) {
                    pick(rng, &valid).day.clone().unwrap()
                } else {
                    date_text(rng)
                }
            }
            _ => {
                let found = recs[rng.random_range(0..recs.len())].value(name);
                match found {
                    Some(Val::Str(s)) if rng.random_bool(0.6) => s,
                    _ => pick(
                        rng,
                        &[
                            "B", "Z", "a", "beta", "r0200", "x", "r-", "Ω", "é", "紅", "wsq", "u",
                            "台北", "red ", "Red",
                        ],
                    )
                    .to_string(),
                }
            }
        },
    }
}

fn random_records_query(rng: &mut StdRng, recs: &[Rec]) -> RecordsQuery {
    let filter = random_filter(rng, recs);
    let mut sortable: Vec<&str> = EXACT.to_vec();
    sortable.shuffle(rng);
    let keys = *pick(rng, &[0, 1, 1, 2, 2]);
    let sort = sortable
        .into_iter()
        .take(keys)
        .map(|name| (name.to_string(), rng.random_bool(0.5)))
        .collect();
    let per_page = if rng.random_bool(0.3) {
        None
    } else if rng.random_bool(0.7) {
        Some(rng.random_range(1..=30))
    } else {
        Some(rng.random_range(1..=100))
    };
    let fields = rng.random_bool(0.25).then(|| {
        let mut names: Vec<&str> = PROJECTABLE.to_vec();
        names.shuffle(rng);
        let n = rng.random_range(1..=3);
        names.into_iter().take(n).map(str::to_string).collect()
    });
    let facets = rng.random_bool(0.3).then(|| {
        let mut names: Vec<&str> = FACETS.to_vec();
        names.shuffle(rng);
        let n = rng.random_range(1..=2);
        let names = names.into_iter().take(n).map(str::to_string).collect();
        (names, rng.random_bool(0.5).then(|| rng.random_range(1..=4)))
    });
    RecordsQuery {
        filter,
        sort,
        page: None, // chosen once the expected total is known
        per_page,
        fields,
        facets,
    }
}

/// Percentile labels the generator draws from (integers, decimals, the ends).
const LABELS: &[&str] = &[
    "0", "5", "10", "33.3", "50", "50.0", "90", "95", "99", "99.5", "100",
];

fn random_agg_query(rng: &mut StdRng, recs: &[Rec]) -> AggQuery {
    let n = *pick(rng, &[1, 1, 1, 1, 2, 2, 2, 3]);
    let mut group_by: Vec<GroupItem> = Vec::new();
    while group_by.len() < n {
        let item = pick(rng, GROUP_ITEMS).clone();
        if !group_by.contains(&item) {
            group_by.push(item);
        }
    }
    let field = pick(rng, &[None, Some("n1"), Some("n2"), Some("n2")]).map(str::to_string);
    let percentiles = (field.is_some() && rng.random_bool(0.6)).then(|| {
        let n = rng.random_range(1..=4);
        (0..n).map(|_| *pick(rng, LABELS)).collect::<Vec<_>>()
    });
    let filter = if rng.random_bool(0.3) {
        Filter::default()
    } else {
        random_filter(rng, recs)
    };
    let mut query = AggQuery {
        filter,
        group_by,
        field,
        percentiles,
        sort: None,
        limit: rng.random_bool(0.4).then(|| rng.random_range(1..=30)),
        min_count: rng.random_bool(0.3).then(|| rng.random_range(1..=4)),
    };
    if rng.random_bool(0.7) {
        let mut orders = vec!["count".to_string(), "key".to_string()];
        if query.field.is_some() {
            orders.extend(["sum", "avg", "min", "max"].map(str::to_string));
            orders.extend(
                query
                    .labels()
                    .iter()
                    .map(|l| format!("p{}", number_text(*l))),
            );
        }
        if query.field.is_some() && rng.random_bool(0.7) {
            orders.drain(..2); // mostly a statistic when there is one
        }
        query.sort = Some((pick(rng, &orders).clone(), rng.random_bool(0.5)));
    }
    query
}

fn filter_pairs(rng: &mut StdRng, filter: &Filter) -> Vec<String> {
    let mut pairs = Vec::new();
    if let Some(q) = &filter.q {
        pairs.push(format!("q={}", enc(q)));
    }
    if let Some((name, text)) = &filter.q_field {
        let key = if rng.random_bool(0.5) {
            format!("q%5B{name}%5D")
        } else {
            enc(&format!("q[{name}]"))
        };
        pairs.push(format!("{key}={}", enc(text)));
    }
    for (name, value) in &filter.exact {
        pairs.push(format!("{}={}", enc(name), enc(value)));
    }
    for (name, op, value) in &filter.ops {
        let key = if rng.random_bool(0.5) {
            format!("{}%5B{op}%5D", enc(name))
        } else {
            enc(&format!("{name}[{op}]"))
        };
        pairs.push(format!("{key}={}", enc(value)));
    }
    if let Some(ids) = &filter.ids {
        pairs.push(format!("_ids={}", enc(ids)));
    }
    pairs
}

fn records_path(rng: &mut StdRng, query: &RecordsQuery) -> String {
    let mut pairs = filter_pairs(rng, &query.filter);
    if !query.sort.is_empty() {
        let keys: Vec<String> = query
            .sort
            .iter()
            .map(|(name, descending)| {
                let suffix = match (descending, rng.random_range(0..3)) {
                    (true, 0) => "%3c",
                    (true, _) => "%3C",
                    (false, 0) => "",
                    (false, 1) => "%3e",
                    (false, _) => "%3E",
                };
                format!("{}{suffix}", enc(name))
            })
            .collect();
        let sep = if rng.random_bool(0.3) { "%2C" } else { "," };
        pairs.push(format!("sort={}", keys.join(sep)));
    }
    if let Some(page) = query.page {
        pairs.push(format!("page={page}"));
    }
    if let Some(per_page) = query.per_page {
        pairs.push(format!("per_page={per_page}"));
    }
    if let Some(fields) = &query.fields {
        pairs.push(format!("fields={}", enc(&fields.join(","))));
    }
    if let Some((names, size)) = &query.facets {
        pairs.push(format!("facet={}", enc(&names.join(","))));
        if let Some(size) = size {
            pairs.push(format!("facet_size={size}"));
        }
    }
    pairs.shuffle(rng);
    format!("/api/v1/datasets/{SLUG}/records?{}", pairs.join("&"))
}

fn agg_path(rng: &mut StdRng, query: &AggQuery) -> String {
    let mut pairs = filter_pairs(rng, &query.filter);
    let items: Vec<String> = query.group_by.iter().map(GroupItem::label).collect();
    let sep = if rng.random_bool(0.2) { ", " } else { "," };
    pairs.push(format!("group_by={}", enc(&items.join(sep))));
    if let Some(field) = &query.field {
        pairs.push(format!("field={}", enc(field)));
    }
    if let Some(labels) = &query.percentiles {
        pairs.push(format!("percentiles={}", enc(&labels.join(","))));
    }
    if let Some((by, descending)) = &query.sort {
        let suffix = match (descending, rng.random_bool(0.5)) {
            (true, true) => "%3c",
            (true, false) => "%3C",
            (false, true) => "%3e",
            (false, false) => "%3E",
        };
        pairs.push(format!("sort={}{suffix}", enc(by)));
    }
    if let Some(limit) = query.limit {
        pairs.push(format!("limit={limit}"));
    }
    if let Some(n) = query.min_count {
        pairs.push(format!("min_count={n}"));
    }
    pairs.shuffle(rng);
    format!("/api/v1/datasets/{SLUG}/agg?{}", pairs.join("&"))
}

// ---------------------------------------------------------------------------------------------
// The model (contract §5, §6)

fn lower_terms(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

fn contains_term(text: Option<&str>, term: &str) -> bool {
    text.is_some_and(|t| t.to_lowercase().contains(term))
}

/// Whether the record's value of `name` equals `value` as contract §5 compares (numbers as
/// numbers, booleans in any case, the rest as written). A record without a value equals
/// nothing.
fn equals(rec: &Rec, name: &str, value: &str) -> bool {
    match (rec.value(name), field_type(name)) {
        (None, _) => false,
        (Some(Val::Num(n)), Type::Number) => value.trim().parse::<f64>().expect("a number") == n,
        (Some(Val::Str(s)), Type::Boolean) => value.trim().eq_ignore_ascii_case(&s),
        (Some(Val::Str(s)), _) => value == s,
        other => panic!("unexpected {other:?}"),
    }
}

/// Whether the record has a value of `name` (any type, text too).
fn has_value(rec: &Rec, name: &str) -> bool {
    match field_type(name) {
        Type::Text => rec.text(name).is_some(),
        _ => rec.value(name).is_some(),
    }
}

/// How the record's value of `name` compares with a range bound (contract §12.1: numbers as
/// numbers, dates as instants, keywords in byte order); `None` when it has no value, or a date
/// text that names no instant.
fn compare_to_bound(rec: &Rec, name: &str, bound: &str) -> Option<Ordering> {
    match field_type(name) {
        Type::Number => {
            let b: f64 = bound.trim().parse().expect("a number");
            rec.number(name)?.partial_cmp(&b)
        }
        Type::Date => {
            let b = instant_ms(bound).expect("a date bound");
            Some(rec.day_at?.cmp(&b))
        }
        _ => match rec.value(name)? {
            Val::Str(s) => Some(s.as_bytes().cmp(bound.as_bytes())),
            Val::Num(_) => panic!("{name} is not a keyword"),
        },
    }
}

/// One `name[op]=value` condition on one record.
fn op_holds(rec: &Rec, name: &str, op: &str, value: &str) -> bool {
    let bound =
        |want: &[Ordering]| compare_to_bound(rec, name, value).is_some_and(|o| want.contains(&o));
    match op {
        "gt" => bound(&[Ordering::Greater]),
        "gte" => bound(&[Ordering::Greater, Ordering::Equal]),
        "lt" => bound(&[Ordering::Less]),
        "lte" => bound(&[Ordering::Less, Ordering::Equal]),
        "exists" => has_value(rec, name) == value.trim().eq_ignore_ascii_case("true"),
        other => panic!("{other} is not a condition on its own"),
    }
}

fn model_filter(recs: &[Rec], filter: &Filter) -> Vec<Rec> {
    let q_terms = filter.q.as_deref().map(lower_terms).unwrap_or_default();
    let field_terms = filter
        .q_field
        .as_ref()
        .map(|(name, text)| (name.as_str(), lower_terms(text)));
    // `name=value` and `name[in]=a,b` (the same as repeating `name=`): any of them.
    let mut any_of: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, value) in &filter.exact {
        any_of.entry(name).or_default().push(value.clone());
    }
    // `name[ne]`: none of them; `name[prefix]`: starts with any of them; the rest: each holds.
    let mut none_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut prefixes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut each = Vec::new();
    for (name, op, value) in &filter.ops {
        match *op {
            // Items as given, spaces kept, as `=` reads a value.
            "in" => any_of.entry(name).or_default().extend(
                value
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(str::to_string),
            ),
            "ne" => none_of.entry(name).or_default().push(value),
            // `nin`: a repeated `ne`, from one list.
            "nin" => none_of
                .entry(name)
                .or_default()
                .extend(value.split(',').filter(|v| !v.is_empty())),
            "prefix" => prefixes.entry(name).or_default().push(value),
            _ => each.push((name.as_str(), *op, value.as_str())),
        }
    }
    let ids: Option<HashSet<String>> = filter.ids.as_ref().map(|ids| {
        ids.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    });
    recs.iter()
        .filter(|rec| {
            q_terms
                .iter()
                .all(|term| TEXT_FIELDS.iter().any(|f| contains_term(rec.text(f), term)))
        })
        .filter(|rec| match &field_terms {
            None => true,
            Some((name, terms)) => terms.iter().all(|t| contains_term(rec.text(name), t)),
        })
        .filter(|rec| {
            any_of
                .iter()
                .all(|(name, values)| values.iter().any(|v| equals(rec, name, v)))
        })
        .filter(|rec| {
            none_of
                .iter()
                .all(|(name, values)| !values.iter().any(|v| equals(rec, name, v)))
        })
        .filter(|rec| {
            prefixes.iter().all(|(name, starts)| match rec.value(name) {
                Some(Val::Str(s)) => starts.iter().any(|p| s.starts_with(p)),
                _ => false,
            })
        })
        .filter(|rec| {
            each.iter()
                .all(|(name, op, value)| op_holds(rec, name, op, value))
        })
        .filter(|rec| ids.as_ref().is_none_or(|ids| ids.contains(&rec.id)))
        .cloned()
        .collect()
}

fn model_sort(recs: &mut [Rec], keys: &[(String, bool)]) {
    recs.sort_by(|a, b| {
        for (name, descending) in keys {
            let order = match (a.value(name), b.value(name)) {
                (Some(x), Some(y)) => {
                    let o = cmp_val(&x, &y);
                    if *descending { o.reverse() } else { o }
                }
                // Records without the value come last, whatever the direction.
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        a.pos.cmp(&b.pos)
    });
}

/// numpy's default percentile (method "linear"), written as numpy writes it.
fn np_percentile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let virtual_index = q / 100.0 * (n - 1) as f64;
    let lo = virtual_index.floor();
    let g = virtual_index - lo;
    let lo = lo as usize;
    let hi = (lo + 1).min(n - 1);
    let (a, b) = (sorted[lo], sorted[hi]);
    let diff = b - a;
    if g >= 0.5 {
        b - diff * (1.0 - g)
    } else {
        a + diff * g
    }
}

/// Linear interpolation between closest ranks of sorted values, as SQL's `percentile_cont`
/// writes it (the order of groups by a percentile is decided on these exact values).
fn linear_percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = q / 100.0 * last as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

#[derive(Debug)]
struct ExpectedGroup {
    parts: Vec<Part>,
    count: u64,
    /// The group's values of `field`, ascending.
    values: Vec<f64>,
}

impl ExpectedGroup {
    fn key(&self) -> String {
        self.parts
            .iter()
            .map(Part::text)
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn compare_keys(&self, other: &ExpectedGroup) -> Ordering {
        self.parts
            .iter()
            .zip(&other.parts)
            .map(|(a, b)| a.compare(b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// The statistic a group sort names; `None` when the group has no values of `field`.
    fn stat(&self, by: &str) -> Option<f64> {
        let v = &self.values;
        match by {
            // Summed in ascending order, as a sum that does not depend on the order rows came in.
            "sum" => Some(v.iter().sum()),
            "avg" => (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64),
            "min" => v.first().copied(),
            "max" => v.last().copied(),
            p => linear_percentile(v, p.strip_prefix('p').unwrap().parse().unwrap()),
        }
    }
}

/// A facet (contract §13.4): the field's values among `matched` with their counts, most
/// frequent first, ties by value (byte order), the first `size`.
fn model_facet(matched: &[Rec], name: &str, size: usize) -> Value {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for rec in matched {
        if let Some(Val::Str(value)) = rec.value(name) {
            *counts.entry(value).or_default() += 1;
        }
    }
    let mut values: Vec<(String, u64)> = counts.into_iter().collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.1));
    values.truncate(size);
    values
        .into_iter()
        .map(|(value, count)| json!({"value": value, "count": count}))
        .collect()
}

/// What an agg answer must be: total records, ungrouped records, and every group in the
/// requested order (before `limit`).
fn model_agg(recs: &[Rec], query: &AggQuery) -> (u64, u64, Vec<ExpectedGroup>) {
    let matched = model_filter(recs, &query.filter);
    let mut groups: Vec<ExpectedGroup> = Vec::new();
    // A group's place in `groups`, by its parts as text (a bin's text names one number).
    let mut index: HashMap<Vec<String>, usize> = HashMap::new();
    let mut ungrouped = 0;
    for rec in &matched {
        let Some(parts) = query
            .group_by
            .iter()
            .map(|item| item.part(rec))
            .collect::<Option<Vec<Part>>>()
        else {
            ungrouped += 1;
            continue;
        };
        let identity: Vec<String> = parts.iter().map(Part::text).collect();
        let at = *index.entry(identity).or_insert_with(|| {
            groups.push(ExpectedGroup {
                parts,
                count: 0,
                values: Vec::new(),
            });
            groups.len() - 1
        });
        let group = &mut groups[at];
        group.count += 1;
        if let Some(field) = &query.field
            && let Some(v) = rec.number(field)
        {
            group.values.push(v);
        }
    }
    for g in &mut groups {
        g.values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    let (by, descending) = query
        .sort
        .clone()
        .unwrap_or_else(|| ("count".to_string(), true));
    let direct = |o: Ordering| if descending { o.reverse() } else { o };
    groups.sort_by(|a, b| {
        let first = match by.as_str() {
            "count" => direct(a.count.cmp(&b.count)),
            "key" => direct(a.compare_keys(b)),
            stat => match (a.stat(stat), b.stat(stat)) {
                (Some(x), Some(y)) => direct(x.partial_cmp(&y).unwrap()),
                // Groups without the statistic come last, whatever the direction.
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
        };
        first.then_with(|| a.compare_keys(b))
    });
    (matched.len() as u64, ungrouped, groups)
}

// ---------------------------------------------------------------------------------------------
// Checking

/// What the queries exercised: per feature, how many queries used it and how many of those had
/// a non-empty answer. Asserted at the end so that no operator, bucket or option silently
/// drops out of the generator.
#[derive(Default)]
struct Coverage(BTreeMap<String, (usize, usize)>);

impl Coverage {
    fn add(&mut self, feature: String, non_empty: bool) {
        let entry = self.0.entry(feature).or_default();
        entry.0 += 1;
        entry.1 += usize::from(non_empty);
    }

    /// The features of a filter's §12.1 conditions: each operator on each type, `exists`
    /// either way, and two or more range bounds on one field (merged into one interval).
    fn filter(&mut self, filter: &Filter, non_empty: bool) {
        let mut seen = HashSet::new();
        let mut bounds: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, op, value) in &filter.ops {
            let t = field_type(name);
            let feature = match *op {
                "exists" => format!("{t:?}[exists]={}", value.to_lowercase()),
                op => format!("{t:?}[{op}]"),
            };
            seen.insert(feature);
            if RANGE_OPS.contains(op) {
                *bounds.entry(name).or_default() += 1;
            }
            if *op == "ne"
                && filter
                    .ops
                    .iter()
                    .filter(|(n, o, _)| n == name && *o == "ne")
                    .count()
                    > 1
            {
                seen.insert(format!("{t:?}[ne] repeated"));
            }
            if *op == "prefix"
                && filter
                    .ops
                    .iter()
                    .filter(|(n, o, _)| n == name && *o == "prefix")
                    .count()
                    > 1
            {
                seen.insert("prefix repeated".to_string());
            }
        }
        for (name, n) in bounds {
            if n > 1 {
                seen.insert(
                    format!("{:?} range of {n} bounds", field_type(name)).replace(" 3 ", " 2 "),
                );
            }
        }
        for feature in seen {
            self.add(feature, non_empty);
        }
    }

    /// Asserts that each feature was used by at least `min` queries, at least one of them with
    /// a non-empty answer; prints the tally.
    fn assert_covers(&self, features: &[String], min: usize, context: &str) {
        let missing: Vec<String> = features
            .iter()
            .filter(|f| {
                self.0
                    .get(*f)
                    .is_none_or(|(n, hits)| *n < min || *hits == 0)
            })
            .map(|f| format!("{f} {:?}", self.0.get(f)))
            .collect();
        assert!(
            missing.is_empty(),
            "{context}: features not exercised enough (queries, non-empty): {missing:?}\nall: {:?}",
            self.0
        );
    }
}

/// Every feature the tally must show.
fn expected_features() -> Vec<String> {
    let mut out = Vec::new();
    for t in [
        Type::Keyword,
        Type::Number,
        Type::Boolean,
        Type::Date,
        Type::Text,
    ] {
        for op in operators(t) {
            match *op {
                "exists" => {
                    out.push(format!("{t:?}[exists]=true"));
                    out.push(format!("{t:?}[exists]=false"));
                }
                op => out.push(format!("{t:?}[{op}]")),
            }
        }
    }
    for t in [Type::Keyword, Type::Number, Type::Date] {
        out.push(format!("{t:?} range of 2 bounds"));
    }
    out.push("Keyword[ne] repeated".into());
    out.push("prefix repeated".into());
    for n in 1..=3 {
        out.push(format!("group_by of {n}"));
    }
    for item in GROUP_ITEMS {
        out.push(format!("group_by {}", item.label()));
    }
    for by in ["count", "key", "sum", "avg", "min", "max", "p"] {
        out.push(format!("sort {by}<"));
        out.push(format!("sort {by}>"));
    }
    out.extend(
        [
            "percentiles",
            "limit cuts",
            "min_count leaves groups out",
            "ungrouped records",
            "missing values",
            "groups without the sorted statistic",
            "facet",
            "facet_size",
        ]
        .map(str::to_string),
    );
    out
}

struct Ctx {
    seed: u64,
    kind: crate::helpers::Kind,
    /// Which path answers: the in-memory index or the store.
    answered_by: &'static str,
}

impl Ctx {
    fn fail(&self, path: &str, what: String) -> ! {
        panic!(
            "\n[property] {:?} ({}) seed={} (rerun with ODQS_PROPERTY_SEED={})\nrequest: {path}\n{what}\n",
            self.kind, self.answered_by, self.seed, self.seed
        )
    }
}

fn close(a: f64, b: f64) -> bool {
    // Relative tolerance 1e-9; near zero an absolute 1e-9 (the data's smallest magnitude is
    // 1e-3, and a sum of 0.1 + 0.2 - 0.3 is not exactly 0 in any order).
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn check_number(ctx: &Ctx, path: &str, what: &str, got: &Value, want: Option<f64>) {
    match (got, want) {
        (Value::Null, None) => {}
        (Value::Number(n), Some(w)) if close(n.as_f64().unwrap(), w) => {}
        _ => ctx.fail(path, format!("{what}: expected {want:?}, got {got}")),
    }
}

fn ids_of(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["_id"].as_str().unwrap_or("<no _id>").to_string())
        .collect()
}

async fn check_records(
    ctx: &Ctx,
    rng: &mut StdRng,
    router: &axum::Router,
    token: &str,
    recs: &[Rec],
    mut query: RecordsQuery,
    coverage: &mut Coverage,
) -> (u64, usize) {
    let mut expected = model_filter(recs, &query.filter);
    model_sort(&mut expected, &query.sort);
    let total = expected.len() as u64;
    coverage.filter(&query.filter, total > 0);
    let per_page = query.per_page.unwrap_or(20);
    let pages = total.div_ceil(per_page).max(1);
    query.page = match rng.random_range(0..10) {
        0..=4 => None,
        5 => Some(pages + rng.random_range(0..3)), // the last page or past it
        6 if rng.random_bool(0.3) => Some(1_000_000),
        _ => Some(rng.random_range(1..=pages)),
    };
    let page = query.page.unwrap_or(1);
    let path = records_path(rng, &query);
    let answer = get_with(router, &path, Some(token), &[]).await;
    if answer.status != 200 {
        ctx.fail(
            &path,
            format!("expected 200, got {}: {}", answer.status, answer.body),
        );
    }
    let body = &answer.body;
    let got_total = body["total"].as_u64();
    if got_total != Some(total) {
        ctx.fail(
            &path,
            format!(
                "total: expected {total}, got {}\nquery: {query:?}",
                body["total"]
            ),
        );
    }
    if body["page"].as_u64() != Some(page) || body["per_page"].as_u64() != Some(per_page) {
        ctx.fail(
            &path,
            format!(
                "page/per_page: expected {page}/{per_page}, got {}/{}",
                body["page"], body["per_page"]
            ),
        );
    }
    if !body["schema"].is_array() {
        ctx.fail(&path, "no schema array".into());
    }
    match &query.facets {
        None if body.get("facets").is_some() => {
            ctx.fail(&path, format!("facets without facet: {}", body["facets"]))
        }
        None => {}
        Some((names, size)) => {
            let size = size.unwrap_or(10) as usize;
            let want: Map<String, Value> = names
                .iter()
                .map(|name| (name.clone(), model_facet(&expected, name, size)))
                .collect();
            let got = body["facets"].as_object().cloned().unwrap_or_default();
            if got != want || got.keys().ne(names.iter()) {
                ctx.fail(
                    &path,
                    format!("facets: expected {want:?}\n  got {}", body["facets"]),
                );
            }
            let counted = want.values().any(|v| !v.as_array().unwrap().is_empty());
            coverage.add("facet".into(), counted);
            if size < 10 {
                coverage.add("facet_size".into(), counted);
            }
        }
    }
    let start = ((page - 1).saturating_mul(per_page)).min(total) as usize;
    let end = (start + per_page as usize).min(expected.len());
    let want_page = &expected[start..end];
    let records = body["records"]
        .as_array()
        .unwrap_or_else(|| ctx.fail(&path, format!("records is not an array: {body}")));
    let got_ids = ids_of(records);
    let want_ids: Vec<String> = want_page.iter().map(|r| r.id.clone()).collect();
    if got_ids != want_ids {
        let mut detail = String::new();
        for (i, (g, w)) in got_ids.iter().zip(&want_ids).enumerate() {
            if g != w {
                let show = |id: &str| {
                    recs.iter()
                        .find(|r| r.id == id)
                        .map(|r| Value::Object(r.doc.clone()).to_string())
                        .unwrap_or_default()
                };
                let _ = write!(
                    detail,
                    "first difference at index {i}: got {g} {} / expected {w} {}",
                    show(g),
                    show(w)
                );
                break;
            }
        }
        ctx.fail(
            &path,
            format!(
                "_ids differ (sort {:?})\nexpected {want_ids:?}\n     got {got_ids:?}\n{detail}",
                query.sort
            ),
        );
    }
    for (record, rec) in records.iter().zip(want_page) {
        let Some(object) = record.as_object() else {
            ctx.fail(&path, format!("a record is not an object: {record}"));
        };
        let got_keys: HashSet<&str> = object.keys().map(String::as_str).collect();
        let mut want_keys: HashSet<&str> = HashSet::from(["_id"]);
        match &query.fields {
            None => want_keys.extend(rec.doc.keys().map(String::as_str)),
            Some(fields) => {
                for f in fields {
                    let top = f.split('.').next().unwrap();
                    if rec.doc.contains_key(top) {
                        want_keys.insert(top);
                    }
                }
            }
        }
        if got_keys != want_keys {
            ctx.fail(
                &path,
                format!(
                    "keys of record {}: expected {want_keys:?}, got {got_keys:?} (record {record})",
                    rec.id
                ),
            );
        }
    }
    (total, want_ids.len())
}

async fn check_agg(
    ctx: &Ctx,
    rng: &mut StdRng,
    router: &axum::Router,
    token: &str,
    recs: &[Rec],
    query: AggQuery,
    coverage: &mut Coverage,
) -> usize {
    let (total_records, ungrouped, mut groups) = model_agg(recs, &query);
    // `min_count` leaves out the small groups; their records still have a group.
    if let Some(n) = query.min_count {
        let before = groups.len();
        groups.retain(|g| g.count >= n);
        coverage.add("min_count leaves groups out".into(), groups.len() < before);
    }
    let non_empty = !groups.is_empty();
    coverage.filter(&query.filter, total_records > 0);
    coverage.add(format!("group_by of {}", query.group_by.len()), non_empty);
    for item in &query.group_by {
        coverage.add(format!("group_by {}", item.label()), non_empty);
    }
    if let Some((by, descending)) = &query.sort {
        let by = if by.starts_with('p') { "p" } else { by };
        let dir = if *descending { '<' } else { '>' };
        coverage.add(format!("sort {by}{dir}"), groups.len() > 1);
        if !["count", "key"].contains(&by) && groups.iter().any(|g| g.values.is_empty()) {
            coverage.add(
                "groups without the sorted statistic".into(),
                groups.len() > 1,
            );
        }
    }
    if query.percentiles.is_some() {
        coverage.add("percentiles".into(), non_empty);
    }
    if query.limit.is_some_and(|l| (l as usize) < groups.len()) {
        coverage.add("limit cuts".into(), true);
    }
    if ungrouped > 0 {
        coverage.add("ungrouped records".into(), non_empty);
    }
    if query.field.is_some() && groups.iter().any(|g| g.count > g.values.len() as u64) {
        coverage.add("missing values".into(), true);
    }
    let path = agg_path(rng, &query);
    let answer = get_with(router, &path, Some(token), &[]).await;
    if answer.status != 200 {
        ctx.fail(
            &path,
            format!("expected 200, got {}: {}", answer.status, answer.body),
        );
    }
    let body = &answer.body;
    let envelope = [
        ("total_records", total_records),
        ("total_groups", groups.len() as u64),
        ("ungrouped_records", ungrouped),
    ];
    for (member, want) in envelope {
        if body[member].as_u64() != Some(want) {
            ctx.fail(
                &path,
                format!(
                    "{member}: expected {want}, got {}\nquery: {query:?}",
                    body[member]
                ),
            );
        }
    }
    let got = body["groups"]
        .as_array()
        .unwrap_or_else(|| ctx.fail(&path, format!("groups is not an array: {body}")));
    let shown = query
        .limit
        .map_or(groups.len(), |l| groups.len().min(l as usize));
    let want_groups = &groups[..shown];
    let got_keys: Vec<(String, u64)> = got
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap_or("<no key>").to_string(),
                g["stats"]["count"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect();
    let want_keys: Vec<(String, u64)> = want_groups.iter().map(|g| (g.key(), g.count)).collect();
    if got_keys != want_keys {
        let stats: Vec<String> = match &query.sort {
            Some((by, _)) if !["count", "key"].contains(&by.as_str()) => want_groups
                .iter()
                .map(|g| format!("{:?}", g.stat(by)))
                .collect(),
            _ => Vec::new(),
        };
        ctx.fail(
            &path,
            format!(
                "groups (key, count):\nexpected {want_keys:?}\n     got {got_keys:?}\nsorted statistic: {stats:?}\nquery: {query:?}"
            ),
        );
    }
    let labels = query.labels();
    for (g, want) in got.iter().zip(want_groups) {
        let what = |s: &str| format!("group {:?} {s}", want.key());
        // `keys`: each item as written, a string or (a bin) a number.
        let keys = g["keys"]
            .as_object()
            .unwrap_or_else(|| ctx.fail(&path, format!("{}: {g}", what("has no keys object"))));
        let want_labels: Vec<String> = query.group_by.iter().map(GroupItem::label).collect();
        if !keys.keys().eq(want_labels.iter()) {
            ctx.fail(&path, format!("{}: expected {want_labels:?}", what("keys")));
        }
        for (part, value) in want.parts.iter().zip(keys.values()) {
            let ok = match part {
                Part::Str(s) => value.as_str() == Some(s.as_str()),
                Part::Num(n) => value.as_f64() == Some(*n),
            };
            if !ok {
                ctx.fail(
                    &path,
                    format!("{}: {part:?} / {value}", what("keys member")),
                );
            }
        }
        let stats = &g["stats"];
        let members: Vec<&str> = stats
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        match &query.field {
            None => {
                if members != ["count"] {
                    ctx.fail(&path, format!("{}: {stats}", what("has more than count")));
                }
            }
            Some(_) => {
                let values = &want.values;
                let n = values.len();
                // The service adds in its own order; compare with a tolerance.
                let sum: f64 = values.iter().sum();
                check_number(ctx, &path, &what("sum"), &stats["sum"], Some(sum));
                if values.iter().all(|v| v.fract() == 0.0) && !stats["sum"].is_i64() {
                    ctx.fail(
                        &path,
                        format!(
                            "{}: a sum of integers must be an integer, got {}",
                            what("sum"),
                            stats["sum"]
                        ),
                    );
                }
                let avg = (n > 0).then(|| sum / n as f64);
                check_number(ctx, &path, &what("avg"), &stats["avg"], avg);
                check_number(
                    ctx,
                    &path,
                    &what("min"),
                    &stats["min"],
                    values.first().copied(),
                );
                check_number(
                    ctx,
                    &path,
                    &what("max"),
                    &stats["max"],
                    values.last().copied(),
                );
                let missing = want.count - n as u64;
                if stats["missing"].as_u64() != Some(missing) {
                    ctx.fail(
                        &path,
                        format!(
                            "{}: expected {missing}, got {}",
                            what("missing"),
                            stats["missing"]
                        ),
                    );
                }
                let percentiles = stats["percentiles"].as_object().unwrap_or_else(|| {
                    ctx.fail(&path, format!("{}: {stats}", what("has no percentiles")))
                });
                let want_names: Vec<String> = labels.iter().map(|l| number_text(*l)).collect();
                if !percentiles.keys().eq(want_names.iter()) {
                    ctx.fail(
                        &path,
                        format!(
                            "{}: expected {want_names:?}, got {:?}",
                            what("percentile labels"),
                            percentiles.keys().collect::<Vec<_>>()
                        ),
                    );
                }
                for (label, name) in labels.iter().zip(&want_names) {
                    let want_p = (n > 0).then(|| np_percentile(values, *label));
                    check_number(
                        ctx,
                        &path,
                        &what(&format!("percentile {name}")),
                        &percentiles[name],
                        want_p,
                    );
                }
                if members
                    != [
                        "count",
                        "sum",
                        "avg",
                        "min",
                        "max",
                        "missing",
                        "percentiles",
                    ]
                {
                    ctx.fail(&path, format!("{}: {members:?}", what("statistics")));
                }
            }
        }
    }
    groups.len()
}

// ---------------------------------------------------------------------------------------------
// The test

fn ndjson(recs: &[Rec]) -> String {
    let mut out = String::new();
    for rec in recs {
        out.push_str(&Value::Object(rec.doc.clone()).to_string());
        out.push('\n');
    }
    out
}

async fn service_matches_model(store: TestStore) {
    let seed = std::env::var("ODQS_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let mut rng = StdRng::seed_from_u64(seed);
    let recs = generate(&mut rng);
    let path = write_file(&store, "prop.ndjson", ndjson(&recs).as_bytes());
    let summary = import_file(&store, &path, SLUG, Some(&schema_json()), Some("id"))
        .await
        .unwrap_or_else(|e| panic!("[property] seed={seed}: import failed: {e}"));
    assert_eq!(summary.records, RECORDS as u64, "seed={seed}");
    let token = api_token(&store).await;
    // The same queries, answered from the in-memory indexes and then by the store alone.
    let queries_seed: u64 = rng.random();
    for (path, router) in [
        ("in-memory index", store.router()),
        ("store", store.router_with(IndexPolicy::OFF)),
    ] {
        let mut rng = StdRng::seed_from_u64(queries_seed);
        let started = std::time::Instant::now();
        let ctx = Ctx {
            seed,
            kind: store.kind,
            answered_by: path,
        };

        let mut coverage = Coverage::default();
        let (mut non_empty, mut returned) = (0, 0);
        for _ in 0..RECORD_QUERIES {
            let query = random_records_query(&mut rng, &recs);
            let (total, got) =
                check_records(&ctx, &mut rng, &router, &token, &recs, query, &mut coverage).await;
            non_empty += usize::from(total > 0);
            returned += got;
        }
        let mut groups = 0;
        for _ in 0..AGG_QUERIES {
            let query = random_agg_query(&mut rng, &recs);
            groups += check_agg(&ctx, &mut rng, &router, &token, &recs, query, &mut coverage).await;
        }
        coverage.assert_covers(
            &expected_features(),
            2,
            &format!("seed={seed} {:?} ({path})", store.kind),
        );
        // The generator must keep producing queries that find something.
        assert!(
            non_empty >= RECORD_QUERIES / 3,
            "seed={seed}: only {non_empty} of {RECORD_QUERIES} queries matched anything"
        );
        assert!(returned > 0 && groups > AGG_QUERIES, "seed={seed}");
        eprintln!(
            "[property] {:?} ({path}) seed={seed}: {RECORD_QUERIES} records queries ({non_empty} non-empty, \
             {returned} records), {AGG_QUERIES} agg queries ({groups} groups) in {:.1?}; {} features",
            store.kind,
            started.elapsed(),
            coverage.0.len()
        );
    }
}

both_stores!(service_matches_model);
