//! Facets with records: beside a page, each keyword field asked with its most frequent values
//! over every matching record. A facet is the agg of one keyword field under the page's
//! conditions (count descending, ties by value, the first `facet_size`), so the index and the
//! store count it as they count agg groups, and both stores agree. Facets are a pure
//! function of the version, the conditions and the fields asked, so they are kept: every page
//! of a search, and the same page asked again, shares one count.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Resolver;
use crate::answer::views::{AggResult, FacetCounts, FacetValue};
use crate::dataset::Dataset;
use crate::engine::memory::MemIndex;
use crate::engine::memory::rows::Bits;
use crate::error::ApiError;
use crate::request::{AggQuery, Facets, GroupBy, GroupOrder, Grouping, RecordQuery};

impl Resolver {
    /// The facets of `query`'s page. With an index, `matches` are the page's matching rows
    /// (`None`: every row), counted once for every field.
    pub(super) async fn facets(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
        index: Option<(&MemIndex, Option<&Bits>)>,
    ) -> Result<Option<FacetCounts>, ApiError> {
        let Some(facets) = &query.facets else {
            return Ok(None);
        };
        let key = facets_key(dataset, query);
        if let Some(kept) = self.kept_facets.get(&key) {
            return Ok(Some(kept));
        }
        let mut counts = Vec::with_capacity(facets.fields.len());
        for &field in &facets.fields {
            let agg = facet_query(dataset, query, facets, field);
            let answer = match index.and_then(|(index, matches)| index.agg(matches, &agg)) {
                Some(answer) => answer?,
                // Boxed: the agg's future would otherwise sit inside every records future.
                None => Box::pin(self.agg(dataset, &agg)).await?,
            };
            counts.push((agg.group_by[0].label.clone(), values(answer)));
        }
        let counts = FacetCounts(counts);
        self.kept_facets.put(key, counts.clone());
        Ok(Some(counts))
    }

    /// The facets of `query`'s page if they were counted before (a facet is a pure function of
    /// the version, the conditions and the fields asked, so every page of a search shares it).
    pub(super) fn facets_kept(
        &self,
        dataset: &Dataset,
        query: &RecordQuery,
    ) -> Option<FacetCounts> {
        query.facets.as_ref()?;
        self.kept_facets.get(&facets_key(dataset, query))
    }
}

/// The key of a page's facets: the version, the conditions and the facets asked.
fn facets_key(dataset: &Dataset, query: &RecordQuery) -> String {
    format!(
        "{}|{}",
        dataset.schema.version_id,
        serde_json::to_string(&(&query.filter, &query.facets)).unwrap_or_default()
    )
}

/// Facets counted lately, by [`facets_key`]; bounded, starting over when full.
#[derive(Debug, Default)]
pub(super) struct KeptFacets {
    map: Mutex<HashMap<String, FacetCounts>>,
}

/// Facet answers kept before the map starts over (each at most 20 × 100 values).
const KEPT: usize = 10_000;

impl KeptFacets {
    fn get(&self, key: &str) -> Option<FacetCounts> {
        self.map.lock().expect("facets lock").get(key).cloned()
    }

    fn put(&self, key: String, counts: FacetCounts) {
        let mut map = self.map.lock().expect("facets lock");
        if map.len() >= KEPT {
            map.clear();
        }
        map.insert(key, counts);
    }
}

/// The agg that counts one facet's values.
fn facet_query(dataset: &Dataset, query: &RecordQuery, facets: &Facets, field: usize) -> AggQuery {
    AggQuery {
        filter: query.filter.clone(),
        group_by: vec![GroupBy {
            field,
            grouping: Grouping::Value,
            label: dataset.schema.fields[field].name.clone(),
        }],
        field: None,
        percentiles: Vec::new(),
        order: GroupOrder::Count,
        descending: true,
        limit: Some(facets.size),
        min_count: None,
    }
}

/// An agg answer's groups as facet values.
fn values(answer: AggResult) -> Vec<FacetValue> {
    answer
        .groups
        .into_iter()
        .map(|group| FacetValue {
            value: group.key,
            count: group.stats.count,
        })
        .collect()
}
