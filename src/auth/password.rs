//! Passwords: Argon2id (RFC 9106) with the `argon2` crate's defaults (19 MiB of memory, two
//! passes, one lane: OWASP's recommended minimum), kept as a PHC string
//! (`$argon2id$v=19$m=19456,t=2,p=1$…`) so the parameters travel with each hash and can be
//! raised later without breaking old ones. Hashing is slow by design, so it runs on the
//! blocking pool, never on the request threads.

use std::sync::LazyLock;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

/// Shortest password accepted at sign-up (NIST SP 800-63B §3.1.1.2 asks for at least 8).
pub const MIN_LEN: usize = 8;
/// Longest password accepted, so a request cannot make the hash do unbounded work.
pub const MAX_LEN: usize = 1024;

/// A hash of a password nobody has, verified when the account does not exist or has no
/// password, so a wrong address takes as long as a wrong password (no account enumeration by
/// timing).
static DUMMY: LazyLock<String> = LazyLock::new(|| hash_now("not a password anyone has"));

fn hash_now(password: &str) -> String {
    Argon2::default()
        .hash_password(password.as_bytes())
        .expect("Argon2id with default parameters and a random salt cannot fail")
        .to_string()
}

/// The PHC string of `password`, with a fresh random salt.
pub async fn hash(password: String) -> String {
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .expect("password hashing does not panic")
}

/// Whether `password` matches `phc`. `None` (an account without a password, or no account)
/// never matches, but costs the same time as a real check.
pub async fn verify(password: String, phc: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        let (phc, real) = match phc {
            Some(p) => (p, true),
            None => (DUMMY.clone(), false),
        };
        let Ok(parsed) = PasswordHash::new(&phc) else {
            return false;
        };
        let matches = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        real && matches
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn hashes_are_argon2id_and_verify() {
        let phc = super::hash("correct horse".into()).await;
        assert!(phc.starts_with("$argon2id$v=19$"), "{phc}");
        assert!(super::verify("correct horse".into(), Some(phc.clone())).await);
        assert!(!super::verify("wrong horse".into(), Some(phc)).await);
        assert!(!super::verify("anything".into(), None).await);
    }
}
