//! The query-string reader of the REST front end: a query string decoded into pairs by
//! `application/x-www-form-urlencoded` rules (`+` is a space), raw and percent-encoded
//! characters alike, so `sort=dep_delay<` and `sort=dep_delay%3C` are the same request
//! (contract §5); then the pairs read into the resolver's typed parameters, with the rules of
//! repeated keys (a filter repeated is OR; `page`, `sort`… given once) and of the names each
//! endpoint refuses. The syntax of each value is the resolver's (`query::params`), shared with
//! the other front ends.

use query::ApiError;
use query::params::{
    AggParams, ExportFormat, ExportParams, GroupByParam, RecordParams, add_condition, check,
    parse_count, parse_group_sort, parse_percentiles, parse_sort, split_list,
};

/// The decoded `(name, value)` pairs of a query string, in order.
pub fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    raw.map(|q| {
        form_urlencoded::parse(q.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    })
    .unwrap_or_default()
}

/// Takes a parameter that may be given once.
pub(super) fn once(slot: &mut Option<String>, name: &str, value: &str) -> Result<(), ApiError> {
    if slot.is_some() {
        return Err(ApiError::invalid(
            name,
            format!("The parameter {name} is given more than once."),
        ));
    }
    *slot = Some(value.to_string());
    Ok(())
}

/// Refuses any parameter, for a path that takes none (`what` names the answer).
pub(super) fn no_parameters(raw: Option<&str>, what: &str) -> Result<(), ApiError> {
    match pairs(raw).into_iter().next() {
        Some((name, _)) => Err(ApiError::invalid(
            name.clone(),
            format!("{what} takes no parameters, not {name}."),
        )),
        None => Ok(()),
    }
}

/// `version=` as given once: a whole number (from 1, which validation checks).
pub(super) fn version_of(value: Option<String>) -> Result<Option<u64>, ApiError> {
    value.map(|v| parse_count("version", &v)).transpose()
}

/// The parameters of `GET …/records` in decoded query-string pairs (contract §5).
pub fn record_params(pairs: &[(String, String)]) -> Result<RecordParams, ApiError> {
    let mut params = RecordParams::default();
    let (mut page, mut per_page, mut sort, mut fields) = (None, None, None, None);
    let (mut facet, mut facet_size, mut version, mut cursor) = (None, None, None, None);
    for (name, value) in pairs {
        match name.as_str() {
            "version" => once(&mut version, name, value)?,
            "cursor" => once(&mut cursor, name, value)?,
            "page" => once(&mut page, name, value)?,
            "per_page" => once(&mut per_page, name, value)?,
            "sort" => once(&mut sort, name, value)?,
            "fields" => once(&mut fields, name, value)?,
            "facet" => once(&mut facet, name, value)?,
            "facet_size" => once(&mut facet_size, name, value)?,
            _ => add_condition(&mut params.filter, name, value)?,
        }
    }
    params.facet = facet.map(|f| split_list(&f));
    params.facet_size = facet_size
        .map(|n| parse_count("facet_size", &n))
        .transpose()?;
    params.version = version_of(version)?;
    if cursor.is_some() && page.is_some() {
        return Err(ApiError::invalid(
            "cursor",
            "cursor and page cannot go together: a cursor says which page comes next.",
        ));
    }
    params.cursor = cursor;
    params.page = page.map(|v| parse_count("page", &v)).transpose()?;
    params.per_page = per_page.map(|v| parse_count("per_page", &v)).transpose()?;
    if let Some(sort) = sort {
        params.sort = parse_sort(&sort)?;
    }
    params.fields = fields.map(|f| split_list(&f));
    check(&params)?;
    Ok(params)
}

/// The parameters of `GET …/agg` in decoded query-string pairs (contract §6, §12.2).
pub fn agg_params(pairs: &[(String, String)]) -> Result<AggParams, ApiError> {
    let mut params = AggParams::default();
    let (mut group_by, mut field, mut percentiles, mut sort, mut limit, mut min_count) =
        (None, None, None, None, None, None);
    let mut version = None;
    for (name, value) in pairs {
        match name.as_str() {
            "version" => once(&mut version, name, value)?,
            "group_by" => once(&mut group_by, name, value)?,
            "field" => once(&mut field, name, value)?,
            "percentiles" => once(&mut percentiles, name, value)?,
            "sort" => once(&mut sort, name, value)?,
            "limit" => once(&mut limit, name, value)?,
            "min_count" => once(&mut min_count, name, value)?,
            "page" | "per_page" | "fields" | "cursor" => {
                return Err(ApiError::invalid(
                    name.as_str(),
                    format!(
                        "{name} does not apply to agg: it answers groups, not records; use limit and sort to choose groups."
                    ),
                ));
            }
            "facet" | "facet_size" => {
                return Err(ApiError::invalid(
                    name.as_str(),
                    format!(
                        "{name} does not apply to agg: group_by counts a field's values; use limit to keep the most frequent."
                    ),
                ));
            }
            _ => add_condition(&mut params.filter, name, value)?,
        }
    }
    params.group_by = group_by
        .map(|g| {
            split_list(&g)
                .iter()
                .map(|item| GroupByParam::parse(item))
                .collect()
        })
        .unwrap_or_default();
    params.field = field;
    params.percentiles = percentiles.map(|p| parse_percentiles(&p)).transpose()?;
    params.sort = sort.map(|s| parse_group_sort(&s)).transpose()?;
    params.limit = limit.map(|l| parse_count("limit", &l)).transpose()?;
    params.min_count = min_count
        .map(|n| parse_count("min_count", &n))
        .transpose()?;
    params.version = version_of(version)?;
    check(&params)?;
    Ok(params)
}

/// The parameters of `GET …/export` in decoded query-string pairs (contract §12.3): `page`
/// and `per_page` are refused, since an export is every matching record.
pub fn export_params(pairs: &[(String, String)]) -> Result<ExportParams, ApiError> {
    let mut params = ExportParams::default();
    let (mut sort, mut fields, mut format, mut version) = (None, None, None, None);
    for (name, value) in pairs {
        match name.as_str() {
            "version" => once(&mut version, name, value)?,
            "sort" => once(&mut sort, name, value)?,
            "fields" => once(&mut fields, name, value)?,
            "format" => once(&mut format, name, value)?,
            "page" | "per_page" | "facet" | "facet_size" | "cursor" => {
                return Err(ApiError::invalid(
                    name.as_str(),
                    format!(
                        "{name} does not apply to export: it sends every matching record; narrow it with filters."
                    ),
                ));
            }
            _ => add_condition(&mut params.filter, name, value)?,
        }
    }
    if let Some(sort) = sort {
        params.sort = parse_sort(&sort)?;
    }
    params.fields = fields.map(|f| split_list(&f));
    if let Some(format) = format {
        params.format = ExportFormat::parse(&format)?;
    }
    params.version = version_of(version)?;
    check(&params)?;
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use query::params::{AGG_PARAMETERS, EXPORT_PARAMETERS, RECORD_PARAMETERS};

    fn decoded(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn record_pairs() {
        let p = record_params(&decoded(&[
            ("q", "denver airport"),
            ("q[name]", "x"),
            ("carrier", "UA"),
            ("carrier", "AA"),
            ("_ids", "1, 2,"),
            ("page", "3"),
        ]))
        .unwrap();
        assert_eq!(p.filter.q, vec!["denver airport"]);
        assert_eq!(p.filter.exact.len(), 2);
        assert_eq!(p.filter.ids, Some(vec!["1".into(), "2".into()]));
        assert_eq!(p.page, Some(3));
        for bad in [
            ("page", "x"),
            ("per_page", "-1"),
            ("q[", "x"),
            ("q[]", "x"),
            ("_ids", ","),
            ("fields", ""),
        ] {
            assert!(record_params(&decoded(&[bad])).is_err(), "{bad:?}");
        }
        assert!(record_params(&decoded(&[("page", "1"), ("page", "2")])).is_err());
    }

    #[test]
    fn export_pairs() {
        let p = export_params(&decoded(&[
            ("carrier", "UA"),
            ("format", "CSV"),
            ("sort", "dep_delay<"),
            ("fields", "carrier"),
        ]))
        .unwrap();
        assert_eq!(p.format, ExportFormat::Csv);
        assert_eq!(p.filter.exact.len(), 1);
        assert_eq!(p.sort.len(), 1);
        assert_eq!(export_params(&[]).unwrap().format, ExportFormat::Ndjson);
        for bad in [
            ("page", "1"),
            ("per_page", "10"),
            ("format", "xml"),
            ("format", ""),
            ("fields", ","),
            ("sort", "a,<"),
        ] {
            let error = export_params(&decoded(&[bad])).unwrap_err();
            assert_eq!(error.code(), "invalid_parameter", "{bad:?}");
        }
        assert!(export_params(&decoded(&[("format", "csv"), ("format", "csv")])).is_err());
        for name in EXPORT_PARAMETERS {
            if let Ok(p) = export_params(&decoded(&[(name, value(name))])) {
                assert!(p.filter.exact.is_empty(), "{name}");
            }
        }
    }

    fn value(name: &str) -> &'static str {
        match name {
            "page" | "per_page" | "version" => "1",
            "format" => "csv",
            "sort" | "fields" | "group_by" | "field" => "x",
            _ => "a",
        }
    }

    /// The reserved names are exactly those the reader does not read as a filter.
    #[test]
    fn reserved_names_are_not_filters() {
        let value = |name: &str| match name {
            "page" | "per_page" | "facet_size" | "version" => "1",
            "sort" | "fields" | "group_by" | "field" | "facet" | "cursor" => "x",
            _ => "a",
        };
        for name in RECORD_PARAMETERS {
            let p = record_params(&decoded(&[(name, value(name))])).unwrap();
            assert!(p.filter.exact.is_empty(), "{name}");
        }
        let p = record_params(&decoded(&[("carrier", "UA")])).unwrap();
        assert_eq!(p.filter.exact.len(), 1);
        for name in AGG_PARAMETERS {
            if let Ok(p) = agg_params(&decoded(&[(name, value(name))])) {
                assert!(p.filter.exact.is_empty(), "{name}");
            }
        }
        let p = agg_params(&decoded(&[("carrier", "UA")])).unwrap();
        assert_eq!(p.filter.exact.len(), 1);
    }

    #[test]
    fn raw_and_encoded_are_the_same() {
        assert_eq!(
            pairs(Some("sort=a<&q=new+york")),
            pairs(Some("sort=a%3C&q=new%20york"))
        );
        assert_eq!(pairs(Some("q[name]=x"))[0].0, "q[name]");
        assert_eq!(pairs(Some("q%5Bname%5D=x"))[0].0, "q[name]");
        assert!(pairs(None).is_empty());
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// Any text decodes without a panic, and raw `<`, `>`, `"` mean what their
            /// percent-encodings mean (what `request_line` relies on).
            #[test]
            fn raw_and_encoded_agree(raw in "[a-z<>\"%&=+\\[\\]0-9A-F\\x{80}-\\x{10FFFF}]{0,60}") {
                let encoded = raw.replace('<', "%3C").replace('>', "%3E").replace('"', "%22");
                prop_assert_eq!(pairs(Some(&raw)), pairs(Some(&encoded)));
            }

            /// Whatever pairs a client encodes come back as they were.
            #[test]
            fn encoded_pairs_round_trip(input in proptest::collection::vec((".{0,12}", ".{0,12}"), 0..8)) {
                let query = form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(input.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .finish();
                prop_assert_eq!(pairs(Some(&query)), input);
            }
        }
    }
}
