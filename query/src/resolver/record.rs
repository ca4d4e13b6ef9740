//! `GET /datasets/{slug}/records/{id}` (contract §5): one record by its `_id`, optionally
//! projected; from the in-memory index's id column and the body cache when it can, else by the
//! store's primary key (`engine::store::record`).

use serde_json::Value;

use super::{Engine, Prepared, RecordById, Resolver};
use crate::answer::views::RecordBody;
use crate::dataset::Dataset;
use crate::engine::store;
use crate::error::ApiError;
use crate::request;

impl Resolver {
    /// `GET /datasets/{slug}/records/{id}` on `dataset` (at the version asked for), prepared:
    /// the projection validated, the tag.
    pub(crate) fn prepare_record_in(
        &self,
        dataset: Dataset,
        id: &str,
        fields: Option<&[String]>,
    ) -> Result<Prepared<RecordById>, ApiError> {
        let fields = request::projection(fields, &dataset.schema)?;
        let etag = self.etag(&dataset, "record", &(&id, &fields));
        Ok(Prepared {
            dataset,
            query: RecordById {
                id: id.to_string(),
                fields,
            },
            etag,
            extra: None,
        })
    }

    /// Runs a prepared single-record request, as stored text when it can.
    pub(crate) async fn run_record_body(
        &self,
        prepared: &Prepared<RecordById>,
    ) -> Result<RecordBody, ApiError> {
        let RecordById { id, fields } = &prepared.query;
        self.record_body(&prepared.dataset, id, fields.as_deref())
            .await
    }

    /// Runs a prepared single-record request, as a JSON value.
    pub(crate) async fn run_record(
        &self,
        prepared: &Prepared<RecordById>,
    ) -> Result<Value, ApiError> {
        let RecordById { id, fields } = &prepared.query;
        self.record(&prepared.dataset, id, fields.as_deref()).await
    }

    /// One record by id, optionally projected, as a JSON value (GraphQL, MCP).
    pub(crate) async fn record(
        &self,
        dataset: &Dataset,
        id: &str,
        fields: Option<&[String]>,
    ) -> Result<Value, ApiError> {
        Ok(self.record_body(dataset, id, fields).await?.into_value())
    }

    /// `GET /datasets/{slug}/records/{id}`: one record, optionally projected; its stored text
    /// when shaping would not change it, as on a page.
    pub(crate) async fn record_body(
        &self,
        dataset: &Dataset,
        id: &str,
        fields: Option<&[String]>,
    ) -> Result<RecordBody, ApiError> {
        if id.contains('\0') {
            // No id holds one, and PostgreSQL cannot take one as a bound text.
            return Err(ApiError::RecordNotFound { id: id.into() });
        }
        let schema = &dataset.schema;
        if let Engine::Memory(index) = self.engine(dataset).await {
            let not_found = || ApiError::RecordNotFound { id: id.into() };
            let row = index.id.find(id).ok_or_else(not_found)?;
            let stored = self.stored_at_positions(schema, &[row]).await?.pop();
            return stored.ok_or_else(not_found)?.shaped(schema, fields);
        }
        let reader = self.reader(schema.version_id).await;
        let found = store::record::by_id(&reader, schema, id)
            .await?
            .ok_or_else(|| ApiError::RecordNotFound { id: id.into() })?;
        Ok(RecordBody::Shaped(schema.shape(found.doc, fields)))
    }
}
