//! The purge of what the accounts and the device flow leave behind, on the maintenance tick
//! of [`crate::app::serve`]: expired device grants, expired sessions, expired explorer tokens
//! and stale throttle counters. Without it each of these tables only grows (a flood of device
//! starts leaves its rows for good).

use entity::{api_token, device_grant, session};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use time::{Duration, OffsetDateTime};

use super::account::EXPLORER_SOURCE;
use super::throttle;
use crate::store::{Store, StoreError};

/// How long a device grant is kept after it expired: a client that polls a little late still
/// gets `expired_token` (RFC 8628 §3.5) rather than `invalid_grant`.
pub const GRANT_GRACE: Duration = Duration::minutes(10);

/// Rows one purge removed, per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub device_grants: u64,
    pub sessions: u64,
    pub explorer_tokens: u64,
    pub throttle_counters: u64,
}

impl Purged {
    /// Whether nothing was removed.
    pub fn is_empty(&self) -> bool {
        *self == Purged::default()
    }
}

/// Deletes device grants expired more than [`GRANT_GRACE`] ago, expired sessions, expired
/// explorer tokens (the account's other tokens stay listed, expired or not) and throttle
/// counters whose window has ended.
pub async fn expired(store: &Store) -> Result<Purged, StoreError> {
    let now = OffsetDateTime::now_utc();
    let device_grants = device_grant::Entity::delete_many()
        .filter(device_grant::Column::ExpiresAt.lt(now - GRANT_GRACE))
        .exec(&store.db)
        .await?
        .rows_affected;
    let sessions = session::Entity::delete_many()
        .filter(session::Column::ExpiresAt.lte(now))
        .exec(&store.db)
        .await?
        .rows_affected;
    let explorer_tokens = api_token::Entity::delete_many()
        .filter(api_token::Column::Source.eq(EXPLORER_SOURCE))
        .filter(api_token::Column::ExpiresAt.lte(now))
        .exec(&store.db)
        .await?
        .rows_affected;
    let throttle_counters = throttle::purge_stale(store).await?;
    Ok(Purged {
        device_grants,
        sessions,
        explorer_tokens,
        throttle_counters,
    })
}

/// [`expired`], logged: what the maintenance tick calls. A failure is a warning; the next
/// tick tries again.
pub async fn on_tick(store: &Store) {
    match expired(store).await {
        Ok(purged) if purged.is_empty() => {}
        Ok(purged) => tracing::info!(
            device_grants = purged.device_grants,
            sessions = purged.sessions,
            explorer_tokens = purged.explorer_tokens,
            throttle_counters = purged.throttle_counters,
            "purged expired rows"
        ),
        Err(e) => tracing::warn!(error = %e, "purge of expired rows failed"),
    }
}
