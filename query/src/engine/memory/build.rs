//! Reading one version from the store into an in-memory index: the typed columns in file
//! order, a chunk of rows at a time, and the text dictionary. The store stays the source of
//! truth; this is a copy of its typed columns, rebuilt for every version.

use std::collections::HashMap;
use std::sync::Arc;

use entity::FieldType;
use entity::record::{ID_COLUMN, records_table, text_table};
use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr};

use super::column::{
    Codes, Dict, IdColumn, Ids, MISSING, NumBuilder, Postings, StrBuilder, TextColumn, code_counts,
};
use super::{FieldIndex, MemIndex};
use crate::dataset::schema::DatasetSchema;
use crate::engine::store::copy::{self, CopyLine};
use crate::engine::store::direct::DirectSqlite;
use crate::engine::store::sql::Sql;

/// Rows read per statement: bounded memory for the result set, few round trips.
const CHUNK: i64 = 5_000;

/// Bytes an index of `rows` rows of `schema` is expected to take, before reading anything:
/// enough to decide whether to try within a budget (the text dictionary is not counted). Per
/// row: `_id` at most about 16 bytes (text, end, sorted position; 8 for plain numbers), a
/// number 6 (a 1–2 byte value and a 2-byte row in value order, with room for wider ones), a
/// keyword or text 4 (a narrow code and a 2-byte row; a keyword id field nothing: `_id`
/// answers for it).
pub(crate) fn estimate(schema: &DatasetSchema, id_field: Option<&str>, rows: u64) -> u64 {
    let per_row: u64 = ROW_BYTES
        + schema
            .fields
            .iter()
            .filter(|f| f.column.is_some())
            .map(|f| match f.field_type {
                FieldType::Number => NUMBER_BYTES,
                FieldType::Json => 0,
                FieldType::Keyword if id_field == Some(f.name.as_str()) => 0,
                _ => CODE_BYTES,
            })
            .sum::<u64>();
    rows * per_row
}

/// The most [`estimate`] can say of `rows` records of any schema: a dataset below it needs no
/// schema read to know that its index fits.
pub(crate) fn estimate_at_most(rows: u64) -> u64 {
    rows.saturating_mul(ROW_BYTES + NUMBER_BYTES.max(CODE_BYTES) * crate::MAX_FIELDS as u64)
}

/// Estimated index bytes of a record beside its values: its order, `_id` and position.
const ROW_BYTES: u64 = 16;
/// Estimated index bytes of a number value.
const NUMBER_BYTES: u64 = 6;
/// Estimated index bytes of any other value: a dictionary code.
const CODE_BYTES: u64 = 4;

/// Reads version `schema.version_id` (`rows` records) into an index: from the SQLite file on a
/// blocking thread when `direct` reads it (values borrowed, not copied, and no hand-off per
/// row), else (PostgreSQL, or when that read fails) through the pool. A keyword `id_field` is
/// held by `_id` ([`FieldIndex::Id`]): not read at all when its column is `_id` (as imports
/// store it), else read only to check that each row's value is its `_id`.
pub(crate) async fn build(
    db: &DatabaseConnection,
    direct: Option<&Arc<DirectSqlite>>,
    schema: &DatasetSchema,
    id_field: Option<&str>,
    rows: u64,
) -> Result<MemIndex, DbErr> {
    let (texts, text_codes) = read_texts(db, schema).await?;
    let text_codes = Arc::new(text_codes);
    let planned: Vec<(usize, String, FieldType)> = schema
        .fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((i, f.column.clone()?, f.field_type)))
        .filter(|(_, column, t)| *t != FieldType::Json && column != ID_COLUMN)
        .collect();
    let stored_as_id = schema
        .fields
        .iter()
        .position(|f| f.column.as_deref() == Some(ID_COLUMN));
    let id_position = schema
        .fields
        .iter()
        .position(|f| f.field_type == FieldType::Keyword && id_field == Some(f.name.as_str()));
    let fresh = |rows: u64| {
        Collect::new(
            schema.fields.len(),
            &planned,
            id_position,
            rows,
            texts.len(),
            &text_codes,
        )
    };
    let mut collected = None;
    if let Some(direct) = direct {
        let sql = direct_select(schema.version_id, &planned);
        match read_direct(direct, &sql, rows, fresh).await {
            Ok(collect) => collected = Some(collect),
            Err(error) => {
                tracing::warn!(%error, "index not read from the SQLite file; reading through the pool")
            }
        }
    }
    if collected.is_none() && db.get_database_backend() == DatabaseBackend::Postgres {
        let pool = db.get_postgres_connection_pool();
        // Boxed: a request that waits for its index holds this future, and a debug build's
        // worker stack overflowed with it inline.
        match Box::pin(read_copy(pool, schema.version_id, &planned, rows, fresh)).await {
            Ok(collect) => collected = Some(collect),
            Err(error) => {
                tracing::warn!(%error, "index not read by COPY; reading through the pool")
            }
        }
    }
    let collect = match collected {
        Some(collect) => collect,
        None => read_pool(db, schema, &planned, fresh(rows)).await?,
    };
    collect.finish(schema.version_id, texts, stored_as_id)
}

/// Versions of at least this many rows are read from the SQLite file by two threads at once,
/// each a half of the positions: reading and collecting is most of a build, and until the build ends that version's requests go to the store
/// (or wait, under a waiting policy).
const PARALLEL_FROM_ROWS: u64 = 100_000;

/// The position ranges `(after, through)` to read at once: all of them, or two halves when
/// the version is large and a second core is there. The last range runs to the end, so rows
/// beyond the count read before are still read (and refused by [`Collect::pos`]).
fn parts(rows: u64) -> Vec<(i64, i64)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if rows < PARALLEL_FROM_ROWS || cores < 2 {
        return vec![(0, i64::MAX)];
    }
    let half = (rows / 2) as i64;
    vec![(0, half), (half, i64::MAX)]
}

/// A part's collector, with room for its rows: the first part has room for every row, as the
/// others are appended to it ([`join`]).
fn part_collect(k: usize, after: i64, rows: u64, fresh: &impl Fn(u64) -> Collect) -> Collect {
    let room = if k == 0 {
        rows
    } else {
        rows.saturating_sub(after as u64)
    };
    let mut collect = fresh(room);
    collect.read = after;
    collect
}

/// Joins what the parts collected, in position order.
async fn join(
    readers: Vec<tokio::task::JoinHandle<Result<Collect, String>>>,
) -> Result<Collect, String> {
    let mut joined: Option<Collect> = None;
    for reader in readers {
        let part = reader.await.map_err(|e| e.to_string())??;
        match &mut joined {
            None => joined = Some(part),
            Some(collect) => collect.append(part)?,
        }
    }
    joined.ok_or_else(|| "no part was read".into())
}

/// Reads the version's `rows` rows from the SQLite file in [`parts`] at once, a blocking
/// thread each.
async fn read_direct(
    direct: &Arc<DirectSqlite>,
    sql: &str,
    rows: u64,
    fresh: impl Fn(u64) -> Collect,
) -> Result<Collect, String> {
    let readers = parts(rows)
        .into_iter()
        .enumerate()
        .map(|(k, (after, through))| {
            let mut collect = part_collect(k, after, rows, &fresh);
            let (direct, sql) = (direct.clone(), sql.to_owned());
            tokio::task::spawn_blocking(move || {
                direct
                    .scan(&sql, CHUNK, (after, through), |row| {
                        collect.push_sqlite(row)
                    })
                    .map(|()| collect)
            })
        })
        .collect();
    join(readers).await
}

/// Reads the rows through the connection pool, [`CHUNK`] rows a statement.
async fn read_pool(
    db: &DatabaseConnection,
    schema: &DatasetSchema,
    planned: &[(usize, String, FieldType)],
    mut collect: Collect,
) -> Result<Collect, DbErr> {
    loop {
        let mut sql = Sql::new(db.get_database_backend());
        sql.push("SELECT \"pos\", \"_id\"");
        for (_, column, _) in planned {
            sql.push(", ").ident(column);
        }
        sql.push(" FROM ")
            .ident(&records_table(schema.version_id))
            .push(" WHERE \"pos\" > ")
            .bind(collect.read)
            .push(" ORDER BY \"pos\" LIMIT ")
            .bind(CHUNK);
        let chunk = db.query_all_raw(sql.build()).await?;
        for row in &chunk {
            collect.pos(row.try_get_by_index(0)?)?;
            let id: String = row.try_get_by_index(1)?;
            collect.ids.push(&id);
            for k in 0..collect.planned.len() {
                match collect.planned[k].1 {
                    FieldType::Number => collect.number(k, row.try_get_by_index(k + 2)?),
                    FieldType::Text => collect.text(k, row.try_get_by_index(k + 2)?),
                    _ => {
                        let v: Option<String> = row.try_get_by_index(k + 2)?;
                        collect.string(k, v.as_deref());
                    }
                }
            }
        }
        if (chunk.len() as i64) < CHUNK {
            return Ok(collect);
        }
    }
}

/// Blocks of a `COPY` read, in bytes: large enough that handing one to the parsing thread costs
/// nothing beside parsing it.
const COPY_BLOCK_BYTES: usize = 1 << 20;

/// Reads the version's `rows` rows from PostgreSQL in [`parts`] at once, each a
/// `COPY … TO STDOUT` in text format (chunked statements would decode each row into a result
/// map first). Each part's stream is cut into blocks that a blocking thread of its own parses
/// while the server writes on: parsed where it is read, the server's backend and the parsing
/// would take turns on one core.
async fn read_copy(
    pool: &sqlx::PgPool,
    version_id: i64,
    planned: &[(usize, String, FieldType)],
    rows: u64,
    fresh: impl Fn(u64) -> Collect,
) -> Result<Collect, String> {
    let select = select_columns(version_id, planned);
    let readers = parts(rows)
        .into_iter()
        .enumerate()
        .map(|(k, (after, through))| {
            let mut collect = part_collect(k, after, rows, &fresh);
            // Positions are integers of ours, not request text.
            let sql = format!(
                "{select} WHERE \"pos\" > {after} AND \"pos\" <= {through} ORDER BY \"pos\""
            );
            let (sender, mut blocks) = tokio::sync::mpsc::channel::<Vec<u8>>(2);
            let parse = tokio::task::spawn_blocking(move || {
                while let Some(block) = blocks.blocking_recv() {
                    copy::each_line(&block, |line| collect.push_copy(line))?;
                }
                Ok::<_, String>(collect)
            });
            let pool = pool.clone();
            tokio::spawn(async move {
                // A parse error closes the channel and ends the read quietly; a read error
                // ends the blocks early, so it is the one reported.
                let read = copy::send_blocks(&pool, &sql, COPY_BLOCK_BYTES, sender).await;
                let parsed = parse.await.map_err(|e| e.to_string())?;
                read?;
                parsed
            })
        })
        .collect();
    join(readers).await
}

/// The chunk statement for [`DirectSqlite::scan`]: rows after position `?1`, at most `?2`, up
/// to position `?3`.
fn direct_select(version_id: i64, planned: &[(usize, String, FieldType)]) -> String {
    format!(
        "{} WHERE \"pos\" > ?1 AND \"pos\" <= ?3 ORDER BY \"pos\" LIMIT ?2",
        select_columns(version_id, planned)
    )
}

/// `SELECT "pos", "_id", <the planned columns> FROM <the version's table>`. Column names come
/// from the schema (`c0`, `t20`) and the table's from an integer: no request text reaches it.
fn select_columns(version_id: i64, planned: &[(usize, String, FieldType)]) -> String {
    let columns: String = planned
        .iter()
        .map(|(_, column, _)| format!(", \"{column}\""))
        .collect();
    format!(
        "SELECT \"pos\", \"_id\"{columns} FROM \"{}\"",
        records_table(version_id)
    )
}

/// A column being collected.
enum Pending {
    Str(StrBuilder),
    Num(NumBuilder),
    Text(Codes),
    /// The keyword id field, held by `_id`: only whether some row's value was not its `_id`
    /// (an import never writes that; such a version is answered by the store).
    Id {
        differs: bool,
    },
}

/// The columns being collected, row by row in file order.
struct Collect {
    /// Fields in the schema (the index has one entry each).
    fields: usize,
    /// (schema field index, type) of each column read after `pos` and `_id`.
    planned: Vec<(usize, FieldType)>,
    pending: Vec<Pending>,
    ids: Ids,
    text_codes: Arc<TextCodes>,
    /// The last position read.
    read: i64,
}

impl Collect {
    fn new(
        fields: usize,
        planned: &[(usize, String, FieldType)],
        id_position: Option<usize>,
        rows: u64,
        texts: usize,
        text_codes: &Arc<TextCodes>,
    ) -> Self {
        let rows = rows as usize;
        Collect {
            fields,
            planned: planned.iter().map(|(i, _, t)| (*i, *t)).collect(),
            pending: planned
                .iter()
                .map(|(i, _, field_type)| match field_type {
                    _ if Some(*i) == id_position => Pending::Id { differs: false },
                    FieldType::Number => Pending::Num(NumBuilder::with_capacity(rows)),
                    FieldType::Text => Pending::Text(Codes::with_capacity(texts, rows)),
                    _ => Pending::Str(StrBuilder::with_capacity(rows)),
                })
                .collect(),
            ids: Ids::default(),
            text_codes: text_codes.clone(),
            read: 0,
        }
    }

    /// Checks that rows come numbered 1..n.
    fn pos(&mut self, pos: i64) -> Result<(), DbErr> {
        if pos != self.read + 1 {
            return Err(DbErr::Custom(format!(
                "records are not numbered 1..n (found {pos} after {})",
                self.read
            )));
        }
        self.read = pos;
        Ok(())
    }

    fn number(&mut self, k: usize, value: Option<f64>) {
        if let Pending::Num(b) = &mut self.pending[k] {
            b.push(value.unwrap_or(f64::NAN));
        }
    }

    fn text(&mut self, k: usize, tid: Option<i64>) {
        if let Pending::Text(codes) = &mut self.pending[k] {
            codes.push(
                tid.and_then(|t| self.text_codes.get(&t).copied())
                    .unwrap_or(MISSING),
            );
        }
    }

    fn string(&mut self, k: usize, value: Option<&str>) {
        match &mut self.pending[k] {
            Pending::Str(b) => b.push(value),
            Pending::Id { differs } => {
                // This row's `_id` was pushed before its fields.
                let id = self
                    .ids
                    .len()
                    .checked_sub(1)
                    .map(|r| self.ids.get(r as u32));
                *differs |= value != id.as_deref();
            }
            _ => {}
        }
    }

    /// Appends the rows `next` collected, which must start right after this part's last.
    fn append(&mut self, next: Collect) -> Result<(), String> {
        let first = next.read - next.ids.len() as i64;
        if first != self.read {
            return Err(format!(
                "a part read from position {} follows one that ended at {}",
                first + 1,
                self.read
            ));
        }
        self.ids.append(&next.ids);
        for (pending, more) in self.pending.iter_mut().zip(next.pending) {
            match (pending, more) {
                (Pending::Str(a), Pending::Str(b)) => a.append(b),
                (Pending::Num(a), Pending::Num(b)) => a.append(b),
                (Pending::Text(a), Pending::Text(b)) => a.append(&b, |code| code),
                (Pending::Id { differs: a }, Pending::Id { differs: b }) => *a |= b,
                _ => return Err("parts collected different columns".into()),
            }
        }
        self.read = next.read;
        Ok(())
    }

    /// One row read from the SQLite file, its values borrowed.
    fn push_sqlite(&mut self, row: &rusqlite::Row<'_>) -> Result<(), String> {
        use rusqlite::types::ValueRef;
        fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<Option<&'r str>, String> {
            match row.get_ref(i).map_err(|e| e.to_string())? {
                ValueRef::Null => Ok(None),
                v => v.as_str().map(Some).map_err(|e| e.to_string()),
            }
        }
        let value = |i: usize| row.get_ref(i).map_err(|e| e.to_string());
        let pos = match value(0)? {
            ValueRef::Integer(pos) => pos,
            _ => return Err("a position is not an integer".into()),
        };
        self.pos(pos).map_err(|e| e.to_string())?;
        self.ids.push(text(row, 1)?.unwrap_or_default());
        for k in 0..self.planned.len() {
            match self.planned[k].1 {
                FieldType::Number => {
                    let v = match value(k + 2)? {
                        ValueRef::Real(x) => Some(x),
                        ValueRef::Integer(x) => Some(x as f64),
                        _ => None,
                    };
                    self.number(k, v);
                }
                FieldType::Text => {
                    let v = match value(k + 2)? {
                        ValueRef::Integer(x) => Some(x),
                        _ => None,
                    };
                    self.text(k, v);
                }
                _ => self.string(k, text(row, k + 2)?),
            }
        }
        Ok(())
    }

    /// One row read by `COPY`: numbers and text ids parsed from their text.
    fn push_copy(&mut self, line: &CopyLine) -> Result<(), String> {
        fn parse<T: std::str::FromStr>(value: Option<&str>) -> Result<Option<T>, String> {
            value
                .map(|v| v.parse().map_err(|_| format!("{v:?} is not a number")))
                .transpose()
        }
        let pos = parse(line.get(0)?)?.ok_or("a position is NULL")?;
        self.pos(pos).map_err(|e| e.to_string())?;
        self.ids.push(line.get(1)?.unwrap_or_default());
        for k in 0..self.planned.len() {
            let value = line.get(k + 2)?;
            match self.planned[k].1 {
                FieldType::Number => self.number(k, parse(value)?),
                FieldType::Text => self.text(k, parse(value)?),
                _ => self.string(k, value),
            }
        }
        Ok(())
    }

    /// The index of what was read; the field `stored_as_id`, whose column is `_id`, is held by
    /// `_id`.
    fn finish(
        self,
        version_id: i64,
        texts: Dict,
        stored_as_id: Option<usize>,
    ) -> Result<MemIndex, DbErr> {
        let mut fields: Vec<FieldIndex> = (0..self.fields).map(|_| FieldIndex::None).collect();
        if let Some(i) = stored_as_id {
            fields[i] = FieldIndex::Id;
        }
        for ((i, _), pending) in self.planned.iter().zip(self.pending) {
            fields[*i] = match pending {
                Pending::Str(b) => FieldIndex::Str(b.finish()),
                Pending::Num(b) => FieldIndex::Num(b.finish()),
                Pending::Text(codes) => {
                    let postings = Postings::new(&codes, &code_counts(&codes, texts.len()));
                    FieldIndex::Text(TextColumn { codes, postings })
                }
                Pending::Id { differs: false } => FieldIndex::Id,
                Pending::Id { differs: true } => {
                    return Err(DbErr::Custom(format!(
                        "the id field of version {version_id} does not hold every record's _id"
                    )));
                }
            };
        }
        let id = IdColumn::new(self.ids).ok_or_else(|| {
            DbErr::Custom(format!("records of version {version_id} share an _id"))
        })?;
        Ok(MemIndex::new(
            version_id,
            self.read as u32,
            id,
            fields,
            texts,
        ))
    }
}

/// Each store text id's code in the dictionary, looked up for every text value of every row
/// (foldhash: the ids come from the store).
type TextCodes = HashMap<i64, u32, foldhash::fast::RandomState>;

/// The version's text dictionary (lower-cased values) and each store id's code in it.
async fn read_texts(
    db: &DatabaseConnection,
    schema: &DatasetSchema,
) -> Result<(Dict, TextCodes), DbErr> {
    let mut dict = Dict::default();
    let mut codes = TextCodes::default();
    if schema.text_fields().next().is_none() {
        return Ok((dict, codes));
    }
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(match backend {
        DatabaseBackend::Postgres => "SELECT \"tid\", \"value\" FROM ",
        _ => "SELECT rowid, \"value\" FROM ",
    })
    .ident(&text_table(schema.version_id));
    for row in db.query_all_raw(sql.build()).await? {
        let tid: i64 = row.try_get_by_index(0)?;
        let value: String = row.try_get_by_index(1)?;
        codes.insert(tid, dict.len() as u32);
        dict.push(&value);
    }
    Ok((dict, codes))
}
