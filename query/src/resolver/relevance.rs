//! Records by relevance (`sort=_score<`) from the store: the same BM25 as the index
//! ([`crate::answer::relevance`]) from the same statistics, read with SQL. The matching
//! records' text ids come in the order of the sort's other keys (then file order), their
//! dictionary values in one more statement; the scores are computed here, the page cut, and
//! its bodies read as the index path reads them.

use std::collections::HashMap;

use super::Resolver;
use crate::answer::relevance::{self, Bm25, Scorer};
use crate::dataset::Dataset;
use crate::dataset::schema::{Column, DatasetSchema};
use crate::engine::store::sql::{Access, Part, ResolvedFilter, Sql, from_where, order_by};
use crate::engine::store::{split, tally};
use crate::error::ApiError;
use crate::request::{Filter, RecordQuery};
use entity::record::{records_table, text_table};
use sea_orm::DatabaseBackend;

impl Resolver {
    /// Every match of `query` by relevance (rows, 0-based, with their scores) when no
    /// in-memory index answers.
    pub(super) async fn scored_order_from_store(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        descending: bool,
    ) -> Result<Vec<(u32, f64)>, ApiError> {
        let schema = &dataset.schema;
        let resolved = self.resolve(schema, &query.filter).await?;
        if resolved.matches_nothing() {
            return Ok(Vec::new());
        }
        let text_fields: Vec<usize> = schema.text_fields().collect();
        let terms =
            relevance::query_terms(&query.filter.terms, &query.filter.field_terms, &text_fields);
        let searched = relevance::searched_fields(&terms);
        let mut frequency = Vec::with_capacity(terms.len());
        // A term's records in the whole version: `q`'s terms come first in `terms`, then
        // `q[name]`'s. A `q` term's dictionary ids are those the request's own resolution
        // found; a `q[name]` term is looked up alone (its field's ids hold every term of it).
        for (i, (term, fields)) in terms.iter().enumerate() {
            let records = match resolved.term_ids.get(i) {
                Some(ids) => {
                    let alone = Filter {
                        terms: vec![term.clone()],
                        ..Filter::default()
                    };
                    let alone = ResolvedFilter {
                        filter: &alone,
                        term_ids: vec![ids.clone()],
                        field_ids: Vec::new(),
                        date_values: Vec::new(),
                        near_positions: None,
                    };
                    self.count(dataset, &alone, None).await?
                }
                None => {
                    let alone = Filter {
                        field_terms: vec![(fields[0], vec![term.clone()])],
                        ..Filter::default()
                    };
                    let alone = self.resolve(schema, &alone).await?;
                    self.count(dataset, &alone, None).await?
                }
            };
            frequency.push(records);
        }
        self.text_lengths_direct(dataset, &searched).await?;
        let mut length = 0;
        for &field in &searched {
            length += self.text_length(schema, field).await?;
        }
        let bm25 = Bm25::new(dataset.meta.record_count.max(0) as u64, length, &frequency);

        // The matches' text ids, in the order of the other sort keys, then file order: each
        // row `pos`, then an id a searched field, flattened.
        let width = 1 + searched.len();
        let backend = self.backend();
        let mut sql = Sql::new(backend);
        sql.push("SELECT \"pos\"");
        for (k, &field) in searched.iter().enumerate() {
            sql.push(", ")
                .ident(schema.sql_column(Column::Field(field)))
                .push(&format!(" AS \"t{k}\""));
        }
        from_where(&mut sql, schema, &resolved, Access::Planner);
        // In file order alone, the SQLite file is read in ranges side by side (a common word
        // over a large version matches millions of rows); any other order through sqlx.
        let direct = if query.sort.is_empty() {
            let split = split::may_split(schema, true);
            let records = dataset.meta.record_count;
            let statement = sql.clone().build();
            split::integer_rows(self.direct.clone(), &statement, (records, split), width).await
        } else {
            None
        };
        let matches = match direct {
            Some(rows) => rows,
            None => {
                order_by(&mut sql, schema, &query.sort, Part::All);
                let rows = self
                    .reader(schema.version_id)
                    .await
                    .query_all(sql.build())
                    .await?;
                let mut matches = Vec::with_capacity(rows.len() * width);
                for row in &rows {
                    matches.push(Some(row.try_get::<i64>("", "pos")?));
                    for k in 0..searched.len() {
                        matches.push(row.try_get::<Option<i64>>("", &format!("t{k}"))?);
                    }
                }
                matches
            }
        };
        let mut ids: Vec<i64> = matches
            .chunks(width)
            .flat_map(|row| row[1..].iter().flatten())
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let values = self.text_values(schema.version_id, &ids).await?;

        let mut scorer = Scorer::new(&bm25, &terms);
        let mut scored: Vec<(i64, f64)> = Vec::with_capacity(matches.len() / width);
        for row in matches.chunks(width) {
            let texts: Vec<(usize, &str)> = searched
                .iter()
                .zip(&row[1..])
                .filter_map(|(&field, id)| {
                    id.and_then(|id| values.get(&id))
                        .map(|text| (field, text.as_str()))
                })
                .collect();
            scored.push((row[0].ok_or(ApiError::Internal)?, scorer.score(&texts)));
        }
        relevance::order_stably(&mut scored, descending);
        Ok(scored
            .into_iter()
            .map(|(pos, score)| ((pos - 1) as u32, score))
            .collect())
    }

    /// The characters of each of `fields`' values over every record of the version, for
    /// those not yet kept, from one read of their columns on both cores (an SQLite file): each
    /// dictionary id's records counted, each id's text looked up once. The statement of
    /// [`Self::text_length`] joins every record to the dictionary, a look-up a record and
    /// field, which is slow on a large version. Nothing is kept when the
    /// read fails or a field holds too many distinct texts, and that statement answers.
    async fn text_lengths_direct(
        &self,
        dataset: &Dataset,
        fields: &[usize],
    ) -> Result<(), ApiError> {
        let Some(direct) = self.direct.clone() else {
            return Ok(());
        };
        let schema = &dataset.schema;
        let unknown: Vec<usize> = fields
            .iter()
            .copied()
            .filter(|&field| self.totals.get(&length_key(schema, field)).is_none())
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let only = (None, Some(unknown.clone()));
        let records = dataset.meta.record_count;
        let Some(tallies) = tally::tally_direct(direct, schema.clone(), only, records).await else {
            return Ok(());
        };
        let counted: Vec<(usize, &tally::TextCounts)> = unknown
            .iter()
            .filter_map(|&field| {
                let counts = tallies.get(field)?.as_ref()?.text_ids.as_ref()?;
                Some((field, counts))
            })
            .collect();
        let mut ids: Vec<i64> = counted
            .iter()
            .flat_map(|(_, c)| c.keys())
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let values = self.text_values(schema.version_id, &ids).await?;
        for (field, counts) in counted {
            let length = counts
                .iter()
                .map(|(id, (n, _))| n * values.get(id).map_or(0, |v| v.chars().count() as u64))
                .sum();
            self.totals.put(length_key(schema, field), length);
        }
        Ok(())
    }

    /// The characters of a text field's values over every record of its version (kept like
    /// totals, since a version never changes).
    async fn text_length(&self, schema: &DatasetSchema, field: usize) -> Result<u64, ApiError> {
        let key = length_key(schema, field);
        if let Some(n) = self.totals.get(&key) {
            return Ok(n);
        }
        let backend = self.backend();
        let id = match backend {
            DatabaseBackend::Postgres => "\"tid\"",
            _ => "rowid",
        };
        let mut sql = Sql::new(backend);
        sql.push("SELECT SUM(LENGTH(d.\"value\")) AS n FROM ")
            .ident(&records_table(schema.version_id))
            .push(" r JOIN ")
            .ident(&text_table(schema.version_id))
            .push(&format!(" d ON d.{id} = r."))
            .ident(schema.sql_column(Column::Field(field)));
        let row = self
            .reader(schema.version_id)
            .await
            .query_one(sql.build())
            .await?;
        let n = match row {
            Some(row) => row.try_get::<Option<i64>>("", "n")?.unwrap_or(0).max(0) as u64,
            None => 0,
        };
        self.totals.put(key, n);
        Ok(n)
    }

    /// The lower-cased texts of dictionary `ids`.
    pub(super) async fn text_values(
        &self,
        version_id: i64,
        ids: &[i64],
    ) -> Result<HashMap<i64, String>, ApiError> {
        let mut values = HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(values);
        }
        let backend = self.backend();
        let mut sql = Sql::new(backend);
        match backend {
            DatabaseBackend::Postgres => {
                sql.push("SELECT \"tid\" AS id, \"value\" FROM ")
                    .ident(&text_table(version_id))
                    .push(" WHERE \"tid\" = ANY(")
                    .bind(ids.to_vec())
                    .push(")");
            }
            _ => {
                let json = serde_json::to_string(ids).expect("ids serialize");
                sql.push("SELECT rowid AS id, \"value\" FROM ")
                    .ident(&text_table(version_id))
                    .push(" WHERE rowid IN (SELECT value FROM json_each(")
                    .bind(json)
                    .push("))");
            }
        }
        for row in self.reader(version_id).await.query_all(sql.build()).await? {
            values.insert(row.try_get::<i64>("", "id")?, row.try_get("", "value")?);
        }
        Ok(values)
    }
}

/// Where the totals keep a text field's characters over its version.
fn length_key(schema: &DatasetSchema, field: usize) -> String {
    format!("{}|length|{field}", schema.version_id)
}
