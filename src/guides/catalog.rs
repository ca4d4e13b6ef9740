//! `catalog.md` (contract §9): every dataset with its guide and API URLs, the export formats
//! and the MCP tools, so a reader (or an agent) finds everything from the site's address.

use super::text::{cell, when};
use super::tools;
use crate::auth::grant::METADATA_PATH;
use crate::http::url::encode;

/// `catalog.md`: every dataset with its guide and API URLs, from `templates/catalog.md`.
pub fn catalog_md(datasets: &[entity::dataset::Model], site_url: &str, base_url: String) -> String {
    let datasets: Vec<_> = datasets
        .iter()
        .map(|d| {
            minijinja::context! {
                title => cell(&d.title),
                slug => d.slug.clone(),
                path => encode(&d.slug),
                record_count => d.record_count,
                updated => when(d.updated_at),
                license => d.license.as_deref().map(cell),
                source_url => d.source_url.as_deref().map(cell),
                description => d.description.trim(),
            }
        })
        .collect();
    let formats: Vec<_> = query::ExportFormat::ALL
        .iter()
        .map(|f| f.as_str())
        .collect();
    crate::templates::render(
        "catalog.md",
        minijinja::context! {
            datasets,
            site_url,
            base_url,
            metadata_path => METADATA_PATH,
            tools => tools::NAMES,
            formats,
        },
    )
    .unwrap_or_default()
}
