//! Property test: the REST read API against an in-memory model.
//!
//! A seeded generator writes ~400 NDJSON records (keywords that differ only by case, missing,
//! null and empty values, integers and fractions written as `5` and `5.0`, a boolean, a date,
//! two text fields with mixed-case and Chinese words, a nested keyword `geo.hash`), imports
//! them, and then sends ~200 random records queries and ~50 random agg queries. Each answer is
//! compared with what contract §5 / §6 say it must be, computed here straight from the
//! generated records: totals, the sequence of `_id`s, projected keys, groups and statistics.
//!
//! The seed is fixed so that a failure is reproducible; `ODQS_PROPERTY_SEED=<n>` picks another
//! one. Every failure message starts with the seed and the request.
//!
//! What the model assumes where the contract leaves room (the import's documented choices):
//! an empty string is no value (like a missing key or `null`), so such records sort last, match
//! no exact filter and fall in no group.

mod common;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use common::{TestStore, api_token, get_with, import_file, write_file};
use graphql::query::memory::IndexPolicy;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};

const RECORDS: usize = 400;
const RECORD_QUERIES: usize = 200;
const AGG_QUERIES: usize = 50;
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
            3..=6 => {
                let d = format!(
                    "2021-0{}-{:02}T{:02}:00:00Z",
                    rng.random_range(1..=9),
                    rng.random_range(1..=28),
                    rng.random_range(0..24)
                );
                doc.insert("day".into(), json!(d));
                Some(d)
            }
            _ => {
                let d = format!(
                    "202{}-0{}-{:02}",
                    rng.random_range(0..=3),
                    rng.random_range(1..=9),
                    rng.random_range(1..=28)
                );
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
            day,
            note,
            title,
        });
    }
    recs
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
}

#[derive(Clone, Debug, Default)]
struct RecordsQuery {
    filter: Filter,
    /// (name, descending).
    sort: Vec<(String, bool)>,
    page: Option<u64>,
    per_page: Option<u64>,
    fields: Option<Vec<String>>,
}

#[derive(Clone, Debug)]
struct AggQuery {
    filter: Filter,
    group_by: String,
    field: Option<String>,
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
    RecordsQuery {
        filter,
        sort,
        page: None, // chosen once the expected total is known
        per_page,
        fields,
    }
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
    pairs.shuffle(rng);
    format!("/api/v1/datasets/{SLUG}/records?{}", pairs.join("&"))
}

fn agg_path(rng: &mut StdRng, query: &AggQuery) -> String {
    let mut pairs = filter_pairs(rng, &query.filter);
    pairs.push(format!("group_by={}", enc(&query.group_by)));
    if let Some(field) = &query.field {
        pairs.push(format!("field={}", enc(field)));
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

fn exact_matches(rec: &Rec, name: &str, values: &[&String]) -> bool {
    let Some(have) = rec.value(name) else {
        return false;
    };
    values.iter().any(|v| match (&have, field_type(name)) {
        (Val::Num(n), Type::Number) => v.trim().parse::<f64>().expect("a number") == *n,
        (Val::Str(s), Type::Boolean) => v.trim().eq_ignore_ascii_case(s),
        (Val::Str(s), _) => *v == s,
        other => panic!("unexpected {other:?}"),
    })
}

fn model_filter(recs: &[Rec], filter: &Filter) -> Vec<Rec> {
    let q_terms = filter.q.as_deref().map(lower_terms).unwrap_or_default();
    let field_terms = filter
        .q_field
        .as_ref()
        .map(|(name, text)| (name.as_str(), lower_terms(text)));
    let mut by_name: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    for (name, value) in &filter.exact {
        by_name.entry(name).or_default().push(value);
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
            by_name
                .iter()
                .all(|(name, values)| exact_matches(rec, name, values))
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

#[derive(Debug)]
struct ExpectedGroup {
    key: String,
    count: u64,
    values: Vec<f64>,
}

fn model_agg(recs: &[Rec], query: &AggQuery) -> (u64, Vec<ExpectedGroup>) {
    let matched = model_filter(recs, &query.filter);
    let mut groups: BTreeMap<String, ExpectedGroup> = BTreeMap::new();
    for rec in &matched {
        let Some(Val::Str(key)) = rec.value(&query.group_by) else {
            continue;
        };
        let group = groups.entry(key.clone()).or_insert_with(|| ExpectedGroup {
            key,
            count: 0,
            values: Vec::new(),
        });
        group.count += 1;
        if let Some(field) = &query.field
            && let Some(v) = rec.number(field)
        {
            group.values.push(v);
        }
    }
    let mut groups: Vec<ExpectedGroup> = groups.into_values().collect();
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.key.as_bytes().cmp(b.key.as_bytes()))
    });
    (matched.len() as u64, groups)
}

// ---------------------------------------------------------------------------------------------
// Checking

struct Ctx {
    seed: u64,
    kind: common::Kind,
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
) -> (u64, usize) {
    let mut expected = model_filter(recs, &query.filter);
    model_sort(&mut expected, &query.sort);
    let total = expected.len() as u64;
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
) -> usize {
    let (total_records, groups) = model_agg(recs, &query);
    let path = agg_path(rng, &query);
    let answer = get_with(router, &path, Some(token), &[]).await;
    if answer.status != 200 {
        ctx.fail(
            &path,
            format!("expected 200, got {}: {}", answer.status, answer.body),
        );
    }
    let body = &answer.body;
    if body["total_records"].as_u64() != Some(total_records) {
        ctx.fail(
            &path,
            format!(
                "total_records: expected {total_records}, got {}",
                body["total_records"]
            ),
        );
    }
    let got = body["groups"]
        .as_array()
        .unwrap_or_else(|| ctx.fail(&path, format!("groups is not an array: {body}")));
    if body["total_groups"].as_u64() != Some(groups.len() as u64) {
        ctx.fail(
            &path,
            format!(
                "total_groups: expected {}, got {}",
                groups.len(),
                body["total_groups"]
            ),
        );
    }
    let got_keys: Vec<(String, u64)> = got
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap_or("<no key>").to_string(),
                g["stats"]["count"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect();
    let want_keys: Vec<(String, u64)> = groups.iter().map(|g| (g.key.clone(), g.count)).collect();
    if got_keys != want_keys {
        ctx.fail(
            &path,
            format!("groups (key, count):\nexpected {want_keys:?}\n     got {got_keys:?}"),
        );
    }
    for (g, want) in got.iter().zip(&groups) {
        let stats = &g["stats"];
        let what = |s: &str| format!("group {:?} {s}", want.key);
        match &query.field {
            None => {
                let keys: Vec<&str> = stats
                    .as_object()
                    .map(|o| o.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if keys != ["count"] {
                    ctx.fail(&path, format!("{}: {stats}", what("has more than count")));
                }
            }
            Some(_) => {
                let mut values = want.values.clone();
                // Sum in file order here (the service may add in any order).
                let sum: f64 = values.iter().sum();
                values.sort_by(|a, b| a.partial_cmp(b).unwrap());
                let n = values.len();
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
                for p in ["25", "50", "75"] {
                    let want_p = (n > 0).then(|| np_percentile(&values, p.parse().unwrap()));
                    check_number(
                        ctx,
                        &path,
                        &what(&format!("percentile {p}")),
                        &stats["percentiles"][p],
                        want_p,
                    );
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

        let (mut non_empty, mut returned) = (0, 0);
        for _ in 0..RECORD_QUERIES {
            let query = random_records_query(&mut rng, &recs);
            let (total, got) = check_records(&ctx, &mut rng, &router, &token, &recs, query).await;
            non_empty += usize::from(total > 0);
            returned += got;
        }
        let mut groups = 0;
        for _ in 0..AGG_QUERIES {
            let group_by = pick(
                &mut rng,
                &["kind", "kind", "color", "geo.hash", "geo.hash", "id"],
            );
            let field = *pick(&mut rng, &[None, Some("n1"), Some("n2"), Some("n2")]);
            let filter = if rng.random_bool(0.3) {
                Filter::default()
            } else {
                random_filter(&mut rng, &recs)
            };
            let query = AggQuery {
                filter,
                group_by: group_by.to_string(),
                field: field.map(str::to_string),
            };
            groups += check_agg(&ctx, &mut rng, &router, &token, &recs, query).await;
        }
        // The generator must keep producing queries that find something.
        assert!(
            non_empty >= RECORD_QUERIES / 3,
            "seed={seed}: only {non_empty} of {RECORD_QUERIES} queries matched anything"
        );
        assert!(returned > 0 && groups > AGG_QUERIES, "seed={seed}");
        eprintln!(
            "[property] {:?} ({path}) seed={seed}: {RECORD_QUERIES} records queries ({non_empty} non-empty, \
             {returned} records), {AGG_QUERIES} agg queries ({groups} groups) in {:.1?}",
            store.kind,
            started.elapsed()
        );
    }
}

both_stores!(service_matches_model);
