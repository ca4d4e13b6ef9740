//! A small HTTP/1.1 load generator on tokio: N keep-alive connections, each sending GETs back to
//! back, every response read whole (Content-Length or chunked), its latency recorded. It runs
//! on the bench's single-threaded runtime so it takes at most one of the machine's cores.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A request that takes longer than this is an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// A measurement goes on past its duration until it has this many answers...
const MIN_SAMPLES: usize = 5;
/// ... but not longer than this.
const MAX_EXTRA: Duration = Duration::from_secs(120);

/// Where requests go and the `Authorization` header they carry.
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    host: Arc<str>,
    authorization: Option<Arc<str>>,
}

/// One answer.
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub fn snippet(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text: String = text.chars().take(160).collect();
        text.replace('\n', " ")
    }
}

impl Client {
    pub fn new(addr: SocketAddr, authorization: Option<String>) -> Self {
        Self {
            addr,
            host: addr.to_string().into(),
            authorization: authorization.map(Into::into),
        }
    }

    /// One GET on a new connection.
    pub async fn get(&self, path: &str) -> Result<Response> {
        let mut connection = Connection::open(self).await?;
        Ok(tokio::time::timeout(REQUEST_TIMEOUT, connection.get(self, path)).await??)
    }
}

/// One keep-alive connection.
struct Connection {
    stream: BufReader<TcpStream>,
    request: Vec<u8>,
    line: Vec<u8>,
    /// The server said `Connection: close`.
    closed: bool,
}

impl Connection {
    async fn open(client: &Client) -> io::Result<Self> {
        let stream = TcpStream::connect(client.addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream: BufReader::with_capacity(64 * 1024, stream),
            request: Vec::with_capacity(512),
            line: Vec::with_capacity(256),
            closed: false,
        })
    }

    async fn get(&mut self, client: &Client, path: &str) -> io::Result<Response> {
        self.request.clear();
        self.request.extend_from_slice(b"GET ");
        self.request.extend_from_slice(path.as_bytes());
        self.request.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        self.request.extend_from_slice(client.host.as_bytes());
        if let Some(authorization) = &client.authorization {
            self.request.extend_from_slice(b"\r\nAuthorization: ");
            self.request.extend_from_slice(authorization.as_bytes());
        }
        self.request
            .extend_from_slice(b"\r\nAccept: application/json\r\nUser-Agent: odqs-bench\r\n\r\n");
        self.stream.get_mut().write_all(&self.request).await?;
        self.read_response().await
    }

    async fn read_line(&mut self) -> io::Result<()> {
        self.line.clear();
        let n = self.stream.read_until(b'\n', &mut self.line).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed by the server",
            ));
        }
        while matches!(self.line.last(), Some(b'\n' | b'\r')) {
            self.line.pop();
        }
        Ok(())
    }

    async fn read_response(&mut self) -> io::Result<Response> {
        self.read_line().await?;
        let status = parse_status(&self.line)?;
        let mut length = None;
        let mut chunked = false;
        loop {
            self.read_line().await?;
            if self.line.is_empty() {
                break;
            }
            let Some(colon) = self.line.iter().position(|&b| b == b':') else {
                return Err(invalid("header line without a colon"));
            };
            let name = &self.line[..colon];
            let value = std::str::from_utf8(&self.line[colon + 1..])
                .map_err(|_| invalid("header value is not UTF-8"))?
                .trim();
            if name.eq_ignore_ascii_case(b"content-length") {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| invalid("bad Content-Length"))?,
                );
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case(b"connection") {
                self.closed = value.eq_ignore_ascii_case("close");
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                self.read_line().await?;
                let size = std::str::from_utf8(&self.line)
                    .ok()
                    .and_then(|line| line.split(';').next())
                    .and_then(|hex| usize::from_str_radix(hex.trim(), 16).ok())
                    .ok_or_else(|| invalid("bad chunk size"))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        self.read_line().await?;
                        if self.line.is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.stream.read_exact(&mut body[start..]).await?;
                self.read_line().await?;
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.stream.read_exact(&mut body).await?;
        } else if !(status == 204 || status == 304 || (100..200).contains(&status)) {
            self.stream.read_to_end(&mut body).await?;
            self.closed = true;
        }
        Ok(Response { status, body })
    }
}

fn parse_status(line: &[u8]) -> io::Result<u16> {
    let line = std::str::from_utf8(line).map_err(|_| invalid("status line is not UTF-8"))?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some(version), Some(code)) if version.starts_with("HTTP/1.") => code
            .parse()
            .map_err(|_| invalid("status code is not a number")),
        _ => Err(invalid("not an HTTP/1.x status line")),
    }
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Polls `path` until it answers 200 (or `alive` fails, or the time runs out).
pub async fn wait_until_ok(
    addr: SocketAddr,
    path: &str,
    limit: Duration,
    mut alive: impl FnMut() -> Result<()>,
) -> Result<()> {
    let client = Client::new(addr, None);
    let deadline = Instant::now() + limit;
    loop {
        alive()?;
        match client.get(path).await {
            Ok(response) if response.status == 200 => return Ok(()),
            _ if Instant::now() > deadline => bail!("{path} did not answer 200 within {limit:?}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// One measurement: these paths (taken in turn, shared by all connections) at this many
/// connections for this long, after a warm-up.
pub struct LoadSpec {
    pub paths: Arc<[String]>,
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// What a measurement saw.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Latencies of the answers completed in the measured window, sorted.
    pub latencies: Vec<Duration>,
    /// The measured window.
    pub elapsed: Duration,
    /// Failures (warm-up included): non-200 statuses and I/O errors, with a sample, by kind.
    pub errors: BTreeMap<String, usize>,
}

impl Outcome {
    pub fn requests_per_second(&self) -> f64 {
        if self.elapsed.is_zero() {
            return 0.0;
        }
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// The latency at quantile `q` (nearest rank).
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.latencies.is_empty() {
            return None;
        }
        let rank = (q * self.latencies.len() as f64).ceil() as usize;
        Some(self.latencies[rank.clamp(1, self.latencies.len()) - 1])
    }

    pub fn error_count(&self) -> usize {
        self.errors.values().sum()
    }

    pub fn summary(&self) -> String {
        let ms = |d: Option<Duration>| {
            d.map_or("-".into(), |d| format!("{:.2} ms", d.as_secs_f64() * 1e3))
        };
        let mut s = format!(
            "{:>9.1} req/s  p50 {:>10}  p99 {:>10}  ({} answers in {:.1} s)",
            self.requests_per_second(),
            ms(self.quantile(0.5)),
            ms(self.quantile(0.99)),
            self.latencies.len(),
            self.elapsed.as_secs_f64()
        );
        for (error, count) in &self.errors {
            s.push_str(&format!("\n      ERROR ×{count}: {error}"));
        }
        s
    }
}

/// Shared state of one measurement.
struct Shared {
    next_path: AtomicUsize,
    measured: AtomicUsize,
    stopped: AtomicBool,
    start: Instant,
}

/// What one connection's task saw.
#[derive(Default)]
struct TaskOutcome {
    latencies: Vec<Duration>,
    errors: BTreeMap<String, usize>,
}

/// Runs one measurement.
pub async fn run(client: &Client, spec: &LoadSpec) -> Outcome {
    let start = Instant::now() + spec.warmup;
    let shared = Arc::new(Shared {
        next_path: AtomicUsize::new(0),
        measured: AtomicUsize::new(0),
        stopped: AtomicBool::new(false),
        start,
    });
    let mut tasks = Vec::new();
    for _ in 0..spec.connections {
        let client = client.clone();
        let paths = spec.paths.clone();
        let shared = shared.clone();
        tasks.push(tokio::spawn(connection_task(client, paths, shared)));
    }
    // The window closes after `duration`, or later when too few answers came in by then.
    let end = start + spec.duration;
    tokio::time::sleep_until(end.into()).await;
    let cap = end + MAX_EXTRA;
    while shared.measured.load(Ordering::SeqCst) < MIN_SAMPLES && Instant::now() < cap {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    shared.stopped.store(true, Ordering::SeqCst);
    let stopped_at = Instant::now();
    let mut outcome = Outcome {
        elapsed: stopped_at.saturating_duration_since(start),
        ..Outcome::default()
    };
    for task in tasks {
        let Ok(task) = task.await else {
            *outcome.errors.entry("task panicked".into()).or_default() += 1;
            continue;
        };
        outcome.latencies.extend(task.latencies);
        for (error, count) in task.errors {
            *outcome.errors.entry(error).or_default() += count;
        }
    }
    outcome.latencies.sort_unstable();
    outcome
}

async fn connection_task(client: Client, paths: Arc<[String]>, shared: Arc<Shared>) -> TaskOutcome {
    let mut outcome = TaskOutcome::default();
    let mut connection: Option<Connection> = None;
    while !shared.stopped.load(Ordering::SeqCst) {
        let mut open = match connection.take() {
            Some(open) => open,
            None => match Connection::open(&client).await {
                Ok(open) => open,
                Err(error) => {
                    *outcome
                        .errors
                        .entry(format!("connect: {error}"))
                        .or_default() += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let index = shared.next_path.fetch_add(1, Ordering::Relaxed) % paths.len();
        let path = &paths[index];
        let sent = Instant::now();
        // A request in flight when the window closes is still read to its end (and not
        // counted), so the server is idle when the next measurement starts.
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, open.get(&client, path)).await;
        let done = Instant::now();
        if shared.stopped.load(Ordering::SeqCst) {
            break;
        }
        match answer {
            Ok(Ok(response)) if response.status == 200 => {
                if done >= shared.start {
                    outcome.latencies.push(done - sent);
                    shared.measured.fetch_add(1, Ordering::SeqCst);
                }
                if !open.closed {
                    connection = Some(open);
                }
            }
            Ok(Ok(response)) => {
                let key = format!("{} {} on {path}", response.status, response.snippet());
                *outcome.errors.entry(key).or_default() += 1;
                if !open.closed {
                    connection = Some(open);
                }
            }
            Ok(Err(error)) => {
                *outcome
                    .errors
                    .entry(format!("I/O: {error} on {path}"))
                    .or_default() += 1;
            }
            Err(_) => {
                *outcome
                    .errors
                    .entry(format!("no answer within {REQUEST_TIMEOUT:?} on {path}"))
                    .or_default() += 1;
            }
        }
    }
    outcome
}
