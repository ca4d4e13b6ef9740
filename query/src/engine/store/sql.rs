//! Building SQL for both stores: the same statement shape with the backend's placeholders. Only
//! column names from the schema and table names derived from a version id are written into
//! the text; every value a client sent is a bound parameter.

use entity::record::{column_index, records_table, text_table};
use sea_orm::{DatabaseBackend, Statement, Value};

use crate::dataset::schema::{Column, DatasetSchema};
use crate::request::{ExactValue, Filter, RangeValue};

/// A statement being written: text plus bound values.
#[derive(Clone)]
pub(crate) struct Sql {
    backend: DatabaseBackend,
    pub text: String,
    values: Vec<Value>,
}

impl Sql {
    pub(crate) fn new(backend: DatabaseBackend) -> Self {
        Sql {
            backend,
            text: String::with_capacity(256),
            values: Vec::new(),
        }
    }

    /// Appends SQL text (never client input).
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder bound to `value`.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.values.push(value.into());
        match self.backend {
            DatabaseBackend::Postgres => {
                let n = self.values.len();
                self.text.push_str(&format!("${n}"));
            }
            _ => self.text.push('?'),
        }
        self
    }

    /// Appends a double-quoted identifier that comes from the schema.
    pub(crate) fn ident(&mut self, name: &str) -> &mut Self {
        debug_assert!(!name.contains('"'));
        self.text.push('"');
        self.text.push_str(name);
        self.text.push('"');
        self
    }

    /// The finished statement.
    pub(crate) fn build(self) -> Statement {
        Statement::from_sql_and_values(self.backend, self.text, self.values)
    }
}

/// A filter whose full-text terms have been resolved to text-dictionary ids.
pub(crate) struct ResolvedFilter<'a> {
    pub filter: &'a Filter,
    /// For each `q` term, the ids of the dictionary values containing it.
    pub term_ids: Vec<Vec<i64>>,
    /// For each `q[name]` entry, the ids of values containing all its terms.
    pub field_ids: Vec<Vec<i64>>,
    /// For each date range (in [`Filter::ranges`] order), the stored texts whose instants lie
    /// in it: a date is stored as the file wrote it, so its order as text is not its order in
    /// time.
    pub date_values: Vec<Vec<String>>,
    /// With `near`: the positions of the records within its circle (the exact test, made in
    /// Rust on the points of its box, as the index makes it).
    pub near_positions: Option<Vec<i64>>,
}

impl ResolvedFilter<'_> {
    /// Whether some term or date range matched nothing, so no record can match.
    pub(crate) fn matches_nothing(&self) -> bool {
        self.term_ids.iter().any(Vec::is_empty)
            || self.field_ids.iter().any(Vec::is_empty)
            || self.date_values.iter().any(Vec::is_empty)
            || self.near_positions.as_ref().is_some_and(Vec::is_empty)
    }
}

/// Whether a range compares instants (a date field's).
pub(crate) fn is_date_range(range: &crate::request::Range) -> bool {
    matches!(range.lower, Some((RangeValue::Time(_), _)))
        || matches!(range.upper, Some((RangeValue::Time(_), _)))
}

/// The smallest string above every string that starts with `prefix`, in byte (code point)
/// order; `None` when there is none.
pub(crate) fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Which index a records statement should be read through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Let the store's planner choose.
    Planner,
    /// Walk this sort column's index and check the conditions row by row. On SQLite the
    /// statement names the index (`INDEXED BY`) and writes the conditions' columns `+"c"`:
    /// SQLite otherwise prefers an equality index and sorts every match, which is right for a
    /// few matches and slow for many, and a connection
    /// that has not loaded the statistics of a fresh import may even scan the whole table.
    SortIndex(Column),
}

/// `FROM "records_vN" WHERE …` for a resolved filter (`WHERE 1=1` when it has no condition).
pub(crate) fn from_where(
    sql: &mut Sql,
    schema: &DatasetSchema,
    resolved: &ResolvedFilter<'_>,
    access: Access,
) {
    sql.push(" FROM ").ident(&records_table(schema.version_id));
    let unindexed = match access {
        Access::SortIndex(column) if sql.backend == DatabaseBackend::Sqlite => {
            let index = column_index(schema.version_id, schema.sql_column(column));
            sql.push(" INDEXED BY ").ident(&index);
            true
        }
        _ => false,
    };
    sql.push(" WHERE 1=1");
    let filter = resolved.filter;
    let mut conditions = Conditions {
        sql,
        schema,
        unindexed,
    };
    conditions.exact(&filter.exact);
    conditions.not(&filter.not);
    conditions.ranges(&filter.ranges, &resolved.date_values);
    conditions.prefixes(&filter.prefixes);
    conditions.exists(&filter.exists);
    conditions.ids(filter.ids.as_deref());
    conditions.terms(&resolved.term_ids);
    for ((index, _), ids) in filter.field_terms.iter().zip(&resolved.field_ids) {
        conditions.and_in_ids(schema.sql_column(Column::Field(*index)), ids);
    }
    if let Some(positions) = &resolved.near_positions {
        conditions.and_in_ids("pos", positions);
    }
}

/// The conditions of a `WHERE` being written, one kind of filter at a time. When the
/// statement walks a sort index, every column is written `+"c"` so that SQLite does not
/// choose the column's own index instead (see [`Access::SortIndex`]).
struct Conditions<'a> {
    sql: &'a mut Sql,
    schema: &'a DatasetSchema,
    unindexed: bool,
}

impl Conditions<'_> {
    /// A column of the schema, `+`-prefixed when unindexed.
    fn column(&mut self, c: Column) -> &mut Sql {
        if self.unindexed {
            self.sql.push("+");
        }
        self.sql.ident(self.schema.sql_column(c))
    }

    /// ` AND ` and the column the condition tests.
    fn and(&mut self, c: Column) -> &mut Sql {
        self.sql.push(" AND ");
        self.column(c)
    }

    /// ` AND ` and `column` holds one of `ids`.
    fn and_in_ids(&mut self, column: &str, ids: &[i64]) {
        self.sql
            .push(if self.unindexed { " AND +" } else { " AND " });
        in_ids(self.sql, column, ids);
    }

    /// `name=value`: one value is `=`, several an `IN` list.
    fn exact(&mut self, exact: &[(Column, Vec<ExactValue>)]) {
        for (c, values) in exact {
            self.and(*c);
            if let [value] = values.as_slice() {
                self.sql.push(" = ");
                bind_exact(self.sql, value);
            } else {
                self.sql.push(" IN (");
                bind_exact_list(self.sql, values);
                self.sql.push(")");
            }
        }
    }

    /// `ne` and `nin`: a record without the field matches too.
    fn not(&mut self, not: &[(Column, Vec<ExactValue>)]) {
        for (c, values) in not {
            self.sql.push(" AND (");
            self.column(*c).push(" IS NULL OR ");
            self.column(*c).push(" NOT IN (");
            bind_exact_list(self.sql, values);
            self.sql.push("))");
        }
    }

    /// Each range's bounds; a date range as the stored texts of its instants, which
    /// `date_values` holds in the order of the date ranges.
    fn ranges(&mut self, ranges: &[(Column, crate::request::Range)], date_values: &[Vec<String>]) {
        let mut dates = date_values.iter();
        for (c, range) in ranges {
            if is_date_range(range) {
                let values = dates.next().map(Vec::as_slice).unwrap_or_default();
                in_texts(self.and(*c), values);
                continue;
            }
            for (bound, lower) in [(&range.lower, true), (&range.upper, false)] {
                let Some((value, inclusive)) = bound else {
                    continue;
                };
                let sql = self.and(*c).push(match (lower, inclusive) {
                    (true, true) => " >= ",
                    (true, false) => " > ",
                    (false, true) => " <= ",
                    (false, false) => " < ",
                });
                match value {
                    RangeValue::Num(n) => sql.bind(*n),
                    RangeValue::Str(s) => sql.bind(s.clone()),
                    RangeValue::Time(_) => sql.push("NULL"),
                };
            }
        }
    }

    /// `prefix`: each prefix a range of strings, so an index serves it; several are an OR.
    fn prefixes(&mut self, prefixes: &[(Column, Vec<String>)]) {
        for (c, prefixes) in prefixes {
            self.sql.push(" AND (");
            for (i, prefix) in prefixes.iter().enumerate() {
                if i > 0 {
                    self.sql.push(" OR ");
                }
                self.sql.push("(");
                self.column(*c).push(" >= ").bind(prefix.clone());
                if let Some(end) = prefix_end(prefix) {
                    self.and(*c).push(" < ").bind(end);
                }
                self.sql.push(")");
            }
            self.sql.push(")");
        }
    }

    /// `exists`; every record has an `_id`.
    fn exists(&mut self, exists: &[(Column, bool)]) {
        for &(c, has) in exists {
            if c == Column::Id {
                self.sql.push(if has { " AND 1=1" } else { " AND 1=0" });
                continue;
            }
            self.and(c)
                .push(if has { " IS NOT NULL" } else { " IS NULL" });
        }
    }

    /// `_ids`.
    fn ids(&mut self, ids: Option<&[String]>) {
        let Some(ids) = ids else { return };
        self.sql.push(" AND \"_id\" IN (");
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                self.sql.push(", ");
            }
            self.sql.bind(id.clone());
        }
        self.sql.push(")");
    }

    /// `q`: each term occurs in some text field (none when there is no text field).
    fn terms(&mut self, term_ids: &[Vec<i64>]) {
        let schema = self.schema;
        let text_columns: Vec<&str> = schema
            .text_fields()
            .map(|i| schema.sql_column(Column::Field(i)))
            .collect();
        for ids in term_ids {
            self.sql.push(" AND (");
            for (i, column) in text_columns.iter().enumerate() {
                if i > 0 {
                    self.sql.push(" OR ");
                }
                if self.unindexed {
                    self.sql.push("+");
                }
                in_ids(self.sql, column, ids);
            }
            if text_columns.is_empty() {
                self.sql.push("1=0");
            }
            self.sql.push(")");
        }
    }
}

/// Comma-separated placeholders bound to `values`.
fn bind_exact_list(sql: &mut Sql, values: &[ExactValue]) {
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        bind_exact(sql, value);
    }
}

fn bind_exact(sql: &mut Sql, value: &ExactValue) {
    match value {
        ExactValue::Str(s) => sql.bind(s.clone()),
        ExactValue::Num(n) => sql.bind(*n),
    };
}

/// `column` holds one of `ids`. PostgreSQL gets the ids as one bound array, so the planner sees
/// how few they are (a sub-select hid that and it chose a sequential scan); SQLite reads them
/// from one bound JSON array.
pub(crate) fn in_ids(sql: &mut Sql, column: &str, ids: &[i64]) {
    sql.ident(column);
    one_of_ids(sql, ids);
}

/// ` = ANY(…)` or ` IN (…)` of `ids`, after an expression already written ([`in_ids`]).
pub(crate) fn one_of_ids(sql: &mut Sql, ids: &[i64]) {
    match sql.backend {
        DatabaseBackend::Postgres => {
            sql.push(" = ANY(").bind(ids.to_vec()).push(")");
        }
        _ => {
            let json = serde_json::to_string(ids).expect("ids serialize");
            sql.push(" IN (SELECT value FROM json_each(")
                .bind(json)
                .push("))");
        }
    }
}

/// ` IN (…)` of stored texts: one bound array on PostgreSQL, one bound JSON array on SQLite.
fn in_texts(sql: &mut Sql, values: &[String]) {
    match sql.backend {
        DatabaseBackend::Postgres => {
            sql.push(" = ANY(").bind(values.to_vec()).push(")");
        }
        _ => {
            let json = serde_json::to_string(values).expect("texts serialize");
            sql.push(" IN (SELECT value FROM json_each(")
                .bind(json)
                .push("))");
        }
    }
}

/// The distinct stored texts of `column` (a date field's, for its ranges).
pub(crate) fn distinct_values(
    backend: DatabaseBackend,
    version_id: i64,
    column: &str,
) -> Statement {
    let mut sql = Sql::new(backend);
    sql.push("SELECT DISTINCT ")
        .ident(column)
        .push(" AS v FROM ")
        .ident(&records_table(version_id))
        .push(" WHERE ")
        .ident(column)
        .push(" IS NOT NULL");
    sql.build()
}

/// The statement that finds the dictionary ids of values containing `term` (lower-cased):
/// a trigram index search for terms of three characters or more, a scan of the (small)
/// dictionary for shorter ones.
pub(crate) fn dictionary_lookup(
    backend: DatabaseBackend,
    version_id: i64,
    term: &str,
) -> Statement {
    let table = text_table(version_id);
    let mut sql = Sql::new(backend);
    match backend {
        DatabaseBackend::Postgres => {
            let mut pattern = String::with_capacity(term.len() + 2);
            pattern.push('%');
            for c in term.chars() {
                if matches!(c, '%' | '_' | '\\') {
                    pattern.push('\\');
                }
                pattern.push(c);
            }
            pattern.push('%');
            sql.push("SELECT \"tid\" AS id FROM ")
                .ident(&table)
                .push(" WHERE \"value\" LIKE ")
                .bind(pattern);
        }
        _ if term.chars().count() >= 3 => {
            let phrase = format!("\"{}\"", term.replace('"', "\"\""));
            sql.push("SELECT rowid AS id FROM ")
                .ident(&table)
                .push(" WHERE \"value\" MATCH ")
                .bind(phrase);
        }
        _ => {
            sql.push("SELECT rowid AS id FROM ")
                .ident(&table)
                .push(" WHERE instr(\"value\", ")
                .bind(term.to_string())
                .push(") > 0");
        }
    }
    sql.build()
}

/// Which part of a two-part sort a statement reads.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Part {
    /// No sort, or a sort key that is never missing (`_id`): one ordered read.
    All,
    /// Records that have the first sort key's value.
    HasValue,
    /// Records that lack it, in file order (then the later keys).
    Missing,
}

/// Appends the rest of a condition and the order of one `part` of a sort (after
/// [`from_where`]): ` AND c IS NOT NULL ORDER BY c DESC, …, "pos"` and the like; the file order
/// (`pos`) breaks every tie.
pub(crate) fn order_by(sql: &mut Sql, schema: &DatasetSchema, sort: &[(Column, bool)], part: Part) {
    let mut keys = sort.iter();
    sql.push(" ");
    if part != Part::All {
        let (first, descending) = keys.next().expect("a two-part sort has a first key");
        let column = schema.sql_column(*first);
        if part == Part::HasValue {
            sql.push(" AND ")
                .ident(column)
                .push(" IS NOT NULL ORDER BY ")
                .ident(column)
                .push(if *descending { " DESC, " } else { ", " });
        } else {
            sql.push(" AND ").ident(column).push(" IS NULL ORDER BY ");
        }
    } else {
        sql.push("ORDER BY ");
    }
    for (column, descending) in keys {
        let column = schema.sql_column(*column);
        if column != "_id" {
            sql.push("(").ident(column).push(" IS NULL), ");
        }
        sql.ident(column)
            .push(if *descending { " DESC, " } else { ", " });
    }
    sql.push("\"pos\"");
}

/// The sort-key values of one row, read to go on after it (a cursor's keyset): `None` where
/// the row has no value.
pub(crate) type KeyValues = Vec<KeyValue>;

/// One sort key's value in a row, `None` where the row has none.
pub(crate) type KeyValue = Option<Value>;

/// ` AND …`: the rows that come after the row at `pos` whose sort keys hold `values`, in the
/// order [`order_by`] writes for `sort` (each key's missing values after its others, then
/// `pos`). On the part of the rows with the first key's value, that key's bound comes first as
/// a range of its own, so an index on it (or the planner) starts there instead of at the top.
pub(crate) fn after_row(
    sql: &mut Sql,
    schema: &DatasetSchema,
    sort: &[(Column, bool)],
    values: &[Option<Value>],
    pos: i64,
    part: Part,
) {
    if part == Part::HasValue
        && let (Some(&(first, descending)), Some(Some(value))) = (sort.first(), values.first())
    {
        sql.push(" AND ")
            .ident(schema.sql_column(first))
            .push(if descending { " <= " } else { " >= " })
            .bind(value.clone());
    }
    let (keys, values) = match part {
        // Every row of this part lacks the first key: only the others order it.
        Part::Missing => (&sort[1.min(sort.len())..], &values[1.min(values.len())..]),
        _ => (sort, values),
    };
    sql.push(" AND ");
    after_keys(sql, schema, keys, values, pos);
}

fn after_keys(
    sql: &mut Sql,
    schema: &DatasetSchema,
    keys: &[(Column, bool)],
    values: &[Option<Value>],
    pos: i64,
) {
    let (Some(&(column, descending)), Some(value)) = (keys.first(), values.first()) else {
        sql.push("\"pos\" > ").bind(pos);
        return;
    };
    let name = schema.sql_column(column);
    sql.push("(");
    match value {
        // Missing values come last: after this row come only the rows also missing it.
        None => {
            sql.ident(name).push(" IS NULL AND ");
            after_keys(sql, schema, &keys[1..], &values[1..], pos);
        }
        Some(value) => {
            sql.ident(name)
                .push(if descending { " < " } else { " > " })
                .bind(value.clone())
                .push(" OR ")
                .ident(name)
                .push(" IS NULL OR (")
                .ident(name)
                .push(" = ")
                .bind(value.clone())
                .push(" AND ");
            after_keys(sql, schema, &keys[1..], &values[1..], pos);
            sql.push(")");
        }
    }
    sql.push(")");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends_follow_code_point_order() {
        assert_eq!(prefix_end("N5").as_deref(), Some("N6"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        assert_eq!(prefix_end(""), None);
    }
}
