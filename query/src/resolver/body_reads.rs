//! Concurrent body reads of one version joined into one statement. On PostgreSQL a read by
//! position is a round trip whose cost is mostly fixed (the statement, the server's backend,
//! the wake-ups on both sides), so many clients asking for single records at once spend most
//! of both cores on them. A few reads of a version run at a time ([`RUNNING`]); the reads that
//! arrive meanwhile wait, and when one finishes, the first waiter reads for all the waiters
//! at once: no timer, so a lone read never waits, and under load each statement serves many.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::error::ApiError;

/// Statements of one version running at a time; the reads that come meanwhile are joined.
const RUNNING: usize = 2;

/// What a waiting read is told: its bodies, or that it reads for the waiters handed to it.
enum Reply<T> {
    Done(Result<Vec<T>, ApiError>),
    Lead(Vec<Waiter<T>>),
}

/// A read waiting for a running one to end.
struct Waiter<T> {
    positions: Vec<i64>,
    reply: oneshot::Sender<Reply<T>>,
}

/// One version's reads: how many statements run, and the reads waiting.
struct Queue<T> {
    running: usize,
    waiting: Vec<Waiter<T>>,
}

/// The reads of every version being read, by version.
pub(crate) struct BodyReads<T> {
    queues: Mutex<HashMap<i64, Queue<T>>>,
}

impl<T> Default for BodyReads<T> {
    fn default() -> Self {
        BodyReads {
            queues: Mutex::default(),
        }
    }
}

impl<T> std::fmt::Debug for BodyReads<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyReads").finish_non_exhaustive()
    }
}

impl<T: Clone> BodyReads<T> {
    /// The bodies of version `version` at `positions`, in their order, read by `read` (the
    /// bodies at the positions it is given, in their order, each position once) alone or
    /// together with other reads of the version.
    pub(crate) async fn read<F, Fut>(
        &self,
        version: i64,
        positions: Vec<i64>,
        read: F,
    ) -> Result<Vec<T>, ApiError>
    where
        F: Fn(Vec<i64>) -> Fut,
        Fut: Future<Output = Result<Vec<T>, ApiError>>,
    {
        let mut others = match self.join(version, &positions) {
            None => Vec::new(),
            Some(reply) => match reply.await {
                Ok(Reply::Done(bodies)) => return bodies,
                Ok(Reply::Lead(others)) => others,
                // The read that held these positions went away (its client hung up).
                Err(_) => return read(positions).await,
            },
        };
        // Whatever happens to this read from here, the next waiter is told to go on.
        let _turn = Turn {
            reads: self,
            version,
        };
        let mut all = positions.clone();
        all.extend(others.iter().flat_map(|w| w.positions.iter().copied()));
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        let found = match read(unique.clone()).await {
            Ok(bodies) if bodies.len() == unique.len() => Bodies::new(unique, bodies, &all),
            Ok(_) => Err(ApiError::Internal),
            Err(error) => Err(error),
        };
        let mut found = match found {
            Ok(found) => found,
            Err(error) => {
                for waiter in others {
                    let _ = waiter.reply.send(Reply::Done(Err(error.clone())));
                }
                return Err(error);
            }
        };
        for waiter in others.drain(..) {
            let bodies = found.take(&waiter.positions);
            let _ = waiter.reply.send(Reply::Done(Ok(bodies)));
        }
        Ok(found.take(&positions))
    }

    /// Takes a turn to read version `version` (`None`) or waits for one (the reply to await).
    fn join(&self, version: i64, positions: &[i64]) -> Option<oneshot::Receiver<Reply<T>>> {
        let mut queues = self.queues.lock().expect("body reads lock");
        let queue = queues.entry(version).or_insert(Queue {
            running: 0,
            waiting: Vec::new(),
        });
        if queue.running < RUNNING {
            queue.running += 1;
            return None;
        }
        let (reply, receiver) = oneshot::channel();
        queue.waiting.push(Waiter {
            positions: positions.to_vec(),
            reply,
        });
        Some(receiver)
    }

    /// Ends a turn on version `version`: the waiters, if any, go to the first of them still
    /// waiting, which reads for all of them; else one fewer statement runs.
    fn pass_on(&self, version: i64) {
        let mut queues = self.queues.lock().expect("body reads lock");
        let Some(queue) = queues.get_mut(&version) else {
            return;
        };
        let mut waiting = std::mem::take(&mut queue.waiting);
        while !waiting.is_empty() {
            let first = waiting.remove(0);
            match first.reply.send(Reply::Lead(waiting)) {
                Ok(()) => return,
                Err(Reply::Lead(back)) => waiting = back,
                Err(Reply::Done(_)) => unreachable!("a lead was sent"),
            }
        }
        queue.running -= 1;
        if queue.running == 0 {
            queues.remove(&version);
        }
    }
}

/// A turn reading a version; passed on when dropped, however the read ends.
struct Turn<'a, T: Clone> {
    reads: &'a BodyReads<T>,
    version: i64,
}

impl<T: Clone> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        self.reads.pass_on(self.version);
    }
}

/// The bodies one statement read, by position, each given out as many times as it was asked
/// for (cloned for all but the last).
struct Bodies<T> {
    by_position: HashMap<i64, (usize, T)>,
}

impl<T: Clone> Bodies<T> {
    fn new(unique: Vec<i64>, bodies: Vec<T>, asked: &[i64]) -> Result<Self, ApiError> {
        let mut by_position: HashMap<i64, (usize, T)> = unique
            .into_iter()
            .zip(bodies)
            .map(|(pos, body)| (pos, (0, body)))
            .collect();
        for pos in asked {
            by_position.get_mut(pos).ok_or(ApiError::Internal)?.0 += 1;
        }
        Ok(Bodies { by_position })
    }

    fn take(&mut self, positions: &[i64]) -> Vec<T> {
        positions
            .iter()
            .filter_map(|pos| {
                let (left, body) = self.by_position.get_mut(pos)?;
                *left -= 1;
                if *left == 0 {
                    self.by_position.remove(pos).map(|(_, body)| body)
                } else {
                    Some(body.clone())
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Reads that answer each position with its square, counting statements, each held until
    /// the gate opens.
    struct Store {
        statements: AtomicUsize,
        gate: tokio::sync::watch::Receiver<bool>,
    }

    impl Store {
        async fn read(&self, positions: Vec<i64>) -> Result<Vec<i64>, ApiError> {
            self.statements.fetch_add(1, Ordering::SeqCst);
            let mut gate = self.gate.clone();
            gate.wait_for(|open| *open).await.expect("gate kept");
            Ok(positions.iter().map(|p| p * p).collect())
        }
    }

    fn store() -> (Arc<Store>, tokio::sync::watch::Sender<bool>) {
        let (open, gate) = tokio::sync::watch::channel(false);
        let store = Store {
            statements: AtomicUsize::new(0),
            gate,
        };
        (Arc::new(store), open)
    }

    type Task = tokio::task::JoinHandle<Result<Vec<i64>, ApiError>>;

    /// A read of `positions` of version 1 through `reads`, on a task of its own.
    fn spawn_read(reads: &Arc<BodyReads<i64>>, store: &Arc<Store>, positions: Vec<i64>) -> Task {
        let (reads, store) = (reads.clone(), store.clone());
        tokio::spawn(async move { reads.read(1, positions, |p| store.read(p)).await })
    }

    #[tokio::test]
    async fn a_lone_read_is_one_statement_of_its_own() {
        let (store, open) = store();
        open.send(true).unwrap();
        let reads = BodyReads::default();
        let got = reads.read(7, vec![3, 1, 3], |p| store.read(p)).await;
        assert_eq!(got.unwrap(), [9, 1, 9]);
        assert_eq!(store.statements.load(Ordering::SeqCst), 1);
        assert!(reads.queues.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn reads_that_wait_are_joined_into_one_statement() {
        let (store, open) = store();
        let reads = Arc::new(BodyReads::default());
        let mut tasks = Vec::new();
        for i in 0..10i64 {
            tasks.push(spawn_read(&reads, &store, vec![i, 100]));
            // The first RUNNING reads start their statements before the others queue.
            while store.statements.load(Ordering::SeqCst) < RUNNING.min(i as usize + 1) {
                tokio::task::yield_now().await;
            }
        }
        loop {
            let waiting = reads
                .queues
                .lock()
                .unwrap()
                .get(&1)
                .map(|q| q.waiting.len());
            if waiting == Some(10 - RUNNING) {
                break;
            }
            tokio::task::yield_now().await;
        }
        open.send(true).unwrap();
        for (i, task) in tasks.into_iter().enumerate() {
            let i = i as i64;
            assert_eq!(task.await.unwrap().unwrap(), [i * i, 10_000]);
        }
        assert_eq!(store.statements.load(Ordering::SeqCst), RUNNING + 1);
        assert!(reads.queues.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn waiters_are_answered_when_the_read_ahead_of_them_goes_away() {
        let (store, open) = store();
        let reads = Arc::new(BodyReads::default());
        let mut leaders = Vec::new();
        for i in 0..RUNNING as i64 {
            leaders.push(spawn_read(&reads, &store, vec![i]));
        }
        while store.statements.load(Ordering::SeqCst) < RUNNING {
            tokio::task::yield_now().await;
        }
        let waiter = spawn_read(&reads, &store, vec![5]);
        while reads.queues.lock().unwrap()[&1].waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        for leader in &leaders {
            leader.abort();
        }
        open.send(true).unwrap();
        assert_eq!(waiter.await.unwrap().unwrap(), [25]);
        for leader in leaders {
            assert!(leader.await.unwrap_err().is_cancelled());
        }
        assert!(reads.queues.lock().unwrap().is_empty());
    }
}
