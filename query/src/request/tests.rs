//! The parameters' syntax rules and the query-string reader, as clients write them.

use super::params::*;
use crate::error::ApiError;

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn sort_syntax() {
    let keys = parse_sort("dep_delay<,carrier>,origin").unwrap();
    assert_eq!(
        keys,
        vec![
            SortParam {
                name: "dep_delay".into(),
                descending: true,
                mark: Some('<'),
            },
            SortParam {
                name: "carrier".into(),
                descending: false,
                mark: Some('>'),
            },
            SortParam::new("origin", false),
        ]
    );
    for bad in ["", "<", ">", " > ", "a,,b", "a<,a>"] {
        assert_eq!(
            parse_sort(bad).unwrap_err().code(),
            "invalid_parameter",
            "{bad}"
        );
    }
}

/// Field names with `<` and `>`: a trailing mark is the direction when the rest
/// names a field, else part of the name.
#[test]
fn sort_keys_with_marks_in_names() {
    let fields = ["a", "a<", "<b>", "<"];
    let has = |name: &str| fields.contains(&name);
    let resolved = |text: &str| -> Vec<Option<(String, bool)>> {
        parse_sort(text)
            .unwrap()
            .iter()
            .map(|k| k.resolve(has))
            .collect()
    };
    let key = |name: &str, descending| Some((name.to_string(), descending));
    assert_eq!(resolved("a<"), [key("a", true)]);
    assert_eq!(resolved("a<>"), [key("a<", false)]);
    assert_eq!(resolved("a<<"), [key("a<", true)]);
    assert_eq!(resolved("<b>"), [key("<b>", false)]);
    assert_eq!(resolved("<b><"), [key("<b>", true)]);
    assert_eq!(resolved("<b>>"), [key("<b>", false)]);
    assert_eq!(resolved("<<"), [key("<", true)]);
    assert_eq!(resolved("<>"), [key("<", false)]);
    assert_eq!(resolved("b>"), [None]);
    // Only `a<` exists: the whole key names it.
    let only = |name: &str| name == "a<";
    assert_eq!(parse_sort("a<").unwrap()[0].resolve(only), key("a<", false));
    assert_eq!(parse_sort("a").unwrap()[0].resolve(only), None);
}

#[test]
fn record_pairs() {
    let p = RecordParams::from_pairs(&pairs(&[
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
        assert!(RecordParams::from_pairs(&pairs(&[bad])).is_err(), "{bad:?}");
    }
    assert!(RecordParams::from_pairs(&pairs(&[("page", "1"), ("page", "2")])).is_err());
}

#[test]
fn paging_bounds() {
    assert!(Paging::new(Some(0), None).is_err());
    assert!(Paging::new(None, Some(0)).is_err());
    assert!(Paging::new(None, Some(101)).is_err());
    assert_eq!(Paging::new(None, Some(100)).unwrap().per_page, 100);
    assert_eq!(Paging::new(Some(3), Some(10)).unwrap().offset(), 20);
    assert!(Paging::new(Some(MAX_PAGE + 1), None).is_err());
    assert_eq!(
        Paging::new(Some(MAX_PAGE), Some(100)).unwrap().offset(),
        u64::MAX
    );
}

#[test]
fn export_pairs() {
    let p = ExportParams::from_pairs(&pairs(&[
        ("carrier", "UA"),
        ("format", "CSV"),
        ("sort", "dep_delay<"),
        ("fields", "carrier"),
    ]))
    .unwrap();
    assert_eq!(p.format, ExportFormat::Csv);
    assert_eq!(p.filter.exact.len(), 1);
    assert_eq!(p.sort.len(), 1);
    assert_eq!(
        ExportParams::from_pairs(&[]).unwrap().format,
        ExportFormat::Ndjson
    );
    for bad in [
        ("page", "1"),
        ("per_page", "10"),
        ("format", "xml"),
        ("format", ""),
        ("fields", ","),
        ("sort", "a,<"),
    ] {
        let error = ExportParams::from_pairs(&pairs(&[bad])).unwrap_err();
        assert_eq!(error.code(), "invalid_parameter", "{bad:?}");
    }
    assert!(ExportParams::from_pairs(&pairs(&[("format", "csv"), ("format", "csv")])).is_err());
    for name in EXPORT_PARAMETERS {
        if let Ok(p) = ExportParams::from_pairs(&pairs(&[(name, value(name))])) {
            assert!(p.filter.exact.is_empty(), "{name}");
        }
    }
}

fn value(name: &str) -> &'static str {
    match name {
        "page" | "per_page" => "1",
        "format" => "csv",
        "sort" | "fields" | "group_by" | "field" => "x",
        _ => "a",
    }
}

#[test]
fn percentile_labels_are_plain_numbers() {
    assert_eq!(
        parse_percentiles(" 5, 99.9 ,100").unwrap(),
        [5.0, 99.9, 100.0]
    );
    for bad in [
        "", "5,", "-1", "+5", "1e2", ".5", "5.", "inf", "NaN", "5..1", "x",
    ] {
        assert!(parse_percentiles(bad).is_err(), "{bad}");
    }
    let labels = |p: Vec<f64>| AggParams {
        percentiles: Some(p),
        ..AggParams::default()
    };
    assert_eq!(
        check(&labels(vec![100.5])).unwrap_err().message(),
        "A percentile is between 0 and 100; 100.5 is not."
    );
    assert_eq!(
        check(&labels(vec![])).unwrap_err().message(),
        "percentiles needs at least one label (comma-separated)."
    );
    assert_eq!(
        check(&labels(vec![1.0; MAX_PERCENTILES as usize + 1]))
            .unwrap_err()
            .message(),
        format!("percentiles can list at most {MAX_PERCENTILES} labels.")
    );
    let ids = FilterParams {
        ids: Some(vec!["x".into(); MAX_IDS as usize + 1]),
        ..FilterParams::default()
    };
    assert_eq!(
        check(&ids).unwrap_err(),
        ApiError::invalid(
            "_ids",
            format!("_ids can list at most {MAX_IDS} identifiers.")
        )
    );
}

/// The reserved names are exactly those `from_pairs` does not read as a filter.
#[test]
fn reserved_names_are_not_filters() {
    let value = |name: &str| match name {
        "page" | "per_page" => "1",
        "sort" | "fields" | "group_by" | "field" => "x",
        _ => "a",
    };
    for name in RECORD_PARAMETERS {
        let p = RecordParams::from_pairs(&pairs(&[(name, value(name))])).unwrap();
        assert!(p.filter.exact.is_empty(), "{name}");
    }
    let p = RecordParams::from_pairs(&pairs(&[("carrier", "UA")])).unwrap();
    assert_eq!(p.filter.exact.len(), 1);
    for name in AGG_PARAMETERS {
        if let Ok(p) = AggParams::from_pairs(&pairs(&[(name, value(name))])) {
            assert!(p.filter.exact.is_empty(), "{name}");
        }
    }
    let p = AggParams::from_pairs(&pairs(&[("carrier", "UA")])).unwrap();
    assert_eq!(p.filter.exact.len(), 1);
}
