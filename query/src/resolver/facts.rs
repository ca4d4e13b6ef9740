//! The facts a dataset's guides are written from (`skill.md`, contract §9; the MCP tools'
//! context): per field its most common values with counts, its range, and how many records
//! lack it, plus the first identifiers. Computed through the same resolver calls the API
//! answers with (so from the in-memory index when it is built), and where the API has no call
//! for a fact (the most frequent whole texts of a text field, the most common number) from the
//! index or, without one, from the store with bound values; both ways give the same facts.
//! Without an index, an SQLite store's facts come from one read of all its columns
//! ([`tally`]), the others' and any the read could not keep from a statement each.
//! Values are shown as the data writes them: a text's value is read from the first record
//! that holds it, not from the lower-cased search dictionary.

use entity::FieldType;
use serde_json::Value;

use crate::answer::groups::KeyPart;
use crate::answer::views::{AggResult, RecordPage, json_number};
use crate::dataset::Dataset;
use crate::dataset::schema::Field;
use crate::engine::memory::{FieldIndex, MemIndex};
use crate::engine::store;
use crate::engine::store::tally::{self, ColumnTally, Tallies};
use crate::error::ApiError;
use crate::request;
use crate::request::params::{
    AggParams, FilterParams, GroupByParam, RecordParams, add_condition, parse_sort, split_list,
};
use crate::resolver::{Engine, Resolver};

/// How many common values a keyword or boolean field shows.
pub(crate) const TOP_VALUES: usize = 5;
/// How many frequent texts a text field shows.
pub(crate) const TOP_TEXTS: usize = 3;
/// How many identifiers the guide quotes.
pub(crate) const SAMPLE_IDS: u64 = 3;

/// One value and how many records hold it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueCount {
    /// A JSON string for keyword, boolean, date and text values, a JSON number for numbers.
    pub value: Value,
    pub count: u64,
}

/// The smallest and largest value of a number or date field (dates in stored-text order).
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub min: Value,
    pub max: Value,
}

/// What the guide says about one field.
#[derive(Clone, Debug)]
pub struct FieldFacts {
    pub field: Field,
    /// Most common values, most common first, ties by value: keyword and boolean values, the
    /// whole texts of a text field, the one most common value of a number field.
    pub top: Vec<ValueCount>,
    pub range: Option<Range>,
    /// Records without a value (`name[exists]=false`); 0 for `json` fields, which hold anything.
    pub missing: u64,
}

/// Everything a dataset's guide is made from.
#[derive(Clone, Debug)]
pub struct DatasetFacts {
    pub dataset: entity::dataset::Model,
    pub fields: Vec<FieldFacts>,
    /// The first records' identifiers, in file order.
    pub sample_ids: Vec<String>,
}

/// The condition `name=value` as a REST query string gives it (read by the same grammar, so
/// a guide counts what the API would).
fn condition(name: &str, value: &str) -> Result<FilterParams, ApiError> {
    let mut filter = FilterParams::default();
    add_condition(&mut filter, name, value)?;
    Ok(filter)
}

/// A number or date field's range straight from the index's sorted column: the first and last
/// value of the number order, the first and last dictionary text a row holds (the dictionary
/// is in byte order, as the records sort compares texts). The values the records sort gives,
/// without reading a record.
fn index_range(index: &MemIndex, position: usize) -> Option<Range> {
    match index.fields.get(position)? {
        FieldIndex::Num(column) => {
            let (first, last) = (column.order.first()?, column.order.last()?);
            Some(Range {
                min: json_number(column.values.get(first as usize)),
                max: json_number(column.values.get(last as usize)),
            })
        }
        FieldIndex::Str(column) => {
            let held = |code: &u32| column.postings.len(*code) > 0;
            let codes = 0..column.dict.len() as u32;
            let first = codes.clone().find(held)?;
            let last = codes.rev().find(held)?;
            Some(Range {
                min: Value::String(column.dict.get(first).to_string()),
                max: Value::String(column.dict.get(last).to_string()),
            })
        }
        _ => None,
    }
}

/// `agg?group_by=name&limit=TOP_VALUES`: a keyword field's most common values.
fn top_values_params(name: &str) -> AggParams {
    AggParams {
        group_by: split_list(name)
            .iter()
            .map(|item| GroupByParam::parse(item))
            .collect(),
        limit: Some(TOP_VALUES as u64),
        min_count: None,
        ..AggParams::default()
    }
}

/// The value of `name` in a record as the API shows it (nested names are dotted paths).
fn value_at<'a>(record: &'a Value, name: &str) -> Option<&'a Value> {
    if let Some(v) = record.get(name) {
        return Some(v);
    }
    name.split('.').try_fold(record, |v, part| v.get(part))
}

impl Resolver {
    /// The facts of `dataset`'s live version.
    pub async fn facts(&self, dataset: &Dataset) -> Result<DatasetFacts, ApiError> {
        let index = match self.engine(dataset).await {
            Engine::Memory(index) => Some(index),
            Engine::Store => None,
        };
        let id_field = dataset.meta.id_field.as_deref();
        let tallies: Option<Tallies> = match (&index, self.direct(dataset.schema.version_id)) {
            (None, Some(direct)) => {
                tally::tally_direct(
                    direct,
                    dataset.schema.clone(),
                    (id_field.map(str::to_string), None),
                    dataset.meta.record_count,
                )
                .await
            }
            _ => None,
        };
        let mut fields = Vec::with_capacity(dataset.schema.fields.len());
        for (i, field) in dataset.schema.fields.iter().enumerate() {
            let tally = tallies.as_ref().and_then(|t| t[i].as_ref());
            let read = (index.as_deref(), tally);
            fields.push(self.field_facts(dataset, read, (i, field)).await?);
        }
        Ok(DatasetFacts {
            dataset: dataset.meta.clone(),
            fields,
            sample_ids: self.sample_ids(dataset).await?,
        })
    }

    /// The facts of field `i`: from the in-memory index when one holds the version, else from
    /// one read's `tally` of an SQLite file, else from the store field by field.
    async fn field_facts(
        &self,
        dataset: &Dataset,
        (index, tally): (Option<&MemIndex>, Option<&ColumnTally>),
        (i, field): (usize, &Field),
    ) -> Result<FieldFacts, ApiError> {
        let name = field.name.as_str();
        let missing = match (field.field_type, tally) {
            (FieldType::Json, _) => 0,
            (_, Some(tally)) => tally.nulls,
            _ => {
                let absent = condition(&format!("{name}[exists]"), "false")?;
                self.facts_count(dataset, index, absent).await?
            }
        };
        let counts = tally.and_then(|t| t.texts.as_ref());
        let id_field = dataset.meta.id_field.as_deref();
        let (top, range) = match field.field_type {
            FieldType::Keyword if id_field == Some(name) => (Vec::new(), None),
            FieldType::Keyword => match counts {
                Some(counts) => (top_of_counts(dataset, name, counts)?, None),
                None => (self.top_keywords(dataset, name).await?, None),
            },
            FieldType::Boolean => match counts {
                Some(counts) => (booleans_of_counts(counts), None),
                None => (self.top_booleans(dataset, index, name).await?, None),
            },
            FieldType::Number | FieldType::Date => {
                self.values_facts(dataset, (index, tally), (i, field))
                    .await?
            }
            FieldType::Text => {
                let ids = tally.and_then(|t| t.text_ids.as_ref());
                let top = self.top_texts(dataset, index, (i, field), ids).await?;
                (top, None)
            }
            FieldType::Json => (Vec::new(), None),
        };
        Ok(FieldFacts {
            field: field.clone(),
            top,
            range,
            missing,
        })
    }

    /// A number or date field's range, and a number field's most common value.
    async fn values_facts(
        &self,
        dataset: &Dataset,
        (index, tally): (Option<&MemIndex>, Option<&ColumnTally>),
        (i, field): (usize, &Field),
    ) -> Result<(Vec<ValueCount>, Option<Range>), ApiError> {
        let range = match (index.and_then(|ix| index_range(ix, i)), tally) {
            (Some(range), _) => Some(range),
            (None, Some(tally)) => tally_range(tally),
            (None, None) => self.range(dataset, &field.name).await?,
        };
        let top = match (field.field_type, range.is_some()) {
            (FieldType::Number, true) => match tally.and_then(|t| t.numbers.as_ref()) {
                Some(counts) => mode_of_counts(counts),
                None => self.number_mode(dataset, index, i, field).await?,
            },
            _ => Vec::new(),
        };
        Ok((top, range))
    }

    /// The `_id`s of the first records, as a page shows them.
    async fn sample_ids(&self, dataset: &Dataset) -> Result<Vec<String>, ApiError> {
        let params = RecordParams {
            per_page: Some(SAMPLE_IDS),
            ..RecordParams::default()
        };
        let first = self.facts_page(dataset, params).await?;
        Ok(first
            .records
            .iter()
            .filter_map(|r| {
                r.to_value()
                    .get("_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect())
    }

    /// A records page for `params`, as `GET …/records` answers it.
    async fn facts_page(
        &self,
        dataset: &Dataset,
        params: RecordParams,
    ) -> Result<RecordPage, ApiError> {
        let query = request::record_query(&params, &dataset.schema)?;
        self.records(dataset, &query).await
    }

    /// How many records match `filter` (the index's count, or the store's).
    async fn facts_count(
        &self,
        dataset: &Dataset,
        index: Option<&MemIndex>,
        filter: FilterParams,
    ) -> Result<u64, ApiError> {
        let params = RecordParams {
            filter,
            ..RecordParams::default()
        };
        let query = request::record_query(&params, &dataset.schema)?;
        if let Some(index) = index {
            return Ok(index.total(index.matches(&query.filter).as_ref()));
        }
        let resolved = self.resolve(&dataset.schema, &query.filter).await?;
        self.count(dataset, &resolved, None).await
    }

    /// A keyword field's most common values: `agg?group_by=name&limit=…`.
    async fn top_keywords(
        &self,
        dataset: &Dataset,
        name: &str,
    ) -> Result<Vec<ValueCount>, ApiError> {
        let query = request::agg_query(&top_values_params(name), &dataset.schema)?;
        Ok(value_counts(self.agg(dataset, &query).await?))
    }

    /// A boolean field's values by count (a boolean takes no `group_by`: two counts).
    async fn top_booleans(
        &self,
        dataset: &Dataset,
        index: Option<&MemIndex>,
        name: &str,
    ) -> Result<Vec<ValueCount>, ApiError> {
        let mut top = Vec::new();
        for value in ["false", "true"] {
            let count = self
                .facts_count(dataset, index, condition(name, value)?)
                .await?;
            if count > 0 {
                top.push(ValueCount {
                    value: Value::String(value.into()),
                    count,
                });
            }
        }
        top.sort_by_key(|v| std::cmp::Reverse(v.count));
        Ok(top)
    }

    /// The first value of `name` in each sort direction.
    async fn range(&self, dataset: &Dataset, name: &str) -> Result<Option<Range>, ApiError> {
        let mut ends = Vec::with_capacity(2);
        for direction in [">", "<"] {
            let params = RecordParams {
                filter: condition(&format!("{name}[exists]"), "true")?,
                sort: parse_sort(&format!("{name}{direction}"))?,
                per_page: Some(1),
                ..RecordParams::default()
            };
            let page = self.facts_page(dataset, params).await?;
            let first = page.records.first().map(|r| r.to_value());
            let Some(value) = first.as_ref().and_then(|r| value_at(r, name)) else {
                return Ok(None);
            };
            ends.push(value.clone());
        }
        let max = ends.pop().expect("two ends");
        let min = ends.pop().expect("two ends");
        Ok(Some(Range { min, max }))
    }

    /// The most common value of a number field (ties: the smallest).
    async fn number_mode(
        &self,
        dataset: &Dataset,
        index: Option<&MemIndex>,
        position: usize,
        field: &Field,
    ) -> Result<Vec<ValueCount>, ApiError> {
        if let Some(FieldIndex::Num(column)) = index.map(|i| &i.fields[position]) {
            return Ok(column
                .mode()
                .map(|(v, count)| ValueCount {
                    value: json_number(v),
                    count,
                })
                .into_iter()
                .collect());
        }
        let Some(column) = field.column.as_deref() else {
            return Ok(Vec::new());
        };
        let reader = self.reader(dataset.schema.version_id).await;
        let mode = store::facts::number_mode(&reader, &dataset.schema, column).await?;
        Ok(mode
            .map(|(v, count)| ValueCount {
                value: json_number(v),
                count,
            })
            .into_iter()
            .collect())
    }

    /// The most frequent whole texts of a text field, each as the first record holding it
    /// writes it; ties by the lower-cased text's bytes.
    async fn top_texts(
        &self,
        dataset: &Dataset,
        index: Option<&MemIndex>,
        (position, field): (usize, &Field),
        counted: Option<&tally::TextCounts>,
    ) -> Result<Vec<ValueCount>, ApiError> {
        // (lower-cased text, count, first row)
        let mut top: Vec<(String, u64, u32)> = match index.map(|i| (i, &i.fields[position])) {
            Some((index, FieldIndex::Text(column))) => (0..index.texts.len() as u32)
                .filter_map(|code| {
                    let rows = &column.postings;
                    rows.first(code).map(|first| {
                        let count = u64::from(rows.len(code));
                        (index.texts.get(code).to_string(), count, first)
                    })
                })
                .collect(),
            _ => match counted {
                Some(counts) => self.text_candidates(dataset, counts).await?,
                None => self.text_counts_from_store(dataset, field).await?,
            },
        };
        top.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| a.0.as_bytes().cmp(b.0.as_bytes()))
        });
        top.truncate(TOP_TEXTS);
        let rows: Vec<u32> = top.iter().map(|t| t.2).collect();
        let records = self.at_positions(&dataset.schema, &rows).await?;
        Ok(top
            .iter()
            .zip(&records)
            .map(|((lower, count, _), record)| ValueCount {
                value: value_at(record, &field.name)
                    .cloned()
                    .unwrap_or_else(|| Value::String(lower.clone())),
                count: *count,
            })
            .collect())
    }

    /// The store's counts of the texts tied with or above the `TOP_TEXTS`-th most frequent,
    /// with each text's first row: enough to break ties the way the index does.
    async fn text_counts_from_store(
        &self,
        dataset: &Dataset,
        field: &Field,
    ) -> Result<Vec<(String, u64, u32)>, ApiError> {
        let Some(column) = field.column.as_deref() else {
            return Ok(Vec::new());
        };
        let reader = self.reader(dataset.schema.version_id).await;
        store::facts::top_texts(&reader, &dataset.schema, column, TOP_TEXTS).await
    }

    /// [`Self::text_counts_from_store`] from one read's counts: the texts tied with or above
    /// the `TOP_TEXTS`-th highest count, looked up in the version's dictionary together.
    async fn text_candidates(
        &self,
        dataset: &Dataset,
        counts: &tally::TextCounts,
    ) -> Result<Vec<(String, u64, u32)>, ApiError> {
        let mut highest: Vec<u64> = counts.values().map(|(n, _)| *n).collect();
        highest.sort_unstable_by(|a, b| b.cmp(a));
        let floor = highest.get(TOP_TEXTS - 1).copied().unwrap_or(1);
        let candidates: Vec<(i64, u64, i64)> = counts
            .iter()
            .filter(|(_, (n, _))| *n >= floor)
            .map(|(&id, &(n, first))| (id, n, first))
            .collect();
        let ids: Vec<i64> = candidates.iter().map(|c| c.0).collect();
        let texts = self.text_values(dataset.schema.version_id, &ids).await?;
        candidates
            .into_iter()
            .map(|(id, n, first)| {
                let text = texts.get(&id).ok_or(ApiError::Internal)?;
                Ok((text.clone(), n, (first - 1) as u32))
            })
            .collect()
    }
}

/// A keyword field's most common values from one read's counts, as
/// [`Resolver::top_keywords`]'s agg answers them (the same finish, so the same order).
fn top_of_counts(
    dataset: &Dataset,
    name: &str,
    counts: &tally::Counts<String, u64>,
) -> Result<Vec<ValueCount>, ApiError> {
    let query = request::agg_query(&top_values_params(name), &dataset.schema)?;
    let groups = counts
        .iter()
        .map(|(value, n)| (vec![KeyPart::Str(value.clone())], (*n, Vec::new())))
        .collect();
    let total = u64::try_from(dataset.meta.record_count).unwrap_or(0);
    let answer = super::agg::finish_store_groups(&query, total, groups)?;
    Ok(value_counts(answer))
}

/// An agg answer's groups as the values and counts a guide shows.
fn value_counts(answer: AggResult) -> Vec<ValueCount> {
    answer
        .groups
        .into_iter()
        .map(|g| ValueCount {
            value: Value::String(g.key),
            count: g.stats.count,
        })
        .collect()
}

/// A boolean field's values by count from one read's counts, as [`Resolver::top_booleans`]
/// orders them (most first, `false` first on a tie).
fn booleans_of_counts(counts: &tally::Counts<String, u64>) -> Vec<ValueCount> {
    let mut top: Vec<ValueCount> = ["false", "true"]
        .into_iter()
        .filter_map(|value| {
            let count = counts.get(value).copied().filter(|n| *n > 0)?;
            Some(ValueCount {
                value: Value::String(value.into()),
                count,
            })
        })
        .collect();
    top.sort_by_key(|v| std::cmp::Reverse(v.count));
    top
}

/// A number or date field's range from one read.
fn tally_range(tally: &ColumnTally) -> Option<Range> {
    if let Some((min, max)) = tally.number_range {
        return Some(Range {
            min: json_number(min),
            max: json_number(max),
        });
    }
    let (min, max) = tally.text_range.clone()?;
    Some(Range {
        min: Value::String(min),
        max: Value::String(max),
    })
}

/// A number field's most common value from one read's counts (ties: the smallest), as
/// [`Resolver::number_mode`]'s statement picks it.
fn mode_of_counts(counts: &tally::Counts<u64, u64>) -> Vec<ValueCount> {
    counts
        .iter()
        .map(|(bits, n)| (f64::from_bits(*bits), *n))
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.total_cmp(&a.0)))
        .map(|(v, count)| ValueCount {
            value: json_number(v),
            count,
        })
        .into_iter()
        .collect()
}
