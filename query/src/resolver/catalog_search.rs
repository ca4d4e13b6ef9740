//! The catalog search's index (`GET /datasets?q=`, contract §13.4): every published dataset's
//! title, description, field names and field descriptions, held in this process, so that a
//! search reads no dataset's text from the store and costs the words' matches, not the
//! catalog's size.
//!
//! The words follow the records search's rules ([`crate::params::catalog_words`]): lower-cased,
//! split on white space, each matched as a substring. A word holds no white space, so each of
//! its occurrences lies inside one white-space-separated token of a dataset's text: the index
//! keeps each distinct token once (all of them in one text, one per line, searched by
//! substring) with the datasets that hold it and how often. Ranked by BM25 as records are
//! ([`crate::answer::relevance`]), over the whole catalog's term statistics, a word in a title
//! counting [`TITLE_WEIGHT`] times.
//!
//! Kept fresh with a constant number of store statements: changes made through this process
//! are seen at once ([`super::catalog::CatalogEpoch`]); those of other processes after
//! [`super::catalog::DATASET_FRESH_FOR`], when one small statement says the catalog changed
//! ([`store::catalog::signature`]); then only the datasets published since are read, and the
//! ids of all when some were removed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;

use entity::dataset;

use crate::answer::relevance::{Bm25, length};
use crate::engine::store;
use crate::engine::store::catalog::{FieldText, Signature};
use crate::error::ApiError;
use crate::scope::{Need, Scope};

/// How many occurrences a word in a dataset's title counts for: the title names what the
/// dataset is, a field's description only what one column holds (BM25F's field weight).
const TITLE_WEIGHT: u32 = 3;

/// One dataset as the index holds it: its row and its text's length (its tokens are in the
/// vocabulary's postings).
#[derive(Clone, Debug)]
struct Doc {
    row: dataset::Model,
    /// Characters of its lower-cased texts, as BM25 counts a record's length.
    length: u64,
}

/// The distinct tokens of the catalog's texts, each with the datasets holding it.
#[derive(Clone, Debug, Default)]
struct Vocabulary {
    /// Every token, each followed by a line feed, so that a substring search of this one text
    /// finds every token a word occurs in.
    text: String,
    /// Where each token starts in `text`.
    starts: Vec<usize>,
    ids: HashMap<String, u32>,
    /// Per token: (slot, occurrences of the token in that dataset's text).
    postings: Vec<Vec<(u32, u32)>>,
}

impl Vocabulary {
    fn token(&mut self, token: &str) -> u32 {
        if let Some(&id) = self.ids.get(token) {
            return id;
        }
        let id = self.starts.len() as u32;
        self.starts.push(self.text.len());
        self.text.push_str(token);
        self.text.push('\n');
        self.ids.insert(token.to_string(), id);
        self.postings.push(Vec::new());
        id
    }

    /// The tokens `word` occurs in, each with how often (without overlaps, as records
    /// relevance counts a term).
    fn matches(&self, word: &str) -> Vec<(u32, u32)> {
        let mut found: Vec<(u32, u32)> = Vec::new();
        for (at, _) in self.text.match_indices(word) {
            let token = (self.starts.partition_point(|&s| s <= at) - 1) as u32;
            match found.last_mut() {
                Some((last, count)) if *last == token => *count += 1,
                _ => found.push((token, 1)),
            }
        }
        found
    }
}

/// The index proper: the datasets in slots (a removed or replaced dataset leaves its slot
/// empty until the next compaction) and the vocabulary over them.
#[derive(Clone, Debug, Default)]
pub(super) struct CatalogText {
    slots: Vec<Option<Doc>>,
    by_id: HashMap<i64, u32>,
    vocabulary: Vocabulary,
    live: u64,
    total_length: u64,
    max_version: i64,
    sum_version: i64,
    /// The live slots, the most recently published first (ties by slug), sorted by the first
    /// request that needs them after a change.
    by_recency: OnceLock<Vec<u32>>,
}

/// A dataset's searched texts, lower-cased: its title, its description, and each field's name
/// and description (`_id` is every dataset's, so it tells none apart).
fn texts(row: &dataset::Model, fields: &[FieldText]) -> Vec<String> {
    let mut out = vec![row.title.to_lowercase(), row.description.to_lowercase()];
    for (_, name, description) in fields.iter().filter(|f| f.1 != "_id") {
        out.push(name.to_lowercase());
        if let Some(description) = description {
            out.push(description.to_lowercase());
        }
    }
    out
}

impl CatalogText {
    /// What the index holds, as [`store::catalog::signature`] counts the store.
    fn signature(&self) -> Signature {
        Signature {
            count: self.live as i64,
            max_version: self.max_version,
            sum_version: self.sum_version,
        }
    }

    /// Adds `row` (replacing the dataset of the same id) with its live version's `fields`.
    fn put(&mut self, row: dataset::Model, fields: &[FieldText]) {
        self.remove(row.id);
        self.by_recency = OnceLock::new();
        let slot = self.slots.len() as u32;
        let mut counts: HashMap<u32, u32> = HashMap::new();
        let mut doc_length = 0;
        for (i, text) in texts(&row, fields).iter().enumerate() {
            doc_length += length(text);
            let weight = if i == 0 { TITLE_WEIGHT } else { 1 };
            for token in text.split_whitespace() {
                *counts.entry(self.vocabulary.token(token)).or_default() += weight;
            }
        }
        for (token, count) in counts {
            self.vocabulary.postings[token as usize].push((slot, count));
        }
        self.live += 1;
        self.total_length += doc_length;
        self.max_version = self.max_version.max(row.version_id);
        self.sum_version += row.version_id;
        self.by_id.insert(row.id, slot);
        self.slots.push(Some(Doc {
            row,
            length: doc_length,
        }));
    }

    /// Forgets the dataset `id`. Its postings stay until [`Self::compacted`].
    fn remove(&mut self, id: i64) {
        let Some(slot) = self.by_id.remove(&id) else {
            return;
        };
        self.by_recency = OnceLock::new();
        if let Some(doc) = self.slots[slot as usize].take() {
            self.live -= 1;
            self.total_length -= doc.length;
            self.sum_version -= doc.row.version_id;
        }
    }

    /// Whether empty slots are so many that a rebuild pays.
    fn wasteful(&self) -> bool {
        self.slots.len() as u64 > 2 * self.live + 1024
    }

    /// The same datasets in a new index without empty slots or unused tokens (their fields are
    /// gone: the token counts are kept per slot, so they are rebuilt from the postings).
    fn compacted(self) -> CatalogText {
        let mut tokens: Vec<Vec<(u32, u32)>> = (0..self.slots.len()).map(|_| Vec::new()).collect();
        for (token, postings) in self.vocabulary.postings.iter().enumerate() {
            for &(slot, count) in postings {
                if self.slots[slot as usize].is_some() {
                    tokens[slot as usize].push((token as u32, count));
                }
            }
        }
        let mut out = CatalogText::default();
        for (doc, held) in self.slots.into_iter().zip(tokens) {
            let Some(doc) = doc else { continue };
            let slot = out.slots.len() as u32;
            for (token, count) in held {
                let word = &self.vocabulary.text[self.vocabulary.starts[token as usize]..];
                let word = &word[..word.find('\n').unwrap_or(word.len())];
                let id = out.vocabulary.token(word);
                out.vocabulary.postings[id as usize].push((slot, count));
            }
            out.live += 1;
            out.total_length += doc.length;
            out.max_version = out.max_version.max(doc.row.version_id);
            out.sum_version += doc.row.version_id;
            out.by_id.insert(doc.row.id, slot);
            out.slots.push(Some(doc));
        }
        out
    }

    /// Adds `rows` with their fields (`fields` by version, as [`store::catalog::live_field_texts`]
    /// reads them).
    fn put_all(&mut self, rows: Vec<dataset::Model>, fields: Vec<FieldText>) {
        let mut by_version: HashMap<i64, Vec<FieldText>> = HashMap::new();
        for field in fields {
            by_version.entry(field.0).or_default().push(field);
        }
        for row in rows {
            let fields = by_version.remove(&row.version_id).unwrap_or_default();
            self.put(row, &fields);
        }
    }

    /// Each word's term frequency per slot (0: absent) and its document frequency.
    fn frequencies(&self, word: &str) -> (Vec<u32>, u64) {
        let mut frequency = vec![0u32; self.slots.len()];
        let mut df = 0;
        for (token, times) in self.vocabulary.matches(word) {
            for &(slot, count) in &self.vocabulary.postings[token as usize] {
                if self.slots[slot as usize].is_none() {
                    continue;
                }
                let f = &mut frequency[slot as usize];
                if *f == 0 {
                    df += 1;
                }
                *f += times * count;
            }
        }
        (frequency, df)
    }

    /// One page (`offset`, `limit`) of every dataset, the most recently published first (ties
    /// by slug), and how many there are.
    pub(super) fn recent(&self, offset: u64, limit: u64) -> (Vec<dataset::Model>, u64) {
        let order = self.by_recency.get_or_init(|| {
            let mut order: Vec<u32> = self.by_id.values().copied().collect();
            let row = |slot: u32| self.slots[slot as usize].as_ref().map(|doc| &doc.row);
            order.sort_by(|&a, &b| match (row(a), row(b)) {
                (Some(a), Some(b)) => b
                    .updated_at
                    .cmp(&a.updated_at)
                    .then_with(|| a.slug.cmp(&b.slug)),
                _ => std::cmp::Ordering::Equal,
            });
            order
        });
        let page = order
            .iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .filter_map(|&slot| self.slots[slot as usize].as_ref())
            .map(|doc| doc.row.clone())
            .collect();
        (page, self.live)
    }

    /// One page (`offset`, `limit`) of the datasets `scope` may read where every word
    /// occurs, best match first (BM25, ties by slug), and how many there are in all; with no
    /// words, every dataset `scope` may read, by slug.
    pub(super) fn search(
        &self,
        words: &[String],
        scope: &Scope,
        offset: u64,
        limit: u64,
    ) -> (Vec<dataset::Model>, u64) {
        let readable = |doc: &Doc| scope.allows(Need::Read, Some(doc.row.slug.as_str()));
        let mut found: Vec<(f64, &Doc)> = Vec::new();
        if words.is_empty() {
            found.extend(
                self.slots
                    .iter()
                    .flatten()
                    .filter(|d| readable(d))
                    .map(|d| (0.0, d)),
            );
        } else {
            let (frequency, df): (Vec<Vec<u32>>, Vec<u64>) =
                words.iter().map(|w| self.frequencies(w)).unzip();
            let bm25 = Bm25::new(self.live, self.total_length, &df);
            for (slot, doc) in self.slots.iter().enumerate() {
                let Some(doc) = doc else { continue };
                let tf: Vec<u32> = frequency.iter().map(|f| f[slot]).collect();
                if !tf.contains(&0) && readable(doc) {
                    found.push((bm25.score(&tf, doc.length), doc));
                }
            }
        }
        found.sort_by(|(a, x), (b, y)| b.total_cmp(a).then_with(|| x.row.slug.cmp(&y.row.slug)));
        let page = found
            .iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|(_, doc)| doc.row.clone())
            .collect();
        (page, found.len() as u64)
    }
}

/// The index with what it was last checked against: the shared, swappable state.
#[derive(Debug)]
struct Checked {
    text: Arc<CatalogText>,
    at: Instant,
    epoch: u64,
}

/// The catalog search's index of one resolver, loaded on the first search and kept fresh.
#[derive(Debug, Default)]
pub(super) struct CatalogIndex {
    held: RwLock<Option<Checked>>,
    /// One refresh at a time; others wait for it and use its result.
    refreshing: tokio::sync::Mutex<()>,
    /// Set once the index has been read from the store: `held` is empty during each refresh.
    loaded: AtomicBool,
}

impl CatalogIndex {
    /// Whether the index has been read from the store once, so a search need not wait for it.
    pub(super) fn loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    /// The index if checked within `fresh_for` and at `epoch`.
    fn fresh(&self, epoch: u64, fresh_for: std::time::Duration) -> Option<Arc<CatalogText>> {
        let held = self.held.read().expect("catalog index lock");
        let checked = held.as_ref()?;
        (checked.epoch == epoch && checked.at.elapsed() < fresh_for).then(|| checked.text.clone())
    }

    /// The index, checked against the store when older than `fresh_for` or than the catalog
    /// `epoch` (read before any statement, so a change committed meanwhile is not hidden).
    pub(super) async fn current(
        &self,
        db: &sea_orm::DatabaseConnection,
        epoch: impl Fn() -> u64,
        fresh_for: std::time::Duration,
    ) -> Result<Arc<CatalogText>, ApiError> {
        if let Some(text) = self.fresh(epoch(), fresh_for) {
            return Ok(text);
        }
        let _one = self.refreshing.lock().await;
        let at_epoch = epoch();
        if let Some(text) = self.fresh(at_epoch, fresh_for) {
            return Ok(text);
        }
        let stored = store::catalog::signature(db).await?;
        // Taken out, so that the refresh changes it in place unless a search still holds it.
        let old = self
            .held
            .write()
            .expect("catalog index lock")
            .take()
            .map(|c| c.text);
        let text = refreshed(db, stored, old).await?;
        *self.held.write().expect("catalog index lock") = Some(Checked {
            text: text.clone(),
            at: Instant::now(),
            epoch: at_epoch,
        });
        self.loaded.store(true, Ordering::Release);
        Ok(text)
    }
}

/// `old` brought up to the store's catalog, whose signature is `stored`: the same when the
/// signatures agree; else with the datasets published since added and the removed ones
/// dropped; read whole when that does not account for the difference (or there was no index).
async fn refreshed(
    db: &sea_orm::DatabaseConnection,
    stored: Signature,
    old: Option<Arc<CatalogText>>,
) -> Result<Arc<CatalogText>, ApiError> {
    let Some(old) = old else {
        return Ok(Arc::new(whole(db).await?));
    };
    if old.signature() == stored {
        return Ok(old);
    }
    let mut text = Arc::unwrap_or_clone(old);
    let after = text.max_version;
    let rows = store::catalog::published_after(db, after).await?;
    let fields = store::catalog::live_field_texts(db, after).await?;
    text.put_all(rows, fields);
    if text.signature() != stored {
        let present: HashMap<i64, i64> = store::catalog::ids(db).await?.into_iter().collect();
        let gone: Vec<i64> = text
            .slots
            .iter()
            .flatten()
            .filter(|doc| present.get(&doc.row.id) != Some(&doc.row.version_id))
            .map(|doc| doc.row.id)
            .collect();
        for id in gone {
            text.remove(id);
        }
        if text.signature() != stored {
            return Ok(Arc::new(whole(db).await?));
        }
    }
    Ok(Arc::new(if text.wasteful() {
        text.compacted()
    } else {
        text
    }))
}

/// The whole catalog, read in two statements.
async fn whole(db: &sea_orm::DatabaseConnection) -> Result<CatalogText, ApiError> {
    let rows = store::catalog::published_after(db, i64::MIN).await?;
    let fields = store::catalog::live_field_texts(db, i64::MIN).await?;
    let mut text = CatalogText::default();
    text.put_all(rows, fields);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::relevance::occurrences;

    fn row(id: i64, slug: &str, title: &str, description: &str) -> dataset::Model {
        let now = time::OffsetDateTime::UNIX_EPOCH;
        dataset::Model {
            id,
            slug: slug.into(),
            title: title.into(),
            description: description.into(),
            license: None,
            source_url: None,
            id_field: None,
            record_count: 1,
            version_id: id * 10,
            created_at: now,
            updated_at: now,
            geo_lat: None,
            geo_lon: None,
            version: 1,
        }
    }

    fn field(version: i64, name: &str, description: &str) -> FieldText {
        (version, name.into(), Some(description.into()))
    }

    fn slugs(text: &CatalogText, words: &[&str]) -> Vec<String> {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let (rows, total) = text.search(&words, &Scope::default(), 0, 100);
        assert_eq!(rows.len() as u64, total);
        rows.into_iter().map(|r| r.slug).collect()
    }

    fn sample() -> CatalogText {
        let mut text = CatalogText::default();
        text.put_all(
            vec![
                row(1, "a", "Bridges of Paris", "stone and iron"),
                row(2, "b", "Works", "roads"),
                row(3, "c", "夜市小吃", "台北的夜市"),
            ],
            vec![
                field(20, "kind", "bridges, tunnels"),
                field(10, "_id", "bridges"),
            ],
        );
        text
    }

    #[test]
    fn words_count_as_substrings_of_the_whole_text() {
        let text = sample();
        // Counted per token, the same as over the whole text.
        let whole = "bridges, tunnels bridgesbridges";
        let mut vocabulary = Vocabulary::default();
        for token in whole.split_whitespace() {
            vocabulary.token(token);
        }
        let counted: u32 = vocabulary.matches("bridges").iter().map(|(_, c)| c).sum();
        assert_eq!(counted, occurrences(whole, "bridges"));
        assert_eq!(slugs(&text, &["bridges"]), ["a", "b"]);
        assert_eq!(slugs(&text, &["夜市"]), ["c"]);
        assert_eq!(slugs(&text, &["ridge", "iron"]), ["a"]);
        assert!(slugs(&text, &["bridges", "roads", "iron"]).is_empty());
        // `_id` tells no dataset apart: its description is not searched.
        assert_eq!(slugs(&text, &["kind"]), ["b"]);
    }

    #[test]
    fn replacing_and_removing_keep_the_statistics() {
        let mut text = sample();
        text.put(row(2, "b", "Bridges again", "roads"), &[]);
        assert_eq!(slugs(&text, &["bridges"]), ["b", "a"]);
        text.remove(1);
        assert_eq!(slugs(&text, &["bridges"]), ["b"]);
        assert_eq!(text.signature().count, 2);
        assert_eq!(text.signature().sum_version, 50);
        let compacted = text.clone().compacted();
        assert_eq!(compacted.slots.len(), 2);
        for words in [&["bridges"][..], &["夜"], &["s"], &["roads", "again"]] {
            assert_eq!(slugs(&compacted, words), slugs(&text, words), "{words:?}");
        }
        assert_eq!(compacted.signature(), text.signature());
        assert_eq!(compacted.total_length, text.total_length);
    }
}
