//! API tokens, from minting to the [`Principal`] a request acts for (spec §5, contract §7–§8).
//!
//! - **Minting and hashing**: `odqs_` followed by 43 random base62 characters (256 bits),
//!   stored only as a SHA-256 hash with the last four characters for display. A [`Secret`]
//!   never prints itself.
//! - **Who a token acts for**: the token is looked up by its hash, and unknown, revoked and
//!   expired tokens are refused alike. "Last used" is written at most once a minute per token
//!   and off the request's path ([`TokenUsage`]), so reading the API never waits on a write.
//! - **Tokens known to be live** ([`TokenCache`]), so that a known token costs no store query:
//!   an entry is trusted for [`FRESH_FOR`], then checked against the store again on its next
//!   use. A token revoked on another instance therefore stops working everywhere within
//!   [`FRESH_FOR`]; one revoked through this instance (the account page, log-out) is forgotten
//!   at once. Only tokens the store confirmed are kept, so a flood of made-up tokens adds
//!   nothing there; the map is bounded by [`CAPACITY`] all the same.
//!
//! The API gate ([`super::http::gate`]) asks once per request, with its budgets
//! ([`super::rate_limit`]); handlers take the [`Principal`] it found.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use entity::{api_token, user};
use query::{ApiError, Need, Scope};
use rand::RngExt;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::store::{Store, StoreError};

/// Prefix of every access token.
pub const TOKEN_PREFIX: &str = "odqs_";
const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// 43 base62 characters carry 256 bits.
const RANDOM_CHARS: usize = 43;

/// A plain token, shown once. `Debug` hides it so it cannot reach a log by accident.
pub struct Secret(String);

impl Secret {
    /// The token itself, to show the person it was minted for.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret(…{})", last4(&self.0))
    }
}

/// A new random string with `prefix` (also used for device codes).
pub fn random_secret(prefix: &str) -> Secret {
    let mut rng = rand::rng();
    let mut out = String::with_capacity(prefix.len() + RANDOM_CHARS);
    out.push_str(prefix);
    for _ in 0..RANDOM_CHARS {
        out.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    Secret(out)
}

/// Lower-case hex SHA-256: what the store keeps instead of a token or device code.
pub fn hash(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    query::hex(&digest)
}

fn last4(secret: &str) -> &str {
    &secret[secret.len().saturating_sub(4)..]
}

/// Normalizes an e-mail address for look-up: trimmed, lower-cased; `None` when it cannot be one.
pub fn normalize_email(email: &str) -> Option<String> {
    let email = email.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let ok = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && email.len() <= 254
        && !email.contains(char::is_whitespace);
    ok.then_some(email)
}

/// Finds the account for `email` or creates it without a password.
pub async fn find_or_create_user(store: &Store, email: &str) -> Result<user::Model, StoreError> {
    if let Some(found) = user::Entity::find()
        .filter(user::Column::Email.eq(email))
        .one(&store.db)
        .await?
    {
        return Ok(found);
    }
    Ok(user::ActiveModel {
        email: Set(email.to_string()),
        password_hash: Set(None),
        created_at: Set(OffsetDateTime::now_utc()),
        ..Default::default()
    }
    .insert(&store.db)
    .await?)
}

/// Mints a token for `user_id` with `scope`; `expires_at` `None` means it never expires.
pub async fn mint(
    store: &Store,
    user_id: i64,
    name: &str,
    source: &str,
    scope: &Scope,
    expires_at: Option<OffsetDateTime>,
) -> Result<(Secret, api_token::Model), StoreError> {
    mint_on(&store.db, user_id, name, source, scope, expires_at).await
}

/// [`mint`] on a given connection, so the device flow can mint inside the transaction that
/// spends the device code (contract §8: the code is spent at that moment).
pub async fn mint_on(
    conn: &impl ConnectionTrait,
    user_id: i64,
    name: &str,
    source: &str,
    scope: &Scope,
    expires_at: Option<OffsetDateTime>,
) -> Result<(Secret, api_token::Model), StoreError> {
    let secret = random_secret(TOKEN_PREFIX);
    let model = api_token::ActiveModel {
        user_id: Set(user_id),
        name: Set(name.to_string()),
        token_hash: Set(hash(secret.expose())),
        last4: Set(last4(secret.expose()).to_string()),
        source: Set(source.to_string()),
        created_at: Set(OffsetDateTime::now_utc()),
        last_used_at: Set(None),
        expires_at: Set(expires_at),
        revoked_at: Set(None),
        scope: Set(scope.to_string()),
        ..Default::default()
    }
    .insert(conn)
    .await?;
    tracing::info!(user_id, token_id = model.id, source, "token minted");
    Ok((secret, model))
}

// Who a token acts for.

/// How stale "last used" may be.
const LAST_USED_PRECISION: Duration = Duration::from_secs(60);

/// The account a request acts for, through which token, within what scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub user_id: i64,
    pub token_id: i64,
    /// What the token may do (contract §13.3).
    pub scope: Scope,
}

impl Principal {
    /// 403 `insufficient_scope` unless the token's scope grants `need` on `slug`.
    pub fn require(&self, need: Need, slug: &str) -> Result<(), ApiError> {
        self.scope.require(need, Some(slug))
    }

    /// The token as the query layer's calls take it: its scope, weighed at `gate`.
    pub fn caller<'a>(&'a self, gate: &'a dyn query::cost::CostGate) -> query::Caller<'a> {
        query::Caller {
            scope: &self.scope,
            gate,
            memo: None,
        }
    }
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
    authenticate_hash(store, &hash(plain))
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
        scope: Scope::from_stored(&found.scope),
    };
    Ok((principal, found.expires_at))
}

// Tokens known to be live.

/// How long a confirmed token is believed without asking the store again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// Entries kept before stale ones are dropped to make room.
const CAPACITY: usize = 100_000;
/// Store checks of never-seen tokens that may run at once. A flood of made-up tokens (within
/// the per-address budgets of many addresses) then waits here instead of taking every pooled
/// store connection from the requests of known tokens, which never ask.
pub const FIRST_CHECKS_AT_ONCE: usize = 2;

/// Live tokens by hash.
#[derive(Debug)]
pub struct TokenCache {
    entries: Mutex<HashMap<String, Entry>>,
    first_checks: tokio::sync::Semaphore,
}

impl Default for TokenCache {
    fn default() -> Self {
        TokenCache {
            entries: Mutex::default(),
            first_checks: tokio::sync::Semaphore::new(FIRST_CHECKS_AT_ONCE),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    principal: Principal,
    expires_at: Option<OffsetDateTime>,
    checked: Instant,
}

/// What the cache knows of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// Confirmed within [`FRESH_FOR`]: use it.
    Fresh(Principal),
    /// Confirmed before: it exists, but ask the store again.
    Stale(Principal),
    /// Never confirmed here.
    Unknown,
}

impl TokenCache {
    /// A turn to check a never-seen token against the store (see [`FIRST_CHECKS_AT_ONCE`]).
    pub async fn first_check_turn(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.first_checks
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// What is known of the token with this hash.
    pub fn get(&self, token_hash: &str) -> Known {
        let entries = self.entries.lock().expect("token cache lock");
        let Some(entry) = entries.get(token_hash) else {
            return Known::Unknown;
        };
        let expired = entry
            .expires_at
            .is_some_and(|at| at <= OffsetDateTime::now_utc());
        if !expired && entry.checked.elapsed() < FRESH_FOR {
            Known::Fresh(entry.principal.clone())
        } else {
            Known::Stale(entry.principal.clone())
        }
    }

    /// Notes that the store just confirmed this token.
    pub fn confirm(
        &self,
        token_hash: &str,
        principal: Principal,
        expires_at: Option<OffsetDateTime>,
    ) {
        let mut entries = self.entries.lock().expect("token cache lock");
        if entries.len() >= CAPACITY && !entries.contains_key(token_hash) {
            entries.retain(|_, e| e.checked.elapsed() < FRESH_FOR);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(
            token_hash.to_string(),
            Entry {
                principal,
                expires_at,
                checked: Instant::now(),
            },
        );
    }

    /// Forgets a token the store no longer accepts.
    pub fn forget(&self, token_hash: &str) {
        self.entries
            .lock()
            .expect("token cache lock")
            .remove(token_hash);
    }

    /// Forgets a token by id (revoked on the account page).
    pub fn forget_token(&self, token_id: i64) {
        self.entries
            .lock()
            .expect("token cache lock")
            .retain(|_, e| e.principal.token_id != token_id);
    }

    /// Forgets every token of an account (its explorer tokens ended at log-out).
    pub fn forget_user(&self, user_id: i64) {
        self.entries
            .lock()
            .expect("token cache lock")
            .retain(|_, e| e.principal.user_id != user_id);
    }

    /// Drops entries not confirmed lately (the maintenance tick).
    pub fn forget_stale(&self) {
        self.entries
            .lock()
            .expect("token cache lock")
            .retain(|_, e| e.checked.elapsed() < FRESH_FOR * 60);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_prefix_and_256_bits() {
        let a = random_secret(TOKEN_PREFIX);
        let b = random_secret(TOKEN_PREFIX);
        assert!(a.expose().starts_with("odqs_"));
        assert_eq!(a.expose().len(), 5 + 43);
        assert_ne!(a.expose(), b.expose());
        assert!(!format!("{a:?}").contains(&a.expose()[5..20]));
    }

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn emails() {
        assert_eq!(
            normalize_email(" Ada@Example.org ").as_deref(),
            Some("ada@example.org")
        );
        assert!(normalize_email("ada").is_none());
        assert!(normalize_email("ada@localhost").is_none());
    }

    #[test]
    fn confirmed_tokens_are_fresh_then_stale_and_can_be_forgotten() {
        let cache = TokenCache::default();
        let p = Principal {
            user_id: 1,
            token_id: 7,
            scope: Scope::default(),
        };
        assert_eq!(cache.get("h"), Known::Unknown);
        cache.confirm("h", p.clone(), None);
        assert_eq!(cache.get("h"), Known::Fresh(p.clone()));
        let past = OffsetDateTime::now_utc() - time::Duration::seconds(1);
        cache.confirm("e", p.clone(), Some(past));
        assert_eq!(
            cache.get("e"),
            Known::Stale(p.clone()),
            "an expired token is asked again"
        );
        cache.forget_token(7);
        assert_eq!(cache.get("h"), Known::Unknown);
        cache.confirm("h", p, None);
        cache.forget_user(1);
        assert_eq!(cache.get("h"), Known::Unknown);
    }
}
