//! Request parameters before they meet a dataset: what a REST query string or GraphQL arguments
//! say, with the syntax checked (numbers are numbers, sort keys are well formed, limits hold)
//! but no name looked up yet. [`super::request`] checks them against the dataset's schema.

use super::error::ApiError;

/// Records per page when the client does not say (spec §8).
pub const DEFAULT_PER_PAGE: u64 = 20;
/// The largest page (spec §8).
pub const MAX_PER_PAGE: u64 = 100;
/// The most identifiers one `_ids` may list.
pub const MAX_IDS: usize = 1000;
/// The largest page number: SQL's `OFFSET` and GraphQL's `Int` arguments are signed 64-bit, so
/// REST takes what GraphQL takes (a page past the end is still an empty page, not an error).
pub const MAX_PAGE: u64 = i64::MAX as u64;

/// The query parameters of `GET /datasets/{slug}/records` that mean something of their own:
/// no filter can be written on a field of one of these names (contract §5).
pub const RECORD_PARAMETERS: &[&str] = &["q", "_ids", "page", "per_page", "sort", "fields"];
/// The same for `GET /datasets/{slug}/agg` (contract §6); the paging and projection names are
/// refused there rather than read as filters.
pub const AGG_PARAMETERS: &[&str] = &[
    "q", "_ids", "group_by", "field", "page", "per_page", "sort", "fields",
];

/// Conditions shared by records and agg (contract §5, §6: "all filters of §5 apply").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FilterParams {
    /// Each `q` value; its whitespace-separated terms are all required.
    pub q: Vec<String>,
    /// `q[name]=terms`.
    pub q_fields: Vec<(String, String)>,
    /// `name=value`; the same name repeated is OR.
    pub exact: Vec<(String, String)>,
    /// `_ids=a,b,c`.
    pub ids: Option<Vec<String>>,
}

/// One sort key: a field and its direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortParam {
    pub name: String,
    pub descending: bool,
}

/// Parameters of `GET /datasets/{slug}/records`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordParams {
    pub filter: FilterParams,
    pub page: Option<u64>,
    pub per_page: Option<u64>,
    pub sort: Vec<SortParam>,
    pub fields: Option<Vec<String>>,
}

/// Parameters of `GET /datasets/{slug}/agg`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggParams {
    pub filter: FilterParams,
    pub group_by: Option<String>,
    pub field: Option<String>,
}

/// Paging of lists (`page`, `per_page`), validated: page 1..=[`MAX_PAGE`], per_page
/// 1..=[`MAX_PER_PAGE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Paging {
    pub page: u64,
    pub per_page: u64,
}

impl Paging {
    /// Checks the bounds of spec §8 and contract §5 (and [`MAX_PAGE`]).
    pub fn new(page: Option<u64>, per_page: Option<u64>) -> Result<Self, ApiError> {
        let page = page.unwrap_or(1);
        let per_page = per_page.unwrap_or(DEFAULT_PER_PAGE);
        if !(1..=MAX_PAGE).contains(&page) {
            return Err(ApiError::invalid(
                "page",
                format!("page must be between 1 and {MAX_PAGE}."),
            ));
        }
        if !(1..=MAX_PER_PAGE).contains(&per_page) {
            return Err(ApiError::invalid(
                "per_page",
                format!("per_page must be between 1 and {MAX_PER_PAGE}."),
            ));
        }
        Ok(Paging { page, per_page })
    }

    /// Records before this page.
    pub fn offset(&self) -> u64 {
        (self.page - 1).saturating_mul(self.per_page)
    }
}

/// Parses a `sort` value: keys separated by commas, each a name followed by `<` (descending),
/// `>` (ascending) or nothing (ascending).
pub fn parse_sort(value: &str) -> Result<Vec<SortParam>, ApiError> {
    let mut keys = Vec::new();
    for raw in value.split(',') {
        let raw = raw.trim();
        let (name, descending) = if let Some(name) = raw.strip_suffix('<') {
            (name, true)
        } else if let Some(name) = raw.strip_suffix('>') {
            (name, false)
        } else {
            (raw, false)
        };
        if name.is_empty() || name.contains(['<', '>']) {
            return Err(ApiError::invalid(
                "sort",
                format!(
                    "Cannot read the sort key {raw:?}: write a field name followed by < (descending) or > (ascending), keys separated by commas."
                ),
            ));
        }
        keys.push(SortParam {
            name: name.to_string(),
            descending,
        });
    }
    check_sort_keys(&keys)?;
    Ok(keys)
}

/// The rule on a list of sort keys however it was written (a REST `sort` value or GraphQL's
/// typed keys): each field at most once.
pub fn check_sort_keys(keys: &[SortParam]) -> Result<(), ApiError> {
    for (i, key) in keys.iter().enumerate() {
        if keys[..i].iter().any(|k| k.name == key.name) {
            return Err(ApiError::invalid(
                "sort",
                format!("The sort key {} is given twice.", key.name),
            ));
        }
    }
    Ok(())
}

/// The rule on `_ids` however it was written: at least one identifier, at most [`MAX_IDS`].
pub fn check_ids(ids: &[String]) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Err(ApiError::invalid(
            "_ids",
            "_ids needs at least one identifier (comma-separated).",
        ));
    }
    if ids.len() > MAX_IDS {
        return Err(ApiError::invalid(
            "_ids",
            format!("_ids can list at most {MAX_IDS} identifiers."),
        ));
    }
    Ok(())
}

/// The rule on a records request's `fields` however it was written: at least one name.
pub fn check_fields(fields: &[String]) -> Result<(), ApiError> {
    if fields.is_empty() {
        return Err(ApiError::invalid(
            "fields",
            "fields needs at least one field name (comma-separated).",
        ));
    }
    Ok(())
}

/// Splits a comma-separated list (`fields`, `_ids`), trimming items and dropping empty ones.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses a whole-number parameter (`page`, `per_page`).
pub fn parse_count(name: &str, value: &str) -> Result<u64, ApiError> {
    value.trim().parse::<u64>().map_err(|_| {
        ApiError::invalid(
            name,
            format!("{name} must be a whole number, not {value:?}."),
        )
    })
}

/// What a query-string pair is, for both endpoints.
enum Pair<'a> {
    Q(&'a str),
    QField(&'a str, &'a str),
    Ids(&'a str),
    Other(&'a str, &'a str),
}

fn classify<'a>(name: &'a str, value: &'a str) -> Result<Pair<'a>, ApiError> {
    if name == "q" {
        return Ok(Pair::Q(value));
    }
    if let Some(rest) = name.strip_prefix("q[") {
        return match rest.strip_suffix(']') {
            Some(field) if !field.is_empty() => Ok(Pair::QField(field, value)),
            _ => Err(ApiError::invalid(
                name,
                format!("Cannot read the parameter {name:?}: write q[<field>]=terms."),
            )),
        };
    }
    if name == "_ids" {
        return Ok(Pair::Ids(value));
    }
    Ok(Pair::Other(name, value))
}

fn add_filter(filter: &mut FilterParams, pair: Pair<'_>) -> Result<(), ApiError> {
    match pair {
        Pair::Q(value) => filter.q.push(value.to_string()),
        Pair::QField(field, value) => filter.q_fields.push((field.into(), value.into())),
        Pair::Ids(value) => {
            let ids = filter.ids.get_or_insert_with(Vec::new);
            ids.extend(split_list(value));
            check_ids(ids)?;
        }
        Pair::Other(name, value) => filter.exact.push((name.into(), value.into())),
    }
    Ok(())
}

/// Takes a parameter that may be given once.
fn once(slot: &mut Option<String>, name: &str, value: &str) -> Result<(), ApiError> {
    if slot.is_some() {
        return Err(ApiError::invalid(
            name,
            format!("The parameter {name} is given more than once."),
        ));
    }
    *slot = Some(value.to_string());
    Ok(())
}

impl RecordParams {
    /// Reads decoded query-string pairs (contract §5).
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut params = RecordParams::default();
        let (mut page, mut per_page, mut sort, mut fields) = (None, None, None, None);
        for (name, value) in pairs {
            match name.as_str() {
                "page" => once(&mut page, name, value)?,
                "per_page" => once(&mut per_page, name, value)?,
                "sort" => once(&mut sort, name, value)?,
                "fields" => once(&mut fields, name, value)?,
                _ => add_filter(&mut params.filter, classify(name, value)?)?,
            }
        }
        params.page = page.map(|v| parse_count("page", &v)).transpose()?;
        params.per_page = per_page.map(|v| parse_count("per_page", &v)).transpose()?;
        if let Some(sort) = sort {
            params.sort = parse_sort(&sort)?;
        }
        if let Some(fields) = fields {
            let list = split_list(&fields);
            check_fields(&list)?;
            params.fields = Some(list);
        }
        Ok(params)
    }
}

impl AggParams {
    /// Reads decoded query-string pairs (contract §6).
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut params = AggParams::default();
        let (mut group_by, mut field) = (None, None);
        for (name, value) in pairs {
            match name.as_str() {
                "group_by" => once(&mut group_by, name, value)?,
                "field" => once(&mut field, name, value)?,
                "page" | "per_page" | "sort" | "fields" => {
                    return Err(ApiError::invalid(
                        name.as_str(),
                        format!(
                            "{name} does not apply to agg: it returns every group in one answer."
                        ),
                    ));
                }
                _ => add_filter(&mut params.filter, classify(name, value)?)?,
            }
        }
        params.group_by = group_by.filter(|g| !g.trim().is_empty());
        params.field = field;
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    descending: true
                },
                SortParam {
                    name: "carrier".into(),
                    descending: false
                },
                SortParam {
                    name: "origin".into(),
                    descending: false
                },
            ]
        );
        for bad in ["", "<", "a<>", "a,,b", "a<,a>"] {
            assert_eq!(
                parse_sort(bad).unwrap_err().code(),
                "invalid_parameter",
                "{bad}"
            );
        }
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
}
