//! Records by relevance (`sort=_score<`) from the store: the same BM25 as the index
//! ([`crate::answer::relevance`]) from the same statistics, read with SQL. The matching
//! records' text ids come in the order of the sort's other keys (then file order), their
//! dictionary values in one more statement; the scores are computed here, the page cut, and
//! its bodies read as the index path reads them.

use std::collections::HashMap;

use super::Resolver;
use crate::answer::relevance::{self, Bm25, Scorer};
use crate::dataset::Dataset;
use crate::dataset::schema::DatasetSchema;
use crate::engine::store::sql::ResolvedFilter;
use crate::engine::store::{tally, text};
use crate::error::ApiError;
use crate::request::{Filter, RecordQuery};

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
        let frequency = self.term_records(dataset, &resolved, &terms).await?;
        self.text_lengths_direct(dataset, &searched).await?;
        let mut length = 0;
        for &field in &searched {
            length += self.text_length(schema, field).await?;
        }
        let bm25 = Bm25::new(dataset.meta.record_count.max(0) as u64, length, &frequency);

        // The matches' text ids, in the order of the other sort keys, then file order: each
        // row `pos`, then an id a searched field, flattened.
        let width = 1 + searched.len();
        let reader = self.reader(schema.version_id).await;
        let read = text::Matches {
            schema,
            resolved: &resolved,
            searched: &searched,
            sort: &query.sort,
            records: dataset.meta.record_count,
        };
        let matches = text::matches(self.direct(schema.version_id), &reader, &read).await?;
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

    /// Each of `terms`' records in the whole version, for BM25: `q`'s terms come first in
    /// `terms`, then `q[name]`'s. A `q` term's dictionary ids are those the request's own
    /// resolution found; a `q[name]` term is looked up alone (its field's ids hold every term
    /// of it).
    async fn term_records(
        &self,
        dataset: &Dataset,
        resolved: &ResolvedFilter<'_>,
        terms: &[(String, Vec<usize>)],
    ) -> Result<Vec<u64>, ApiError> {
        let schema = &dataset.schema;
        let mut frequency = Vec::with_capacity(terms.len());
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
        Ok(frequency)
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
        let Some(direct) = self.direct(dataset.schema.version_id) else {
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
        let reader = self.reader(schema.version_id).await;
        let n = text::length(&reader, schema, field).await?;
        self.totals.put(key, n);
        Ok(n)
    }

    /// The lower-cased texts of dictionary `ids`.
    pub(super) async fn text_values(
        &self,
        version_id: i64,
        ids: &[i64],
    ) -> Result<HashMap<i64, String>, ApiError> {
        let reader = self.reader(version_id).await;
        text::values(&reader, version_id, ids).await
    }
}

/// Where the totals keep a text field's characters over its version.
fn length_key(schema: &DatasetSchema, field: usize) -> String {
    format!("{}|length|{field}", schema.version_id)
}
