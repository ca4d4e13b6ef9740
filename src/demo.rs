//! The demo datasets bundled into the binary: small slices of the two real open datasets in the
//! repository's `testdata/`, with their licences and sources in the metadata, so a first
//! `odqs serve` has something real to answer from.

use std::sync::Arc;

use crate::import::{self, ImportError, ImportRequest, reader::Source, schema::SchemaFile};
use crate::store::{Store, lock};

/// One bundled dataset.
pub struct DemoDataset {
    pub slug: &'static str,
    pub file_name: &'static str,
    pub data: &'static [u8],
    pub schema: &'static str,
}

/// Every bundled dataset.
pub const DATASETS: &[DemoDataset] = &[
    DemoDataset {
        slug: "flights",
        file_name: "flights.csv.gz",
        data: include_bytes!("../demo/flights.csv.gz"),
        schema: include_str!("../demo/flights.schema.json"),
    },
    DemoDataset {
        slug: "tw-scenic-spots",
        file_name: "tw-scenic-spots.ndjson.gz",
        data: include_bytes!("../demo/tw-scenic-spots.ndjson.gz"),
        schema: include_str!("../demo/tw-scenic-spots.schema.json"),
    },
];

/// Loads every demo dataset when the store holds no dataset at all; returns how many it loaded.
/// Instances starting together take turns, and only the first finds the store empty.
pub async fn load_if_empty(store: &Store) -> Result<usize, ImportError> {
    let _guard = lock::StoreLock::acquire(store, lock::DEMO).await?;
    let resolver = query::Resolver::new(store.db.clone(), "", store.catalog.clone());
    let datasets = resolver.catalog().await.map_err(|e| {
        ImportError::Store(crate::store::StoreError::Db(sea_orm::DbErr::Custom(
            e.to_string(),
        )))
    })?;
    if !datasets.is_empty() {
        return Ok(0);
    }
    for demo in DATASETS {
        let request = ImportRequest {
            source: Source::Bytes {
                name: demo.file_name,
                data: demo.data,
            },
            slug: demo.slug.to_string(),
            schema: SchemaFile::parse(demo.schema)?,
            id_field: None,
            title: None,
            description: None,
            max_record_bytes: import::DEFAULT_MAX_RECORD_MB * import::MIB,
            store_indexes: false,
        };
        let summary = import::import(store, request, Arc::new(import::progress::Silent)).await?;
        tracing::info!(
            slug = demo.slug,
            records = summary.records,
            "loaded demo dataset"
        );
    }
    Ok(DATASETS.len())
}
