//! API tokens: `odqs_` followed by 43 random base62 characters (256 bits), stored only as a
//! SHA-256 hash with the last four characters for display (contract §8). A [`Secret`] never
//! prints itself.

use entity::{api_token, user};
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

/// Mints a token for `user_id`; `expires_at` `None` means it never expires.
pub async fn mint(
    store: &Store,
    user_id: i64,
    name: &str,
    source: &str,
    expires_at: Option<OffsetDateTime>,
) -> Result<(Secret, api_token::Model), StoreError> {
    mint_on(&store.db, user_id, name, source, expires_at).await
}

/// [`mint`] on a given connection, so the device flow can mint inside the transaction that
/// spends the device code (contract §8: the code is spent at that moment).
pub async fn mint_on(
    conn: &impl ConnectionTrait,
    user_id: i64,
    name: &str,
    source: &str,
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
        ..Default::default()
    }
    .insert(conn)
    .await?;
    tracing::info!(user_id, token_id = model.id, source, "token minted");
    Ok((secret, model))
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
}
