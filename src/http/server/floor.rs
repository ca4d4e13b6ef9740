//! Transfer floors: a request body must arrive, and an answer must be taken, at no less than
//! [`MIN_BYTES_PER_WINDOW`] bytes per window while the server waits on the client. Without
//! them a client that sends a complete head and then one body byte every two seconds, or that
//! asks for an export and stops reading, holds its connection (and the export's buffers) for
//! good; 4,096 such connections filled the server's cap.
//!
//! A floor only runs while the server is *waiting on the client*: a body read that returned
//! `Pending`, or a write the socket did not take whole. The window restarts whenever the floor
//! is met, and a write taken whole (the client keeps up) disarms it, so a keep-alive pause
//! between answers or a slow handler never counts against the client.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::Activity;

/// Bytes a client must move per window while the server waits on it: 8 KiB per 10 s window
/// by default, about 800 bytes a second, far below any real client's link, far above a
/// trickle meant to keep a connection open.
pub const MIN_BYTES_PER_WINDOW: u64 = 8 * 1024;

/// One direction's floor on one connection.
#[derive(Debug)]
pub struct Floor {
    window: Duration,
    /// Armed: when the current window began, what moved in it, and the timer that wakes the
    /// waiting task when it ends.
    armed: Option<Armed>,
}

#[derive(Debug)]
struct Armed {
    began: Instant,
    moved: u64,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Floor {
    /// A floor of [`MIN_BYTES_PER_WINDOW`] per `window`.
    pub fn new(window: Duration) -> Self {
        Floor {
            window,
            armed: None,
        }
    }

    /// `n` bytes moved. Meeting the floor starts a new window.
    pub fn moved(&mut self, n: usize) {
        if let Some(armed) = &mut self.armed {
            armed.moved += n as u64;
            if armed.moved >= MIN_BYTES_PER_WINDOW {
                self.armed = None;
            }
        }
    }

    /// The client kept up (a write taken whole): nothing is waiting on it.
    pub fn disarm(&mut self) {
        self.armed = None;
    }

    /// The server is waiting on the client: arms the window if it is not running and tells
    /// whether it ran out, registering `cx` to be woken when it does.
    pub fn waiting(&mut self, cx: &mut Context<'_>) -> bool {
        let now = Instant::now();
        if self.ran_out_at(now) {
            return true;
        }
        let window = self.window;
        let Some(armed) = &mut self.armed else {
            return false;
        };
        let ends = armed.began + window;
        armed
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(ends)))
            .as_mut()
            .poll(cx)
            .is_ready()
    }

    /// Arms the window at `now` if it is not running; whether it has run out at `now`.
    fn ran_out_at(&mut self, now: Instant) -> bool {
        let armed = self.armed.get_or_insert(Armed {
            began: now,
            moved: 0,
            timer: None,
        });
        now >= armed.began + self.window
    }
}

impl Floor {
    /// Applies the floor to a write's outcome (`wanted` bytes offered): bytes taken count, a
    /// write taken whole disarms the floor, and a write the socket cannot take runs its window,
    /// failing the connection with `TimedOut` when it runs out.
    pub fn after_write(
        &mut self,
        cx: &mut Context<'_>,
        wanted: usize,
        result: Poll<std::io::Result<usize>>,
    ) -> Poll<std::io::Result<usize>> {
        match result {
            Poll::Ready(Ok(n)) => {
                if n >= wanted {
                    self.disarm();
                } else {
                    self.moved(n);
                    if self.waiting(cx) {
                        return Poll::Ready(Err(send_timed_out()));
                    }
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => {
                if self.waiting(cx) {
                    return Poll::Ready(Err(send_timed_out()));
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

fn send_timed_out() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the client took the answer slower than the server's floor",
    )
}

/// A request body held to the body floor: while the handler waits for bytes the client
/// does not send, the floor's window runs; when it runs out the body fails (the handler's
/// read gets an error) and the connection is marked to close.
pub struct Floored {
    body: Incoming,
    floor: Floor,
    activity: Arc<Activity>,
}

/// The error a body under its floor fails with.
#[derive(Debug)]
struct BodyTooSlow;

impl std::fmt::Display for BodyTooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body arrived slower than the server's floor")
    }
}

impl std::error::Error for BodyTooSlow {}

impl Floored {
    /// `body` held to a floor of [`MIN_BYTES_PER_WINDOW`] per `window`; `activity` is told
    /// when it runs out.
    pub(super) fn new(body: Incoming, window: Duration, activity: Arc<Activity>) -> Self {
        Floored {
            body,
            floor: Floor::new(window),
            activity,
        }
    }
}

impl hyper::body::Body for Floored {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.floor.moved(data.len());
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(axum::Error::new(error)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                if this.floor.waiting(cx) {
                    this.activity.cut();
                    return Poll::Ready(Some(Err(axum::Error::new(BodyTooSlow))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trickle_runs_out_and_a_steady_flow_does_not() {
        let window = Duration::from_secs(10);
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);

        let mut trickle = Floor::new(window);
        assert!(!trickle.ran_out_at(at(0)));
        for second in [2, 4, 6, 8] {
            trickle.moved(1);
            assert!(!trickle.ran_out_at(at(second)));
        }
        assert!(
            trickle.ran_out_at(at(10)),
            "4 bytes in 10 s is under the floor"
        );

        let mut steady = Floor::new(window);
        for step in 0..10 {
            assert!(!steady.ran_out_at(at(step * 5)));
            steady.moved(MIN_BYTES_PER_WINDOW as usize);
        }
        assert!(!steady.ran_out_at(at(50)), "the floor met every window");

        let mut paused = Floor::new(window);
        assert!(!paused.ran_out_at(at(0)));
        paused.disarm();
        assert!(
            !paused.ran_out_at(at(60)),
            "a pause while nothing waited does not count"
        );
        assert!(paused.ran_out_at(at(70)));
    }
}
