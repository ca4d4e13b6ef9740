//! Accepting and keeping connections, so that no connection flood takes the service down
//! (issue 11): a request head must arrive within [`ConnLimits::header_timeout`] of accepting a
//! connection (hyper's header-read timer, which also runs while a keep-alive connection waits
//! for its next request), an idle keep-alive connection is closed after
//! [`ConnLimits::keepalive_timeout`], and at most [`ConnLimits::max_connections`] connections
//! are open at once, [`ConnLimits::max_per_address`] of them from one client address. A
//! connection over a cap is closed as soon as it is accepted, before it costs a task or a buffer.
//!
//! At shutdown the listener stops accepting, open connections finish their requests (hyper's
//! graceful shutdown closes idle ones at once), and whatever is still open after
//! [`ConnLimits::drain_timeout`] is dropped.
//!
//! Every connection passes through [`RawQueryStream`] (raw `<`, `>` in queries, contract §5) and
//! gets its peer address as `ConnectInfo<SocketAddr>`.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;
use tower_http::add_extension::AddExtension;

use crate::client_addr::network;
use crate::request_line::RawQueryStream;

/// Default for [`ConnLimits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;
/// Default for [`ConnLimits::keepalive_timeout`].
pub const DEFAULT_KEEPALIVE_TIMEOUT_SECS: u64 = 5;
/// Default for [`ConnLimits::max_connections`] (lowered to fit the open-file limit).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Default for [`ConnLimits::max_per_address`].
pub const DEFAULT_MAX_PER_ADDRESS: usize = 128;
/// Default for [`ConnLimits::drain_timeout`].
pub const DEFAULT_DRAIN_TIMEOUT_SECS: u64 = 30;
/// File descriptors kept free for the store's connections, the SQLite files and the logs when
/// the connection cap is fitted to the open-file limit.
const RESERVED_FDS: usize = 128;

/// What connections may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// Time for a request head to arrive, from accepting the connection or from the end of the
    /// previous answer.
    pub header_timeout: Duration,
    /// An idle keep-alive connection (its last answer sent, nothing more received) is closed
    /// after this long.
    pub keepalive_timeout: Duration,
    /// Open connections at once; more are closed at accept.
    pub max_connections: usize,
    /// Open connections from one client address (IPv6: one /64) at once.
    pub max_per_address: usize,
    /// How long in-flight requests may run after shutdown begins.
    pub drain_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
            keepalive_timeout: Duration::from_secs(DEFAULT_KEEPALIVE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_per_address: DEFAULT_MAX_PER_ADDRESS,
            drain_timeout: Duration::from_secs(DEFAULT_DRAIN_TIMEOUT_SECS),
        }
    }
}

impl ConnLimits {
    /// These limits with the connection cap lowered to what the process's open-file limit
    /// allows, so that the cap, not `accept()` failing with `EMFILE`, is what refuses.
    pub fn fitted_to_fd_limit(mut self) -> Self {
        if let Some(fds) = open_file_limit() {
            let fit = fds.saturating_sub(RESERVED_FDS).max(16);
            if fit < self.max_connections {
                tracing::warn!(
                    configured = self.max_connections,
                    open_file_limit = fds,
                    max_connections = fit,
                    "the connection cap is lowered to fit the open-file limit (raise it with ulimit -n)"
                );
                self.max_connections = fit;
            }
        }
        self
    }
}

/// The soft `RLIMIT_NOFILE`, raised to the hard limit first when allowed.
fn open_file_limit() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit only read and write the struct passed.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return None;
            }
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    limit = raised;
                }
            }
        }
        usize::try_from(limit.rlim_cur).ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Serves `router` on `listener` under `limits` until `shutdown` resolves, then drains.
pub async fn run(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let counts = Arc::new(Counts::default());
    // Connections hold a receiver; shutdown is sent on `signal`, and `closed` resolves once
    // every receiver is gone (every connection finished).
    let (signal, watcher) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
        };
        let Some(slot) = counts.admit(peer.ip(), &limits) else {
            // Dropping the stream closes it: refused at the door, at no cost.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            peer,
            router.clone(),
            limits,
            watcher.clone(),
            slot,
        ));
    }
    drop(listener);
    drop(watcher);
    let _ = signal.send(true);
    if tokio::time::timeout(limits.drain_timeout, signal.closed())
        .await
        .is_err()
    {
        tracing::warn!(
            open = counts.open(),
            "draining reached its deadline; dropping the connections still open"
        );
    }
    Ok(())
}

/// Logs an accept failure and waits a little when it is about resources, as `axum::serve` does.
async fn accept_failed(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accept failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Serves one connection until it ends, idles out or is told to shut down.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: ConnLimits,
    mut shutdown: watch::Receiver<bool>,
    _slot: Slot,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: RawQueryStream::new(stream),
        activity: activity.clone(),
    });
    let tracker = activity.clone();
    let service = AddExtension::new(router, ConnectInfo(peer))
        .map_request(|request: Request<Incoming>| request.map(Body::new))
        .map_future(move |answer| {
            let guard = tracker.begin(); // see `Activity::answering`
            async move {
                let response: Response<Body> = answer.await?;
                Ok::<_, std::convert::Infallible>(response.map(|body| {
                    Body::new(Tracked {
                        body,
                        _guard: guard,
                    })
                }))
            }
        });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut conn = pin!(builder.serve_connection(io, TowerToHyperService::new(service)));
    let mut draining = false;
    loop {
        let idle_check = activity.idle_deadline(limits.keepalive_timeout);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, %peer, "connection ended with an error");
                }
                return;
            }
            changed = shutdown.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = tokio::time::sleep_until(idle_check.into()) => {
                if activity.idle_for(limits.keepalive_timeout) {
                    return;
                }
            }
        }
    }
}

/// Open connections in all and by address.
#[derive(Debug, Default)]
struct Counts {
    by_address: Mutex<HashMap<IpAddr, usize>>,
    total: AtomicUsize,
}

impl Counts {
    /// A slot for a new connection from `ip`, or `None` when a cap is reached.
    fn admit(self: &Arc<Self>, ip: IpAddr, limits: &ConnLimits) -> Option<Slot> {
        let key = network(ip);
        let mut by_address = self.by_address.lock().expect("connection counts lock");
        if self.total.load(Ordering::SeqCst) >= limits.max_connections {
            tracing::warn!(
                cap = limits.max_connections,
                "connection refused: server at its connection cap"
            );
            return None;
        }
        let open = by_address.entry(key).or_insert(0);
        if *open >= limits.max_per_address {
            tracing::debug!(address = %key, cap = limits.max_per_address, "connection refused: address at its cap");
            return None;
        }
        *open += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
        Some(Slot {
            counts: self.clone(),
            key,
        })
    }

    fn open(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }
}

/// One open connection's place in [`Counts`], given back on drop.
#[derive(Debug)]
struct Slot {
    counts: Arc<Counts>,
    key: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut by_address = self
            .counts
            .by_address
            .lock()
            .expect("connection counts lock");
        if let Some(open) = by_address.get_mut(&self.key) {
            *open -= 1;
            if *open == 0 {
                by_address.remove(&self.key);
            }
        }
        self.counts.total.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a connection did lately, for its keep-alive idle timeout.
#[derive(Debug)]
struct Activity {
    start: Instant,
    /// Milliseconds since `start` of the last byte read.
    last_read: AtomicU64,
    /// Milliseconds since `start` when the last answer was finished.
    last_done: AtomicU64,
    /// Requests handed to the service whose answers are not finished (body sent or dropped):
    /// from the hand-over, not from the response, so a slow handler is not idleness.
    answering: AtomicUsize,
    /// Answers finished.
    answered: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_read: AtomicU64::new(0),
            last_done: AtomicU64::new(0),
            answering: AtomicUsize::new(0),
            answered: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn begin(self: &Arc<Self>) -> AnswerGuard {
        self.answering.fetch_add(1, Ordering::SeqCst);
        AnswerGuard(self.clone())
    }

    /// Idle: an answer was sent, nothing is being answered, and nothing arrived since the last
    /// answer for `timeout`. Before the first request hyper's header timer governs.
    fn idle_for(&self, timeout: Duration) -> bool {
        let done = self.last_done.load(Ordering::SeqCst);
        self.answered.load(Ordering::SeqCst) > 0
            && self.answering.load(Ordering::SeqCst) == 0
            && self.last_read.load(Ordering::SeqCst) <= done
            && self.now_ms().saturating_sub(done) >= timeout.as_millis() as u64
    }

    /// When to look again whether the connection is idle.
    fn idle_deadline(&self, timeout: Duration) -> Instant {
        let done = self.last_done.load(Ordering::SeqCst);
        let from = if self.answered.load(Ordering::SeqCst) > 0 {
            done.max(self.last_read.load(Ordering::SeqCst))
        } else {
            self.now_ms()
        };
        self.start + Duration::from_millis(from) + timeout
    }
}

/// Marks an answer finished when its body is dropped (sent or abandoned).
#[derive(Debug)]
struct AnswerGuard(Arc<Activity>);

impl Drop for AnswerGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        activity
            .last_done
            .store(activity.now_ms(), Ordering::SeqCst);
        activity.answered.fetch_add(1, Ordering::SeqCst);
        activity.answering.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that holds its connection's [`AnswerGuard`] until it is done.
struct Tracked {
    body: Body,
    _guard: AnswerGuard,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's stream that notes when bytes arrive.
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let now = self.activity.now_ms();
            self.activity.last_read.store(now, Ordering::SeqCst);
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_hold_and_slots_come_back() {
        let counts = Arc::new(Counts::default());
        let limits = ConnLimits {
            max_connections: 3,
            max_per_address: 2,
            ..ConnLimits::default()
        };
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let first = counts.admit(a, &limits).expect("first");
        let _second = counts.admit(a, &limits).expect("second");
        assert!(counts.admit(a, &limits).is_none(), "per-address cap");
        let _third = counts.admit(b, &limits).expect("other address");
        assert!(counts.admit(b, &limits).is_none(), "total cap");
        drop(first);
        assert!(
            counts.admit(a, &limits).is_some(),
            "a closed connection frees its slot"
        );
    }
}
