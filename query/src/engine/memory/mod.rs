//! In-memory indexes: each published version's typed columns, held in memory so filters,
//! totals, sorts and aggregations cost microseconds to a few milliseconds instead of a store
//! scan. Versions never change, so an index is built once per version and is correct for as
//! long as the version is live. An instance builds a dataset's index when the dataset is first
//! asked for, not at start (behind a load balancer that sends each dataset to a few owners, an
//! instance holds only the indexes of the datasets it serves), then builds each new version of
//! it when the resolver's periodic refresh finds one. When the budget is full, the index used
//! least recently (and not within [`EVICT_IDLE`]) goes to make room. The store stays the source of truth: it serves
//! record bodies by position, and it answers everything while an index is being built, for
//! datasets beyond the memory budget, and when indexes are turned off.
//!
//! - [`column`]: dictionary-encoded strings, numbers in value order, per-value row lists.
//! - [`rows`]: sets of rows: the bits a filter matches, row lists in 2 bytes a row.
//! - [`build`]: reading a version from the store; [`persist`]: the index in a file beside the
//!   store, loaded instead of a build after a restart.
//! - [`select`]: filters and the order of a page; [`stats`]: grouped statistics, integer
//!   columns by per-group histograms; [`relevance`]: pages by BM25 score.

pub(crate) mod build;
pub(crate) mod column;
pub(crate) mod persist;
pub(crate) mod places;
pub(crate) mod policy;
pub(crate) mod relevance;
pub(crate) mod rows;
pub(crate) mod select;
pub(crate) mod stats;
pub(crate) mod walk;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::engine::store::replicas::Reader;
use tokio::sync::OnceCell;

use column::{Dict, IdColumn, NumColumn, StrColumn, TextColumn};

use crate::dataset::Dataset;
use crate::engine::store::files::VersionFiles;

pub(crate) use policy::IndexPolicy;

/// One field's column in an index.
#[derive(Debug)]
pub(crate) enum FieldIndex {
    /// `json` fields: not filterable, not held.
    None,
    /// Keyword, date and boolean fields.
    Str(StrColumn),
    /// The dataset's id field when it is a keyword: its value is the record's `_id` in every
    /// row (an import makes `_id` from it), so its filters and sorts are answered by
    /// [`MemIndex::id`] and nothing more is held. A second column of unique texts would hold
    /// the texts, their ends, a code a row and a row list a code.
    Id,
    Num(NumColumn),
    Text(TextColumn),
}

/// One version's typed columns. Row `r` is the record at position `r + 1` in the file.
#[derive(Debug)]
pub(crate) struct MemIndex {
    pub version_id: i64,
    pub rows: u32,
    pub id: IdColumn,
    /// By schema field index.
    pub fields: Vec<FieldIndex>,
    /// The version's text dictionary, lower-cased; text columns hold codes into it.
    pub texts: Dict,
    /// By schema field index: the characters of a text field's values over every row (0 for
    /// other fields), for relevance's average record length.
    pub text_lengths: Vec<u64>,
    pub bytes: usize,
}

impl MemIndex {
    /// Assembles an index and measures it.
    pub(crate) fn new(
        version_id: i64,
        rows: u32,
        id: IdColumn,
        fields: Vec<FieldIndex>,
        mut texts: Dict,
    ) -> Self {
        // Exact, as an index read from its file is: both are measured alike.
        texts.text.shrink_to_fit();
        texts.ends.shrink_to_fit();
        let text_lengths = relevance::text_lengths(&fields, &texts);
        Self::assemble(version_id, rows, id, fields, texts, text_lengths)
    }

    /// Assembles an index whose text lengths are known (read from its file), and measures it.
    pub(crate) fn assemble(
        version_id: i64,
        rows: u32,
        id: IdColumn,
        fields: Vec<FieldIndex>,
        texts: Dict,
        text_lengths: Vec<u64>,
    ) -> Self {
        let bytes = id.bytes()
            + texts.bytes()
            + fields
                .iter()
                .map(|f| match f {
                    FieldIndex::None | FieldIndex::Id => 0,
                    FieldIndex::Str(c) => c.bytes(),
                    FieldIndex::Num(c) => c.bytes(),
                    FieldIndex::Text(c) => c.bytes(),
                })
                .sum::<usize>();
        MemIndex {
            version_id,
            rows,
            id,
            fields,
            texts,
            text_lengths,
            bytes,
        }
    }

    /// How many rows `matches` holds (`None`: every row).
    pub(crate) fn total(&self, matches: Option<&rows::Bits>) -> u64 {
        matches.map_or(u64::from(self.rows), rows::Bits::count)
    }
}

/// The index of one dataset's live version: built once, by whichever request or refresh
/// gets there first.
#[derive(Debug)]
struct Slot {
    version_id: i64,
    started: AtomicBool,
    index: OnceCell<Option<Arc<MemIndex>>>,
    /// Bytes this slot added to [`State::used`], set under the state lock.
    accounted: AtomicU64,
    /// When the index was last asked for, in milliseconds since [`Memory::epoch`].
    last_used: AtomicU64,
    /// The dataset's slug and how long its build took (ms), for the operator's figures.
    slug: String,
    build_ms: AtomicU64,
    /// Whether the index was loaded from its file rather than built from the store.
    loaded: AtomicBool,
}

/// An index held, as the operator's figures show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    pub slug: String,
    pub bytes: u64,
    /// How long it took to be ready: built from the store, or loaded from its file.
    pub seconds: f64,
    /// Loaded from its file ([`persist`]), not built.
    pub loaded: bool,
}

/// The indexes of a process, one slot per dataset.
#[derive(Debug)]
pub(crate) struct Memory {
    policy: IndexPolicy,
    /// The instant slots' `last_used` counts from.
    epoch: Instant,
    state: Mutex<State>,
    /// One build at a time: a build's scratch memory is a multiple of its index's, and two at
    /// once (every dataset at start) would add up.
    building: tokio::sync::Mutex<()>,
    /// On an SQLite file: builds read the version's file directly.
    version_files: Arc<VersionFiles>,
    /// Where indexes are kept between runs (`ODQS_INDEX_DIR`); `None`: not kept.
    files: Option<Arc<persist::Files>>,
}

#[derive(Debug, Default)]
struct State {
    /// By dataset id.
    slots: HashMap<i64, Arc<Slot>>,
    /// Bytes of the indexes in `slots`.
    used: u64,
    /// Datasets whose index would not fit the budget even alone, by dataset id: each one's slug
    /// and estimated index bytes. The store answers them; `/readyz` lists them.
    beyond: HashMap<i64, (String, u64)>,
}

/// A dataset the store answers because its index would not fit the budget even alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeyondBudget {
    pub slug: String,
    /// The index's estimated size ([`build::estimate`]).
    pub index_bytes: u64,
    /// The budget in force (`ODQS_INDEX_MEMORY_MB`).
    pub budget_bytes: u64,
}

impl BeyondBudget {
    /// The smallest `ODQS_INDEX_MEMORY_MB` that holds the index, in whole MiB.
    pub fn budget_mib_needed(&self) -> u64 {
        self.index_bytes.div_ceil(1024 * 1024)
    }
}

impl Memory {
    /// Indexes under `policy`.
    pub(crate) fn new(policy: IndexPolicy, version_files: Arc<VersionFiles>) -> Self {
        Memory {
            policy,
            epoch: Instant::now(),
            state: Mutex::default(),
            building: tokio::sync::Mutex::new(()),
            version_files,
            files: None,
        }
    }

    /// The same indexes kept in files in `dir` between runs ([`persist`]); `None`: not kept.
    pub(crate) fn with_files(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.files = dir.map(|dir| Arc::new(persist::Files::new(dir)));
        self
    }

    /// Deletes the index files of versions other than `live` (no longer the live version of
    /// any dataset): on a blocking thread, not waited for.
    pub(crate) fn prune_files(&self, live: HashSet<i64>) {
        if let Some(files) = self.files.clone() {
            tokio::task::spawn_blocking(move || {
                let deleted = files.prune(&live);
                if deleted > 0 {
                    tracing::info!(
                        files = deleted,
                        "index files of versions no longer live deleted"
                    );
                }
            });
        }
    }

    /// The policy in force.
    pub(crate) fn policy(&self) -> IndexPolicy {
        self.policy
    }

    /// The index of `dataset`'s live version, if it is built (or, under a waiting policy,
    /// once it is). `None` means: answer from the store.
    pub(crate) async fn index(
        self: &Arc<Self>,
        db: &Reader,
        dataset: &Dataset,
    ) -> Option<Arc<MemIndex>> {
        if self.policy.budget_bytes == 0 {
            return None;
        }
        let slot = self.slot(dataset)?;
        slot.last_used.store(self.now_ms(), Ordering::Relaxed);
        if let Some(found) = slot.index.get() {
            return found.clone();
        }
        if self.policy.wait {
            slot.started.store(true, Ordering::SeqCst);
            return slot
                .index
                .get_or_init(|| {
                    self.clone()
                        .build(db.clone(), dataset.clone(), slot.clone())
                })
                .await
                .clone();
        }
        self.start(db, dataset, &slot);
        None
    }

    /// Starts building `dataset`'s live version in the background unless it is built or
    /// being built.
    pub(crate) fn prepare(self: &Arc<Self>, db: &Reader, dataset: &Dataset) {
        if self.policy.budget_bytes == 0 {
            return;
        }
        if let Some(slot) = self.slot(dataset) {
            self.start(db, dataset, &slot);
        }
    }

    /// `Some` when `dataset`'s index would not fit the budget even with no other index held, so
    /// the store answers it whatever is asked (indexes turned off: `None`, nothing is beyond).
    /// From the estimate, not a build, so the metadata can say it before any query.
    pub(crate) fn beyond_budget(&self, dataset: &Dataset) -> Option<BeyondBudget> {
        let budget = self.policy.budget_bytes;
        let rows = dataset.meta.record_count.max(0) as u64;
        let estimate = build::estimate(&dataset.schema, dataset.meta.id_field.as_deref(), rows);
        (budget > 0 && estimate > budget).then(|| BeyondBudget {
            slug: dataset.meta.slug.clone(),
            index_bytes: estimate,
            budget_bytes: budget,
        })
    }

    /// Whether a dataset of `rows` records may be beyond the budget, whatever its schema.
    pub(crate) fn may_be_beyond(&self, rows: i64) -> bool {
        let budget = self.policy.budget_bytes;
        budget > 0 && build::estimate_at_most(rows.max(0) as u64) > budget
    }

    /// Notes that the dataset `id` is within the budget (see [`Self::may_be_beyond`]).
    pub(crate) fn note_within_budget(&self, id: i64) {
        self.state.lock().expect("memory lock").beyond.remove(&id);
    }

    /// Notes whether `dataset` is beyond the budget (the periodic refresh passes every live
    /// dataset), and logs it the first time, with the budget that would hold it.
    pub(crate) fn note_budget(&self, dataset: &Dataset) {
        let beyond = self.beyond_budget(dataset);
        let mut state = self.state.lock().expect("memory lock");
        let Some(beyond) = beyond else {
            state.beyond.remove(&dataset.meta.id);
            return;
        };
        let known = state
            .beyond
            .insert(dataset.meta.id, (beyond.slug.clone(), beyond.index_bytes));
        if known.is_none_or(|(_, bytes)| bytes != beyond.index_bytes) {
            tracing::warn!(
                dataset = %beyond.slug,
                index_mib = beyond.budget_mib_needed(),
                budget_mib = beyond.budget_bytes >> 20,
                "the store answers this dataset: its in-memory index would be beyond the memory budget; ODQS_INDEX_MEMORY_MB={} or more would hold it",
                beyond.budget_mib_needed()
            );
        }
    }

    /// The datasets noted beyond the budget, by slug.
    pub(crate) fn beyond(&self) -> Vec<BeyondBudget> {
        let state = self.state.lock().expect("memory lock");
        let mut all: Vec<BeyondBudget> = state
            .beyond
            .values()
            .map(|(slug, bytes)| BeyondBudget {
                slug: slug.clone(),
                index_bytes: *bytes,
                budget_bytes: self.policy.budget_bytes,
            })
            .collect();
        all.sort_by(|a, b| a.slug.cmp(&b.slug));
        all
    }

    /// Whether this instance has been asked for `dataset_id` (its index built, being built, or
    /// beyond the budget): the periodic refresh builds new versions of those only.
    pub(crate) fn serves(&self, dataset_id: i64) -> bool {
        self.state
            .lock()
            .expect("memory lock")
            .slots
            .contains_key(&dataset_id)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Lets the least recently used indexes other than `keep`'s go, those idle for the
    /// policy's `evict_idle`, until `bytes` more fit the budget; whether they do.
    fn make_room(&self, state: &mut State, keep: i64, bytes: u64) -> bool {
        let idle_before = self
            .now_ms()
            .saturating_sub(self.policy.evict_idle.as_millis() as u64);
        while state.used + bytes > self.policy.budget_bytes {
            let oldest = state
                .slots
                .iter()
                .filter(|(id, slot)| {
                    **id != keep
                        && slot_bytes(slot) > 0
                        && slot.last_used.load(Ordering::Relaxed) <= idle_before
                })
                .min_by_key(|(_, slot)| slot.last_used.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            let Some(id) = oldest else {
                return false;
            };
            if let Some(slot) = state.slots.remove(&id) {
                state.used -= slot_bytes(&slot);
                tracing::info!(
                    dataset_id = id,
                    mib = slot_bytes(&slot) >> 20,
                    "in-memory index let go to make room (least recently used)"
                );
            }
        }
        true
    }

    /// Drops the indexes of datasets not in `live` (removed since).
    pub(crate) fn retain(&self, live: &HashSet<i64>) {
        let mut state = self.state.lock().expect("memory lock");
        let gone: Vec<i64> = state
            .slots
            .keys()
            .filter(|id| !live.contains(id))
            .copied()
            .collect();
        for id in gone {
            if let Some(slot) = state.slots.remove(&id) {
                state.used -= slot_bytes(&slot);
            }
        }
        state.beyond.retain(|id, _| live.contains(id));
    }

    /// Each index held, by slug.
    pub(crate) fn report(&self) -> Vec<Held> {
        let state = self.state.lock().expect("memory lock");
        let mut held: Vec<Held> = state
            .slots
            .values()
            .filter(|slot| slot_bytes(slot) > 0)
            .map(|slot| Held {
                slug: slot.slug.clone(),
                bytes: slot_bytes(slot),
                seconds: slot.build_ms.load(Ordering::Relaxed) as f64 / 1000.0,
                loaded: slot.loaded.load(Ordering::Relaxed),
            })
            .collect();
        held.sort_by(|a, b| a.slug.cmp(&b.slug));
        held
    }

    /// Bytes held by built indexes.
    pub(crate) fn used_bytes(&self) -> u64 {
        self.state.lock().expect("memory lock").used
    }

    fn start(self: &Arc<Self>, db: &Reader, dataset: &Dataset, slot: &Arc<Slot>) {
        if slot.index.initialized() || slot.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let (memory, db, dataset, slot) = (self.clone(), db.clone(), dataset.clone(), slot.clone());
        tokio::spawn(async move {
            let build = memory.build(db, dataset, slot.clone());
            slot.index.get_or_init(|| build).await;
        });
    }

    /// The slot of `dataset`'s version: a new one when the version is newer than the slot's,
    /// none when the request resolved an older version than the slot's (mid-import).
    fn slot(&self, dataset: &Dataset) -> Option<Arc<Slot>> {
        let version_id = dataset.schema.version_id;
        let mut state = self.state.lock().expect("memory lock");
        if let Some(slot) = state.slots.get(&dataset.meta.id) {
            if slot.version_id == version_id {
                return Some(slot.clone());
            }
            if slot.version_id > version_id {
                return None;
            }
        }
        let slot = Arc::new(Slot {
            version_id,
            started: AtomicBool::new(false),
            index: OnceCell::new(),
            accounted: AtomicU64::new(0),
            last_used: AtomicU64::new(self.now_ms()),
            slug: dataset.meta.slug.clone(),
            build_ms: AtomicU64::new(0),
            loaded: AtomicBool::new(false),
        });
        if let Some(old) = state.slots.insert(dataset.meta.id, slot.clone()) {
            state.used -= slot_bytes(&old);
        }
        Some(slot)
    }

    /// Builds the index of `slot`'s version if it fits the budget; `None` otherwise or on a
    /// store error (logged: the store answers instead).
    async fn build(
        self: Arc<Self>,
        db: Reader,
        dataset: Dataset,
        slot: Arc<Slot>,
    ) -> Option<Arc<MemIndex>> {
        let slug = &dataset.meta.slug;
        let rows = dataset.meta.record_count.max(0) as u64;
        let estimate = build::estimate(&dataset.schema, dataset.meta.id_field.as_deref(), rows);
        let fits = {
            let mut state = self.state.lock().expect("memory lock");
            self.make_room(&mut state, dataset.meta.id, estimate)
        };
        if !fits {
            tracing::info!(dataset = %slug, estimate_mib = estimate >> 20,
                "in-memory index beyond the memory budget; the store answers");
            return None;
        }
        let _one_at_a_time = self.building.lock().await;
        let started = Instant::now();
        let loaded = match &self.files {
            Some(files) => persist::load(files, &dataset).await,
            None => None,
        };
        let from_file = loaded.is_some();
        let index = match loaded {
            Some(index) => index,
            None => match self.build_from_store(&db, &dataset, rows).await {
                Some(index) => index,
                None => return None,
            },
        };
        let bytes = index.bytes as u64;
        release_scratch();
        let mut state = self.state.lock().expect("memory lock");
        let current = state
            .slots
            .get(&dataset.meta.id)
            .is_some_and(|s| Arc::ptr_eq(s, &slot));
        if !current {
            return None;
        }
        if !self.make_room(&mut state, dataset.meta.id, bytes) {
            tracing::info!(dataset = %slug, mib = bytes >> 20,
                "in-memory index beyond the memory budget; the store answers");
            return None;
        }
        state.used += bytes;
        slot.accounted.store(bytes, Ordering::SeqCst);
        slot.loaded.store(from_file, Ordering::Relaxed);
        slot.build_ms
            .store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        tracing::info!(
            dataset = %slug,
            version = dataset.schema.version_id,
            rows = index.rows,
            mib = format!("{:.1}", bytes as f64 / 1048576.0),
            ms = started.elapsed().as_millis() as u64,
            from = if from_file { "file" } else { "store" },
            "index ready"
        );
        let index = Arc::new(index);
        if let (Some(files), false) = (&self.files, from_file) {
            persist::save_in_background(files, &dataset, index.clone());
        }
        Some(index)
    }

    /// Reads `dataset`'s live version from the store into an index (logged `index built`);
    /// `None` on a store error (logged: the store answers instead).
    async fn build_from_store(
        &self,
        db: &Reader,
        dataset: &Dataset,
        rows: u64,
    ) -> Option<MemIndex> {
        let started = Instant::now();
        let direct = self.version_files.direct(dataset.schema.version_id);
        let direct = direct.as_ref();
        let built = db
            .run(|db| {
                let schema = &dataset.schema;
                let id_field = dataset.meta.id_field.as_deref();
                async move { build::build(&db, direct, schema, id_field, rows).await }
            })
            .await;
        let slug = &dataset.meta.slug;
        match built {
            Ok(index) => {
                tracing::info!(dataset = %slug, version = dataset.schema.version_id,
                    rows = index.rows, ms = started.elapsed().as_millis() as u64, "index built");
                Some(index)
            }
            Err(error) => {
                tracing::warn!(dataset = %slug, %error, "in-memory index not built; the store answers");
                None
            }
        }
    }
}

/// Hands the memory a build used for scratch (row chunks, hash maps) back to the system. glibc
/// keeps what worker threads free in their arenas, where it would count in the process's
/// resident size for good.
fn release_scratch() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes no pointer.
        unsafe {
            malloc_trim(0);
        }
    }
}

fn slot_bytes(slot: &Slot) -> u64 {
    slot.accounted.load(Ordering::SeqCst)
}
