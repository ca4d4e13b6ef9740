//! Asynchronous writes (contract §14.2): with `Prefer: respond-async`, a write answers 202 once
//! its upload is received and publishes it in the background as a job, a row of the store that
//! any instance answers `GET /jobs/{id}` from. The row follows the import's phase and records
//! read every [`HEARTBEAT`]; a running job whose row has not moved for [`STALE_AFTER`] ran on
//! an instance that stopped, and is shown failed (its loading version is removed by the
//! garbage collector, as for any import that died).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use entity::publish_job::{self, STATE_DONE, STATE_FAILED, STATE_RUNNING};
use query::ApiError;
use sea_orm::{ActiveModelTrait, EntityTrait, Set};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::auth::token::random_secret;
use crate::import::Progress;
use crate::store::{Store, StoreError};

/// How often a running job's row is written.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a running job's row may stay unwritten before the job is taken for dead.
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// A job as `GET /jobs/{id}` answers it.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    /// The job's id, as in its URL.
    pub id: String,
    /// The dataset written.
    pub slug: String,
    /// `running`, `done` or `failed`.
    #[schema(example = "running")]
    pub state: String,
    /// What the import is doing ("loading records").
    #[schema(example = "loading records")]
    pub phase: String,
    pub records_read: i64,
    pub bytes_read: i64,
    /// The write's answer, once `done`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// The error body, once `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
}

/// A job's progress as the import reports it, read by the heartbeat.
#[derive(Debug, Default)]
pub struct JobProgress {
    phase: Mutex<String>,
    records: AtomicU64,
}

impl JobProgress {
    /// Records read so far.
    pub fn records_read(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }
}

impl Progress for JobProgress {
    fn records(&self, records: u64, _: &AtomicU64) {
        self.records.store(records, Ordering::Relaxed);
    }

    fn phase(&self, phase: &str) {
        *self.phase.lock().expect("job phase lock") = phase.to_string();
    }
}

/// A new running job of account `user_id` writing `slug`, its upload of `bytes` received.
pub async fn start(
    store: &Store,
    user_id: i64,
    slug: &str,
    bytes: u64,
) -> Result<publish_job::Model, StoreError> {
    let now = OffsetDateTime::now_utc();
    Ok(publish_job::ActiveModel {
        id: Set(random_secret("job_").expose().to_string()),
        user_id: Set(user_id),
        slug: Set(slug.to_string()),
        state: Set(STATE_RUNNING.into()),
        phase: Set("received".into()),
        records_read: Set(0),
        bytes_read: Set(i64::try_from(bytes).unwrap_or(i64::MAX)),
        result: Set(None),
        error: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&store.db)
    .await?)
}

/// Writes `progress` to job `id` every [`HEARTBEAT`] until dropped.
pub async fn heartbeat(store: Store, id: String, progress: std::sync::Arc<JobProgress>) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        let phase = progress.phase.lock().expect("job phase lock").clone();
        let records = progress.records.load(Ordering::Relaxed);
        let written = publish_job::ActiveModel {
            id: Set(id.clone()),
            phase: Set(phase),
            records_read: Set(i64::try_from(records).unwrap_or(i64::MAX)),
            updated_at: Set(OffsetDateTime::now_utc()),
            ..Default::default()
        }
        .update(&store.db)
        .await;
        if let Err(error) = written {
            tracing::warn!(%error, job = %id, "a job's progress could not be written");
        }
    }
}

/// Ends job `id` with the write's answer or its error.
pub async fn finish(
    store: &Store,
    id: &str,
    records: u64,
    ended: Result<Value, ApiError>,
) -> Result<(), StoreError> {
    let (state, result, error) = match ended {
        Ok(answer) => (STATE_DONE, Some(answer.to_string()), None),
        Err(error) => (STATE_FAILED, None, Some(error.body().to_string())),
    };
    publish_job::ActiveModel {
        id: Set(id.to_string()),
        state: Set(state.into()),
        phase: Set(state.into()),
        records_read: Set(i64::try_from(records).unwrap_or(i64::MAX)),
        result: Set(result),
        error: Set(error),
        updated_at: Set(OffsetDateTime::now_utc()),
        ..Default::default()
    }
    .update(&store.db)
    .await?;
    Ok(())
}

/// Job `id` of account `user_id`, as its owner sees it; 404 `job_not_found` for another
/// account's job as for none, so ids tell nobody else anything.
pub async fn view(store: &Store, id: &str, user_id: i64) -> Result<JobView, ApiError> {
    let job = publish_job::Entity::find_by_id(id.to_string())
        .one(&store.db)
        .await?
        .filter(|job| job.user_id == user_id)
        .ok_or_else(|| ApiError::JobNotFound { id: id.to_string() })?;
    Ok(JobView::of(job))
}

impl JobView {
    /// A job's row as its owner sees it; a running one not written for [`STALE_AFTER`] is
    /// failed.
    pub fn of(job: publish_job::Model) -> JobView {
        let stale =
            job.state == STATE_RUNNING && OffsetDateTime::now_utc() - job.updated_at > STALE_AFTER;
        let parse =
            |text: &Option<String>| text.as_deref().and_then(|t| serde_json::from_str(t).ok());
        let (state, error) = if stale {
            let stopped = serde_json::json!({
                "error": ApiError::Internal.code(),
                "message": "The instance that ran this job stopped before it ended; nothing was published. Send the upload again.",
            });
            (STATE_FAILED.to_string(), Some(stopped))
        } else {
            (job.state.clone(), parse(&job.error))
        };
        JobView {
            id: job.id,
            slug: job.slug,
            state,
            phase: job.phase,
            records_read: job.records_read,
            bytes_read: job.bytes_read,
            result: parse(&job.result),
            error,
        }
    }
}
