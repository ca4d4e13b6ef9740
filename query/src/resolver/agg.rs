//! `GET /datasets/{slug}/agg` (contract §6, §12.2): from the in-memory index when it answers,
//! else a grouped statement on the store, folded by [`crate::engine::store::fold`] and finished
//! like the index's groups ([`crate::answer::groups::finish`]).

use std::cmp::Ordering;

use super::{Engine, Prepared, Resolver, record_count};
use crate::answer::groups::{KeyPart, Tally, check_group_count, finish, numeric_stats};
use crate::answer::views::AggResult;
use crate::cost;
use crate::dataset::Dataset;
use crate::engine::store::{self, fold};
use crate::error::ApiError;
use crate::request::params::AggParams;
use crate::request::{self, AggQuery};

impl Resolver {
    /// `GET /datasets/{slug}/agg` on `dataset`, prepared: the parameters validated against its
    /// schema, the tag and the weight (a scan of the dataset's columns).
    pub(crate) fn prepare_agg_in(
        &self,
        dataset: Dataset,
        params: &AggParams,
    ) -> Result<Prepared<AggQuery>, ApiError> {
        let query = request::agg_query(params, &dataset.schema)?;
        let extra = Some(cost::scan_extra(record_count(&dataset)));
        let etag = self.etag(&dataset, "agg", &query);
        Ok(Prepared {
            dataset,
            query,
            etag,
            extra,
        })
    }

    /// Runs a prepared agg request.
    pub(crate) async fn run_agg(
        &self,
        prepared: &Prepared<AggQuery>,
    ) -> Result<AggResult, ApiError> {
        self.agg(&prepared.dataset, &prepared.query).await
    }

    /// `GET /datasets/{slug}/agg`.
    pub(crate) async fn agg(
        &self,
        dataset: &Dataset,
        query: &AggQuery,
    ) -> Result<AggResult, ApiError> {
        if let Engine::Memory(index) = self.engine(dataset).await {
            let matches = index.matches(&query.filter);
            if let Some(result) = index.agg(matches.as_ref(), query) {
                return result;
            }
        }
        let key = self.etag(dataset, "agg", query);
        self.flights
            .agg
            .run(key, self.agg_from_store(dataset, query))
            .await
    }

    /// [`Self::agg`] when no in-memory index answers.
    async fn agg_from_store(
        &self,
        dataset: &Dataset,
        query: &AggQuery,
    ) -> Result<AggResult, ApiError> {
        let schema = &dataset.schema;
        let resolved = self.resolve(schema, &query.filter).await?;
        let total_records = self.count(dataset, &resolved, None).await?;
        let mut groups = fold::Groups::new();
        if !resolved.matches_nothing() && total_records > 0 {
            let reader = self.reader(schema.version_id).await;
            let records = dataset.meta.record_count;
            let read = (schema, &resolved);
            groups = store::agg::groups(
                self.direct(schema.version_id),
                &reader,
                read,
                query,
                records,
            )
            .await?;
        }
        finish_store_groups(query, total_records, groups)
    }
}

/// An agg's answer from the groups a store path folded (or a guide's facts counted).
pub(super) fn finish_store_groups(
    query: &AggQuery,
    total_records: u64,
    groups: fold::Groups,
) -> Result<AggResult, ApiError> {
    let kept = groups.iter().filter(|(_, (n, _))| query.keeps(*n)).count();
    check_group_count(kept as u64, query)?;
    let tallies = groups
        .into_iter()
        .map(|(key, (count, values))| Tally {
            key,
            count,
            numeric: query
                .field
                .map(|_| numeric_stats(values, &query.percentiles, count)),
        })
        .collect();
    Ok(finish(
        query,
        total_records,
        tallies,
        |a: &Vec<KeyPart>, b: &Vec<KeyPart>| {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.compare(y))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        },
        Clone::clone,
    ))
}
