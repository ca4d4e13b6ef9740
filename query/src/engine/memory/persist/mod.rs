//! In-memory indexes kept in files beside the store (`ODQS_INDEX_DIR`), so a restart, or a new
//! owner of a dataset in a cluster, loads a version's index in the time it takes to read its
//! arrays instead of building it from the store, which takes far longer on a large version.
//!
//! One file a version, `v{version_id}.idx`:
//!
//! - a header: [`MAGIC`], [`FORMAT`], the version id, the row count and a fingerprint of what
//!   the index was built from (the dataset, its version and its fields: [`fingerprint`]), so a
//!   file of another version, of a store made again, of another schema or of an older format is
//!   never used;
//! - the structures' raw arrays ([`raw`], [`columns`]): little-endian, each after its length,
//!   read with one `read_exact` into the `Vec` it becomes;
//! - a CRC-32 of all of it, so a torn or corrupt file is found out and ignored.
//!
//! A file is written after a build, on a blocking thread, to a temporary name and renamed
//! (atomic: a reader sees the whole file or none); a failed write is logged and otherwise
//! ignored. A file that is refused is deleted and the index built from the store. The files are a
//! cache: deleting any of them at any time costs one build.

mod columns;
mod raw;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use sha2::{Digest, Sha256};

use self::columns::{Put, Take};
use self::raw::{Sink, Source, invalid};
use super::column::{Dict, IdColumn};
use super::{FieldIndex, MemIndex};
use crate::dataset::Dataset;

/// The first bytes of every index file.
pub(crate) const MAGIC: &[u8; 8] = b"ODQSIDX\0";

/// The layout of the file; a change to any structure's arrays bumps it, and files of another
/// format are refused (and rebuilt). 2: a keyword id field is held by `_id` alone
/// ([`FieldIndex::Id`]).
pub(crate) const FORMAT: u64 = 3;

/// The name of a version's file ends so.
const SUFFIX: &str = ".idx";

/// Buffers of this size between the file and the arrays (an array larger than it is read or
/// written straight from its `Vec`).
const BUFFER: usize = 1 << 20;

/// What an index was built from: the dataset (its id, slug and creation instant, so a store made
/// again from scratch, whose version ids start over, does not match), the version (its id and
/// number), the row count and each field's name, type and column.
pub(crate) fn fingerprint(dataset: &Dataset) -> [u8; 32] {
    let mut hash = Sha256::new();
    let meta = &dataset.meta;
    let mut put = |part: &str| {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    };
    put(&meta.id.to_string());
    put(&meta.slug);
    put(&meta.created_at.unix_timestamp_nanos().to_string());
    put(&dataset.schema.version_id.to_string());
    put(&meta.version.to_string());
    put(&meta.record_count.to_string());
    for field in &dataset.schema.fields {
        put(&field.name);
        put(field.field_type.as_str());
        put(field.column.as_deref().unwrap_or(""));
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(&hash.finalize());
    out
}

/// What a file must say to be used: the version, its rows and its [`fingerprint`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub version_id: i64,
    pub rows: u32,
    pub fingerprint: [u8; 32],
}

impl Header {
    /// The header an index of `dataset`'s version must carry.
    pub(crate) fn of(dataset: &Dataset) -> Self {
        Header {
            version_id: dataset.schema.version_id,
            rows: dataset.meta.record_count.clamp(0, i64::from(u32::MAX)) as u32,
            fingerprint: fingerprint(dataset),
        }
    }

    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        out.bytes(MAGIC)?;
        out.u64(FORMAT)?;
        out.u64(self.version_id as u64)?;
        out.u64(u64::from(self.rows))?;
        out.array(&self.fingerprint)
    }

    /// Reads a header and checks it against `self`, before anything else is read.
    fn check<R: Read>(&self, input: &mut Source<R>) -> io::Result<()> {
        if input.exact(MAGIC.len())? != MAGIC[..] {
            return Err(invalid("not an index file"));
        }
        if input.u64()? != FORMAT {
            return Err(invalid("another format"));
        }
        if input.u64()? != self.version_id as u64 {
            return Err(invalid("another version"));
        }
        if input.u64()? != u64::from(self.rows) {
            return Err(invalid("another row count"));
        }
        if input.array::<u8>()? != self.fingerprint {
            return Err(invalid("another dataset or schema"));
        }
        Ok(())
    }
}

/// Writes `index` with `header` to `out`; the bytes written.
pub(crate) fn write<W: Write>(index: &MemIndex, header: &Header, out: W) -> io::Result<(W, u64)> {
    let mut sink = Sink::new(out);
    header.put(&mut sink)?;
    index.texts.put(&mut sink)?;
    index.id.put(&mut sink)?;
    sink.u64(index.fields.len() as u64)?;
    for field in &index.fields {
        field.put(&mut sink)?;
    }
    sink.array(&index.text_lengths)?;
    sink.finish()
}

/// Reads an index of `size` bytes written by [`write`], refusing it unless its header is
/// `expected` and its checksum matches.
pub(crate) fn read<R: Read>(input: R, size: u64, expected: &Header) -> io::Result<MemIndex> {
    let mut source = Source::new(input, size)?;
    expected.check(&mut source)?;
    let rows = expected.rows as usize;
    let texts = Dict::take(&mut source, rows)?;
    let id = IdColumn::take(&mut source, rows)?;
    let count = source.u64()?;
    let mut fields = Vec::new();
    for _ in 0..count {
        let field = FieldIndex::take(&mut source, rows)?;
        if let FieldIndex::Text(column) = &field
            && column.postings.starts.len() != texts.len() + 1
        {
            return Err(invalid("a text column's postings"));
        }
        fields.push(field);
    }
    let text_lengths: Vec<u64> = source.array()?;
    if text_lengths.len() != fields.len() {
        return Err(invalid("text lengths, one a field"));
    }
    source.finish()?;
    Ok(MemIndex::assemble(
        expected.version_id,
        expected.rows,
        id,
        fields,
        texts,
        text_lengths,
    ))
}

/// What looking for a version's file found.
#[derive(Debug)]
pub(crate) enum Found {
    /// No file: build.
    Missing,
    /// A file that is not this version's valid index (deleted): build.
    Refused(io::Error),
    /// Boxed: the other variants are a word or two.
    Index(Box<MemIndex>),
}

/// The directory of index files.
#[derive(Debug)]
pub(crate) struct Files {
    dir: PathBuf,
    /// Numbers the temporary files of this process's writes.
    writes: AtomicU64,
}

impl Files {
    /// Index files in `dir` (made when the first one is written).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Files {
            dir,
            writes: AtomicU64::new(0),
        }
    }

    /// The file of version `version_id`.
    pub(crate) fn path(&self, version_id: i64) -> PathBuf {
        self.dir.join(format!("v{version_id}{SUFFIX}"))
    }

    /// Reads the file of `expected`'s version (blocking); a file refused is deleted.
    pub(crate) fn load(&self, expected: &Header) -> Found {
        let path = self.path(expected.version_id);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Found::Missing,
            Err(error) => return Found::Refused(error),
        };
        let read = file
            .metadata()
            .and_then(|meta| read(BufReader::with_capacity(BUFFER, file), meta.len(), expected));
        match read {
            Ok(index) => Found::Index(Box::new(index)),
            Err(error) => {
                let _ = std::fs::remove_file(&path);
                Found::Refused(error)
            }
        }
    }

    /// Writes `index` as its version's file (blocking): to a temporary file, synced, then
    /// renamed over the file's name. The bytes written.
    pub(crate) fn save(&self, index: &MemIndex, header: &Header) -> io::Result<u64> {
        if index.rows != header.rows || index.version_id != header.version_id {
            // Read back, the header's count would size every array: never write a mismatch.
            return Err(invalid("the index is not of the version's rows"));
        }
        std::fs::create_dir_all(&self.dir)?;
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        let temp = self.dir.join(format!(
            "v{}{SUFFIX}.tmp-{}-{n}",
            header.version_id,
            std::process::id()
        ));
        let written = Self::write_file(&temp, &self.path(header.version_id), index, header);
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written
    }

    /// Writes `index` to `temp`, syncs it and renames it `path`; the bytes written.
    fn write_file(temp: &Path, path: &Path, index: &MemIndex, header: &Header) -> io::Result<u64> {
        let file = BufWriter::with_capacity(BUFFER, File::create(temp)?);
        let (file, bytes) = write(index, header, file)?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(temp, path)?;
        Ok(bytes)
    }

    /// Deletes the files (and left-over temporary files) of versions not in `keep`: versions
    /// no longer live have no index. The number deleted.
    pub(crate) fn prune(&self, keep: &HashSet<i64>) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .filter_map(Result::ok)
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                version_of(&name).is_some_and(|version| !keep.contains(&version))
            })
            .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
            .count()
    }
}

/// The version of an index file's name (`v12.idx`, or a temporary `v12.idx.tmp-…`).
fn version_of(name: &str) -> Option<i64> {
    let (version, rest) = name.strip_prefix('v')?.split_once(SUFFIX)?;
    (rest.is_empty() || rest.starts_with(".tmp-"))
        .then(|| version.parse().ok())
        .flatten()
}

/// Loads `dataset`'s index from its file on a blocking thread, logging what happened: `None`
/// when there is no valid file (a refused one is deleted), so the caller builds.
pub(crate) async fn load(files: &Arc<Files>, dataset: &Dataset) -> Option<MemIndex> {
    let header = Header::of(dataset);
    let started = Instant::now();
    let (files, wanted) = (files.clone(), header.clone());
    let found = tokio::task::spawn_blocking(move || files.load(&wanted))
        .await
        .unwrap_or_else(|error| Found::Refused(io::Error::other(error.to_string())));
    let slug = &dataset.meta.slug;
    match found {
        Found::Missing => None,
        Found::Refused(error) => {
            tracing::warn!(dataset = %slug, version = header.version_id, %error,
                "index file not used (deleted); building the index from the store");
            None
        }
        Found::Index(index) => {
            tracing::info!(dataset = %slug, version = header.version_id, rows = index.rows,
                ms = started.elapsed().as_millis() as u64, "index loaded");
            Some(*index)
        }
    }
}

/// Writes `index` as `dataset`'s file on a blocking thread, not waited for: requests never
/// wait on it, and a failure (disk full, a read-only directory) is a warning, nothing more.
pub(crate) fn save_in_background(files: &Arc<Files>, dataset: &Dataset, index: Arc<MemIndex>) {
    let header = Header::of(dataset);
    let (files, slug) = (files.clone(), dataset.meta.slug.clone());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        match files.save(&index, &header) {
            Ok(bytes) => tracing::info!(dataset = %slug, version = header.version_id,
                mib = format!("{:.1}", bytes as f64 / 1048576.0),
                ms = started.elapsed().as_millis() as u64, "index file written"),
            Err(error) => tracing::warn!(dataset = %slug, version = header.version_id, %error,
                "index file not written; the index is built again after a restart"),
        }
    });
}
