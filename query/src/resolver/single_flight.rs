//! One store computation per distinct request at a time. While a version's in-memory index is
//! being built (after a re-import, or at start), heavy requests go to the store; when many
//! clients ask the same thing at once, the first runs it and the others wait for its answer
//! instead of piling the same scan onto the store. Answers are pure functions of (version,
//! normalized request), so sharing one is always right.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::error::ApiError;

type Cell<V> = Arc<OnceCell<Result<V, ApiError>>>;

/// Computations under way, by key (the request's validator: version, endpoint and normalized
/// request).
#[derive(Debug)]
pub(crate) struct SingleFlight<V> {
    running: Mutex<HashMap<String, Cell<V>>>,
}

impl<V> Default for SingleFlight<V> {
    fn default() -> Self {
        SingleFlight {
            running: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> SingleFlight<V> {
    /// The answer of `compute`, or of the identical computation already running. If the
    /// caller running it goes away (a client hang-up), a waiting caller runs its own.
    pub(crate) async fn run(
        &self,
        key: String,
        compute: impl Future<Output = Result<V, ApiError>>,
    ) -> Result<V, ApiError> {
        let cell = self
            .running
            .lock()
            .expect("single-flight lock")
            .entry(key.clone())
            .or_default()
            .clone();
        let answer = cell.get_or_init(|| compute).await.clone();
        let mut running = self.running.lock().expect("single-flight lock");
        if running.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            running.remove(&key);
        }
        answer
    }

    /// Computations under way (tests watch it drain).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.running.lock().expect("single-flight lock").len()
    }

    /// Whether none is under way.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn identical_requests_share_one_computation() {
        let flights = Arc::new(SingleFlight::<u64>::default());
        let (runs, entered) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (release, released) = tokio::sync::watch::channel(false);
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (flights, runs, entered, mut released) = (
                flights.clone(),
                runs.clone(),
                entered.clone(),
                released.clone(),
            );
            tasks.push(tokio::spawn(async move {
                entered.fetch_add(1, Ordering::SeqCst);
                flights
                    .run("k".into(), async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        released.wait_for(|r| *r).await.ok();
                        Ok(7)
                    })
                    .await
            }));
        }
        // One thread: a task that has entered runs until it waits, so once all 50 have
        // entered, all wait on the one computation.
        while entered.load(Ordering::SeqCst) < 50 {
            tokio::task::yield_now().await;
        }
        assert_eq!(flights.len(), 1);
        release.send(true).unwrap();
        for task in tasks {
            assert_eq!(task.await.unwrap(), Ok(7));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(flights.is_empty());
        // A later request computes afresh (nothing is kept once answered).
        assert_eq!(flights.run("k".into(), async { Ok(8) }).await, Ok(8));
    }

    #[tokio::test]
    async fn a_caller_that_goes_away_hands_over() {
        let flights = SingleFlight::<u64>::default();
        let first = flights.run("k".into(), std::future::pending());
        // The first caller is dropped mid-computation (a hang-up); the next one computes.
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(1), first)
                .await
                .is_err()
        );
        assert_eq!(flights.run("k".into(), async { Ok(3) }).await, Ok(3));
        assert!(flights.is_empty());
    }
}
