//! The guides (contract §9): `catalog.md`, which lists the datasets (paged when many), and each dataset's
//! `skill.md`, which explains it. A service both the site (`/catalog.md`,
//! `/datasets/{slug}/skill.md`) and MCP (its resources, and `describe_dataset`'s field values)
//! call: no HTTP.
//!
//! A guide reads statistics over whole columns, so each `skill.md` is kept per dataset version
//! (datasets change only by import, and a new import is a new version): the first request
//! after an import pays, later ones are free.
//!
//! - [`catalog`] and [`skill`]: the two documents, rendered from their templates.
//! - [`text`]: Markdown and URL text shared by both (and the date format the site uses too).
//! - [`tools`]: the MCP tools' names, which MCP registers and `catalog.md` lists.

pub mod catalog;
pub mod skill;
pub mod text;
pub mod tools;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use entity::FieldType;
use query::facts::DatasetFacts;
use query::{ApiError, Resolver};
use serde_json::{Value, json};

pub use text::when;

/// Guides by (slug, version, update time): the version alone is not unique across stores.
type GuideKey = (String, i64, i128);

/// Guides kept at most; the cache is cleared when it grows past this.
const MAX_CACHED: usize = 256;

/// The guides of one resolver at one public URL, with the `skill.md` of each live dataset
/// version kept once written.
#[derive(Debug)]
pub struct Guides {
    resolver: Arc<Resolver>,
    /// `{site_url}`, without a trailing slash.
    site_url: Arc<str>,
    written: Mutex<HashMap<GuideKey, Arc<Written>>>,
}

/// One version's facts and the `skill.md` written from them.
#[derive(Debug)]
struct Written {
    facts: DatasetFacts,
    skill: Arc<String>,
}

/// Values shown per keyword or boolean field by [`Guides::field_values`].
const SHOWN_VALUES: usize = 10;

impl Guides {
    /// The guides of `resolver`'s datasets, served at `site_url`.
    pub fn new(resolver: Arc<Resolver>, site_url: &str) -> Self {
        Guides {
            resolver,
            site_url: site_url.trim_end_matches('/').into(),
            written: Mutex::default(),
        }
    }

    /// `{site_url}`, without a trailing slash.
    pub fn site_url(&self) -> &str {
        &self.site_url
    }

    /// Where a dataset's `skill.md` is served; also its MCP resource URI.
    pub fn skill_url(&self, slug: &str) -> String {
        format!(
            "{}/datasets/{}/skill.md",
            self.site_url,
            crate::http::url::encode(slug)
        )
    }

    /// `catalog.md` (the page or search `ask` names), from the catalog as it is now.
    pub async fn catalog(&self, ask: &catalog::CatalogAsk) -> Result<String, ApiError> {
        catalog::catalog_md(&self.resolver, ask, &self.site_url).await
    }

    /// A dataset's `skill.md`, written once per live version from the resolver layer's facts.
    pub async fn skill(&self, slug: &str) -> Result<Arc<String>, ApiError> {
        Ok(self.written(slug).await?.skill.clone())
    }

    /// What `skill.md` says of each field, as JSON (MCP's `describe_dataset`): per field its
    /// records without a value, its most common values with their counts (keyword and
    /// boolean fields, at most ten), and its smallest and largest value (numbers and dates).
    pub async fn field_values(&self, slug: &str) -> Result<Value, ApiError> {
        let written = self.written(slug).await?;
        let mut out = serde_json::Map::new();
        for field in &written.facts.fields {
            let mut entry = serde_json::Map::new();
            entry.insert("missing".into(), json!(field.missing));
            if matches!(
                field.field.field_type,
                FieldType::Keyword | FieldType::Boolean
            ) {
                let top: Vec<Value> = field
                    .top
                    .iter()
                    .take(SHOWN_VALUES)
                    .map(|v| json!({"value": v.value, "count": v.count}))
                    .collect();
                entry.insert("top".into(), Value::Array(top));
            }
            if let Some(range) = &field.range {
                entry.insert("range".into(), json!({"min": range.min, "max": range.max}));
            }
            out.insert(field.field.name.clone(), Value::Object(entry));
        }
        Ok(Value::Object(out))
    }

    /// The facts and the guide of a dataset's live version, made once.
    async fn written(&self, slug: &str) -> Result<Arc<Written>, ApiError> {
        let dataset = self.resolver.dataset(slug).await?;
        let key = (
            dataset.meta.slug.clone(),
            dataset.meta.version_id,
            dataset.meta.updated_at.unix_timestamp_nanos(),
        );
        if let Some(cached) = self.written.lock().expect("guide cache").get(&key).cloned() {
            return Ok(cached);
        }
        let facts = self.resolver.facts(&dataset).await?;
        let skill = Arc::new(skill::skill_md(
            &facts,
            &self.site_url,
            self.resolver.base_url(),
        ));
        let written = Arc::new(Written { facts, skill });
        let mut cache = self.written.lock().expect("guide cache");
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, written.clone());
        Ok(written)
    }
}
