//! The examples that aggregate: groups with their statistics, facets beside records, time
//! buckets, the top groups and the groups kept by size.

use entity::FieldType;

use super::{Example, FieldFacts, Picks};
use crate::guides::text::{code, plain, query};

/// Statistics of the number per keyword value, then for two of its values; counts alone when
/// there is no number.
pub(super) fn grouped_statistics(p: &Picks, out: &mut Vec<Example>) {
    let Some(k) = p.keyword else { return };
    let agg = &p.agg;
    let name = k.field.name.as_str();
    let Some(n) = p.number else {
        out.push(Example::new(
            "Grouped counts",
            format!("One group per `{name}` value with its record count."),
            format!("{agg}?{}", query(&[("group_by", name)])),
        ));
        return;
    };
    let field = n.field.name.as_str();
    out.push(Example::new(
        "Grouped statistics",
        format!(
            "One group per `{name}` value, with count, sum, avg, min, max and the 25/50/75 percentiles of `{field}`; groups by count, largest first."
        ),
        format!("{agg}?{}", query(&[("group_by", name), ("field", field)])),
    ));
    let [first, second, ..] = k.top.as_slice() else {
        return;
    };
    let (v1, v2) = (plain(&first.value), plain(&second.value));
    out.push(Example::new(
        "Grouped statistics of a filtered set",
        format!("Every records filter works here too: two `{name}` values side by side."),
        format!(
            "{agg}?{}",
            query(&[
                ("group_by", name),
                ("field", field),
                (name, &v1),
                (name, &v2)
            ])
        ),
    ));
}

/// The first two keyword fields with values, the identifier aside: its values are all
/// different, which makes dull groups.
fn two_keywords<'a>(p: &Picks<'a>) -> Option<(&'a FieldFacts, &'a FieldFacts)> {
    let id_field = p.guide.dataset.id_field.as_deref();
    let mut keywords = p.guide.fields.iter().filter(|f| {
        f.field.field_type == FieldType::Keyword
            && !f.top.is_empty()
            && id_field != Some(f.field.name.as_str())
    });
    Some((keywords.next()?, keywords.next()?))
}

/// Records of one keyword value with the other keyword's facets, then both keywords as groups.
pub(super) fn facets_and_two_fields(p: &Picks, out: &mut Vec<Example>) {
    let Some((a, b)) = two_keywords(p) else {
        return;
    };
    let v1 = plain(&a.top[0].value);
    out.push(Example::new(
        "Records and their facets",
        format!(
            "The first 5 records whose `{}` is {}, and beside them, counted over every match, the 5 most frequent `{}` values (`facets`).",
            a.field.name,
            code(&v1),
            b.field.name
        ),
        format!(
            "{}?{}",
            p.records,
            query(&[
                (a.field.name.as_str(), v1.as_str()),
                ("facet", b.field.name.as_str()),
                ("facet_size", "5"),
                ("per_page", "5")
            ])
        ),
    ));
    out.push(Example::new(
        "Grouped by two fields",
        format!(
            "One group per combination of `{}` and `{}`, largest first; each group's `keys` holds both values; `limit` keeps the first 10.",
            a.field.name, b.field.name
        ),
        format!(
            "{}?{}",
            p.agg,
            query(&[
                ("group_by", &format!("{},{}", a.field.name, b.field.name)),
                ("limit", "10")
            ])
        ),
    ));
}

/// The first date field in monthly buckets, with the number's statistics when there is one.
pub(super) fn per_month(p: &Picks, out: &mut Vec<Example>) {
    let Some(date) = p
        .guide
        .fields
        .iter()
        .find(|f| f.field.field_type == FieldType::Date && f.range.is_some())
    else {
        return;
    };
    let name = date.field.name.as_str();
    let month = format!("{name}[month]");
    let mut pairs = vec![("group_by", month.as_str())];
    if let Some(n) = p.number {
        pairs.push(("field", n.field.name.as_str()));
    }
    pairs.push(("sort", "key>"));
    out.push(Example::new(
        "Per month",
        format!(
            "`{name}` in monthly buckets (UTC), in time order (`sort=key>`); `year`, `day` and `hour` work too."
        ),
        format!("{}?{}", p.agg, query(&pairs)),
    ));
}

pub(super) fn top_groups(p: &Picks, out: &mut Vec<Example>) {
    let (Some(k), Some(n)) = (p.keyword, p.number) else {
        return;
    };
    let (name, field) = (k.field.name.as_str(), n.field.name.as_str());
    out.push(Example::new(
        "The top groups by a statistic",
        format!(
            "The 5 `{name}` values with the highest average `{field}`, with its median and 95th percentile; `missing` counts records without a value."
        ),
        format!(
            "{}?{}",
            p.agg,
            query(&[
                ("group_by", name),
                ("field", field),
                ("percentiles", "50,95"),
                ("sort", "avg<"),
                ("limit", "5")
            ])
        ),
    ));
}

/// The keyword's values with at least as many records as its second largest group, so two
/// groups or more are kept; shown when it has a third value, which the bound may leave out.
pub(super) fn groups_by_size(p: &Picks, out: &mut Vec<Example>) {
    let Some(k) = p.keyword else { return };
    let [first, second, _, ..] = k.top.as_slice() else {
        return;
    };
    let name = k.field.name.as_str();
    let least = second.count.min(first.count).to_string();
    out.push(Example::new(
        "Groups by size",
        format!(
            "Only the `{name}` values with at least {least} records (`min_count`, like SQL's `HAVING`), largest first; `total_groups` counts the groups kept."
        ),
        format!(
            "{}?{}",
            p.agg,
            query(&[("group_by", name), ("min_count", least.as_str())])
        ),
    ));
}
