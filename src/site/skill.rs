//! The Markdown guides (contract §9): `catalog.md` lists every dataset; `skill.md` explains one
//! dataset to a person or a program that has never seen it: its fields, how to filter on each,
//! and worked `curl` examples built from the dataset's real values, each of which works as
//! written once `$ODQS_TOKEN` holds a token. Pure text building from the facts the resolver
//! layer computes ([`query::facts`]).

use std::fmt::Write;

use entity::FieldType;
use serde_json::Value;

use query::operators::Op;
use query::params::{MAX_GROUPS, MAX_PERCENTILES};
use query::views::json_number;

pub use query::facts::{DatasetFacts as Guide, FieldFacts, Range};

use super::guides::encode;

fn spread(range: &Range) -> f64 {
    match (range.min.as_f64(), range.max.as_f64()) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    }
}

/// The number field the examples sort and aggregate on: one the schema describes (a
/// measurement someone cared to explain) before one it does not, then the widest range; a
/// constant field makes a dull example.
fn number_example_index(fields: &[FieldFacts]) -> Option<usize> {
    fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.field.field_type == FieldType::Number)
        .filter_map(|(i, f)| {
            let described = f
                .field
                .description
                .as_deref()
                .is_some_and(|d| !d.trim().is_empty());
            f.range.as_ref().map(|r| (i, (described, spread(r))))
        })
        .filter(|(_, (_, s))| *s > 0.0)
        .fold(
            None,
            |best: Option<(usize, (bool, f64))>, (i, rank)| match best {
                Some((_, b)) if (b.0, b.1) >= (rank.0, rank.1) => best,
                _ => Some((i, rank)),
            },
        )
        .map(|(i, _)| i)
}

/// The keyword field whose most common value covers the most records.
fn keyword_example(guide: &Guide) -> Option<&FieldFacts> {
    guide
        .fields
        .iter()
        .filter(|f| f.field.field_type == FieldType::Keyword && !f.top.is_empty())
        .fold(None, |best: Option<&FieldFacts>, f| match best {
            Some(b) if b.top[0].count >= f.top[0].count => best,
            _ => Some(f),
        })
}

/// A search term from a text value: a whole word of three or more letters, or the first three
/// characters of a run of Chinese (or other unspaced) script, where terms match as substrings.
pub fn search_term(text: &str) -> Option<String> {
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = word.chars().collect();
        if chars.is_empty() {
            continue;
        }
        if chars.iter().any(|c| is_unspaced_script(*c)) {
            let run: String = chars
                .iter()
                .skip_while(|c| !is_unspaced_script(**c))
                .take_while(|c| is_unspaced_script(**c))
                .take(3)
                .collect();
            if run.chars().count() >= 2 {
                return Some(run);
            }
        } else if chars.len() >= 3 && !chars.iter().all(|c| c.is_ascii_digit()) {
            return Some(word.to_string());
        }
    }
    None
}

fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The text fields' search examples: (field, term, records holding the value it came from).
fn text_examples(guide: &Guide) -> Vec<(&FieldFacts, String, u64)> {
    let mut found: Vec<(&FieldFacts, String, u64)> = guide
        .fields
        .iter()
        .filter(|f| f.field.field_type == FieldType::Text)
        .filter_map(|f| {
            f.top.iter().find_map(|v| {
                let term = search_term(v.value.as_str()?)?;
                Some((f, term, v.count))
            })
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.2));
    found
}

/// A value as it goes into a URL query (`true`, `5`, `UA`).
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Inline code for Markdown, safe inside a table cell.
fn code(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// Plain text for one line of Markdown (a table cell, a list item).
fn cell(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|")
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// A URL query from (name, value) pairs, every part percent-encoded (UTF-8).
fn query(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// One worked example: a heading, what it shows, and the URL.
struct Example {
    title: String,
    note: String,
    url: String,
}

fn curl(url: &str) -> String {
    format!("curl -H \"Authorization: Bearer $ODQS_TOKEN\" \"{url}\"")
}

fn examples(guide: &Guide, base_url: &str) -> Vec<Example> {
    let slug = &guide.dataset.slug;
    let records = format!("{base_url}/datasets/{}/records", encode(slug));
    let agg = format!("{base_url}/datasets/{}/agg", encode(slug));
    let mut out = Vec::new();
    let mut add = |title: &str, note: String, url: String| {
        out.push(Example {
            title: title.to_string(),
            note,
            url,
        })
    };
    add(
        "Metadata and schema",
        "Title, licence, record count, and every field with its type and filters.".into(),
        format!("{base_url}/datasets/{}", encode(slug)),
    );
    add(
        "The first records",
        "Records come in the order of the imported file unless you sort.".into(),
        format!("{records}?per_page=5"),
    );
    let keyword = keyword_example(guide);
    let number = number_example_index(&guide.fields).map(|i| &guide.fields[i]);
    if let Some(k) = keyword {
        let name = k.field.name.as_str();
        let v1 = plain(&k.top[0].value);
        add(
            "Exact match on a keyword",
            format!(
                "Records whose `{name}` is {} ({} records).",
                code(&v1),
                k.top[0].count
            ),
            format!("{records}?{}", query(&[(name, &v1)])),
        );
        if let Some(second) = k.top.get(1) {
            let v2 = plain(&second.value);
            add(
                "Several values of one field (OR)",
                format!(
                    "Repeating a name means OR: `{name}` is {} or {}.",
                    code(&v1),
                    code(&v2)
                ),
                format!("{records}?{}", query(&[(name, &v1), (name, &v2)])),
            );
        }
    }
    if let Some(n) = number
        && let Some(common) = n.top.first()
    {
        let name = n.field.name.as_str();
        let v = plain(&common.value);
        add(
            "Exact match on a number",
            format!(
                "Numbers compare as numbers (`5` matches `5.0`): `{name}` = {} ({} records).",
                code(&v),
                common.count
            ),
            format!("{records}?{}", query(&[(name, &v)])),
        );
    }
    let texts = text_examples(guide);
    if let Some((f, term, _)) = texts.first() {
        add(
            "Full-text search",
            format!(
                "`q` finds records where every term occurs in some text field, ignoring case; here {} (it occurs in `{}`).",
                code(term),
                f.field.name
            ),
            format!("{records}?{}", query(&[("q", term)])),
        );
        let (f2, term2, _) = texts.get(1).unwrap_or(&texts[0]);
        let key = format!("q[{}]", f2.field.name);
        add(
            "Full-text search in one field",
            format!("`q[{}]` searches that text field only.", f2.field.name),
            format!("{records}?{}", query(&[(&key, term2)])),
        );
    }
    if let Some(n) = number {
        let name = n.field.name.as_str();
        let sort = format!("{name}<");
        add(
            "Sort, largest first",
            format!(
                "`sort={name}<` sorts descending, `{name}>` ascending; write `<` and `>` as `%3C` and `%3E` in a URL. Records without a value come last."
            ),
            format!("{records}?{}", query(&[("sort", &sort), ("per_page", "5")])),
        );
        if let Some(k) = keyword {
            let v1 = plain(&k.top[0].value);
            add(
                "Filter and sort",
                format!(
                    "Conditions combine: `{}` = {}, by `{name}` descending.",
                    k.field.name,
                    code(&v1)
                ),
                format!(
                    "{records}?{}",
                    query(&[(&k.field.name, &v1), ("sort", &sort), ("per_page", "5")])
                ),
            );
        }
    }
    let count = guide.dataset.record_count;
    if count >= 2 {
        let per_page = if count > 10 { "10" } else { "1" };
        add(
            "Paging",
            format!(
                "`page` starts at 1; `per_page` is 20 by default and at most 100. The answer's `total` counts every match ({count} here without conditions)."
            ),
            format!(
                "{records}?{}",
                query(&[("page", "2"), ("per_page", per_page)])
            ),
        );
    }
    let mut chosen: Vec<&str> = Vec::new();
    if let Some(k) = keyword {
        chosen.push(&k.field.name);
    }
    if let Some(n) = number {
        chosen.push(&n.field.name);
    }
    if !chosen.is_empty() {
        add(
            "Only some fields",
            "`fields` picks the fields returned; `_id` always comes along.".into(),
            format!(
                "{records}?fields={}&per_page=5",
                chosen
                    .iter()
                    .map(|c| encode(c))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        );
    }
    if let Some(id) = guide.sample_ids.first() {
        add(
            "One record by its identifier",
            format!("`{}` is the `_id` of the first record.", cell(id)),
            format!("{records}/{}", encode(id)),
        );
    }
    let ids: Vec<&String> = guide
        .sample_ids
        .iter()
        .filter(|i| !i.contains(','))
        .take(2)
        .collect();
    if ids.len() == 2 {
        add(
            "Several records by identifier",
            "`_ids` takes a comma-separated list; unknown identifiers are skipped.".into(),
            format!(
                "{records}?_ids={}",
                ids.iter().map(|i| encode(i)).collect::<Vec<_>>().join(",")
            ),
        );
    }
    if let Some(k) = keyword {
        let name = k.field.name.as_str();
        match number {
            Some(n) => {
                let field = n.field.name.as_str();
                add(
                    "Grouped statistics",
                    format!(
                        "One group per `{name}` value, with count, sum, avg, min, max and the 25/50/75 percentiles of `{field}`; groups by count, largest first."
                    ),
                    format!("{agg}?{}", query(&[("group_by", name), ("field", field)])),
                );
                if k.top.len() >= 2 {
                    let v1 = plain(&k.top[0].value);
                    let v2 = plain(&k.top[1].value);
                    add(
                        "Grouped statistics of a filtered set",
                        format!(
                            "Every records filter works here too: two `{name}` values side by side."
                        ),
                        format!(
                            "{agg}?{}",
                            query(&[
                                ("group_by", name),
                                ("field", field),
                                (name, &v1),
                                (name, &v2)
                            ])
                        ),
                    );
                }
            }
            None => add(
                "Grouped counts",
                format!("One group per `{name}` value with its record count."),
                format!("{agg}?{}", query(&[("group_by", name)])),
            ),
        }
    }
    let split = number.and_then(split_range);
    if let Some((name, low, mid, _)) = &split {
        let name = name.as_str();
        if mid != low {
            add(
                "A range",
                format!(
                    "`{name}` from {} (included) up to {} (excluded): bounds on one field make one interval.",
                    code(low),
                    code(mid)
                ),
                format!(
                    "{records}?{}",
                    query(&[
                        (&format!("{name}[gte]"), low),
                        (&format!("{name}[lt]"), mid)
                    ])
                ),
            );
        }
    }
    let keywords: Vec<&FieldFacts> = guide
        .fields
        .iter()
        .filter(|f| {
            f.field.field_type == FieldType::Keyword
                && !f.top.is_empty()
                && guide.dataset.id_field.as_deref() != Some(f.field.name.as_str())
        })
        .collect();
    if let [a, b, ..] = keywords.as_slice() {
        add(
            "Grouped by two fields",
            format!(
                "One group per combination of `{}` and `{}`, largest first; each group's `keys` holds both values; `limit` keeps the first 10.",
                a.field.name, b.field.name
            ),
            format!(
                "{agg}?{}",
                query(&[
                    ("group_by", &format!("{},{}", a.field.name, b.field.name)),
                    ("limit", "10")
                ])
            ),
        );
    }
    if let Some(date) = guide
        .fields
        .iter()
        .find(|f| f.field.field_type == FieldType::Date && f.range.is_some())
    {
        let name = date.field.name.as_str();
        let mut pairs = vec![("group_by".to_string(), format!("{name}[month]"))];
        if let Some(n) = number {
            pairs.push(("field".into(), n.field.name.clone()));
        }
        pairs.push(("sort".into(), "key>".into()));
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        add(
            "Per month",
            format!(
                "`{name}` in monthly buckets (UTC), in time order (`sort=key>`); `year`, `day` and `hour` work too."
            ),
            format!("{agg}?{}", query(&pairs)),
        );
    }
    if let (Some(k), Some(n)) = (keyword, number) {
        let (name, field) = (k.field.name.as_str(), n.field.name.as_str());
        add(
            "The top groups by a statistic",
            format!(
                "The 5 `{name}` values with the highest average `{field}`, with its median and 95th percentile; `missing` counts records without a value."
            ),
            format!(
                "{agg}?{}",
                query(&[
                    ("group_by", name),
                    ("field", field),
                    ("percentiles", "50,95"),
                    ("sort", "avg<"),
                    ("limit", "5")
                ])
            ),
        );
    }
    if let Some(k) = keyword {
        let name = k.field.name.as_str();
        let v1 = plain(&k.top[0].value);
        let parameter = format!("{name}[ne]");
        add(
            "Everything but one value",
            format!(
                "Records whose `{name}` is not {} (records without a `{name}` are included: add `{name}[exists]=true` to leave them out).",
                code(&v1)
            ),
            format!("{records}?{}", query(&[(parameter.as_str(), v1.as_str())])),
        );
    }
    if let Some((name, _, mid, high)) = &split {
        let name = name.as_str();
        if mid != high {
            add(
                "Above a value, up to another",
                format!(
                    "`{name}` above {} (excluded) and at most {} (included), largest first.",
                    code(mid),
                    code(high)
                ),
                format!(
                    "{records}?{}",
                    query(&[
                        (&format!("{name}[gt]"), mid),
                        (&format!("{name}[lte]"), high),
                        ("sort", &format!("{name}<")),
                    ])
                ),
            );
        }
    }
    if let Some(k) = keyword {
        let name = k.field.name.as_str();
        let v1 = plain(&k.top[0].value);
        let export = format!("{base_url}/datasets/{}/export", encode(slug));
        add(
            "Every match in one answer (CSV)",
            format!(
                "All {} records whose `{name}` is {} as CSV, streamed; `format=ndjson` gives one JSON record a line. The header `X-Total-Count` says how many come.",
                k.top[0].count,
                code(&v1)
            ),
            format!("{export}?{}", query(&[("format", "csv"), (name, &v1)])),
        );
    }
    out
}

/// A number field's name and its range cut in two, as query values: (name, lowest, middle,
/// highest), the middle rounded down; `None` when the field has a single value.
fn split_range(n: &FieldFacts) -> Option<(String, String, String, String)> {
    let range = n.range.as_ref()?;
    let (lo, hi) = (range.min.as_f64()?, range.max.as_f64()?);
    (hi > lo).then(|| {
        (
            n.field.name.clone(),
            json_number(lo).to_string(),
            json_number(((lo + hi) / 2.0).floor().max(lo)).to_string(),
            json_number(hi).to_string(),
        )
    })
}

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

/// `skill.md` for one dataset, from `templates/skill.md`.
pub fn skill_md(guide: &Guide, site_url: &str) -> String {
    use minijinja::context;
    use query::params::{DEFAULT_PER_PAGE, MAX_PER_PAGE};

    let d = &guide.dataset;
    let base_url = format!("{site_url}/api/v1");
    let path = encode(&d.slug);
    let identifier = match &d.id_field {
        Some(f) if f == crate::import::schema::ID => "`_id`, as the file gives it".to_string(),
        Some(f) => format!("`_id`, the value of `{}`", cell(f)),
        None => "`_id`, the record's row number in the file".to_string(),
    };
    let fields: Vec<_> = guide
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
        .collect();
    let records_url = format!("{base_url}/datasets/{path}/records");
    let operators: Vec<_> = guide
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
        .collect();
    let with_missing: Vec<&FieldFacts> = guide
        .fields
        .iter()
        .filter(|f| f.missing > 0 && f.field.field_type != FieldType::Json)
        .collect();
    let missing: Vec<_> = with_missing
        .iter()
        .map(|f| context! { name => cell(&f.field.name), count => f.missing })
        .collect();
    let missing_example = with_missing.iter().max_by_key(|f| f.missing).map(|f| {
        let parameter = format!("{}[exists]", f.field.name);
        curl(&format!(
            "{records_url}?{}",
            query(&[(parameter.as_str(), "false")])
        ))
    });
    let examples: Vec<_> = examples(guide, &base_url)
        .into_iter()
        .map(|e| context! { title => e.title, note => e.note, curl => curl(&e.url) })
        .collect();
    let notes = [
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
        "The data changes only when the dataset is re-imported; answers carry an `ETag`.".to_string(),
    ];
    crate::templates::render(
        "skill.md",
        context! {
            title => cell(&d.title),
            slug => d.slug.clone(),
            path,
            description => d.description.trim(),
            record_count => d.record_count,
            updated => super::pages::when(d.updated_at),
            license => d.license.as_deref().map(cell),
            source_url => d.source_url.as_deref().map(cell),
            identifier,
            base_url,
            site_url,
            metadata_path => crate::auth::discovery::METADATA_PATH,
            fields,
            operators,
            missing,
            missing_example,
            examples,
            notes,
        },
    )
    .unwrap_or_default()
}

/// `catalog.md`: every dataset with its guide and API URLs, from `templates/catalog.md`.
pub fn catalog_md(datasets: &[entity::dataset::Model], site_url: &str) -> String {
    let datasets: Vec<_> = datasets
        .iter()
        .map(|d| {
            minijinja::context! {
                title => cell(&d.title),
                slug => d.slug.clone(),
                path => encode(&d.slug),
                record_count => d.record_count,
                updated => super::pages::when(d.updated_at),
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
            base_url => format!("{site_url}/api/v1"),
            metadata_path => crate::auth::discovery::METADATA_PATH,
            tools => crate::api::mcp::tools::NAMES,
            formats,
        },
    )
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::search_term;

    #[test]
    fn search_terms() {
        assert_eq!(
            search_term("united air lines inc.").as_deref(),
            Some("united")
        );
        assert_eq!(search_term("臺東縣臺東市").as_deref(), Some("臺東縣"));
        assert_eq!(search_term("a 12 日月潭").as_deref(), Some("日月潭"));
        assert_eq!(search_term("12 ab"), None);
    }
}
