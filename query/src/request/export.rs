//! An export request (contract §12.3) validated: the conditions, sort and projection of a
//! records request, checked by the same rules, and the format.

use serde::Serialize;

use super::filter::{Filter, filter};
use super::params::{ExportFormat, ExportParams, check};
use super::records::{projection, sort_keys};
use crate::dataset::{Column, DatasetSchema};
use crate::error::ApiError;

/// A validated export request: every match of `filter`, in `sort` order, projected.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExportQuery {
    pub filter: Filter,
    /// Sort keys (column, descending); ties and unsorted requests follow file order.
    pub sort: Vec<(Column, bool)>,
    pub fields: Option<Vec<String>>,
    pub format: ExportFormat,
}

/// Validates an export request (contract §12.3): the conditions, sort and projection of a
/// records request, checked by the same rules, and the format.
pub(crate) fn export_query(
    params: &ExportParams,
    schema: &DatasetSchema,
) -> Result<ExportQuery, ApiError> {
    check(params)?;
    Ok(ExportQuery {
        filter: filter(&params.filter, schema)?,
        sort: sort_keys(&params.sort, schema)?,
        fields: projection(params.fields.as_deref(), schema)?,
        format: params.format,
    })
}
