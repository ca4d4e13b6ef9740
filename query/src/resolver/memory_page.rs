//! Records pages from the in-memory index (contract §5): the page's rows found by the index
//! (a text page, a kept order of relevance or distance, or the filter's matches walked in the
//! sort's order), their facets, and their bodies read as the store path reads them.

use std::sync::Arc;

use serde_json::Value;

use super::Resolver;
use super::orders::{Order, Orders};
use super::records::{lead, total_key, whole_metres};
use crate::answer::views::RecordPage;
use crate::dataset::Dataset;
use crate::engine::memory::MemIndex;
use crate::engine::memory::rows::Bits;
use crate::error::ApiError;
use crate::request::RecordQuery;
use crate::request::places::Near;

/// The rows of a page as the index found them.
struct Rows {
    /// Every match's count.
    total: u64,
    /// The page's rows (0-based), in order.
    positions: Vec<u32>,
    /// Each row's `_score` or `_distance_m` under that member's name, when the page is
    /// ordered by one.
    members: Option<(&'static str, Vec<Value>)>,
    /// The rows matched, when finding the page needed them (a facet counts them all).
    matched: Option<Option<Bits>>,
}

impl Resolver {
    /// [`Self::records`] when the in-memory index holds the version.
    pub(super) async fn records_from_index(
        &self,
        index: &MemIndex,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<RecordPage, ApiError> {
        let schema = &dataset.schema;
        let rows = self.index_rows(index, dataset, query)?;
        let facets = match &query.facets {
            None => None,
            Some(_) => match self.facets_kept(dataset, query) {
                Some(kept) => Some(kept),
                None => {
                    let matches = rows.matched.unwrap_or_else(|| index.matches(&query.filter));
                    self.facets(dataset, query, Some((index, matches.as_ref())))
                        .await?
                }
            },
        };
        let projection = query.fields.as_deref();
        let mut records = self
            .stored_at_positions(schema, &rows.positions)
            .await?
            .into_iter()
            .map(|stored| stored.shaped(schema, projection))
            .collect::<Result<Vec<_>, ApiError>>()?;
        if let Some((name, values)) = rows.members {
            records = records
                .into_iter()
                .zip(values)
                .map(|(record, value)| record.with_member(name, value))
                .collect();
        }
        let last = rows.positions.last().copied();
        let mut page = self.record_page(dataset, query, rows.total, records, last);
        page.facets = facets;
        Ok(page)
    }

    /// The page's rows: a page of full-text matches in file order, else a page of a kept
    /// order by relevance or distance, else the matches walked in the sort's order.
    fn index_rows(
        &self,
        index: &MemIndex,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Result<Rows, ApiError> {
        let (offset, limit) = (query.paging.offset(), query.paging.per_page);
        if query.by_score.is_none()
            && query.by_distance.is_none()
            && let Some((total, positions)) =
                index.text_page(&query.filter, &query.sort, offset, limit)
        {
            return Ok(Rows {
                total,
                positions,
                members: None,
                matched: None,
            });
        }
        match lead(query) {
            Some((member, descending, near)) => {
                self.ordered_rows(index, dataset, query, (member, descending, near))
            }
            None => Ok(self.walked_rows(index, dataset, query)),
        }
    }

    /// A page of the whole order by relevance or distance, kept for the pages after it (or
    /// its first pages): a later page within it, or the same one, skips the scoring.
    fn ordered_rows(
        &self,
        index: &MemIndex,
        dataset: &Dataset,
        query: &RecordQuery,
        (member, descending, near): (&'static str, bool, Option<&Near>),
    ) -> Result<Rows, ApiError> {
        let (offset, limit) = (query.paging.offset(), query.paging.per_page);
        let key = Orders::key(dataset, query);
        let mut matched = None;
        let order = match self.orders.get(&key, offset, limit) {
            Some(order) => order,
            None => {
                let matches = index.matches(&query.filter);
                let order = Arc::new(Order::whole(match near {
                    None => {
                        index.scored_order(&query.filter, matches.as_ref(), descending, &query.sort)
                    }
                    Some(near) => {
                        index.distance_order(matches.as_ref(), near, descending, &query.sort)
                    }
                }));
                matched = Some(matches);
                self.orders.put(key, &order);
                order
            }
        };
        let page = order.page(offset, limit).ok_or(ApiError::Internal)?;
        let value = |v: f64| match near {
            None => Value::from(v),
            Some(_) => whole_metres(v),
        };
        Ok(Rows {
            total: order.total(),
            positions: page.iter().map(|&(row, _)| row).collect(),
            members: Some((member, page.iter().map(|&(_, v)| value(v)).collect())),
            matched,
        })
    }

    /// A page of the matches in the sort's order (on from a cursor's row when it has one). A
    /// sorted page of frequent keyword values keeps its total: the walk then looks each row up
    /// in their sets, whose intersection is never made.
    fn walked_rows(&self, index: &MemIndex, dataset: &Dataset, query: &RecordQuery) -> Rows {
        let (offset, limit) = (query.paging.offset(), query.paging.per_page);
        let kept = match (query.sort.is_empty(), query.after) {
            (false, None) => index.kept_sets(&query.filter),
            _ => None,
        };
        let key = kept.as_ref().map(|_| {
            let filter = serde_json::to_string(&query.filter).unwrap_or_default();
            total_key(dataset.schema.version_id, &filter, None)
        });
        if let (Some(sets), Some(total)) = (&kept, key.as_deref().and_then(|k| self.totals.get(k)))
        {
            return Rows {
                total,
                positions: index.page_within(sets, &query.sort, offset, limit),
                members: None,
                matched: None,
            };
        }
        let matches = index.matches(&query.filter);
        let total = index.total(matches.as_ref());
        if let Some(key) = key {
            self.totals.put(key, total);
        }
        let positions = match query.after {
            // A cursor's page: on from its row, not counted from the top.
            Some(after) => index.page_after(matches.as_ref(), &query.sort, after, limit),
            None => index.page(matches.as_ref(), &query.sort, offset, limit),
        };
        Rows {
            total,
            positions,
            members: None,
            matched: Some(matches),
        }
    }
}
