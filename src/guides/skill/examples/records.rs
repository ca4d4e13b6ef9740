//! The examples that read records: matching, searching, sorting, paging, picking fields and
//! records, ranges and exclusions, and the export.

use query::{MAX_RADIUS_M, distance_m};

use super::{Example, Picks, split_range, text_examples};
use crate::guides::text::{cell, code, plain, query};
use crate::http::url::encode;

pub(super) fn metadata(p: &Picks, out: &mut Vec<Example>) {
    out.push(Example::new(
        "Metadata and schema",
        "Title, licence, record count, and every field with its type and filters.",
        format!("{}/datasets/{}", p.base_url, encode(&p.guide.dataset.slug)),
    ));
}

pub(super) fn first_records(p: &Picks, out: &mut Vec<Example>) {
    out.push(Example::new(
        "The first records",
        "Records come in the order of the imported file unless you sort.",
        format!("{}?per_page=5", p.records),
    ));
}

/// The lowest and highest value of a coordinate field, when the dataset has one.
fn extent(p: &Picks, name: Option<&str>) -> Option<(f64, f64)> {
    let name = name?;
    let facts = p.guide.fields.iter().find(|f| f.field.name == name)?;
    let range = facts.range.as_ref()?;
    Some((range.min.as_f64()?, range.max.as_f64()?))
}

/// A place: the centre of the points' extent, and a radius that reaches its corners, so the
/// example finds records whatever the data.
pub(super) fn near_a_place(p: &Picks, out: &mut Vec<Example>) {
    let dataset = &p.guide.dataset;
    let (Some((lat_min, lat_max)), Some((lon_min, lon_max))) = (
        extent(p, dataset.geo_lat.as_deref()),
        extent(p, dataset.geo_lon.as_deref()),
    ) else {
        return;
    };
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
    out.push(Example::new(
        "Near a place",
        format!(
            "Records within {km} km of latitude {lat:.4}, longitude {lon:.4} (great-circle distance; the radius in `m` or `km`), nearest first (`sort=_distance>`), each with its `_distance_m`; `bbox=<min_lon>,<min_lat>,<max_lon>,<max_lat>` keeps a box instead."
        ),
        format!(
            "{}?{}",
            p.records,
            query(&[
                ("near", near.as_str()),
                ("sort", "_distance>"),
                ("per_page", "5")
            ])
        ),
    ));
}

/// The keyword's most common value, then its two most common as an OR.
pub(super) fn keyword_matches(p: &Picks, out: &mut Vec<Example>) {
    let Some(k) = p.keyword else { return };
    let records = &p.records;
    let name = k.field.name.as_str();
    let v1 = plain(&k.top[0].value);
    out.push(Example::new(
        "Exact match on a keyword",
        format!(
            "Records whose `{name}` is {} ({} records).",
            code(&v1),
            k.top[0].count
        ),
        format!("{records}?{}", query(&[(name, &v1)])),
    ));
    if let Some(second) = k.top.get(1) {
        let v2 = plain(&second.value);
        out.push(Example::new(
            "Several values of one field (OR)",
            format!(
                "Repeating a name means OR: `{name}` is {} or {}.",
                code(&v1),
                code(&v2)
            ),
            format!("{records}?{}", query(&[(name, &v1), (name, &v2)])),
        ));
    }
}

pub(super) fn number_match(p: &Picks, out: &mut Vec<Example>) {
    let Some(n) = p.number else { return };
    let Some(common) = n.top.first() else { return };
    let name = n.field.name.as_str();
    let v = plain(&common.value);
    out.push(Example::new(
        "Exact match on a number",
        format!(
            "Numbers compare as numbers (`5` matches `5.0`): `{name}` = {} ({} records).",
            code(&v),
            common.count
        ),
        format!("{}?{}", p.records, query(&[(name, &v)])),
    ));
}

/// Searching every text field, by relevance, then one field: the second text field when there
/// is one, so the examples show two.
pub(super) fn full_text(p: &Picks, out: &mut Vec<Example>) {
    let texts = text_examples(p.guide);
    let Some((f, term, _)) = texts.first() else {
        return;
    };
    let records = &p.records;
    out.push(Example::new(
        "Full-text search",
        format!(
            "`q` finds records where every term occurs in some text field, ignoring case; here {} (it occurs in `{}`).",
            code(term),
            f.field.name
        ),
        format!("{records}?{}", query(&[("q", term)])),
    ));
    out.push(Example::new(
        "Best matches first",
        format!(
            "`sort=_score<` orders the matches of {} by relevance (BM25: rarer terms, more occurrences and shorter texts rank higher); each record carries its `_score`.",
            code(term)
        ),
        format!(
            "{records}?{}",
            query(&[("q", term), ("sort", "_score<"), ("per_page", "5")])
        ),
    ));
    let (f2, term2, _) = texts.get(1).unwrap_or(&texts[0]);
    let key = format!("q[{}]", f2.field.name);
    out.push(Example::new(
        "Full-text search in one field",
        format!("`q[{}]` searches that text field only.", f2.field.name),
        format!("{records}?{}", query(&[(&key, term2)])),
    ));
}

/// Sorting on the number, alone and after the keyword's filter.
pub(super) fn sorted(p: &Picks, out: &mut Vec<Example>) {
    let Some(n) = p.number else { return };
    let records = &p.records;
    let name = n.field.name.as_str();
    let sort = format!("{name}<");
    out.push(Example::new(
        "Sort, largest first",
        format!(
            "`sort={name}<` sorts descending, `{name}>` ascending; write `<` and `>` as `%3C` and `%3E` in a URL. Records without a value come last."
        ),
        format!("{records}?{}", query(&[("sort", &sort), ("per_page", "5")])),
    ));
    if let Some(k) = p.keyword {
        let v1 = plain(&k.top[0].value);
        out.push(Example::new(
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
        ));
    }
}

/// A second page, when there is one: of ten records, or of one in a tiny dataset.
pub(super) fn paging(p: &Picks, out: &mut Vec<Example>) {
    let count = p.guide.dataset.record_count;
    if count < 2 {
        return;
    }
    let per_page = if count > 10 { "10" } else { "1" };
    out.push(Example::new(
        "Paging",
        format!(
            "`page` starts at 1; `per_page` is 20 by default and at most 100. The answer's `total` counts every match ({count} here without conditions)."
        ),
        format!(
            "{}?{}",
            p.records,
            query(&[("page", "2"), ("per_page", per_page)])
        ),
    ));
}

/// Comma-separated, each percent-encoded: a list as `fields` and `_ids` take it.
fn list<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|i| encode(i.as_ref()))
        .collect::<Vec<_>>()
        .join(",")
}

/// The fields already shown, the keyword and the number.
pub(super) fn some_fields(p: &Picks, out: &mut Vec<Example>) {
    let chosen: Vec<&str> = [p.keyword, p.number]
        .into_iter()
        .flatten()
        .map(|f| f.field.name.as_str())
        .collect();
    if chosen.is_empty() {
        return;
    }
    out.push(Example::new(
        "Only some fields",
        "`fields` picks the fields returned; `_id` always comes along.",
        format!("{}?fields={}&per_page=5", p.records, list(&chosen)),
    ));
}

/// One record, then two; identifiers holding a comma would be split by `_ids`' list.
pub(super) fn by_identifier(p: &Picks, out: &mut Vec<Example>) {
    let sample = &p.guide.sample_ids;
    if let Some(id) = sample.first() {
        out.push(Example::new(
            "One record by its identifier",
            format!("`{}` is the `_id` of the first record.", cell(id)),
            format!("{}/{}", p.records, encode(id)),
        ));
    }
    let ids: Vec<&String> = sample.iter().filter(|i| !i.contains(',')).take(2).collect();
    if ids.len() == 2 {
        out.push(Example::new(
            "Several records by identifier",
            "`_ids` takes a comma-separated list; unknown identifiers are skipped.",
            format!("{}?_ids={}", p.records, list(&ids)),
        ));
    }
}

/// The lower half of the number's range, as one interval.
pub(super) fn lower_range(p: &Picks, out: &mut Vec<Example>) {
    let Some((name, low, mid, _)) = p.number.and_then(split_range) else {
        return;
    };
    if mid == low {
        return;
    }
    out.push(Example::new(
        "A range",
        format!(
            "`{name}` from {} (included) up to {} (excluded): bounds on one field make one interval.",
            code(&low),
            code(&mid)
        ),
        format!(
            "{}?{}",
            p.records,
            query(&[
                (&format!("{name}[gte]"), &low),
                (&format!("{name}[lt]"), &mid)
            ])
        ),
    ));
}

/// The keyword's most common value left out, then its two most common.
pub(super) fn exclusions(p: &Picks, out: &mut Vec<Example>) {
    let Some(k) = p.keyword else { return };
    let records = &p.records;
    let name = k.field.name.as_str();
    let v1 = plain(&k.top[0].value);
    let parameter = format!("{name}[ne]");
    out.push(Example::new(
        "Everything but one value",
        format!(
            "Records whose `{name}` is not {} (records without a `{name}` are included: add `{name}[exists]=true` to leave them out).",
            code(&v1)
        ),
        format!("{records}?{}", query(&[(parameter.as_str(), v1.as_str())])),
    ));
    let [_, second, _, ..] = k.top.as_slice() else {
        return;
    };
    let v2 = plain(&second.value);
    // A value holding a comma would be split by `nin`'s list.
    if v1.contains(',') || v2.contains(',') {
        return;
    }
    let parameter = format!("{name}[nin]");
    out.push(Example::new(
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
    ));
}

/// The upper half of the number's range, largest first.
pub(super) fn upper_range(p: &Picks, out: &mut Vec<Example>) {
    let Some((name, _, mid, high)) = p.number.and_then(split_range) else {
        return;
    };
    if mid == high {
        return;
    }
    out.push(Example::new(
        "Above a value, up to another",
        format!(
            "`{name}` above {} (excluded) and at most {} (included), largest first.",
            code(&mid),
            code(&high)
        ),
        format!(
            "{}?{}",
            p.records,
            query(&[
                (&format!("{name}[gt]"), &mid),
                (&format!("{name}[lte]"), &high),
                ("sort", &format!("{name}<")),
            ])
        ),
    ));
}

/// Every record of the keyword's most common value, as CSV.
pub(super) fn export(p: &Picks, out: &mut Vec<Example>) {
    let Some(k) = p.keyword else { return };
    let name = k.field.name.as_str();
    let v1 = plain(&k.top[0].value);
    let export = format!(
        "{}/datasets/{}/export",
        p.base_url,
        encode(&p.guide.dataset.slug)
    );
    out.push(Example::new(
        "Every match in one answer (CSV)",
        format!(
            "All {} records whose `{name}` is {} as CSV, streamed; `format=ndjson` gives one JSON record a line. The header `X-Total-Count` says how many come.",
            k.top[0].count,
            code(&v1)
        ),
        format!("{export}?{}", query(&[("format", "csv"), (name, &v1)])),
    ));
}
