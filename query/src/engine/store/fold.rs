//! The store side of an agg: a grouped statement's rows folded into groups as they arrive,
//! through sqlx's stream or straight from the SQLite file on blocking threads, keys bucketed
//! with the same functions the in-memory index uses ([`crate::answer::groups`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use entity::FieldType;
use futures_util::StreamExt;
use rusqlite::types::ValueRef;
use sea_orm::{ConnectionTrait, DatabaseConnection, StreamTrait};

use super::direct::DirectSqlite;
use super::split;
use crate::answer::groups::{KeyPart, bin, date_part};
use crate::dataset::DatasetSchema;
use crate::error::ApiError;
use crate::request::{AggQuery, Grouping};

/// Each group's key, count and values of `field`, as a store path folds them.
pub(crate) type Groups = Vec<(Vec<KeyPart>, (u64, Vec<f64>))>;

/// [`Groups`] with each key's place in them, so a row or a part's group costs one look-up.
#[derive(Default)]
struct GroupTable {
    groups: Groups,
    /// foldhash, not SipHash: a fold looks up a key for every row it reads.
    places: HashMap<Vec<KeyPart>, usize, foldhash::fast::RandomState>,
}

impl GroupTable {
    /// The count and values of the group `key`, a new empty one the first time (the key is
    /// copied only then).
    fn entry(&mut self, key: &[KeyPart]) -> &mut (u64, Vec<f64>) {
        let place = match self.places.get(key) {
            Some(&place) => place,
            None => {
                self.places.insert(key.to_vec(), self.groups.len());
                self.groups.push((key.to_vec(), Default::default()));
                self.groups.len() - 1
            }
        };
        &mut self.groups[place].1
    }
}

/// Folds store rows (`k0…` key columns, then `n` or `v`) into [`Groups`] as they arrive, so
/// memory holds the groups and their values (8 bytes each), never the rows; a key is written
/// into one reused buffer and copied only for a new group.
struct Fold<'q> {
    query: &'q AggQuery,
    schema: &'q DatasetSchema,
    groups: GroupTable,
    key: Vec<KeyPart>,
}

impl<'q> Fold<'q> {
    fn new(query: &'q AggQuery, schema: &'q DatasetSchema) -> Self {
        Fold {
            query,
            schema,
            groups: GroupTable::default(),
            key: Vec::with_capacity(query.group_by.len()),
        }
    }

    /// Adds one row, read through `text` and `number` (by column index); `tally` is the row's
    /// count (a count query) or its value of `field` (`None`: missing).
    fn add<'r>(
        &mut self,
        mut text: impl FnMut(usize) -> Result<Cow<'r, str>, ApiError>,
        mut number: impl FnMut(usize) -> Result<f64, ApiError>,
        tally: RowTally,
    ) -> Result<(), ApiError> {
        // A value with no bucket (a date text that is not a date) leaves its record
        // ungrouped, as in memory.
        for (i, item) in self.query.group_by.iter().enumerate() {
            let part = match (self.schema.fields[item.field].field_type, item.grouping) {
                (FieldType::Number, Grouping::Bin(width)) => KeyPart::Num(bin(number(i)?, width)),
                (_, Grouping::Date(bucket)) => match date_part(&text(i)?, bucket) {
                    Some(part) => part,
                    None => return Ok(()),
                },
                _ => {
                    let value = text(i)?;
                    if let Some(KeyPart::Str(kept)) = self.key.get_mut(i) {
                        kept.clear();
                        kept.push_str(&value);
                        continue;
                    }
                    KeyPart::Str(value.into_owned())
                }
            };
            match self.key.get_mut(i) {
                Some(slot) => *slot = part,
                None => self.key.push(part),
            }
        }
        let entry = self.groups.entry(&self.key);
        match tally {
            RowTally::Count(n) => entry.0 += n,
            RowTally::Value(v) => {
                entry.0 += 1;
                entry.1.extend(v);
            }
        }
        Ok(())
    }

    /// How many groups the rows so far fall in.
    fn group_count(&self) -> usize {
        self.groups.groups.len()
    }

    fn finish(self) -> Groups {
        self.groups.groups
    }
}

/// What one store row adds to its group.
enum RowTally {
    /// A count query's `n`.
    Count(u64),
    /// The row's value of `field`, if it has one.
    Value(Option<f64>),
}

/// The grouped statement's rows folded through sqlx's stream (PostgreSQL, or SQLite when
/// the direct read failed).
pub(crate) async fn fold_stream(
    db: &DatabaseConnection,
    statement: sea_orm::Statement,
    query: &AggQuery,
    schema: &DatasetSchema,
) -> Result<Groups, ApiError> {
    let names: Vec<String> = (0..query.group_by.len()).map(|i| format!("k{i}")).collect();
    let mut fold = Fold::new(query, schema);
    let mut rows = db.stream_raw(statement).await?;
    while let Some(row) = rows.next().await {
        let row = row?;
        let tally = match query.field {
            None => RowTally::Count(row.try_get::<i64>("", "n")?.max(0) as u64),
            Some(_) => RowTally::Value(row.try_get::<Option<f64>>("", "v")?),
        };
        fold.add(
            |i| Ok(Cow::Owned(row.try_get::<String>("", &names[i])?)),
            |i| Ok(row.try_get::<f64>("", &names[i])?),
            tally,
        )?;
    }
    Ok(fold.finish())
}

/// An ungrouped statement's rows (each row `1 AS n` or its value `v`, the statement ending
/// with its conditions) folded on blocking threads straight from the SQLite file (sqlx hands
/// rows over one by one through its worker thread, which dominates a fold over millions of
/// rows). A statement over many records is read in parts ([`split`]), their groups merged (values are sorted before any statistic,
/// so the order they arrive in changes nothing). A read stops once it holds `cap` groups (the
/// caller then counts them in the store). `None` when there is no direct reader or it
/// failed, and the caller streams through sqlx.
pub(crate) async fn fold_direct(
    direct: Option<Arc<DirectSqlite>>,
    statement: &sea_orm::Statement,
    query: &AggQuery,
    schema: &Arc<DatasetSchema>,
    (records, cap): (i64, Option<u64>),
) -> Option<Groups> {
    let may_split = split::may_split(schema, !query.filter.is_empty());
    let (query, schema) = (Arc::new(query.clone()), schema.clone());
    let folded = split::each_part(
        direct,
        statement,
        (records, may_split),
        move |direct, sql, values| fold_rows(direct, (sql, values), &query, &schema, cap),
    )
    .await?;
    Some(merge(folded))
}

/// One direct read's rows (`k0…` key columns, then `n` or `v`) folded into groups, up to
/// `cap` groups.
fn fold_rows(
    direct: &DirectSqlite,
    (sql, values): (&str, &[rusqlite::types::Value]),
    query: &AggQuery,
    schema: &DatasetSchema,
    cap: Option<u64>,
) -> Result<Groups, ApiError> {
    let mut fold = Fold::new(query, schema);
    let keys = query.group_by.len();
    let cap = cap.map_or(usize::MAX, |cap| cap as usize);
    let mut full = false;
    let read = direct.each_row(sql, values, |row| {
        if fold.group_count() >= cap {
            full = true;
            // Ends the read; not an error (below).
            return Err(ApiError::Internal);
        }
        let tally = match (query.field, row.get_ref(keys)?) {
            (None, ValueRef::Integer(n)) => RowTally::Count(n.max(0) as u64),
            (Some(_), ValueRef::Real(v)) => RowTally::Value(Some(v)),
            (Some(_), ValueRef::Integer(v)) => RowTally::Value(Some(v as f64)),
            (Some(_), ValueRef::Null) => RowTally::Value(None),
            _ => return Err(ApiError::Internal),
        };
        fold.add(
            |i| match row.get_ref(i)? {
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .map(Cow::Borrowed)
                    .map_err(|_| ApiError::Internal),
                _ => Err(ApiError::Internal),
            },
            |i| match row.get_ref(i)? {
                ValueRef::Real(v) => Ok(v),
                ValueRef::Integer(v) => Ok(v as f64),
                _ => Err(ApiError::Internal),
            },
            tally,
        )
    });
    match read {
        Err(_) if full => Ok(fold.finish()),
        read => read.map(|()| fold.finish()),
    }
}

/// The groups of parts read separately, as one read would have folded them (counts added,
/// values gathered; their order is not kept, as statistics sort them first).
fn merge(parts: Vec<Groups>) -> Groups {
    let mut merged = GroupTable::default();
    for groups in parts {
        for (key, (count, values)) in groups {
            let group = merged.entry(&key);
            group.0 += count;
            group.1.extend(values);
        }
    }
    merged.groups
}

/// The number of groups a capped grouped statement has in all, for the message of
/// `too_many_groups`: the statement without its cap, counted by the store.
pub(crate) async fn count_store_groups(
    db: &DatabaseConnection,
    capped: sea_orm::Statement,
) -> Result<u64, ApiError> {
    let text = capped
        .sql
        .rsplit_once(" LIMIT ")
        .map_or(capped.sql.as_str(), |(head, _)| head);
    let mut values = capped.values.map(|v| v.0).unwrap_or_default();
    values.pop();
    let count = sea_orm::Statement::from_sql_and_values(
        capped.db_backend,
        format!("SELECT COUNT(*) AS n FROM ({text}) AS g"),
        values,
    );
    let row = db.query_one_raw(count).await?.ok_or(ApiError::Internal)?;
    Ok(row.try_get::<i64>("", "n")?.max(0) as u64)
}
