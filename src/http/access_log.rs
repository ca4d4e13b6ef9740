//! One log line per answered request (a refusal, 429, is counted instead and logged at debug
//! level): method, path (never the query string, which may carry
//! search text; clipped to [`MAX_LOGGED_BYTES`] like every client-supplied text in a log
//! line), status, latency and the request's id (`X-Request-Id`, [`crate::http::request_id`],
//! also set on the answer). The same middleware counts the request for `/metrics`
//! ([`crate::http::metrics`]).
//!
//! tower-http's `TraceLayer` would do this through an info-level span per request, and its
//! JSON line carries that span twice (`span` and `spans`), each time parsed back from the text
//! stored when the span was made; the JSON formatter then takes most of what is left, a large
//! share of a small page's throughput under load. So:
//!
//! - the span is at debug level: off by default, where it costs a level check; with
//!   `ODQS_LOG=debug`, events logged while a request runs carry its method and path again;
//! - with JSON logs (`odqs serve` calls [`write_json_to`]), the line is written straight into
//!   the log writer's buffer, in the shape `tracing`'s JSON formatter gives an event, so every
//!   line of the log reads alike; `ODQS_LOG` still decides whether it is written;
//! - otherwise (text logs, tests) it is an ordinary `tracing` event.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use query::log_text::{MAX_LOGGED_BYTES, clip};
use time::OffsetDateTime;
use tracing::{Instrument, Level};

use crate::http::client_addr::TrustedProxies;
use crate::http::log_writer::LogLines;
use crate::http::metrics::{MatchedRoute, Metrics, UNMATCHED};
use crate::http::request_id::{self, RequestIds};

/// The `message` of the line (`"message":"request"`).
pub const MESSAGE: &str = "request";

/// The `target` of the line, which is what `ODQS_LOG` filters it by: a name of its own rather
/// than this module's path, so that moving the module does not change the log or its filters.
const TARGET: &str = "odqs::access_log";

/// Requests answered 429 since the last [`take_refused`].
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Requests answered 429 since the last call (the maintenance tick logs the count).
pub fn take_refused() -> u64 {
    REFUSED.swap(0, Ordering::Relaxed)
}

/// Where JSON lines go, once [`write_json_to`] is called.
static JSON_LINES: OnceLock<LogLines> = OnceLock::new();

/// Writes the lines as JSON straight to `lines` from now on (the writer the JSON subscriber
/// was given). Called once, by `odqs serve`; a second call changes nothing.
pub fn write_json_to(lines: LogLines) {
    let _ = JSON_LINES.set(lines);
}

/// Counts a request in flight for as long as it lives (an answer, or a cut connection).
struct InFlight<'a>(&'a Metrics);

impl<'a> InFlight<'a> {
    fn start(metrics: &'a Metrics) -> Self {
        metrics.in_flight.inc();
        InFlight(metrics)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.dec();
    }
}

/// The middleware (install with `axum::middleware::from_fn_with_state`, outermost).
pub async fn access_log(
    State(metrics): State<Arc<Metrics>>,
    State(ids): State<Arc<RequestIds>>,
    State(proxies): State<Arc<TrustedProxies>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let _in_flight = InFlight::start(&metrics);
    let method = request.method().clone();
    // A clone of the parsed URI shares its bytes: no copy of the path.
    let uri = request.uri().clone();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| a.ip());
    let id = ids.of(peer, request.headers(), &proxies);
    // The route outside nested routers; a nested router's own is on the answer.
    let outer = request.extensions().get::<MatchedPath>().cloned();
    let span = tracing::debug_span!(target: TARGET, "request", method = %clip(method.as_str()), path = %clip(uri.path()));
    let mut response = next.run(request).instrument(span).await;
    response
        .headers_mut()
        .insert(request_id::HEADER, id.clone());
    let status = response.status().as_u16();
    let route = match (response.extensions().get::<MatchedRoute>(), &outer) {
        (Some(MatchedRoute(route)), _) => route.as_str(),
        (None, Some(outer)) if !outer.as_str().contains("{*") => outer.as_str(),
        _ => UNMATCHED,
    };
    let elapsed = started.elapsed();
    metrics.answered(route, status, elapsed.as_secs_f64());
    if status == 429 {
        metrics.rate_limited.inc();
        // A refusal is a flood's echo: counted, summed up on the maintenance tick
        // ([`take_refused`]), and written one by one only at debug level, so a flood cannot
        // fill the log.
        REFUSED.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(target: TARGET, method = %clip(method.as_str()), path = %clip(uri.path()), "request refused (429)");
        return response;
    }
    if !tracing::enabled!(target: TARGET, Level::INFO) {
        return response;
    }
    let latency_ms = elapsed.as_micros() as f64 / 1000.0;
    let id = id.to_str().unwrap_or_default();
    match JSON_LINES.get() {
        Some(lines) => {
            let line = json_line(
                SystemTime::now(),
                &method,
                uri.path(),
                status,
                latency_ms,
                id,
            );
            let _ = (&*lines).write_all(&line);
        }
        None => tracing::info!(
            target: TARGET,
            method = %clip(method.as_str()),
            path = %clip(uri.path()),
            status,
            latency_ms,
            request_id = id,
            "{MESSAGE}"
        ),
    }
    response
}

/// The line as `tracing`'s JSON formatter writes an event with these fields (flattened), with
/// its newline. Numbers are written by `itoa` and `ryu` (as `serde_json` writes them), not by
/// `core::fmt`, whose padded fields and float formatting cost more on every request.
fn json_line(
    at: SystemTime,
    method: &Method,
    path: &str,
    status: u16,
    latency_ms: f64,
    request_id: &str,
) -> Vec<u8> {
    let at = OffsetDateTime::from(at);
    let mut line = Vec::with_capacity(160 + path.len());
    line.extend_from_slice(b"{\"timestamp\":\"");
    padded(&mut line, at.year().unsigned_abs(), 4);
    for (separator, value) in [
        (b'-', u8::from(at.month())),
        (b'-', at.day()),
        (b'T', at.hour()),
        (b':', at.minute()),
        (b':', at.second()),
    ] {
        line.push(separator);
        padded(&mut line, u32::from(value), 2);
    }
    line.push(b'.');
    padded(&mut line, at.microsecond(), 6);
    line.extend_from_slice(b"Z\",\"level\":\"INFO\",\"message\":\"");
    line.extend_from_slice(MESSAGE.as_bytes());
    line.extend_from_slice(b"\",\"method\":");
    let _ = serde_json::to_writer(&mut line, &logged(method.as_str()));
    line.extend_from_slice(b",\"path\":");
    let _ = serde_json::to_writer(&mut line, &logged(path));
    line.extend_from_slice(b",\"status\":");
    line.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    line.extend_from_slice(b",\"latency_ms\":");
    line.extend_from_slice(ryu::Buffer::new().format(latency_ms).as_bytes());
    line.extend_from_slice(b",\"request_id\":");
    let _ = serde_json::to_writer(&mut line, &logged(request_id));
    line.extend_from_slice(b",\"target\":\"");
    line.extend_from_slice(TARGET.as_bytes());
    line.extend_from_slice(b"\"}\n");
    line
}

/// `n` in decimal, zero-padded on the left to `width` digits.
fn padded(line: &mut Vec<u8>, n: u32, width: usize) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n).as_bytes();
    line.extend(std::iter::repeat_n(
        b'0',
        width.saturating_sub(digits.len()),
    ));
    line.extend_from_slice(digits);
}

/// A client's text as the line carries it: as it came, or clipped when longer than
/// [`MAX_LOGGED_BYTES`] (the common case copies nothing).
fn logged(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LOGGED_BYTES {
        text.into()
    } else {
        clip(text).to_string().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line is one JSON object per line, with the fields and values `tracing` would give,
    /// a path that needs escaping kept exactly.
    #[test]
    fn json_lines_read_as_tracing_events() {
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_764_057_600_123_456);
        let path = "/api/v1/datasets/caf\u{e9}/records/\"q\\u\"";
        let line = json_line(at, &Method::GET, path, 404, 0.012, "5f3a09c1-42");
        let text = String::from_utf8(line).unwrap();
        assert!(
            text.ends_with("}\n") && text.matches('\n').count() == 1,
            "{text}"
        );
        let event: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            event,
            serde_json::json!({
                "timestamp": "2025-11-25T08:00:00.123456Z",
                "level": "INFO",
                "message": "request",
                "method": "GET",
                "path": path,
                "status": 404,
                "latency_ms": 0.012,
                "request_id": "5f3a09c1-42",
                "target": "odqs::access_log",
            })
        );
    }

    /// Fields of one digit are padded as `core::fmt`'s `{:02}` pads them; a latency reads back
    /// as the number it was.
    #[test]
    fn numbers_are_padded_and_exact() {
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(5_000_007);
        for latency_ms in [0.0, 1.0, 0.001, 12.5, 31_622.777] {
            let line = json_line(at, &Method::GET, "/", 200, latency_ms, "1-1");
            let event: serde_json::Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(event["timestamp"], "1970-01-01T00:00:05.000007Z");
            assert_eq!(event["latency_ms"].as_f64(), Some(latency_ms));
            assert_eq!(event["status"], 200);
        }
    }

    /// A path of a megabyte is logged as its first bytes and a count of the rest.
    #[test]
    fn long_paths_are_clipped() {
        let path = format!("/{}", "p".repeat(1 << 20));
        let method = Method::from_bytes(&[b'M'; 4096]).unwrap();
        let line = json_line(SystemTime::UNIX_EPOCH, &method, &path, 404, 0.1, "1-1");
        let fixed = 200 + crate::http::request_id::MAX_ID_BYTES;
        assert!(line.len() < 2 * MAX_LOGGED_BYTES + fixed, "{}", line.len());
        let event: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(event["path"], clip(&path).to_string());
        assert!(
            event["method"]
                .as_str()
                .unwrap()
                .ends_with("…(+3896 bytes)")
        );
    }
}
