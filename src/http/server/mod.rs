//! Accepting and keeping connections, so that no connection flood takes the service down:
//! a request head must arrive within [`ConnLimits::header_timeout`] of accepting a
//! connection (hyper's header-read timer, which also runs while a keep-alive connection waits
//! for its next request), an idle keep-alive connection is closed after
//! [`ConnLimits::keepalive_timeout`], a request body and an answer must move at the
//! [`floor`] rate ([`ConnLimits::body_timeout`], [`ConnLimits::send_timeout`]), and at most
//! [`ConnLimits::max_connections`] connections are open at once, [`ConnLimits::max_per_address`]
//! of them from one client address, with room kept for valid tokens and other addresses
//! ([`seats`]). A connection over a cap is closed as soon as it is accepted, before it costs a
//! task or a buffer.
//!
//! At shutdown the listener stops accepting, open connections finish their requests (hyper's
//! graceful shutdown closes idle ones at once), and whatever is still open after
//! [`ConnLimits::drain_timeout`] is dropped.
//!
//! Every connection passes through [`RawQueryStream`] (raw `<`, `>` in queries, contract §5) and
//! gets its peer address as `ConnectInfo<SocketAddr>`.

pub mod floor;
pub mod seats;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, Request, Response};
use axum::response::IntoResponse;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;
use tower_http::add_extension::AddExtension;

use crate::http::error::{ApiError, HttpError};
use crate::http::request_line::RawQueryStream;
use floor::{Floor, Floored};
pub use seats::Seat;
use seats::{Admission, Seats};

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
/// Default for [`ConnLimits::body_timeout`].
pub const DEFAULT_BODY_TIMEOUT_SECS: u64 = 10;
/// Default for [`ConnLimits::send_timeout`].
pub const DEFAULT_SEND_TIMEOUT_SECS: u64 = 10;
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
    /// The window in which a request body being read must bring at least
    /// [`floor::MIN_BYTES_PER_WINDOW`] bytes (or end); a slower body fails and the connection
    /// is closed.
    pub body_timeout: Duration,
    /// The window in which a client must take at least [`floor::MIN_BYTES_PER_WINDOW`] bytes of
    /// an answer the server is waiting to send; a slower reader is cut off.
    pub send_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
            keepalive_timeout: Duration::from_secs(DEFAULT_KEEPALIVE_TIMEOUT_SECS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_per_address: DEFAULT_MAX_PER_ADDRESS,
            drain_timeout: Duration::from_secs(DEFAULT_DRAIN_TIMEOUT_SECS),
            body_timeout: Duration::from_secs(DEFAULT_BODY_TIMEOUT_SECS),
            send_timeout: Duration::from_secs(DEFAULT_SEND_TIMEOUT_SECS),
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
    let seats = Arc::new(Seats::default());
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
        let seat = match seats.admit(peer.ip(), &limits) {
            Admission::Seated(seat) => seat,
            refused => {
                if matches!(refused, Admission::ServerFull) {
                    tracing::warn!(
                        cap = limits.max_connections,
                        "connection refused: server at its connection cap"
                    );
                }
                // Dropping the stream closes it: refused at the door, at no cost.
                drop(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            peer,
            router.clone(),
            limits,
            watcher.clone(),
            seat,
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
            open = seats.open(),
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

/// Serves one connection until it ends, idles out, is pushed out, falls under a transfer
/// floor or is told to shut down.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: ConnLimits,
    mut shutdown: watch::Receiver<bool>,
    seat: Arc<Seat>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: RawQueryStream::new(stream),
        activity: activity.clone(),
        send_floor: Floor::new(limits.send_timeout),
    });
    let tracker = activity.clone();
    let body_activity = activity.clone();
    let request_seat = seat.clone();
    let service = AddExtension::new(router, ConnectInfo(peer))
        .map_request(move |request: Request<Incoming>| {
            let mut request = request.map(|body| {
                Body::new(Floored::new(
                    body,
                    limits.body_timeout,
                    body_activity.clone(),
                ))
            });
            request.extensions_mut().insert(request_seat.clone());
            request
        })
        .map_future(move |answer| going_out(answer, &tracker));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut conn = pin!(builder.serve_connection(io, TowerToHyperService::new(service)));
    let mut draining = false;
    // Set when the connection must end soon: its answer may still go out, for at most a send
    // window.
    let mut hard_stop: Option<Instant> = None;
    loop {
        let idle_check = activity.idle_deadline(limits.keepalive_timeout);
        let stop_at = hard_stop.unwrap_or(idle_check);
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
            () = seat.pushed_out() => {
                tracing::debug!(%peer, "connection closed to make room for other clients");
                return;
            }
            () = activity.cut.notified(), if hard_stop.is_none() => {
                // A body under its floor: answer what can be answered, then close.
                tracing::debug!(%peer, "request body under the transfer floor; closing");
                conn.as_mut().graceful_shutdown();
                draining = true;
                hard_stop = Some(Instant::now() + limits.send_timeout);
            }
            () = tokio::time::sleep_until(stop_at.into()) => {
                if hard_stop.is_some_and(|at| Instant::now() >= at) {
                    return;
                }
                if activity.idle_for(limits.keepalive_timeout) {
                    return;
                }
            }
        }
    }
}

/// The service's answer as it goes out: counted as being answered from the hand-over (see
/// `Activity::answering`) until its body is sent or dropped.
fn going_out<F>(answer: F, tracker: &Arc<Activity>) -> impl Future<Output = F::Output> + use<F>
where
    F: Future<Output = Result<Response<Body>, std::convert::Infallible>>,
{
    let guard = tracker.begin();
    let activity = tracker.clone();
    async move {
        let mut response = answer.await?;
        if activity.was_cut.load(Ordering::SeqCst) {
            // Whatever the handler made of its failed body read (a 400, a 413), the truth is
            // that the body came too slowly: one answer for every endpoint.
            response = HttpError(ApiError::RequestTimeout).into_response();
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        Ok(response.map(|body| {
            Body::new(Tracked {
                body,
                _guard: guard,
            })
        }))
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
    /// Rung when a request body fell under its floor: the connection is to end.
    cut: tokio::sync::Notify,
    /// Whether `cut` was rung (so it is rung once).
    was_cut: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_read: AtomicU64::new(0),
            last_done: AtomicU64::new(0),
            answering: AtomicUsize::new(0),
            answered: AtomicU64::new(0),
            cut: tokio::sync::Notify::new(),
            was_cut: AtomicBool::new(false),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Ends the connection once its answer is out (a body under its floor).
    fn cut(&self) {
        if !self.was_cut.swap(true, Ordering::SeqCst) {
            self.cut.notify_one();
        }
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

/// A connection's stream that notes when bytes arrive and holds writes to the send floor.
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
    send_floor: Floor,
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
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.send_floor.after_write(cx, buf.len(), result)
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
        let wanted = bufs.iter().map(|b| b.len()).sum();
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.send_floor.after_write(cx, wanted, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
