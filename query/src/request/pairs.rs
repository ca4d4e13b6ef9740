//! The query-string reader: decoded `(name, value)` pairs into typed parameters, with the
//! rules of repeated keys (a filter repeated is OR; `page`, `sort`… given once) and of names
//! that mean something of their own (`q`, `q[field]`, `_ids`).

use super::params::*;
use crate::error::ApiError;

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
                _ => add_condition(&mut params.filter, name, value)?,
            }
        }
        params.page = page.map(|v| parse_count("page", &v)).transpose()?;
        params.per_page = per_page.map(|v| parse_count("per_page", &v)).transpose()?;
        if let Some(sort) = sort {
            params.sort = parse_sort(&sort)?;
        }
        params.fields = fields.map(|f| split_list(&f));
        check(&params)?;
        Ok(params)
    }
}

impl AggParams {
    /// Reads decoded query-string pairs (contract §6, §12.2).
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut params = AggParams::default();
        let (mut group_by, mut field, mut percentiles, mut sort, mut limit) =
            (None, None, None, None, None);
        for (name, value) in pairs {
            match name.as_str() {
                "group_by" => once(&mut group_by, name, value)?,
                "field" => once(&mut field, name, value)?,
                "percentiles" => once(&mut percentiles, name, value)?,
                "sort" => once(&mut sort, name, value)?,
                "limit" => once(&mut limit, name, value)?,
                "page" | "per_page" | "fields" => {
                    return Err(ApiError::invalid(
                        name.as_str(),
                        format!(
                            "{name} does not apply to agg: it answers groups, not records; use limit and sort to choose groups."
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
        check(&params)?;
        Ok(params)
    }
}

impl ExportParams {
    /// Reads decoded query-string pairs (contract §12.3): `page` and `per_page` are refused,
    /// since an export is every matching record.
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let mut params = ExportParams::default();
        let (mut sort, mut fields, mut format) = (None, None, None);
        for (name, value) in pairs {
            match name.as_str() {
                "sort" => once(&mut sort, name, value)?,
                "fields" => once(&mut fields, name, value)?,
                "format" => once(&mut format, name, value)?,
                "page" | "per_page" => {
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
        check(&params)?;
        Ok(params)
    }
}
