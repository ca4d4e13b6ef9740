//! The device authorization grant's states in the store (spec §3, contract §8, RFC 8628).
//!
//! `pending` → `authorized` (the person pressed 同意授權) → `used` (a poll received the token),
//! or `pending` → `denied` (拒絕). A grant past `expires_at` is expired whatever its state,
//! except `used`, which stays spent. Every change of a grant happens in a transaction that
//! first locks the grant's row (an `UPDATE` that changes nothing takes the row lock on
//! PostgreSQL; an immediate transaction takes the write lock on SQLite), so polls of one code
//! are serialized: two concurrent polls never both receive a token, and `slow_down` is
//! measured from the poll that really came before.

use entity::device_grant;
use rand::RngExt;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseTransaction, EntityTrait, IntoActiveModel, QueryFilter,
    Set, SqlErr, SqliteTransactionMode, TransactionOptions, TransactionTrait,
};
use time::{Duration, OffsetDateTime};

use super::token::{self, Secret, hash, random_secret};
use crate::store::{Store, StoreError};

/// The grant type RFC 8628 §3.4 registers; the spec's short `device_code` is accepted too.
pub const GRANT_TYPE_URN: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// Longest `device_name` / `client` label accepted.
pub const MAX_LABEL: usize = 200;

/// Where a device authorization starts (RFC 8628 §3.1).
pub const DEVICE_PATH: &str = "/api/v1/auth/device";
/// Where a device code is exchanged for a token (RFC 8628 §3.4).
pub const TOKEN_PATH: &str = "/api/v1/auth/token";

/// Where the authorization server's metadata is served (RFC 8414 §3: the well-known suffix
/// after the issuer), announcing the two paths above.
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

/// Prefix of every device code; 43 random base62 characters follow (256 bits, contract §8).
pub const DEVICE_CODE_PREFIX: &str = "odqs_dc_";
/// Lifetime of a pending request, in seconds (contract §8 `expires_in`).
pub const EXPIRES_IN: i64 = 900;
/// Initial polling interval, in seconds (contract §8 `interval`).
pub const INTERVAL: i32 = 5;
/// How much `slow_down` adds to a code's interval, for good (RFC 8628 §3.5).
pub const SLOW_DOWN_STEP: i32 = 5;
/// Lifetime of a token issued through the device flow (spec §5: 24 hours).
pub const TOKEN_EXPIRES_IN: i64 = 86_400;
/// The user-code alphabet: consonants without vowels or look-alikes, so no word can be spelled
/// and nothing is misread (RFC 8628 §6.1).
pub const USER_CODE_ALPHABET: &str = "BCDFGHJKLMNPQRSTVWXZ";

const STATE_PENDING: &str = "pending";
const STATE_AUTHORIZED: &str = "authorized";
const STATE_DENIED: &str = "denied";
const STATE_USED: &str = "used";

/// A new device authorization, with the plain device code the client must keep.
#[derive(Debug)]
pub struct Started {
    pub device_code: Secret,
    pub user_code: String,
    pub expires_in: i64,
    pub interval: i32,
}

/// What a poll of the token endpoint gets (RFC 8628 §3.5).
#[derive(Debug)]
pub enum PollOutcome {
    /// `authorization_pending`.
    Pending,
    /// `slow_down`: this poll came sooner than the interval after the previous one.
    SlowDown,
    /// `access_denied`: the person refused.
    Denied,
    /// `expired_token`.
    Expired,
    /// `invalid_grant`: unknown code, or already spent.
    Invalid,
    /// The access token; the code is spent.
    Issued {
        token: Secret,
        expires_in: i64,
        /// What the token may do: the scope the client asked for, as stored.
        scope: String,
    },
}

/// What the approval page learns about a user code.
#[derive(Debug)]
pub enum Lookup {
    /// Waiting for the person's decision.
    Pending(Box<device_grant::Model>),
    /// Past its lifetime.
    Expired,
    /// Already approved or refused (or spent).
    Decided,
    /// No grant has this code.
    Unknown,
}

/// The person's answer on the approval page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

/// Normalizes what a person typed (`bcdf ghjk`, `BCDFGHJK`, `bcdf-ghjk`) to `BCDF-GHJK`;
/// `None` when it cannot be a user code.
pub fn normalize_user_code(input: &str) -> Option<String> {
    let letters: String = input
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let valid = letters.len() == 8 && letters.chars().all(|c| USER_CODE_ALPHABET.contains(c));
    valid.then(|| format!("{}-{}", &letters[..4], &letters[4..]))
}

fn random_user_code() -> String {
    let alphabet = USER_CODE_ALPHABET.as_bytes();
    let mut rng = rand::rng();
    let mut code = String::with_capacity(9);
    for i in 0..8 {
        if i == 4 {
            code.push('-');
        }
        code.push(alphabet[rng.random_range(0..alphabet.len())] as char);
    }
    code
}

/// Starts a device authorization (RFC 8628 §3.1–3.2). Only the device code's hash is stored.
pub async fn start(
    store: &Store,
    device_name: Option<String>,
    client: Option<String>,
    scope: &query::Scope,
) -> Result<Started, StoreError> {
    let now = OffsetDateTime::now_utc();
    let mut attempts = 0;
    loop {
        let device_code = random_secret(DEVICE_CODE_PREFIX);
        let user_code = random_user_code();
        let inserted = device_grant::ActiveModel {
            device_code_hash: Set(hash(device_code.expose())),
            user_code: Set(user_code.clone()),
            device_name: Set(device_name.clone()),
            client: Set(client.clone()),
            state: Set(STATE_PENDING.to_string()),
            created_at: Set(now),
            expires_at: Set(now + Duration::seconds(EXPIRES_IN)),
            interval: Set(INTERVAL),
            last_poll_at: Set(None),
            user_id: Set(None),
            scope: Set(scope.to_string()),
            ..Default::default()
        }
        .insert(&store.db)
        .await;
        match inserted {
            Ok(_) => {
                return Ok(Started {
                    device_code,
                    user_code,
                    expires_in: EXPIRES_IN,
                    interval: INTERVAL,
                });
            }
            // A user code that is taken (old grants keep theirs): draw another.
            Err(e)
                if attempts < 5
                    && matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) =>
            {
                attempts += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Begins a write transaction and locks the grant chosen by `filter`; returns it, or `None`
/// when there is none.
async fn lock_grant(
    store: &Store,
    filter: impl Fn() -> sea_orm::Condition,
) -> Result<(DatabaseTransaction, Option<device_grant::Model>), StoreError> {
    let txn = store
        .db
        .begin_with_options(TransactionOptions {
            isolation_level: None,
            access_mode: None,
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        })
        .await?;
    let locked = device_grant::Entity::update_many()
        .col_expr(
            device_grant::Column::Interval,
            Expr::col(device_grant::Column::Interval),
        )
        .filter(filter())
        .exec(&txn)
        .await?;
    if locked.rows_affected == 0 {
        return Ok((txn, None));
    }
    let grant = device_grant::Entity::find()
        .filter(filter())
        .one(&txn)
        .await?;
    Ok((txn, grant))
}

/// One poll of the token endpoint with `device_code` (RFC 8628 §3.4–3.5).
pub async fn poll(store: &Store, device_code: &str) -> Result<PollOutcome, StoreError> {
    let code_hash = hash(device_code);
    let (txn, grant) = lock_grant(store, || {
        sea_orm::Condition::all().add(device_grant::Column::DeviceCodeHash.eq(code_hash.clone()))
    })
    .await?;
    let Some(grant) = grant else {
        return Ok(PollOutcome::Invalid);
    };
    let now = OffsetDateTime::now_utc();
    if grant.state == STATE_USED {
        return Ok(PollOutcome::Invalid);
    }
    if now >= grant.expires_at {
        return Ok(PollOutcome::Expired);
    }
    let previous_poll = grant.last_poll_at;
    let interval = grant.interval;
    let state = grant.state.clone();
    let user_id = grant.user_id;
    let scope = query::Scope::from_stored(&grant.scope);
    let token_name = grant
        .device_name
        .clone()
        .or_else(|| grant.client.clone())
        .unwrap_or_else(|| "device authorization".to_string());
    let mut active = grant.into_active_model();
    active.last_poll_at = Set(Some(now));
    let outcome = match state.as_str() {
        STATE_DENIED => PollOutcome::Denied,
        STATE_AUTHORIZED => {
            let Some(user_id) = user_id else {
                return Ok(PollOutcome::Invalid);
            };
            active.state = Set(STATE_USED.to_string());
            active.update(&txn).await?;
            let expires_at = now + Duration::seconds(TOKEN_EXPIRES_IN);
            let (token, _) = token::mint_on(
                &txn,
                user_id,
                &token_name,
                "device",
                &scope,
                Some(expires_at),
            )
            .await?;
            txn.commit().await?;
            return Ok(PollOutcome::Issued {
                token,
                expires_in: TOKEN_EXPIRES_IN,
                scope: scope.to_string(),
            });
        }
        _ => {
            // RFC 8628 §3.5: slow_down is measured from this code's previous poll; the first
            // poll is never too soon. The interval then grows by 5 seconds for good.
            let too_soon = previous_poll
                .is_some_and(|last| now - last < Duration::seconds(i64::from(interval)));
            if too_soon {
                active.interval = Set(interval + SLOW_DOWN_STEP);
                PollOutcome::SlowDown
            } else {
                PollOutcome::Pending
            }
        }
    };
    active.update(&txn).await?;
    txn.commit().await?;
    Ok(outcome)
}

/// The grant a person typed the code of, for the approval page.
pub async fn look_up(store: &Store, user_code: &str) -> Result<Lookup, StoreError> {
    let Some(grant) = device_grant::Entity::find()
        .filter(device_grant::Column::UserCode.eq(user_code))
        .one(&store.db)
        .await?
    else {
        return Ok(Lookup::Unknown);
    };
    Ok(classify(grant, OffsetDateTime::now_utc()))
}

fn classify(grant: device_grant::Model, now: OffsetDateTime) -> Lookup {
    if grant.state != STATE_PENDING {
        Lookup::Decided
    } else if now >= grant.expires_at {
        Lookup::Expired
    } else {
        Lookup::Pending(Box::new(grant))
    }
}

/// Records the person's decision on a pending grant; returns what the grant was before, so
/// a grant that expired or was decided meanwhile gets its own page.
pub async fn decide(
    store: &Store,
    user_code: &str,
    user_id: i64,
    decision: Decision,
) -> Result<Lookup, StoreError> {
    let (txn, grant) = lock_grant(store, || {
        sea_orm::Condition::all().add(device_grant::Column::UserCode.eq(user_code))
    })
    .await?;
    let Some(grant) = grant else {
        return Ok(Lookup::Unknown);
    };
    let found = classify(grant, OffsetDateTime::now_utc());
    let Lookup::Pending(grant) = &found else {
        return Ok(found);
    };
    let mut active = grant.clone().into_active_model();
    active.state = Set(match decision {
        Decision::Approve => STATE_AUTHORIZED,
        Decision::Deny => STATE_DENIED,
    }
    .to_string());
    active.user_id = Set(Some(user_id));
    active.update(&txn).await?;
    txn.commit().await?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_normalize() {
        assert_eq!(
            normalize_user_code("bcdf-ghjk").as_deref(),
            Some("BCDF-GHJK")
        );
        assert_eq!(
            normalize_user_code(" BCDF GHJK ").as_deref(),
            Some("BCDF-GHJK")
        );
        assert_eq!(
            normalize_user_code("bcdfghjk").as_deref(),
            Some("BCDF-GHJK")
        );
        assert_eq!(
            normalize_user_code("ABCD-EFGH"),
            None,
            "vowels are not in the alphabet"
        );
        assert_eq!(normalize_user_code("BCDF-GHJ"), None);
    }

    #[test]
    fn random_user_codes_have_the_shape() {
        for _ in 0..100 {
            let code = random_user_code();
            assert_eq!(normalize_user_code(&code).as_deref(), Some(code.as_str()));
        }
    }
}
