//! An asynchronous write (contract §14.2): its account, dataset, state and progress, and its
//! answer once it ended.

use sea_orm::entity::prelude::*;

/// The job's import runs.
pub const STATE_RUNNING: &str = "running";
/// The version was published (or found unchanged); `result` holds the write's answer.
pub const STATE_DONE: &str = "done";
/// Nothing was published; `error` holds the contract's error body.
pub const STATE_FAILED: &str = "failed";

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "publish_jobs")]
pub struct Model {
    /// Random and unguessable, as the job's URL is shown to its owner only.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub user_id: i64,
    pub slug: String,
    pub state: String,
    /// The import's phase ("loading records").
    pub phase: String,
    pub records_read: i64,
    /// Bytes of the upload received.
    pub bytes_read: i64,
    /// The write's answer (JSON) once done.
    #[sea_orm(column_type = "Text", nullable)]
    pub result: Option<String>,
    /// The error body (JSON) once failed.
    #[sea_orm(column_type = "Text", nullable)]
    pub error: Option<String>,
    pub created_at: TimeDateTimeWithTimeZone,
    /// Written every few seconds while running, so a job whose instance stopped is seen as such.
    pub updated_at: TimeDateTimeWithTimeZone,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
