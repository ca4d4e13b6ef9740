//! A guide's facts for a dataset beyond the in-memory index, in one read of the SQLite file:
//! every typed column of every record tallied at once (nulls, value counts, ranges), read in
//! parts side by side ([`split`]), instead of a statement or two per field and fact, each a
//! scan of the table, so a wide dataset's facts cost one read instead of dozens.
//! A field whose distinct values pass [`DISTINCT_CAP`] keeps its null count and range but
//! drops its counts, so memory stays bounded, and the caller asks the store for that field's
//! common values with a statement of its own.

use std::collections::HashMap;
use std::sync::Arc;

use entity::FieldType;
use entity::record::records_table;
use rusqlite::types::ValueRef;

use super::direct::DirectSqlite;
use super::split;
use crate::dataset::DatasetSchema;
use crate::error::ApiError;

/// The distinct values a field's counts may hold before they are dropped.
pub(crate) const DISTINCT_CAP: usize = 100_000;

pub(crate) type Counts<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A text field's dictionary ids: how many records hold each, and the first one's position.
pub(crate) type TextCounts = Counts<i64, (u64, i64)>;

/// What one read found in one field's column.
#[derive(Debug, Default)]
pub(crate) struct ColumnTally {
    /// Records without a value (the column is NULL).
    pub nulls: u64,
    /// Keyword, boolean and date values by their text: how many records hold each; `None`
    /// once past [`DISTINCT_CAP`]. Left empty for the identifier and dates.
    pub texts: Option<Counts<String, u64>>,
    /// Number values by their bits (zero's sign dropped): how many records hold each.
    pub numbers: Option<Counts<u64, u64>>,
    /// Text fields' dictionary ids: how many records hold each, and the first position.
    pub text_ids: Option<TextCounts>,
    /// The smallest and largest number.
    pub number_range: Option<(f64, f64)>,
    /// The smallest and largest text in byte order (dates).
    pub text_range: Option<(String, String)>,
}

/// Each field's tally, by its place in the schema; `None` for fields without a column.
pub(crate) type Tallies = Vec<Option<ColumnTally>>;

/// Tallies every column of version `schema` (or only those of the fields at `only`) in one
/// read; `None` when the read fails (the caller then asks the store field by field).
pub(crate) async fn tally_direct(
    direct: Arc<DirectSqlite>,
    schema: Arc<DatasetSchema>,
    (id_field, only): (Option<String>, Option<Vec<usize>>),
    records: i64,
) -> Option<Tallies> {
    let columns = read_columns(&schema, (id_field.as_deref(), only.as_deref()));
    // Column names are the schema's own (`c{n}`, `t{n}`), quoted; the table's name comes from
    // an integer: nothing of a request reaches this text.
    let mut sql = String::from("SELECT \"pos\"");
    for (_, column, _) in &columns {
        sql.push_str(&format!(", \"{column}\""));
    }
    sql.push_str(&format!(
        " FROM \"{}\" WHERE 1=1",
        records_table(schema.version_id)
    ));
    let statement = sea_orm::Statement::from_string(sea_orm::DatabaseBackend::Sqlite, sql);
    let fields = schema.fields.len();
    let columns: Arc<Vec<(usize, Read)>> =
        Arc::new(columns.into_iter().map(|(i, _, read)| (i, read)).collect());
    let parts = split::each_part(
        Some(direct),
        &statement,
        (records, true),
        move |direct, sql, values| tally_part(direct, (sql, values), fields, &columns),
    )
    .await?;
    parts.into_iter().reduce(merge)
}

/// What a column's values are read as.
#[derive(Clone, Copy)]
enum Read {
    /// Texts counted (keywords, booleans).
    Counted,
    /// Texts ranged (dates).
    Ranged,
    /// Only nulls (the identifier).
    Nulls,
    /// Numbers counted and ranged.
    Number,
    /// Dictionary ids counted with their first position.
    TextId,
}

/// The columns one read takes: (field, column, how it is read), for every field with a
/// column (or those at `only`).
fn read_columns<'s>(
    schema: &'s DatasetSchema,
    (id_field, only): (Option<&str>, Option<&[usize]>),
) -> Vec<(usize, &'s str, Read)> {
    schema
        .fields
        .iter()
        .enumerate()
        .filter(|(i, _)| only.is_none_or(|only| only.contains(i)))
        .filter_map(|(i, field)| {
            let read = match field.field_type {
                FieldType::Keyword if id_field == Some(field.name.as_str()) => Read::Nulls,
                FieldType::Keyword | FieldType::Boolean => Read::Counted,
                FieldType::Date => Read::Ranged,
                FieldType::Number => Read::Number,
                FieldType::Text => Read::TextId,
                FieldType::Json => return None,
            };
            Some((i, field.column.as_deref()?, read))
        })
        .collect()
}

/// One part's rows (`pos`, then `columns` in order) tallied, a tally for each of `fields`.
fn tally_part(
    direct: &DirectSqlite,
    (sql, values): (&str, &[rusqlite::types::Value]),
    fields: usize,
    columns: &[(usize, Read)],
) -> Result<Tallies, ApiError> {
    let mut tallies: Tallies = (0..fields).map(|_| None).collect();
    for &(i, read) in columns {
        tallies[i] = Some(ColumnTally {
            texts: matches!(read, Read::Counted).then(Counts::default),
            numbers: matches!(read, Read::Number).then(Counts::default),
            text_ids: matches!(read, Read::TextId).then(Counts::default),
            ..ColumnTally::default()
        });
    }
    direct.each_row(sql, values, |row| {
        let pos: i64 = row.get(0)?;
        for (k, &(i, read)) in columns.iter().enumerate() {
            let tally = tallies[i].as_mut().expect("made above");
            let value = row.get_ref(k + 1)?;
            if value == ValueRef::Null {
                tally.nulls += 1;
                continue;
            }
            match (read, value) {
                (Read::Nulls, _) => {}
                (Read::Counted, ValueRef::Text(text)) => {
                    let text = std::str::from_utf8(text).map_err(|_| ApiError::Internal)?;
                    count(
                        &mut tally.texts,
                        text,
                        |n| *n += 1,
                        || (text.to_string(), 1),
                    );
                }
                (Read::Ranged, ValueRef::Text(text)) => {
                    let text = std::str::from_utf8(text).map_err(|_| ApiError::Internal)?;
                    match &mut tally.text_range {
                        None => tally.text_range = Some((text.to_string(), text.to_string())),
                        Some((min, max)) => {
                            if text.as_bytes() < min.as_bytes() {
                                *min = text.to_string();
                            } else if text.as_bytes() > max.as_bytes() {
                                *max = text.to_string();
                            }
                        }
                    }
                }
                (Read::Number, ValueRef::Real(_) | ValueRef::Integer(_)) => {
                    let n = match value {
                        ValueRef::Real(n) => n,
                        ValueRef::Integer(n) => n as f64,
                        _ => unreachable!("matched above"),
                    };
                    add_number(tally, n);
                }
                (Read::TextId, ValueRef::Integer(id)) => {
                    count(&mut tally.text_ids, &id, |n| n.0 += 1, || (id, (1, pos)));
                }
                _ => return Err(ApiError::Internal),
            }
        }
        Ok(())
    })?;
    Ok(tallies)
}

/// Adds number `n` to a tally's range and counts (zero counted once, whatever its sign, as
/// the store groups it).
fn add_number(tally: &mut ColumnTally, n: f64) {
    let n = if n == 0.0 { 0.0 } else { n };
    tally.number_range = Some(match tally.number_range {
        None => (n, n),
        Some((min, max)) => (min.min(n), max.max(n)),
    });
    let bits = n.to_bits();
    count(&mut tally.numbers, &bits, |n| *n += 1, || (bits, 1));
}

/// Adds a record to `key`'s entry of `counts` (`bump` on one it holds, `first` makes a new
/// one); the counts are dropped when a new key would pass [`DISTINCT_CAP`].
fn count<Q, K, V>(
    counts: &mut Option<Counts<K, V>>,
    key: &Q,
    bump: impl FnOnce(&mut V),
    first: impl FnOnce() -> (K, V),
) where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
{
    let Some(map) = counts else {
        return;
    };
    if let Some(value) = map.get_mut(key) {
        bump(value);
        return;
    }
    if map.len() < DISTINCT_CAP {
        let (key, value) = first();
        map.insert(key, value);
    } else {
        *counts = None;
    }
}

/// Two parts' tallies as one read would have made them (parts in position order: `b` after
/// `a`, so `a`'s first positions win).
fn merge(mut a: Tallies, b: Tallies) -> Tallies {
    for (into, from) in a.iter_mut().zip(b) {
        let (Some(into), Some(from)) = (into.as_mut(), from) else {
            continue;
        };
        into.nulls += from.nulls;
        into.texts = add_counts(into.texts.take(), from.texts, |n, m| *n += m);
        into.numbers = add_counts(into.numbers.take(), from.numbers, |n, m| *n += m);
        into.text_ids = add_counts(into.text_ids.take(), from.text_ids, |n, m| n.0 += m.0);
        into.number_range = match (into.number_range, from.number_range) {
            (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
            (one, other) => one.or(other),
        };
        into.text_range = match (into.text_range.take(), from.text_range) {
            (Some((a0, a1)), Some((b0, b1))) => Some((
                if b0.as_bytes() < a0.as_bytes() {
                    b0
                } else {
                    a0
                },
                if b1.as_bytes() > a1.as_bytes() {
                    b1
                } else {
                    a1
                },
            )),
            (one, other) => one.or(other),
        };
    }
    a
}

/// `from`'s counts added into `into`'s (existing keys through `add`); `None` when either
/// was dropped or the sum passes [`DISTINCT_CAP`].
fn add_counts<K: std::hash::Hash + Eq, V>(
    into: Option<Counts<K, V>>,
    from: Option<Counts<K, V>>,
    add: impl Fn(&mut V, V),
) -> Option<Counts<K, V>> {
    let (mut into, from) = (into?, from?);
    for (key, value) in from {
        match into.get_mut(&key) {
            Some(kept) => add(kept, value),
            None => {
                into.insert(key, value);
            }
        }
    }
    (into.len() <= DISTINCT_CAP).then_some(into)
}
