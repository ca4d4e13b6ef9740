//! Who an API token acts for (spec §5, contract §7): the token is looked up by its SHA-256, and
//! unknown, revoked and expired tokens are refused alike. "Last used" is written at most once a
//! minute per token and off the request's path, so reading the API never waits on a write. The
//! API gate ([`super::http::gate`]) asks this once per request, with its budgets
//! ([`super::rate_limit`]) and cache ([`super::token_cache`]); handlers take the
//! [`Principal`] it found.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use entity::api_token;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use time::OffsetDateTime;

use query::ApiError;

use super::token;
use crate::store::Store;

/// How stale "last used" may be.
const LAST_USED_PRECISION: Duration = Duration::from_secs(60);

/// The account a request acts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Principal {
    pub user_id: i64,
    pub token_id: i64,
}

/// When each token's "last used" was last written by this process.
#[derive(Debug, Default)]
pub struct TokenUsage {
    written: Mutex<HashMap<i64, Instant>>,
}

impl TokenUsage {
    /// Records a use of `token_id`, writing to the store only when the stored time is more than
    /// a minute old (as far as this process knows).
    pub fn touch(&self, store: &Store, token_id: i64) {
        let now = Instant::now();
        {
            let mut written = self.written.lock().expect("token usage lock");
            if written
                .get(&token_id)
                .is_some_and(|at| now.duration_since(*at) < LAST_USED_PRECISION)
            {
                return;
            }
            if written.len() > 100_000 {
                written.clear();
            }
            written.insert(token_id, now);
        }
        let db = store.db.clone();
        tokio::spawn(async move {
            let update = api_token::ActiveModel {
                id: Set(token_id),
                last_used_at: Set(Some(OffsetDateTime::now_utc())),
                ..Default::default()
            };
            if let Err(e) = update.update(&db).await {
                tracing::warn!(error = %e, token_id, "could not record a token's last use");
            }
        });
    }
}

/// Checks a plain token: the account and token it names, if it is live.
pub async fn authenticate(store: &Store, plain: &str) -> Result<Principal, ApiError> {
    authenticate_hash(store, &token::hash(plain))
        .await
        .map(|(principal, _)| principal)
}

/// [`authenticate`] for a token already hashed, with the token's expiry.
pub(super) async fn authenticate_hash(
    store: &Store,
    token_hash: &str,
) -> Result<(Principal, Option<OffsetDateTime>), ApiError> {
    let found = api_token::Entity::find()
        .filter(api_token::Column::TokenHash.eq(token_hash))
        .one(&store.db)
        .await?
        .ok_or(ApiError::InvalidToken)?;
    let now = OffsetDateTime::now_utc();
    if found.revoked_at.is_some() || found.expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::InvalidToken);
    }
    let principal = Principal {
        user_id: found.user_id,
        token_id: found.id,
    };
    Ok((principal, found.expires_at))
}
