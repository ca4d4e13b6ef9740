//! `skill.md` (contract §9) explains one dataset to a person or a program that has never seen
//! it: its fields, how to filter on each, and worked `curl` examples built from the dataset's
//! real values ([`examples`]), each of which works as written once `$ODQS_TOKEN` holds a token.
//! Pure text building from the facts the resolver layer computes ([`query::facts`]).

mod examples;

use std::fmt::Write;

use entity::FieldType;
use minijinja::{Value, context};

use query::operators::Op;
use query::params::{MAX_GROUPS, MAX_PERCENTILES};
use query::views::json_number;

pub use query::facts::{DatasetFacts as Guide, FieldFacts, Range};

use super::text::{cell, code, curl, plain, query, shorten, when};
use crate::auth::grant::METADATA_PATH;
use crate::http::url::encode;
use examples::examples;

pub use examples::search_term;

fn how_to_filter(f: &FieldFacts) -> String {
    let name = &f.field.name;
    let uses = match f.field.field_type {
        FieldType::Keyword => format!("exact `{name}=…` (repeat for OR), sort, `group_by`"),
        FieldType::Number => {
            format!("exact `{name}=…`, sort, agg `field`, bins `group_by={name}[<width>]`")
        }
        FieldType::Boolean => format!("exact `{name}=true` / `false`, sort"),
        FieldType::Date => format!(
            "exact `{name}=…` (as written in the data), sort, buckets `group_by={name}[month]`"
        ),
        FieldType::Text => format!("`q=…` or `q[{name}]=…` (not exact match)"),
        FieldType::Json => "returned as is; not filterable".to_string(),
    };
    let ops = Op::allowed_names(f.field.field_type);
    if ops.is_empty() {
        return uses;
    }
    let ops: Vec<String> = ops.iter().map(|op| format!("`[{op}]`")).collect();
    format!("{uses}; {}", ops.join(" "))
}

/// One condition with an operator this field takes, built from its real values so that it
/// matches records: a keyword's common prefix, a number at the middle of its range (the
/// largest value is above it), a date at or after its latest, a boolean's common value, a
/// text's presence.
fn operator_example(f: &FieldFacts, guide: &Guide) -> Option<(String, String, String)> {
    let name = f.field.name.as_str();
    let is_id = guide.dataset.id_field.as_deref() == Some(name);
    let (op, value, says) = match f.field.field_type {
        FieldType::Keyword if is_id => {
            let ids: Vec<&str> = guide
                .sample_ids
                .iter()
                .take(2)
                .map(String::as_str)
                .collect();
            (Op::In, ids.join(","), "is one of these".to_string())
        }
        FieldType::Keyword => {
            let top = plain(&f.top.first()?.value);
            let prefix: String = top.chars().take(2).collect();
            let says = format!("starts with {}", code(&prefix));
            (Op::Prefix, prefix, says)
        }
        FieldType::Number => {
            let range = f.range.as_ref()?;
            let (lo, hi) = (range.min.as_f64()?, range.max.as_f64()?);
            let mid = if lo.fract() == 0.0 && hi.fract() == 0.0 {
                ((lo + hi) / 2.0).floor()
            } else {
                (lo + hi) / 2.0
            };
            let mid = json_number(mid).to_string();
            let says = format!("is at least {}", code(&mid));
            (Op::Gte, mid, says)
        }
        FieldType::Date => {
            let latest = plain(&f.range.as_ref()?.max);
            let says = format!("is at or after {} (compared as instants)", code(&latest));
            (Op::Gte, latest, says)
        }
        FieldType::Boolean => {
            let top = plain(&f.top.first()?.value);
            let says = format!("is {}", code(&top));
            (Op::In, top, says)
        }
        FieldType::Text if !f.top.is_empty() => {
            (Op::Exists, "true".into(), "has a value".to_string())
        }
        FieldType::Text | FieldType::Json => return None,
    };
    let parameter = format!("{name}[{}]", op.as_str());
    let query = query(&[(&parameter, &value)]);
    Some((parameter, query, says))
}

fn values_seen(f: &FieldFacts, guide: &Guide) -> String {
    let is_id = guide.dataset.id_field.as_deref() == Some(f.field.name.as_str());
    if is_id {
        let ids: Vec<String> = guide.sample_ids.iter().take(2).map(|i| code(i)).collect();
        return format!("unique per record (the `_id`), e.g. {}", ids.join(", "));
    }
    if let Some(r) = &f.range {
        let mut s = format!("{} … {}", code(&plain(&r.min)), code(&plain(&r.max)));
        if let Some(c) = f.top.first() {
            let _ = write!(s, "; most common {} ({})", code(&plain(&c.value)), c.count);
        }
        return s;
    }
    if f.top.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = f
        .top
        .iter()
        .map(|v| format!("{} ({})", code(&shorten(&plain(&v.value), 40)), v.count))
        .collect();
    match f.field.field_type {
        FieldType::Text => format!("most frequent: {}", listed.join(", ")),
        _ => listed.join(", "),
    }
}

/// How `_id` is made, which depends on whether the schema names an identifier field.
fn identifier(id_field: Option<&str>) -> String {
    match id_field {
        Some(f) if f == crate::import::schema::ID => "`_id`, as the file gives it".to_string(),
        Some(f) => format!("`_id`, the value of `{}`", cell(f)),
        None => "`_id`, the record's row number in the file".to_string(),
    }
}

/// The table of fields: each one's type, how to filter on it, and the values it holds.
fn field_rows(guide: &Guide) -> Vec<Value> {
    guide
        .fields
        .iter()
        .map(|f| {
            context! {
                name => cell(&f.field.name),
                type => f.field.field_type.to_string(),
                how => how_to_filter(f),
                values => values_seen(f, guide),
                description => cell(f.field.description.as_deref().unwrap_or("")),
            }
        })
        .collect()
}

/// One operator example per field that takes operators, each a request that matches records.
fn operator_rows(guide: &Guide, records_url: &str) -> Vec<Value> {
    guide
        .fields
        .iter()
        .filter_map(|f| {
            let (parameter, query, says) = operator_example(f, guide)?;
            Some(context! {
                name => f.field.name.clone(),
                type => f.field.field_type.to_string(),
                ops => Op::allowed_names(f.field.field_type).join(", "),
                parameter,
                says => says.replace('`', ""),
                curl => curl(&format!("{records_url}?{query}")),
            })
        })
        .collect()
}

/// The fields some records lack, with how many, and a request for the records lacking the
/// field most often missing.
fn missing_rows(guide: &Guide, records_url: &str) -> (Vec<Value>, Option<String>) {
    let with_missing: Vec<&FieldFacts> = guide
        .fields
        .iter()
        .filter(|f| f.missing > 0 && f.field.field_type != FieldType::Json)
        .collect();
    let rows = with_missing
        .iter()
        .map(|f| context! { name => cell(&f.field.name), count => f.missing })
        .collect();
    let example = with_missing.iter().max_by_key(|f| f.missing).map(|f| {
        let parameter = format!("{}[exists]", f.field.name);
        curl(&format!(
            "{records_url}?{}",
            query(&[(parameter.as_str(), "false")])
        ))
    });
    (rows, example)
}

/// The examples about versions, the same for every dataset: they follow the dataset's own.
fn version_examples(
    records_url: &str,
    dataset_url: &str,
    version: i64,
) -> [(&'static str, String, String); 3] {
    use query::params::MAX_PER_PAGE;
    [
        (
            "Cite the version you read",
            format!(
                "Every answer names the version it was read from in its `Dataset-Version` header (now {version}); `version={version}` reads that version again after a re-import, while it is retained."
            ),
            format!("{records_url}?version={version}&per_page=5"),
        ),
        (
            "Read every record, page after page",
            "Each answer's `next_cursor` (and its `Link: <…>; rel=\"next\"` header) leads to the next page: send it as `cursor=…` with the same parameters, until it is `null`. A cursor keeps reading the version the first page read, even if the dataset is re-imported meanwhile, and a deep page costs what the first does.".to_string(),
            format!("{records_url}?per_page={MAX_PER_PAGE}"),
        ),
        (
            "Versions and what changed",
            "Every version published, newest first, with its record count, `content_hash` (SHA-256 of its NDJSON export in `_id` order) and whether it is retained; `changes?from=<a>&to=<b>` streams the records that differ as NDJSON.".to_string(),
            format!("{dataset_url}/versions"),
        ),
    ]
}

/// The rules every request follows, under the examples.
fn notes(base_url: &str, path: &str) -> [String; 9] {
    use query::params::{DEFAULT_PER_PAGE, MAX_PER_PAGE};
    [
        format!("`page` starts at 1; `per_page` is {DEFAULT_PER_PAGE} by default, 1 to {MAX_PER_PAGE}. A page past the end answers `records: []` with the true `total`."),
        format!(
            "Every matching record in one answer: `{base_url}/datasets/{path}/export?format=ndjson` (or `csv`) takes the same filters, `sort` and `fields`, streams the records (`X-Total-Count` gives their number up front) and counts as one request plus one per 1,000 records."
        ),
        "Exact matches (`name=value`) work on keyword, number, boolean and date fields; the same name repeated is OR, different names are AND. A text field answers 400 `text_field_exact_match`: use `q[name]`.".to_string(),
        "`q` and `q[name]`: every whitespace-separated term must occur, ignoring case; Chinese and Japanese terms match as substrings.".to_string(),
        "Without `sort`, and between equal sort keys, records keep the order of the imported file, so paging is stable.".to_string(),
        format!("`agg`: `group_by` takes keyword fields, comma-separated (one group per combination, with `keys`), a date field in UTC buckets (`name[year|month|day|hour]`) or a number field in bins (`name[<width>]`); `field` a number field. Groups come by count (largest first), then key; `sort=key>`, `count>`, or with `field` `avg<`, `p95<`…, and `limit=N` keeps the first N. More than {MAX_GROUPS} groups need `limit` (400 `too_many_groups`). `percentiles=5,50,95` picks up to {MAX_PERCENTILES} labels (default 25, 50, 75; linear interpolation between closest ranks)."),
        "Percent-encode values in URLs as UTF-8 (`curl` does not do it for you); `<` is `%3C`, `>` is `%3E`, `[` `]` are `%5B` `%5D`.".to_string(),
        "Errors are JSON `{\"error\": \"<code>\", \"message\": \"…\"}`; an unknown field name is 400 `unknown_field`, a missing or bad token 401.".to_string(),
        "The data changes only when the dataset is re-imported, which publishes a new version; answers carry an `ETag` and `Dataset-Version`.".to_string(),
    ]
}

/// `skill.md` for one dataset, from `templates/skill.md`.
pub fn skill_md(guide: &Guide, site_url: &str, base_url: String) -> String {
    let d = &guide.dataset;
    let path = encode(&d.slug);
    let records_url = format!("{base_url}/datasets/{path}/records");
    let dataset_url = format!("{base_url}/datasets/{path}");
    let (missing, missing_example) = missing_rows(guide, &records_url);
    let versions = version_examples(&records_url, &dataset_url, d.version);
    let examples: Vec<_> = examples(guide, &base_url)
        .into_iter()
        .map(|e| (e.title, e.note, e.url))
        .chain(versions.map(|(title, note, url)| (title.to_string(), note, url)))
        .map(|(title, note, url)| context! { title => title, note => note, curl => curl(&url) })
        .collect();
    crate::templates::render(
        "skill.md",
        context! {
            title => cell(&d.title),
            slug => d.slug.clone(),
            notes => notes(&base_url, &path),
            path,
            description => d.description.trim(),
            record_count => d.record_count,
            updated => when(d.updated_at),
            license => d.license.as_deref().map(cell),
            source_url => d.source_url.as_deref().map(cell),
            identifier => identifier(d.id_field.as_deref()),
            base_url,
            site_url,
            metadata_path => METADATA_PATH,
            fields => field_rows(guide),
            operators => operator_rows(guide, &records_url),
            missing,
            missing_example,
            examples,
        },
    )
    .unwrap_or_default()
}
