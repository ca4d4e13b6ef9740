//! The parameters' syntax rules, as clients write them.

use super::params::*;
use crate::error::ApiError;

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
