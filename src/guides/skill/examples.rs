//! The worked examples of `skill.md`: which fields make good examples (a described number
//! with a wide range, the keyword whose common value covers most records, a searchable word of
//! a text field) and the example requests built from their real values, each of which works as
//! written.

use entity::FieldType;
use query::views::json_number;
use query::{MAX_RADIUS_M, distance_m};

use super::{FieldFacts, Guide, Range};
use crate::guides::text::{cell, code, plain, query};
use crate::http::url::encode;

fn spread(range: &Range) -> f64 {
    match (range.min.as_f64(), range.max.as_f64()) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    }
}

/// The number field the examples sort and aggregate on: one the schema describes (a
/// measurement someone cared to explain) before one it does not, then the widest range; a
/// constant field makes a dull example.
pub(super) fn number_example_index(fields: &[FieldFacts]) -> Option<usize> {
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
pub(super) fn keyword_example(guide: &Guide) -> Option<&FieldFacts> {
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

/// One worked example: a heading, what it shows, and the URL.
pub(super) struct Example {
    pub title: String,
    pub note: String,
    pub url: String,
}

pub(super) fn examples(guide: &Guide, base_url: &str) -> Vec<Example> {
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
    // A place: the centre of the points' extent, and a radius that reaches its corners, so
    // the example finds records whatever the data.
    let extent = |name: &Option<String>| {
        let name = name.as_deref()?;
        let range = guide
            .fields
            .iter()
            .find(|f| f.field.name == name)?
            .range
            .as_ref()?;
        Some((range.min.as_f64()?, range.max.as_f64()?))
    };
    if let (Some((lat_min, lat_max)), Some((lon_min, lon_max))) = (
        extent(&guide.dataset.geo_lat),
        extent(&guide.dataset.geo_lon),
    ) {
        let (lat, lon) = ((lat_min + lat_max) / 2.0, (lon_min + lon_max) / 2.0);
        let reach = [
            (lat_min, lon_min),
            (lat_min, lon_max),
            (lat_max, lon_min),
            (lat_max, lon_max),
        ]
        .iter()
        .map(|&(y, x)| distance_m(lat, lon, y, x))
        .fold(0.0, f64::max);
        let km = ((reach * 1.05 / 1000.0).ceil() + 1.0).min(MAX_RADIUS_M / 1000.0);
        let near = format!("{lat:.4},{lon:.4},{km}km");
        add(
            "Near a place",
            format!(
                "Records within {km} km of latitude {lat:.4}, longitude {lon:.4} (great-circle distance; the radius in `m` or `km`), nearest first (`sort=_distance>`), each with its `_distance_m`; `bbox=<min_lon>,<min_lat>,<max_lon>,<max_lat>` keeps a box instead."
            ),
            format!(
                "{records}?{}",
                query(&[
                    ("near", near.as_str()),
                    ("sort", "_distance>"),
                    ("per_page", "5")
                ])
            ),
        );
    }
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
        add(
            "Best matches first",
            format!(
                "`sort=_score<` orders the matches of {} by relevance (BM25: rarer terms, more occurrences and shorter texts rank higher); each record carries its `_score`.",
                code(term)
            ),
            format!(
                "{records}?{}",
                query(&[("q", term), ("sort", "_score<"), ("per_page", "5")])
            ),
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
        let v1 = plain(&a.top[0].value);
        add(
            "Records and their facets",
            format!(
                "The first 5 records whose `{}` is {}, and beside them, counted over every match, the 5 most frequent `{}` values (`facets`).",
                a.field.name,
                code(&v1),
                b.field.name
            ),
            format!(
                "{records}?{}",
                query(&[
                    (a.field.name.as_str(), v1.as_str()),
                    ("facet", b.field.name.as_str()),
                    ("facet_size", "5"),
                    ("per_page", "5")
                ])
            ),
        );
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
        if let [first, second, _, ..] = k.top.as_slice() {
            let v2 = plain(&second.value);
            let parameter = format!("{name}[nin]");
            // A value holding a comma would be split by `nin`'s list.
            let listable = !v1.contains(',') && !v2.contains(',');
            if listable {
                add(
                    "None of several values",
                    format!(
                        "Records whose `{name}` is neither {} nor {} (`nin` is a repeated `ne`).",
                        code(&v1),
                        code(&v2)
                    ),
                    format!(
                        "{records}?{}",
                        query(&[(parameter.as_str(), &format!("{v1},{v2}"))])
                    ),
                );
            }
            // At least as many records as the second largest group: two groups or more.
            let least = second.count.min(first.count).to_string();
            add(
                "Groups by size",
                format!(
                    "Only the `{name}` values with at least {least} records (`min_count`, like SQL's `HAVING`), largest first; `total_groups` counts the groups kept."
                ),
                format!(
                    "{agg}?{}",
                    query(&[("group_by", name), ("min_count", least.as_str())])
                ),
            );
        }
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
