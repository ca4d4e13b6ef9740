//! Site sessions in the store: a random secret in an HttpOnly cookie, only its SHA-256 in the
//! `sessions` table, and a per-session CSRF token for the forms of the signed-in site.
//!
//! Why server-side rows rather than a signed cookie: logging out really ends the session (the
//! row is gone for every instance), no signing key has to be shared between instances, and a
//! copy of the database holds no usable cookie.

use entity::{session, user};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use time::{Duration, OffsetDateTime};

use super::token::{Secret, hash, random_secret};
use crate::store::{Store, StoreError};

/// How long a session lasts after sign-in.
pub const LIFETIME: Duration = Duration::days(30);

/// A signed-in session and its account.
#[derive(Clone, Debug)]
pub struct SignedIn {
    pub session: session::Model,
    pub user: user::Model,
}

/// Starts a session for `user_id`; the returned secret goes into the cookie, once.
pub async fn create(store: &Store, user_id: i64) -> Result<(Secret, session::Model), StoreError> {
    let secret = random_secret("");
    let now = OffsetDateTime::now_utc();
    let model = session::ActiveModel {
        token_hash: Set(hash(secret.expose())),
        user_id: Set(user_id),
        csrf_token: Set(random_secret("").expose().to_string()),
        created_at: Set(now),
        expires_at: Set(now + LIFETIME),
        ..Default::default()
    }
    .insert(&store.db)
    .await?;
    Ok((secret, model))
}

/// The live session whose cookie holds `secret`, with its account; `None` when unknown or
/// expired.
pub async fn find(store: &Store, secret: &str) -> Result<Option<SignedIn>, StoreError> {
    let Some(session) = session::Entity::find()
        .filter(session::Column::TokenHash.eq(hash(secret)))
        .one(&store.db)
        .await?
    else {
        return Ok(None);
    };
    if session.expires_at <= OffsetDateTime::now_utc() {
        session::Entity::delete_by_id(session.id)
            .exec(&store.db)
            .await?;
        return Ok(None);
    }
    let Some(user) = user::Entity::find_by_id(session.user_id)
        .one(&store.db)
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(SignedIn { session, user }))
}

/// Ends a session (logout).
pub async fn delete(store: &Store, session_id: i64) -> Result<(), StoreError> {
    session::Entity::delete_by_id(session_id)
        .exec(&store.db)
        .await?;
    Ok(())
}
