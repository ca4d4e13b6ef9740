//! `catalog.md` (contract §9): the datasets with their guide and API URLs, the export formats
//! and the MCP tools, so a reader (or an agent) finds everything from the site's address.
//!
//! It stays short whatever the catalog's size: a catalog that fits in [`MAX_CATALOG_MD_BYTES`]
//! is listed whole, each dataset in a section; a larger one is paged, [`CATALOG_MD_PER_PAGE`]
//! datasets a page in one line each, the most recently published first, and says how many
//! there are and how to search (`?q=`) and page (`?page=`) them. A search is always paged, best
//! match first.

use query::params::{catalog_words, parse_count};
use query::{ApiError, Paging, Resolver, Scope};

use super::text::{cell, code, query, shorten, when};
use super::tools;
use crate::auth::grant::METADATA_PATH;
use crate::http::url::encode;

/// The most bytes one page of `catalog.md` holds: what an agent reads at once.
pub const MAX_CATALOG_MD_BYTES: usize = 64 * 1024;
/// Datasets on one page of a paged `catalog.md`. With the shortened texts below, a page's
/// lines stay well under [`MAX_CATALOG_MD_BYTES`] even with the longest slugs.
pub const CATALOG_MD_PER_PAGE: u64 = 40;
/// Characters of a title on a paged `catalog.md`.
const PAGED_TITLE_CHARS: usize = 120;
/// Characters of a description on a paged `catalog.md`.
const PAGED_DESCRIPTION_CHARS: usize = 200;

/// What a page of `catalog.md` (or `/catalog`) asks for: `?page=` and `?q=`.
#[derive(Clone, Debug, Default)]
pub struct CatalogAsk {
    /// From 1.
    pub page: u64,
    /// The search, as given (blank: none).
    pub q: Option<String>,
}

impl CatalogAsk {
    /// Reads `page` and `q` from the decoded query `pairs`; each at most once, nothing else.
    pub fn read(pairs: Vec<(String, String)>) -> Result<CatalogAsk, ApiError> {
        let mut ask = CatalogAsk { page: 1, q: None };
        let mut page_seen = false;
        for (name, value) in pairs {
            let twice = match name.as_str() {
                "page" => std::mem::replace(&mut page_seen, true),
                "q" => ask.q.replace(value.clone()).is_some(),
                _ => {
                    return Err(ApiError::invalid(
                        name.clone(),
                        format!("The catalog takes only q and page, not {name}."),
                    ));
                }
            };
            if twice {
                return Err(ApiError::invalid(
                    name.clone(),
                    format!("{name} may be given once."),
                ));
            }
            if name == "page" {
                ask.page = parse_count("page", &value)?;
            }
        }
        Paging::new(Some(ask.page), Some(CATALOG_MD_PER_PAGE))?;
        ask.q = ask.q.filter(|q| !q.trim().is_empty());
        Ok(ask)
    }

    /// The query string of this search at `page` (`?page=2&q=…`), or none for the first page
    /// of the whole catalog.
    pub fn at(&self, page: u64) -> String {
        let page = page.to_string();
        let mut pairs = Vec::new();
        if page != "1" {
            pairs.push(("page", page.as_str()));
        }
        if let Some(q) = &self.q {
            pairs.push(("q", q.as_str()));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", query(&pairs))
        }
    }
}

/// `catalog.md` for `ask`: the whole catalog as today when it is small and fits, else a page.
pub async fn catalog_md(
    resolver: &Resolver,
    ask: &CatalogAsk,
    site_url: &str,
) -> Result<String, ApiError> {
    let words = catalog_words(ask.q.as_deref())?;
    let paging = Paging::new(Some(ask.page), Some(CATALOG_MD_PER_PAGE))?;
    let listed = if words.is_empty() {
        CATALOG_MD_PER_PAGE
    } else {
        0
    };
    let (recent, total) = resolver.recent_datasets(paging.offset(), listed).await?;
    if words.is_empty() && ask.page == 1 && total <= CATALOG_MD_PER_PAGE {
        let whole = whole_md(&resolver.catalog().await?, site_url, resolver.base_url());
        if whole.len() <= MAX_CATALOG_MD_BYTES {
            return Ok(whole);
        }
    }
    let (rows, found) = if words.is_empty() {
        (recent, total)
    } else {
        resolver
            .find_datasets(paging, &words, &Scope::default())
            .await?
    };
    Ok(paged_md(&rows, ask, total, found, site_url, resolver))
}

/// The whole catalog, each dataset in a section of its own, from `templates/catalog.md`.
fn whole_md(datasets: &[entity::dataset::Model], site_url: &str, base_url: String) -> String {
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
    render(minijinja::context! { datasets, site_url, base_url })
}

/// One page of a catalog of `total` datasets, of which `found` are listed across the pages
/// (all of them, or those matching `ask.q`): `rows`, one line each.
fn paged_md(
    rows: &[entity::dataset::Model],
    ask: &CatalogAsk,
    total: u64,
    found: u64,
    site_url: &str,
    resolver: &Resolver,
) -> String {
    let datasets: Vec<_> = rows
        .iter()
        .map(|d| {
            minijinja::context! {
                title => shorten(&cell(d.title.trim()), PAGED_TITLE_CHARS),
                slug => d.slug.clone(),
                path => encode(&d.slug),
                record_count => d.record_count,
                updated => when(d.updated_at),
                description => shorten(&cell(d.description.trim()), PAGED_DESCRIPTION_CHARS),
            }
        })
        .collect();
    let pages = found.div_ceil(CATALOG_MD_PER_PAGE).max(1);
    let link = |page: u64| format!("{site_url}/catalog.md{}", ask.at(page));
    render(minijinja::context! {
        paged => true,
        datasets,
        site_url,
        base_url => resolver.base_url(),
        total,
        found,
        q => ask.q.as_deref().map(code),
        page => ask.page,
        pages,
        per_page => CATALOG_MD_PER_PAGE,
        next => (ask.page < pages).then(|| link(ask.page + 1)),
        previous => (ask.page > 1).then(|| link((ask.page - 1).min(pages))),
    })
}

/// `templates/catalog.md` with `context` and what every catalog says.
fn render(context: minijinja::Value) -> String {
    let formats: Vec<_> = query::ExportFormat::ALL
        .iter()
        .map(|f| f.as_str())
        .collect();
    crate::templates::render(
        "catalog.md",
        minijinja::context! {
            metadata_path => METADATA_PATH,
            tools => tools::NAMES,
            formats,
            ..context
        },
    )
    .unwrap_or_default()
}
