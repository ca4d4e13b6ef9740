//! A small load: its batches gathered in memory, then tables that fit what they hold, the rows
//! as one `INSERT … SELECT FROM unnest(…)` a batch (each column bound as an array), and hash
//! and trigram indexes built after on a table of more than a few pages (B-tree keys when the
//! store is to answer sorts itself).
//!
//! Why this layout: PostgreSQL writes a B-tree (a key, a unique index, a TOAST table's index)
//! past its buffers and syncs it to disk as it is built, a fixed cost per index that dwarfs a
//! small load; hash and GIN indexes are built through the buffers and synced with the rest.
//! A table whose every row fits a page needs no TOAST table, so when the gathered rows all do,
//! the columns are stored plain and none is made. Ids need no unique index either: the reader
//! has checked a small file's ids. A table this small is read whole in less time than an
//! ordered index would save, so order comes from sorting it.
//!
//! The rows go as bound statements, not `COPY`: sqlx writes each `COPY` message as a write of
//! its own, and over TCP a small write after the first may wait for the server's delayed
//! acknowledgement; a bound statement is one write and one answer, whatever the batch holds.

use entity::FieldType;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgConnection;
use tokio::sync::mpsc;

use super::super::pipeline::Batch;
use super::super::schema::plan::{Cell, Plan, Row};
use super::ImportError;

/// Every batch the reader sends, once it has sent the last (or failed: its error is reported
/// by the caller, and the rows gathered until then are loaded into a version that is dropped).
pub async fn gather(mut batches: mpsc::Receiver<Batch>) -> Vec<Batch> {
    let mut gathered = Vec::new();
    while let Some(batch) = batches.recv().await {
        gathered.push(batch);
    }
    gathered
}

/// A heap row's size limit, with room for the tuple's header: PostgreSQL's pages hold rows of
/// at most 8,160 bytes, and a row with no TOAST table to spill to must fit one.
const PLAIN_ROW_BYTES: usize = 8_000;

/// A body's JSONB form against its JSON text at most: every element's entry takes four bytes,
/// and a number two to eight more, where the text may spend two.
const JSONB_GROWTH: usize = 4;

/// What a small load's gathered rows take, measured once for its tables and its indexes.
pub struct Sizes {
    /// Whether every record row fits a page, its body counted at its largest JSONB size and
    /// each column with room for its alignment.
    records_fit: bool,
    /// Whether every text-dictionary row fits a page.
    texts_fit: bool,
    /// The record rows' bytes, about.
    records: usize,
    /// The text-dictionary rows' bytes, about.
    texts: usize,
}

impl Sizes {
    /// The sizes of the rows `batches` hold.
    pub fn of(batches: &[Batch]) -> Self {
        let mut sizes = Sizes {
            records_fit: true,
            texts_fit: true,
            records: 0,
            texts: 0,
        };
        for row in batches.iter().flat_map(|b| &b.rows) {
            let bytes = row_bytes(row);
            sizes.records += bytes;
            sizes.records_fit &=
                bytes + row.doc.len() * (JSONB_GROWTH - 1) + 8 * (3 + row.cells.len())
                    <= PLAIN_ROW_BYTES;
        }
        for (_, text) in batches.iter().flat_map(|b| &b.texts) {
            let bytes = text_row_bytes(text);
            sizes.texts += bytes;
            sizes.texts_fit &= bytes + 8 <= PLAIN_ROW_BYTES;
        }
        sizes
    }
}

/// The statements that create version `version_id`'s tables with their `columns` (the
/// `RecordColumns` definitions and `names`, `pos` first): each with plain storage, and so no
/// TOAST table, when every row it gets fits a page ([`PLAIN_ROW_BYTES`]).
pub fn create_tables(
    version_id: i64,
    (definitions, names): (&[String], &[String]),
    sizes: &Sizes,
) -> String {
    let records = entity::record::records_table(version_id);
    let texts = entity::record::text_table(version_id);
    let record_columns: Vec<(&str, &str)> = definitions[1..]
        .iter()
        .zip(&names[1..])
        .map(|(d, n)| (d.as_str(), n.as_str()))
        .collect();
    let text_columns = [(super::TEXT_VALUE, "\"value\"")];
    [
        create_table(
            &records,
            &definitions[0],
            &record_columns,
            sizes.records_fit,
        ),
        create_table(&texts, super::TEXT_KEY, &text_columns, sizes.texts_fit),
    ]
    .join("; ")
}

/// `CREATE TABLE` with its fixed-size `key` column, then an `ALTER TABLE` that adds the
/// `others` (definition, quoted name), each set to plain storage when `plain`: PostgreSQL 15
/// takes no storage in `CREATE TABLE`, and decides whether a table needs TOAST at the end of
/// each statement.
fn create_table(table: &str, key: &str, others: &[(&str, &str)], plain: bool) -> String {
    let added: Vec<String> = others
        .iter()
        .map(|(definition, name)| match plain {
            true => format!("ADD COLUMN {definition}, ALTER COLUMN {name} SET STORAGE PLAIN"),
            false => format!("ADD COLUMN {definition}"),
        })
        .collect();
    format!(
        "CREATE TABLE \"{table}\" ({key}); ALTER TABLE \"{table}\" {}",
        added.join(", ")
    )
}

/// A record row's bytes, about: its body, its id and its cells.
fn row_bytes(row: &Row) -> usize {
    row.doc.len() + row.id.len() + row.cells.iter().map(cell_bytes).sum::<usize>()
}

/// A text-dictionary row's bytes, about: its text and its id.
fn text_row_bytes(text: &str) -> usize {
    text.len() + 8
}

/// A cell's bytes in a row, with its length header.
fn cell_bytes(cell: &Cell) -> usize {
    match cell {
        Cell::Str(s) | Cell::Text(s) => s.len() + 4,
        _ => 8,
    }
}

/// Bytes of a table below which it has no index: it fits a few pages, which a scan reads in
/// less time than an index is descended, and the planner scans a table that small anyway.
const INDEXED_BYTES: usize = 64 * 1024;

/// The indexes of a small version, built once its rows are in: when the store is to answer
/// sorts itself (`ordered`: its column indexes were asked for), the B-tree keys of a large
/// load, since the `_id` key is also the id field's sort index; else, for each table larger
/// than [`INDEXED_BYTES`], hash indexes on `pos` and `_id`, or on `tid` with the text
/// dictionary's trigram index.
pub fn index_statements(version_id: i64, ordered: bool, sizes: &Sizes) -> Vec<String> {
    if ordered {
        return super::key_statements(version_id);
    }
    let records = entity::record::records_table(version_id);
    let texts = entity::record::text_table(version_id);
    // `records_v{N}_id`, as a large load names its `_id` index.
    let hash = |table: &str, column: &str| {
        let name = column.trim_start_matches('_');
        format!("CREATE INDEX \"{table}_{name}\" ON \"{table}\" USING hash (\"{column}\")")
    };
    let mut statements = Vec::new();
    if sizes.records > INDEXED_BYTES {
        statements.extend([hash(&records, "pos"), hash(&records, "_id")]);
    }
    if sizes.texts > INDEXED_BYTES {
        statements.extend([hash(&texts, "tid"), super::trigram_index(version_id)]);
    }
    statements
}

/// Inserts `batches` into version `version_id`'s tables (the columns `names`, in the order
/// rows carry their cells); returns the number of records.
pub async fn insert(
    conn: &mut PgConnection,
    version_id: i64,
    plan: &Plan,
    names: &[String],
    batches: &[Batch],
) -> Result<u64, ImportError> {
    let types: Vec<FieldType> = plan.columns().map(|f| f.field_type).collect();
    let records = records_statement(version_id, names, &types);
    let texts = format!(
        "INSERT INTO \"{}\" (\"tid\", \"value\") SELECT * FROM unnest($1::int8[], $2::text[])",
        entity::record::text_table(version_id)
    );
    let mut count = 0;
    for batch in batches {
        count += batch.rows.len() as u64;
        let mut statement = sqlx::query(AssertSqlSafe(records.clone()))
            .bind(batch.rows.iter().map(|r| r.pos).collect::<Vec<i64>>())
            .bind(
                batch
                    .rows
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<&str>>(),
            )
            .bind(
                batch
                    .rows
                    .iter()
                    .map(|r| r.doc.as_str())
                    .collect::<Vec<&str>>(),
            );
        for (i, field_type) in types.iter().enumerate() {
            let cells = batch.rows.iter().map(|r| &r.cells[i]);
            statement = match field_type {
                FieldType::Number => statement.bind(cells.map(number).collect::<Vec<_>>()),
                FieldType::Text => statement.bind(cells.map(text_id).collect::<Vec<_>>()),
                _ => statement.bind(cells.map(string).collect::<Vec<_>>()),
            };
        }
        statement.execute(&mut *conn).await?;
        if !batch.texts.is_empty() {
            sqlx::query(AssertSqlSafe(texts.clone()))
                .bind(batch.texts.iter().map(|(id, _)| *id).collect::<Vec<i64>>())
                .bind(
                    batch
                        .texts
                        .iter()
                        .map(|(_, t)| t.as_str())
                        .collect::<Vec<&str>>(),
                )
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(count)
}

/// `INSERT INTO records_v{N} (…) SELECT … FROM unnest($1, $2, …)`: `pos`, `_id`, the body (as
/// text, made JSONB here), then one array a typed column.
fn records_statement(version_id: i64, names: &[String], types: &[FieldType]) -> String {
    let mut arrays = vec![
        "$1::int8[]".to_string(),
        "$2::text[]".to_string(),
        "$3::text[]".to_string(),
    ];
    let mut selected = vec!["a1".to_string(), "a2".to_string(), "a3::jsonb".to_string()];
    for (i, field_type) in types.iter().enumerate() {
        let n = i + 4;
        let array = match field_type {
            FieldType::Number => "float8[]",
            FieldType::Text => "int8[]",
            _ => "text[]",
        };
        arrays.push(format!("${n}::{array}"));
        selected.push(format!("a{n}"));
    }
    let aliases: Vec<String> = (1..=arrays.len()).map(|n| format!("a{n}")).collect();
    format!(
        "INSERT INTO \"{}\" ({}) SELECT {} FROM unnest({}) AS t({})",
        entity::record::records_table(version_id),
        names.join(", "),
        selected.join(", "),
        arrays.join(", "),
        aliases.join(", ")
    )
}

fn number(cell: &Cell) -> Option<f64> {
    match cell {
        Cell::Num(n) => Some(*n),
        _ => None,
    }
}

fn text_id(cell: &Cell) -> Option<i64> {
    match cell {
        Cell::TextId(id) => Some(*id),
        _ => None,
    }
}

fn string(cell: &Cell) -> Option<&str> {
    match cell {
        Cell::Str(s) | Cell::Text(s) => Some(s.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(doc_bytes: usize, text_bytes: usize) -> Batch {
        Batch {
            rows: vec![Row {
                pos: 1,
                id: "1".into(),
                doc: format!("{{\"_id\":\"1\",\"t\":\"{}\"}}", "x".repeat(doc_bytes)),
                packed: false,
                cells: vec![Cell::Num(1.0)],
            }],
            texts: vec![(1, "y".repeat(text_bytes))],
        }
    }

    #[test]
    fn tables_are_plain_only_when_every_row_fits_a_page() {
        let columns = (
            &[
                "\"pos\" bigint NOT NULL".to_string(),
                "\"_id\" text NOT NULL".to_string(),
            ][..],
            &["\"pos\"".to_string(), "\"_id\"".to_string()][..],
        );
        let plain = create_tables(7, columns, &Sizes::of(&[batch(100, 100)]));
        assert_eq!(plain.matches("SET STORAGE PLAIN").count(), 2, "{plain}");
        assert!(
            plain.contains("ALTER COLUMN \"_id\" SET STORAGE PLAIN"),
            "{plain}"
        );
        let long_body = create_tables(
            7,
            columns,
            &Sizes::of(&[batch(100, 100), batch(2_000, 100)]),
        );
        assert_eq!(
            long_body.matches("SET STORAGE PLAIN").count(),
            1,
            "{long_body}"
        );
        assert!(long_body.contains("ALTER COLUMN \"value\" SET STORAGE PLAIN"));
        let long_text = create_tables(7, columns, &Sizes::of(&[batch(100, 9_000)]));
        assert_eq!(
            long_text.matches("SET STORAGE PLAIN").count(),
            1,
            "{long_text}"
        );
        assert!(long_text.contains("ALTER COLUMN \"_id\" SET STORAGE PLAIN"));
    }
}
