//! A small load's rows as one `INSERT … SELECT FROM unnest(…)` a batch, each column bound as an
//! array. sqlx writes each `COPY` message as a write of its own and sets no `TCP_NODELAY`, so
//! over TCP every small write after the first waits for the server's delayed acknowledgement;
//! a bound statement is one write and one answer, whatever the batch holds.

use entity::FieldType;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgConnection;
use tokio::sync::mpsc;

use super::super::pipeline::Batch;
use super::super::schema::plan::{Cell, Plan};
use super::ImportError;

/// Inserts every batch into version `version_id`'s tables (the columns `names`, in the order
/// rows carry their cells); returns the number of records.
pub async fn insert(
    conn: &mut PgConnection,
    version_id: i64,
    plan: &Plan,
    names: &[String],
    mut batches: mpsc::Receiver<Batch>,
) -> Result<u64, ImportError> {
    let types: Vec<FieldType> = plan.columns().map(|f| f.field_type).collect();
    let records = records_statement(version_id, names, &types);
    let texts = format!(
        "INSERT INTO \"{}\" (\"tid\", \"value\") SELECT * FROM unnest($1::int8[], $2::text[])",
        entity::record::text_table(version_id)
    );
    let mut count = 0;
    while let Some(batch) = batches.recv().await {
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
