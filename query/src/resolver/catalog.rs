//! Datasets: resolving a slug to its live version and schema, the dataset list and the
//! metadata answer (contract §3).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use entity::dataset;
use entity::record::{ID_COLUMN, column_index};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::answer::views::{
    DatasetDetail, DatasetItem, DatasetLinks, DatasetList, GeoPair, IndexBeyondBudget, SchemaFile,
    SchemaFileField,
};
use crate::dataset::Dataset;
use crate::dataset::schema::DatasetSchema;
use crate::engine::store;
use crate::error::ApiError;
use crate::request::params::Paging;
use crate::resolver::Resolver;
use crate::scope::Scope;

/// An instant as the API writes it (RFC 3339, UTC).
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// Percent-encodes a slug for a URL path segment (slugs are mostly URL-safe already).
fn path_segment(slug: &str) -> String {
    let mut out = String::with_capacity(slug.len());
    for b in slug.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Resolver {
    /// `GET /datasets/{slug}`: the dataset's metadata, in one call.
    pub async fn dataset_detail(&self, slug: &str) -> Result<DatasetDetail, ApiError> {
        Ok(self.detail(&self.dataset(slug).await?))
    }

    /// `GET /datasets/{slug}/schema.json`: the schema file that publishes the same records with
    /// the same types.
    pub async fn schema_file(&self, slug: &str) -> Result<SchemaFile, ApiError> {
        let dataset = self.dataset(slug).await?;
        let row = &dataset.meta;
        Ok(SchemaFile {
            title: row.title.clone(),
            description: row.description.clone(),
            license: row.license.clone(),
            source_url: row.source_url.clone(),
            id_field: row.id_field.clone(),
            fields: dataset
                .schema
                .entries
                .iter()
                .filter(|entry| entry.name != "_id")
                .map(|entry| SchemaFileField {
                    name: entry.name.clone(),
                    field_type: entry.field_type.as_str().to_string(),
                    description: entry.description.clone(),
                })
                .collect(),
            geo: GeoPair::of(row),
        })
    }

    /// The dataset published under `slug`, with its live version's schema.
    pub async fn dataset(&self, slug: &str) -> Result<Dataset, ApiError> {
        if slug.contains('\0') {
            // No slug holds one, and PostgreSQL cannot take one as a bound text.
            return Err(ApiError::DatasetNotFound { slug: slug.into() });
        }
        if let Some(found) = self.datasets.get(slug) {
            return Ok(found);
        }
        let epoch = self.datasets.epoch();
        let meta = store::catalog::by_slug(&self.db, slug)
            .await?
            .ok_or_else(|| ApiError::DatasetNotFound { slug: slug.into() })?;
        let schema = self.schema(&meta).await?;
        let found = Dataset { meta, schema };
        self.datasets.put(slug, found.clone(), epoch);
        Ok(found)
    }

    /// The schema of the version `meta` points at, read once per process (versions are
    /// immutable).
    pub(crate) async fn schema(
        &self,
        meta: &entity::dataset::Model,
    ) -> Result<Arc<DatasetSchema>, ApiError> {
        self.schema_of(meta.version_id, meta).await
    }

    /// The schema of version `version_id` of the dataset `meta` describes, read once per
    /// process. The geo pair is the dataset's, kept when this version has both its fields.
    pub(crate) async fn schema_of(
        &self,
        version_id: i64,
        meta: &entity::dataset::Model,
    ) -> Result<Arc<DatasetSchema>, ApiError> {
        if let Some(found) = self.schemas.lock().expect("schemas lock").get(&version_id) {
            return Ok(found.clone());
        }
        let rows = store::catalog::fields(&self.db, version_id).await?;
        let mut schema = DatasetSchema::new(version_id, rows);
        let has = |name: &String| schema.entries.iter().any(|e| &e.name == name);
        schema.geo = meta
            .geo_lat
            .clone()
            .zip(meta.geo_lon.clone())
            .filter(|(lat, lon)| has(lat) && has(lon));
        schema.store_indexes = self.has_column_indexes(&schema).await?;
        let schema = Arc::new(schema);
        let mut schemas = self.schemas.lock().expect("schemas lock");
        // Forget versions no request has resolved lately; a few hundred schemas are small.
        if schemas.len() > 1000 {
            schemas.clear();
        }
        schemas.insert(version_id, schema.clone());
        Ok(schema)
    }

    /// Whether the store holds the indexes of `schema`'s typed columns (one stands for all:
    /// an import builds all of them or none).
    async fn has_column_indexes(&self, schema: &DatasetSchema) -> Result<bool, ApiError> {
        // A keyword identifier field's column is `_id`, whose index every version has.
        let Some(column) = schema
            .fields
            .iter()
            .filter_map(|f| f.column.as_deref())
            .find(|&column| column != ID_COLUMN)
        else {
            return Ok(false);
        };
        let reader = self.reader(schema.version_id).await;
        store::catalog::has_index(&reader, column_index(schema.version_id, column)).await
    }

    /// `GET /datasets`: one page of the datasets, by slug; with search `words`
    /// ([`crate::params::catalog_words`]), only those where every word occurs somewhere in the
    /// title, the description, a field's name or a field's description, best match first
    /// ([`Self::find_datasets`]). A token whose `scope` names datasets sees only those
    /// (contract §13.3), in the list and in its `total`.
    pub async fn list_datasets(
        &self,
        paging: Paging,
        words: &[String],
        scope: &Scope,
    ) -> Result<DatasetList, ApiError> {
        let (rows, total) = self.find_datasets(paging, words, scope).await?;
        Ok(DatasetList {
            datasets: rows.iter().map(|row| self.item(row)).collect(),
            total,
        })
    }

    /// One page of the datasets `scope` may read where every one of `words` occurs, ranked
    /// by BM25 (ties by slug), and how many there are; without words, by slug. A search is
    /// answered by the catalog's index held in this process ([`super::catalog_search`]), which
    /// costs no store statement per dataset; the whole list of an unscoped token is paged by
    /// the store.
    pub async fn find_datasets(
        &self,
        paging: Paging,
        words: &[String],
        scope: &Scope,
    ) -> Result<(Vec<dataset::Model>, u64), ApiError> {
        if !words.is_empty() || scope.datasets().is_some() {
            let index = self
                .catalog_index
                .current(&self.db, || self.datasets.epoch(), DATASET_FRESH_FOR)
                .await?;
            return Ok(index.search(words, scope, paging.offset(), paging.per_page));
        }
        let total = store::catalog::count(&self.db).await?;
        let rows = if paging.offset() >= total {
            Vec::new()
        } else {
            store::catalog::page(&self.db, paging.offset(), paging.per_page).await?
        };
        Ok((rows, total))
    }

    /// Loads the catalog search's index, or brings it up to date when older than
    /// [`DATASET_FRESH_FOR`]: called in the background, so that the first search after start
    /// (or after a harvest of imports) does not pay for the reading.
    pub async fn refresh_catalog(&self) -> Result<(), ApiError> {
        self.catalog_index
            .current(&self.db, || self.datasets.epoch(), DATASET_FRESH_FOR)
            .await
            .map(drop)
    }

    /// Whether the catalog search's index has been loaded, so that no search waits for the
    /// reading of the whole catalog: an instance is not ready before (`/readyz`).
    pub fn catalog_loaded(&self) -> bool {
        self.catalog_index.loaded()
    }

    /// How many datasets are published.
    pub async fn dataset_count(&self) -> Result<u64, ApiError> {
        store::catalog::count(&self.db).await
    }

    /// One page of every dataset, the most recently published first (ties by slug), and how
    /// many there are: the order `catalog.md` and the home page list them in. From the
    /// catalog's index ([`super::catalog_search`]), which the store holds no index for.
    pub async fn recent_datasets(
        &self,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<dataset::Model>, u64), ApiError> {
        let index = self
            .catalog_index
            .current(&self.db, || self.datasets.epoch(), DATASET_FRESH_FOR)
            .await?;
        Ok(index.recent(offset, limit))
    }

    /// Every published dataset, by slug: the catalog the guides list (`catalog.md`, the home
    /// page, `odqs datasets list`).
    pub async fn catalog(&self) -> Result<Vec<dataset::Model>, ApiError> {
        store::catalog::all(&self.db).await
    }

    /// The URL of a dataset's metadata.
    pub fn dataset_url(&self, slug: &str) -> String {
        format!("{}/datasets/{}", self.base_url(), path_segment(slug))
    }

    fn item(&self, row: &dataset::Model) -> DatasetItem {
        DatasetItem {
            slug: row.slug.clone(),
            title: row.title.clone(),
            description: row.description.clone(),
            record_count: row.record_count,
            updated_at: rfc3339(row.updated_at),
            url: self.dataset_url(&row.slug),
        }
    }

    /// `GET /datasets/{slug}`: the metadata with schema entries and links.
    pub fn detail(&self, dataset: &Dataset) -> DatasetDetail {
        let row = &dataset.meta;
        let url = self.dataset_url(&row.slug);
        DatasetDetail {
            item: self.item(row),
            license: row.license.clone(),
            source_url: row.source_url.clone(),
            id_field: row.id_field.clone(),
            created_at: rfc3339(row.created_at),
            version: row.version,
            fields: dataset.schema.entries.clone(),
            links: DatasetLinks {
                records: format!("{url}/records"),
                agg: format!("{url}/agg"),
                skill: format!(
                    "{}/datasets/{}/skill.md",
                    self.site_url,
                    path_segment(&row.slug)
                ),
                versions: format!("{url}/versions"),
            },
            geo: GeoPair::of(row),
            index: self
                .memory
                .beyond_budget(dataset)
                .map(|beyond| IndexBeyondBudget {
                    answered_by: "store",
                    because: "beyond_memory_budget",
                    index_mib: beyond.budget_mib_needed(),
                    budget_mib: beyond.budget_bytes >> 20,
                }),
        }
    }
}

/// How long a resolved dataset is believed without asking the store again. A re-import or a
/// removal made by another process (`odqs import` beside `odqs serve`, another instance behind
/// the load balancer) is therefore served everywhere within this time of its commit; one made
/// in this process is seen at once ([`CatalogEpoch::changed`]). The old version stays readable for
/// far longer (`RETIRED_GRACE`), so a request still resolved to it reads a whole, consistent
/// version.
pub const DATASET_FRESH_FOR: Duration = Duration::from_secs(1);

/// Slugs kept before the cache starts over (there are rarely more datasets).
const DATASET_CAPACITY: usize = 10_000;

/// Changes of the catalog made through one store handle, counted: the store holds it, imports
/// and removals bump it after their commit ([`Self::changed`]), and the resolver built over
/// that store forgets what it resolved before. Clones share the count.
#[derive(Clone, Debug, Default)]
pub struct CatalogEpoch(Arc<AtomicU64>);

impl CatalogEpoch {
    /// Says that a dataset was published, replaced or removed.
    pub fn changed(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn current(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Published datasets resolved lately, by slug, so a request for a known dataset costs no
/// store statement. Only found datasets are kept.
#[derive(Debug, Default)]
pub(super) struct Datasets {
    map: Mutex<HashMap<String, (Dataset, Instant, u64)>>,
    epoch: CatalogEpoch,
}

impl Datasets {
    /// Datasets resolved over a store whose catalog changes `epoch` counts.
    pub(super) fn new(epoch: CatalogEpoch) -> Self {
        Datasets {
            map: Mutex::default(),
            epoch,
        }
    }

    /// The epoch to give [`Self::put`] with a dataset about to be read from the store: read
    /// before the statement, so a change committed meanwhile is not hidden.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch.current()
    }

    /// The dataset kept for `slug`, if resolved within [`DATASET_FRESH_FOR`] and no catalog
    /// change of this process came after.
    pub(super) fn get(&self, slug: &str) -> Option<Dataset> {
        let map = self.map.lock().expect("datasets lock");
        let (dataset, at, epoch) = map.get(slug)?;
        (*epoch == self.epoch() && at.elapsed() < DATASET_FRESH_FOR).then(|| dataset.clone())
    }

    /// Keeps `dataset` for `slug`, read from the store at `epoch` (see [`Self::epoch`]).
    pub(super) fn put(&self, slug: &str, dataset: Dataset, epoch: u64) {
        let mut map = self.map.lock().expect("datasets lock");
        if map.len() >= DATASET_CAPACITY {
            map.clear();
        }
        map.insert(slug.to_string(), (dataset, Instant::now(), epoch));
    }
}
