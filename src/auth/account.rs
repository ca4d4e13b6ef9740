//! Accounts on the site: sign-up and sign-in against the `users` table, and the account's
//! own tokens (list, revoke). Minting reuses [`super::token::mint`].

use entity::{api_token, user};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, Set, SqlErr,
};
use time::OffsetDateTime;

use super::password::{Busy, Hashing};
use crate::store::{Store, StoreError};

/// Why a sign-up was refused.
#[derive(Debug)]
pub enum SignupError {
    /// The address already has an account with a password.
    Taken,
    /// Too many passwords are being hashed: try again shortly.
    Busy,
    Store(StoreError),
}

impl From<Busy> for SignupError {
    fn from(_: Busy) -> Self {
        SignupError::Busy
    }
}

/// Why a sign-in could not be decided.
#[derive(Debug)]
pub enum SigninError {
    /// Too many passwords are being hashed: try again shortly.
    Busy,
    Store(StoreError),
}

impl From<StoreError> for SigninError {
    fn from(e: StoreError) -> Self {
        SigninError::Store(e)
    }
}

impl From<StoreError> for SignupError {
    fn from(e: StoreError) -> Self {
        SignupError::Store(e)
    }
}

/// Creates an account with a password for `email` (already normalized). An account made by
/// `odqs token create` has no password yet; signing up with its address sets one (README,
/// "Decisions").
///
/// The address is looked up before the password is hashed: a taken address costs one read,
/// not 19 MiB and tens of milliseconds of a hashing worker. (The answer says the address is
/// taken anyway, so the order reveals nothing the page does not.)
pub async fn sign_up(
    store: &Store,
    hashing: &Hashing,
    email: &str,
    password_text: String,
) -> Result<user::Model, SignupError> {
    let existing = user::Entity::find()
        .filter(user::Column::Email.eq(email))
        .one(&store.db)
        .await
        .map_err(StoreError::from)?;
    if existing.as_ref().is_some_and(|u| u.password_hash.is_some()) {
        return Err(SignupError::Taken);
    }
    let phc = hashing.hash(password_text).await?;
    match existing {
        Some(found) => {
            // Set the password only if nobody set one meanwhile.
            let updated = user::Entity::update_many()
                .col_expr(
                    user::Column::PasswordHash,
                    sea_orm::sea_query::Expr::value(phc.clone()),
                )
                .filter(user::Column::Id.eq(found.id))
                .filter(user::Column::PasswordHash.is_null())
                .exec(&store.db)
                .await
                .map_err(StoreError::from)?;
            if updated.rows_affected == 0 {
                return Err(SignupError::Taken);
            }
            Ok(user::Model {
                password_hash: Some(phc),
                ..found
            })
        }
        None => {
            let inserted = user::ActiveModel {
                email: Set(email.to_string()),
                password_hash: Set(Some(phc)),
                created_at: Set(OffsetDateTime::now_utc()),
                ..Default::default()
            }
            .insert(&store.db)
            .await;
            match inserted {
                Ok(model) => {
                    tracing::info!(user_id = model.id, "account created");
                    Ok(model)
                }
                Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
                    Err(SignupError::Taken)
                }
                Err(e) => Err(StoreError::from(e).into()),
            }
        }
    }
}

/// The account for `email` if `password_text` is its password. A missing account costs the
/// same time as a wrong password (and the same place among the hashing workers).
pub async fn sign_in(
    store: &Store,
    hashing: &Hashing,
    email: &str,
    password_text: String,
) -> Result<Option<user::Model>, SigninError> {
    let found = user::Entity::find()
        .filter(user::Column::Email.eq(email))
        .one(&store.db)
        .await
        .map_err(StoreError::from)?;
    let phc = found.as_ref().and_then(|u| u.password_hash.clone());
    let ok = hashing
        .verify(password_text, phc)
        .await
        .map_err(|Busy| SigninError::Busy)?;
    Ok(found.filter(|_| ok))
}

/// The `source` of the tokens `/explore` mints for its own use.
pub const EXPLORER_SOURCE: &str = "explore";
/// How long an explorer token lives: a working session in the page.
pub const EXPLORER_LIFETIME: time::Duration = time::Duration::hours(1);

/// The account's tokens, newest first, revoked ones and the explorer's own short-lived tokens
/// left out (the person never handles those; they expire within the hour).
pub async fn tokens(store: &Store, user_id: i64) -> Result<Vec<api_token::Model>, StoreError> {
    Ok(api_token::Entity::find()
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::RevokedAt.is_null())
        .filter(api_token::Column::Source.ne(EXPLORER_SOURCE))
        .order_by_desc(api_token::Column::CreatedAt)
        .order_by_desc(api_token::Column::Id)
        .all(&store.db)
        .await?)
}

/// Revokes token `token_id` if it belongs to `user_id`; whether one was revoked.
pub async fn revoke(store: &Store, user_id: i64, token_id: i64) -> Result<bool, StoreError> {
    let which = Condition::all()
        .add(api_token::Column::Id.eq(token_id))
        .add(api_token::Column::UserId.eq(user_id));
    let revoked = revoke_live(store, which).await?;
    if revoked {
        tracing::info!(user_id, token_id, "token revoked");
    }
    Ok(revoked)
}

/// Revokes the live token with this hash, whoever holds it (RFC 7009: a client logs itself
/// out); `Ok(false)` when no live token has it.
pub async fn revoke_hash(store: &Store, token_hash: &str) -> Result<bool, StoreError> {
    let which = Condition::all().add(api_token::Column::TokenHash.eq(token_hash));
    let revoked = revoke_live(store, which).await?;
    if revoked {
        tracing::info!("token revoked by its holder");
    }
    Ok(revoked)
}

/// Marks the live token that `which` picks revoked now; whether there was one.
async fn revoke_live(store: &Store, which: Condition) -> Result<bool, StoreError> {
    let result = api_token::Entity::update_many()
        .col_expr(
            api_token::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(OffsetDateTime::now_utc()),
        )
        .filter(which)
        .filter(api_token::Column::RevokedAt.is_null())
        .exec(&store.db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// A fresh short-lived token for the `/explore` page of `user_id`. Plain tokens are never
/// stored, so one cannot be handed out twice: each page load mints one, and the account's
/// expired explorer tokens are deleted first, so they never pile up.
pub async fn explorer_token(
    store: &Store,
    user_id: i64,
) -> Result<(super::token::Secret, api_token::Model), StoreError> {
    let now = OffsetDateTime::now_utc();
    api_token::Entity::delete_many()
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::Source.eq(EXPLORER_SOURCE))
        .filter(api_token::Column::ExpiresAt.lte(now))
        .exec(&store.db)
        .await?;
    super::token::mint(
        store,
        user_id,
        "explorer (site)",
        EXPLORER_SOURCE,
        &query::Scope::default(),
        Some(now + EXPLORER_LIFETIME),
    )
    .await
}

/// A token for the site's Publish page to upload `slug` with: `publish dataset:<slug>`, as
/// short-lived as an explorer token and ended with them at log-out.
pub async fn upload_token(
    store: &Store,
    user_id: i64,
    slug: &str,
) -> Result<(super::token::Secret, api_token::Model), StoreError> {
    let scope = query::Scope::parse(&format!("publish dataset:{slug}"))
        .map_err(|e| StoreError::Io(std::io::Error::other(e.message())))?;
    super::token::mint(
        store,
        user_id,
        "publish page (site)",
        EXPLORER_SOURCE,
        &scope,
        Some(OffsetDateTime::now_utc() + EXPLORER_LIFETIME),
    )
    .await
}

/// Ends the account's explorer tokens (at log-out: the pages that held them are done).
pub async fn end_explorer_tokens(store: &Store, user_id: i64) -> Result<(), StoreError> {
    api_token::Entity::delete_many()
        .filter(api_token::Column::UserId.eq(user_id))
        .filter(api_token::Column::Source.eq(EXPLORER_SOURCE))
        .exec(&store.db)
        .await?;
    Ok(())
}
