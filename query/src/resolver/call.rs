//! One call per request kind, below every front end: REST, GraphQL and MCP parse their input
//! into the same typed request ([`RecordParams`], [`AggParams`], a record's id and fields) and
//! make the call, which checks the caller's scope, resolves the dataset and version, validates
//! the request against the schema and weighs it at the caller's [`CostGate`] before anything
//! runs. What it gives back ([`Ready`]) knows its tag and version; running it is all that is
//! left, so a front end answers `If-None-Match` without running it.

use std::sync::Arc;

use serde_json::Value;

use super::memo::Memo;
use super::{Prepared, RecordById, Resolver};
use crate::answer::views::{AggResult, RecordBody, RecordPage};
use crate::cost::CostGate;
use crate::dataset::Dataset;
use crate::error::ApiError;
use crate::request::params::{AggParams, RecordParams};
use crate::request::{AggQuery, RecordQuery};
use crate::scope::{Need, Scope};

/// Who a request is for, as its front end found them.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    /// What the caller's token may read and export.
    pub scope: &'a Scope,
    /// Where the request's weight beyond one is paid, before it runs.
    pub gate: &'a dyn CostGate,
    /// Answers shared with the other parts of the same request (a GraphQL document's fields).
    pub memo: Option<&'a Memo>,
}

impl Caller<'_> {
    /// The dataset under `slug` at `version` (the live one without), once per request when
    /// the caller keeps a memo.
    async fn dataset(
        &self,
        resolver: &Resolver,
        slug: &str,
        version: Option<u64>,
    ) -> Result<Dataset, ApiError> {
        let Some(memo) = self.memo else {
            return resolver.dataset_at(slug, version).await;
        };
        // A slug holds no NUL (the resolver refuses one), so the key is one (slug, version).
        let key = match version {
            None => slug.to_string(),
            Some(version) => format!("{slug}\0{version}"),
        };
        memo.dataset(&key, resolver.dataset_at(slug, version)).await
    }

    /// Takes a prepared request's weight beyond one from the caller's budget.
    fn weigh(&self, extra: Option<u64>) -> Result<(), ApiError> {
        match extra {
            Some(extra) if extra > 0 => self.gate.weigh(extra),
            _ => Ok(()),
        }
    }
}

/// A request checked, resolved, validated and weighed, ready to run.
pub struct Ready<'r, Q> {
    resolver: &'r Resolver,
    memo: Option<&'r Memo>,
    prepared: Prepared<Q>,
}

impl<Q> Ready<'_, Q> {
    /// The answer's tag, known before it runs.
    pub fn etag(&self) -> &str {
        &self.prepared.etag
    }

    /// The dataset version the answer reads.
    pub fn dataset(&self) -> &Dataset {
        &self.prepared.dataset
    }
}

impl<'r> Ready<'r, RecordQuery> {
    /// One page of records.
    pub async fn run(&self) -> Result<Arc<RecordPage>, ApiError> {
        // Boxed: a page's future is large, and a front end's future holds it.
        let run = Box::pin(self.resolver.run_records(&self.prepared));
        match self.memo {
            Some(memo) => memo.page(self.prepared.etag.clone(), run).await,
            None => run.await.map(Arc::new),
        }
    }
}

impl<'r> Ready<'r, AggQuery> {
    /// The groups.
    pub async fn run(&self) -> Result<Arc<AggResult>, ApiError> {
        let run = Box::pin(self.resolver.run_agg(&self.prepared));
        match self.memo {
            Some(memo) => memo.agg(self.prepared.etag.clone(), run).await,
            None => run.await.map(Arc::new),
        }
    }
}

impl<'r> Ready<'r, RecordById> {
    /// The record as a JSON value.
    pub async fn run(&self) -> Result<Arc<Value>, ApiError> {
        let run = Box::pin(self.resolver.run_record(&self.prepared));
        match self.memo {
            Some(memo) => memo.record(self.prepared.etag.clone(), run).await,
            None => run.await.map(Arc::new),
        }
    }

    /// The record as a page writes it: its stored text when shaping would not change it.
    pub async fn run_body(&self) -> Result<RecordBody, ApiError> {
        self.resolver.run_record_body(&self.prepared).await
    }
}

impl Resolver {
    /// A page of records (REST `GET /datasets/{slug}/records`, GraphQL `records`, MCP
    /// `search_records`); a cursor's page reads the version the cursor names.
    pub async fn call_records<'r>(
        &'r self,
        caller: &Caller<'r>,
        slug: &str,
        params: &RecordParams,
    ) -> Result<Ready<'r, RecordQuery>, ApiError> {
        caller.scope.require(Need::Read, Some(slug))?;
        let prepared = match &params.cursor {
            Some(_) => self.prepare_records(slug, params).await?,
            None => {
                let dataset = caller.dataset(self, slug, params.version).await?;
                self.prepare_records_in(dataset, params)?
            }
        };
        caller.weigh(prepared.extra)?;
        Ok(self.ready(caller, prepared))
    }

    /// One record by its `_id`, projected to `fields` (REST `GET
    /// /datasets/{slug}/records/{id}`, GraphQL `record`, MCP `get_record`).
    pub async fn call_record<'r>(
        &'r self,
        caller: &Caller<'r>,
        slug: &str,
        (id, fields): (&str, Option<&[String]>),
        version: Option<u64>,
    ) -> Result<Ready<'r, RecordById>, ApiError> {
        caller.scope.require(Need::Read, Some(slug))?;
        let version = version
            .map(|n| crate::request::params::version_number("version", n))
            .transpose()?;
        let dataset = caller.dataset(self, slug, version).await?;
        let prepared = self.prepare_record_in(dataset, id, fields)?;
        caller.weigh(prepared.extra)?;
        Ok(self.ready(caller, prepared))
    }

    /// Grouped statistics (REST `GET /datasets/{slug}/agg`, GraphQL `agg`, MCP `aggregate`).
    pub async fn call_agg<'r>(
        &'r self,
        caller: &Caller<'r>,
        slug: &str,
        params: &AggParams,
    ) -> Result<Ready<'r, AggQuery>, ApiError> {
        caller.scope.require(Need::Read, Some(slug))?;
        let dataset = caller.dataset(self, slug, params.version).await?;
        let prepared = self.prepare_agg_in(dataset, params)?;
        caller.weigh(prepared.extra)?;
        Ok(self.ready(caller, prepared))
    }

    /// A dataset's live version, for its metadata (GraphQL `dataset`).
    pub async fn call_dataset(&self, caller: &Caller<'_>, slug: &str) -> Result<Dataset, ApiError> {
        caller.scope.require(Need::Read, Some(slug))?;
        caller.dataset(self, slug, None).await
    }

    fn ready<'r, Q>(&'r self, caller: &Caller<'r>, prepared: Prepared<Q>) -> Ready<'r, Q> {
        Ready {
            resolver: self,
            memo: caller.memo,
            prepared,
        }
    }
}
