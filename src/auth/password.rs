//! Passwords: Argon2id (RFC 9106) with the `argon2` crate's defaults (19 MiB of memory, two
//! passes, one lane: OWASP's recommended minimum), kept as a PHC string
//! (`$argon2id$v=19$m=19456,t=2,p=1$…`) so the parameters travel with each hash and can be
//! raised later without breaking old ones.
//!
//! Hashing is slow and memory-hungry by design, so it runs on the blocking pool, never on the
//! request threads, and only through [`Hashing`]: a fixed number of hashes at a time (sized to
//! the machine), a short bounded line of requests waiting for one, and a refusal beyond it.
//! Unbounded, a flood of sign-ups would take gigabytes and hundreds of threads; through
//! [`Hashing`] it costs at most [`Hashing::workers`] × 19 MiB and that many blocking threads,
//! whatever arrives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Shortest password accepted at sign-up (NIST SP 800-63B §3.1.1.2 asks for at least 8).
pub const MIN_LEN: usize = 8;
/// Longest password accepted, so a request cannot make the hash do unbounded work.
pub const MAX_LEN: usize = 1024;

/// Most hashes at once, whatever the machine: 16 × 19 MiB ≈ 300 MiB.
pub const MAX_WORKERS: usize = 16;
/// Requests that may wait for a hash, per worker; beyond them a request is refused at once
/// rather than queued. A waiting request holds no hashing memory (a task and its form), and
/// at some 20–50 ms a hash the last in line waits one to two seconds: a burst of people
/// signing in at the same moment waits; a flood is refused.
pub const WAITING_PER_WORKER: usize = 32;
/// Longest a request waits for a worker before it is refused (the machine is slower than
/// its cores suggest, e.g. other work has them).
pub const MAX_WAIT: Duration = Duration::from_secs(5);
/// `Retry-After` of a refusal: the line is usually gone by then.
pub const BUSY_RETRY_AFTER_SECS: u64 = 2;

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

fn verify_now(password: &str, phc: Option<&str>) -> bool {
    let (phc, real) = match phc {
        Some(p) => (p, true),
        None => (DUMMY.as_str(), false),
    };
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    let matches = Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok();
    real && matches
}

/// Too many hashes are running and waiting: the request is refused (503 with `Retry-After`
/// [`BUSY_RETRY_AFTER_SECS`]) instead of queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy;

/// The only way to hash or verify a password: at most `workers` hashes at once and `waiting`
/// more requests waiting for one (at most [`MAX_WAIT`]); any more are refused with [`Busy`].
#[derive(Debug)]
pub struct Hashing {
    workers: usize,
    /// One permit a running hash; held by the blocking task itself, so a request that is
    /// dropped (the client hung up) keeps its place until its hash really ends.
    running: Arc<Semaphore>,
    /// One permit a request running or waiting: taken without waiting, so the line is bounded.
    admitted: Arc<Semaphore>,
    /// Hashes and verifications started, for tests and measurements.
    started: AtomicU64,
}

impl Hashing {
    /// Half the machine's cores (at least one, at most [`MAX_WORKERS`]): the other half keeps
    /// answering the API while logins and sign-ups flood in.
    pub fn sized_to_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let workers = (cores / 2).clamp(1, MAX_WORKERS);
        Hashing::new(workers, workers * WAITING_PER_WORKER)
    }

    /// `workers` hashes at once and `waiting` requests waiting (0 workers: every request is
    /// refused, e.g. to close sign-ups and logins without closing the site).
    pub fn new(workers: usize, waiting: usize) -> Self {
        let admitted = if workers == 0 { 0 } else { workers + waiting };
        Hashing {
            workers,
            running: Arc::new(Semaphore::new(workers)),
            admitted: Arc::new(Semaphore::new(admitted)),
            started: AtomicU64::new(0),
        }
    }

    /// Hashes that may run at once.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Hashes and verifications started so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Waits for a worker (within the bounded line and [`MAX_WAIT`]) and runs `work` on the
    /// blocking pool holding it.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Busy> {
        let admitted = self
            .admitted
            .clone()
            .try_acquire_owned()
            .map_err(|_| Busy)?;
        let worker: OwnedSemaphorePermit =
            match tokio::time::timeout(MAX_WAIT, self.running.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                _ => return Err(Busy),
            };
        self.started.fetch_add(1, Ordering::Relaxed);
        let job = tokio::task::spawn_blocking(move || {
            let result = work();
            drop((worker, admitted));
            result
        });
        Ok(job.await.expect("password hashing does not panic"))
    }

    /// The PHC string of `password`, with a fresh random salt.
    pub async fn hash(&self, password: String) -> Result<String, Busy> {
        self.run(move || hash_now(&password)).await
    }

    /// Whether `password` matches `phc`. `None` (an account without a password, or no
    /// account) never matches, but costs the same time as a real check.
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, Busy> {
        self.run(move || verify_now(&password, phc.as_deref()))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_are_argon2id_and_verify() {
        let hashing = Hashing::new(1, 0);
        let phc = hashing.hash("correct horse".into()).await.unwrap();
        assert!(phc.starts_with("$argon2id$v=19$"), "{phc}");
        let verify = |p: &str, phc: Option<String>| hashing.verify(p.into(), phc);
        assert!(verify("correct horse", Some(phc.clone())).await.unwrap());
        assert!(!verify("wrong horse", Some(phc)).await.unwrap());
        assert!(!verify("anything", None).await.unwrap());
        assert_eq!(hashing.started(), 4);
    }

    /// With every worker busy, `waiting` requests wait and the next is refused at once; when a
    /// worker is free again the waiting ones run.
    #[tokio::test]
    async fn the_line_is_bounded() {
        let hashing = Arc::new(Hashing::new(1, 2));
        // The one worker taken, as by a hash in progress (its admission and its worker).
        let held = (
            hashing.admitted.clone().try_acquire_owned().unwrap(),
            hashing.running.clone().try_acquire_owned().unwrap(),
        );
        let waiting: Vec<_> = (0..2)
            .map(|_| {
                let hashing = hashing.clone();
                tokio::spawn(async move { hashing.hash("in line".into()).await })
            })
            .collect();
        // Both in line once the admissions are gone (no sleep: yield until they are).
        while hashing.admitted.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(hashing.hash("one too many".into()).await, Err(Busy));
        assert_eq!(hashing.verify("one too many".into(), None).await, Err(Busy));
        assert_eq!(
            hashing.started(),
            0,
            "nothing ran while the worker was held"
        );
        drop(held);
        for handle in waiting {
            assert!(handle.await.unwrap().is_ok());
        }
        assert_eq!(hashing.started(), 2);
    }

    #[tokio::test]
    async fn no_workers_refuse_everything() {
        let hashing = Hashing::new(0, 10);
        assert_eq!(hashing.hash("x".into()).await, Err(Busy));
        assert_eq!(hashing.started(), 0);
    }
}
