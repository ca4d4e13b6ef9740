//! Security, the HTTP side: what a flood of connections, tokens or odd requests can do to a
//! serving instance, on both stores. Servers are bound on real sockets where connections
//! matter, and driven in-process where only the request path does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::{TestStore, api_token, get_with, load_demo, post_graphql};
use odqs::http::server::ConnLimits;
use odqs::state::AppState;
use query::memory::IndexPolicy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A server on a socket; dropped, it is told to stop.
struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    async fn start(state: AppState) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(odqs::app::serve(state, listener, async move {
            let _ = stopped.await;
        }));
        Running {
            addr,
            stop: Some(stop),
            task,
        }
    }

    /// Asks for shutdown and waits until serving ended.
    async fn stop(mut self) -> Duration {
        let started = Instant::now();
        let _ = self.stop.take().unwrap().send(());
        (&mut self.task).await.unwrap().unwrap();
        started.elapsed()
    }
}

/// A connection to `addr` from the loopback address `from` (127.0.0.x), so that tests can play
/// several clients.
async fn connect_from(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((from, 0)))
        .expect("bind a loopback source address");
    socket.connect(addr).await.unwrap()
}

/// Sends one GET and reads the status line's code (the connection may be reused after).
async fn status_of(stream: &mut TcpStream, path: &str) -> u16 {
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: odqs.test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    read_status(stream).await
}

/// Reads one whole answer (with a `Content-Length`) and gives its status code.
async fn read_status(stream: &mut TcpStream) -> u16 {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let head = &text[..end];
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return head[9..12].parse().unwrap();
            }
        }
    }
}

/// Whether the peer closed `stream` (EOF or reset) within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(within, stream.read(&mut byte)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(_)) => panic!("the server answered a half-sent request"),
        Err(_) => false,
    }
}

/// Slowloris: connections that send part of a request head and nothing more are closed at the
/// header timeout, connections beyond the per-address cap at once, and another client is
/// served meanwhile.
async fn half_open_connections_are_closed(store: TestStore) {
    let header_timeout = Duration::from_secs(1);
    let limits = ConnLimits {
        header_timeout,
        max_per_address: 100,
        ..ConnLimits::default()
    };
    let server = Running::start(
        AppState::new(store.store.clone(), "http://odqs.test").with_conn_limits(limits),
    )
    .await;
    let opened = Instant::now();
    let mut held = Vec::new();
    for _ in 0..300 {
        let mut stream = connect_from([127, 0, 0, 1], server.addr).await;
        // The request head never ends.
        let _ = stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await;
        held.push(stream);
    }
    // Another client gets through while they are held.
    let mut other = connect_from([127, 0, 0, 2], server.addr).await;
    assert_eq!(status_of(&mut other, "/healthz").await, 200);
    // Beyond the per-address cap: closed at once (the first 100 are within it).
    let mut refused = 0;
    for stream in &mut held[100..] {
        if closed_within(stream, Duration::from_millis(200)).await {
            refused += 1;
        }
    }
    assert_eq!(refused, 200, "connections beyond the per-address cap");
    // Within it: closed by the header timeout, not before it.
    assert!(
        !closed_within(&mut held[0], Duration::from_millis(100)).await
            || opened.elapsed() >= header_timeout,
        "closed before the header timeout"
    );
    for stream in &mut held[..100] {
        let limit = (header_timeout + Duration::from_secs(2)).saturating_sub(opened.elapsed());
        assert!(
            closed_within(stream, limit).await,
            "a half-open connection outlived the header timeout"
        );
    }
    println!(
        "300 half-open connections: 200 refused at accept, 100 closed after {:?} (header timeout {header_timeout:?})",
        opened.elapsed()
    );
    server.stop().await;
}

/// An idle keep-alive connection is closed after the keep-alive timeout; one in use is not.
async fn idle_keepalive_connections_are_closed(store: TestStore) {
    let limits = ConnLimits {
        keepalive_timeout: Duration::from_millis(500),
        header_timeout: Duration::from_secs(10),
        ..ConnLimits::default()
    };
    let server = Running::start(
        AppState::new(store.store.clone(), "http://odqs.test").with_conn_limits(limits),
    )
    .await;
    let mut stream = connect_from([127, 0, 0, 1], server.addr).await;
    for _ in 0..3 {
        assert_eq!(status_of(&mut stream, "/healthz").await, 200);
    }
    let answered = Instant::now();
    assert!(closed_within(&mut stream, Duration::from_secs(3)).await);
    let idle = answered.elapsed();
    assert!(
        idle >= Duration::from_millis(450),
        "closed after {idle:?}, before the keep-alive timeout"
    );
    server.stop().await;
}

/// A request whose answer takes longer than the keep-alive timeout keeps its connection, even
/// one read before the previous answer was sent (pipelined): being answered is not idleness.
async fn slow_answers_are_not_idleness(store: TestStore) {
    let limits = ConnLimits {
        keepalive_timeout: Duration::from_millis(300),
        ..ConnLimits::default()
    };
    let server = Running::start(
        AppState::new(store.store.clone(), "http://odqs.test").with_conn_limits(limits),
    )
    .await;
    let mut stream = connect_from([127, 0, 0, 1], server.addr).await;
    // The second request's handler waits for the rest of its body: an answer that takes long.
    let body = r#"{"query":"{ __typename }"}"#;
    let (first, rest) = body.split_at(5);
    let pipelined = format!(
        "GET /healthz HTTP/1.1\r\nHost: odqs.test\r\n\r\n\
         POST /api/v1/graphql HTTP/1.1\r\nHost: odqs.test\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{first}",
        body.len()
    );
    stream.write_all(pipelined.as_bytes()).await.unwrap();
    assert_eq!(read_status(&mut stream).await, 200);
    assert!(
        !closed_within(&mut stream, Duration::from_millis(1500)).await,
        "the connection was closed while its request was being answered"
    );
    stream.write_all(rest.as_bytes()).await.unwrap();
    let status = read_status(&mut stream).await;
    assert!((200..500).contains(&status), "{status}");
    server.stop().await;
}

/// `/readyz` says 503 once shutdown begins, and draining ends at its deadline even when a
/// request never finishes.
async fn draining_has_a_deadline(store: TestStore) {
    let state =
        AppState::new(store.store.clone(), "http://odqs.test").with_conn_limits(ConnLimits {
            drain_timeout: Duration::from_millis(500),
            ..ConnLimits::default()
        });
    let router = odqs::app::router(state.clone());
    assert_eq!(crate::helpers::get_json(&router, "/readyz").await.0, 200);
    let server = Running::start(state.clone()).await;
    // A request whose body never comes: its handler waits for ever.
    let mut stuck = connect_from([127, 0, 0, 1], server.addr).await;
    stuck
        .write_all(
            b"POST /api/v1/graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
    // The request is in: wait until the server reads it (a second request on another
    // connection is answered, so the accept loop has run past the first).
    let mut probe = connect_from([127, 0, 0, 2], server.addr).await;
    assert_eq!(status_of(&mut probe, "/healthz").await, 200);
    let took = server.stop().await;
    assert!(
        took < Duration::from_secs(5),
        "draining took {took:?} with a 500 ms deadline"
    );
    let (status, body) = crate::helpers::get_json(&router, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "unavailable");
}

/// Requests the router refuses before any handler still get the contract's JSON errors.
async fn odd_requests_get_json_errors(store: TestStore) {
    let token = api_token(&store).await;
    let router = store.router();
    let answer = get_with(&router, "/api/v1/datasets/%FF", Some(&token), &[]).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body["error"], "invalid_parameter", "{}", answer.body);
    // A NUL anywhere a value is bound: a client error on both stores (PostgreSQL cannot bind
    // one), never a 500.
    load_demo(&store).await;
    for (path, status, code) in [
        ("/api/v1/datasets/a%00b", 404, "dataset_not_found"),
        (
            "/api/v1/datasets/flights/records/1%00",
            404,
            "record_not_found",
        ),
        (
            "/api/v1/datasets/flights/records?_ids=1%00",
            400,
            "invalid_parameter",
        ),
        (
            "/api/v1/datasets/flights/records?carrier=U%00A",
            400,
            "invalid_parameter",
        ),
        (
            "/api/v1/datasets/flights/records?q=a%00",
            400,
            "invalid_parameter",
        ),
        (
            "/api/v1/datasets/flights/agg?group_by=carrier&origin=%00",
            400,
            "invalid_parameter",
        ),
    ] {
        let answer = get_with(&router, path, Some(&token), &[]).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
        assert_eq!(answer.body["error"], code, "{path}: {}", answer.body);
    }
    let big = format!(
        "{{\"query\": \"{{ datasets {{ total }} }}\", \"pad\": \"{}\"}}",
        "x".repeat(3 << 20)
    );
    let request = axum::http::Request::post("/api/v1/graphql")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::from(big))
        .unwrap();
    use tower::ServiceExt;
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 413);
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).expect("a JSON body");
    assert_eq!(body["error"], "payload_too_large");
    assert_eq!(body["limit_bytes"], odqs::http::resilience::MAX_BODY_BYTES);
}

/// Every API answer announces its budget, and CORS lets a browser read it.
async fn answers_announce_rate_limits(store: TestStore) {
    let token = api_token(&store).await;
    let state = AppState::new(store.store.clone(), "http://odqs.test").with_rate_limits(5, 3);
    let router = odqs::app::router(state);
    let cors = [("origin", "https://elsewhere.example")];
    let ok = get_with(&router, "/api/v1/datasets", Some(&token), &cors).await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.headers["ratelimit-policy"], "\"token\";q=5;w=60");
    assert_eq!(ok.headers["ratelimit"], "\"token\";r=4;t=12");
    let exposed = ok.headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        exposed.contains("ratelimit-policy") && exposed.contains("ratelimit,")
            || exposed.ends_with("ratelimit"),
        "{exposed}"
    );
    // Without a token: the address's budget (the token's first use was charged to it too,
    // before the store confirmed the token).
    let anonymous = get_with(&router, "/api/v1/openapi.json", None, &[]).await;
    assert_eq!(anonymous.status, 200);
    assert_eq!(
        anonymous.headers["ratelimit-policy"],
        "\"address\";q=3;w=60"
    );
    assert_eq!(anonymous.headers["ratelimit"], "\"address\";r=1;t=40");
    let unknown = get_with(&router, "/api/v1/datasets", Some("odqs_made_up"), &[]).await;
    assert_eq!(unknown.status, 401);
    assert_eq!(unknown.headers["ratelimit"], "\"address\";r=0;t=60");
    let refused = get_with(&router, "/api/v1/datasets", Some("odqs_made_up_2"), &[]).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["error"], "rate_limited");
    assert_eq!(refused.headers["retry-after"], "20");
    assert_eq!(refused.headers["ratelimit"], "\"address\";r=0;t=20");
    // The known token is not held back by its address's exhausted budget.
    let still = get_with(&router, "/api/v1/datasets", Some(&token), &[]).await;
    assert_eq!(still.status, 200);
}

/// A flood of made-up tokens from one address costs at most the address's budget in store
/// queries, keeps nothing per token, and does not slow a valid token down.
async fn token_flood_stays_cheap(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let per_address = 100;
    let state = AppState::new(store.store.clone(), "http://odqs.test")
        .with_index_policy(IndexPolicy::waiting(query::memory::DEFAULT_BUDGET_BYTES))
        .with_rate_limits(1_000_000, per_address);
    let router = odqs::app::router(state.clone());
    let path = "/api/v1/datasets/flights/records?per_page=5";
    assert_eq!(get_with(&router, path, Some(&token), &[]).await.status, 200);

    let flood = 20_000;
    let workers = 4;
    let checked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (router, checked) = (router.clone(), checked.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..flood / workers {
                let made_up = format!("odqs_flood_{w}_{i}_{}", i * 7919);
                let answer = get_with(&router, "/api/v1/datasets", Some(&made_up), &[]).await;
                match answer.status {
                    401 => {
                        checked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    429 => {}
                    other => panic!("a made-up token got {other}"),
                }
                // A refusal never waits on anything: let the other tasks run, as a socket
                // between client and server would.
                tokio::task::yield_now().await;
            }
        }));
    }
    let flood_started = Instant::now();
    let mut latencies = Vec::new();
    while tasks.iter().any(|t| !t.is_finished()) {
        let started = Instant::now();
        let answer = get_with(&router, path, Some(&token), &[]).await;
        latencies.push(started.elapsed());
        assert_eq!(answer.status, 200);
    }
    for task in tasks {
        task.await.unwrap();
    }
    let flood_took = flood_started.elapsed();
    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100];
    let checked = checked.load(std::sync::atomic::Ordering::SeqCst);
    println!(
        "{flood} made-up tokens: {checked} checked against the store; valid token p50 {:?} p99 {p99:?} over {} requests",
        latencies[latencies.len() / 2],
        latencies.len()
    );
    // The burst, and what the budget refilled (100 a minute) while the flood ran: on a busy
    // machine the flood takes longer, and more may pass, but never more than that.
    let refilled = (flood_took.as_secs_f64() / 60.0 * f64::from(per_address)).ceil() as usize;
    assert!(
        checked <= per_address as usize + refilled + 1,
        "{checked} made-up tokens reached the store in {flood_took:?}"
    );
    assert!(
        state.rate_limits.addresses.keys() <= 1,
        "one key for one address"
    );
    // The flood and the valid requests share this test's two runtime threads, so the figure
    // is a sanity bound; the closing note's p99 is measured against a separate server process.
    assert!(
        p99 < Duration::from_secs(2),
        "valid token p99 {p99:?} under the flood"
    );
}

/// A token revoked through one instance stops working on another within two seconds, and at
/// once on the one that revoked it.
async fn revocation_reaches_every_instance(store: TestStore) {
    let user = odqs::auth::token::find_or_create_user(&store.store, "two@example.org")
        .await
        .unwrap();
    let (secret, model) = odqs::auth::token::mint(
        &store.store,
        user.id,
        "t",
        "account",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    let token = secret.expose().to_string();
    let one = store.state_with(IndexPolicy::OFF);
    let two = store.state_with(IndexPolicy::OFF);
    let (router_one, router_two) = (odqs::app::router(one.clone()), odqs::app::router(two));
    for router in [&router_one, &router_two] {
        assert_eq!(
            get_with(router, "/api/v1/datasets", Some(&token), &[])
                .await
                .status,
            200
        );
    }
    assert!(
        odqs::auth::account::revoke(&store.store, user.id, model.id)
            .await
            .unwrap()
    );
    one.token_cache.forget_token(model.id);
    let revoked = Instant::now();
    assert_eq!(
        get_with(&router_one, "/api/v1/datasets", Some(&token), &[])
            .await
            .status,
        401,
        "the revoking instance refuses at once"
    );
    loop {
        let status = get_with(&router_two, "/api/v1/datasets", Some(&token), &[])
            .await
            .status;
        if status == 401 {
            break;
        }
        assert_eq!(status, 200);
        assert!(
            revoked.elapsed() < Duration::from_secs(2),
            "the other instance still accepts the token after {:?}",
            revoked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "revocation reached the other instance after {:?}",
        revoked.elapsed()
    );
}

/// Reads whatever the server sends into `got` until it closes the connection; whether that
/// happened within `within` (an answer before the close is fine).
async fn drained_and_closed_within(
    stream: &mut TcpStream,
    within: Duration,
    got: &mut Vec<u8>,
) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return false,
        }
    }
}

/// A body trickled one byte at a time is cut at the body floor on every endpoint that reads
/// one, and an export whose client stops reading is cut at the send floor, which ends the
/// export (and gives its store turn back); a normal client is served meanwhile.
async fn slow_bodies_and_stalled_readers_are_cut(store: TestStore) {
    // 40,000 records of about 400 bytes: a 16 MB export, four times what the socket buffers
    // of both ends hold at most, so an unread export must stall.
    let mut lines = String::new();
    let note = "n".repeat(360);
    for i in 0..40_000 {
        lines.push_str(&format!("{{\"n\":{i},\"note\":\"{note} {i}\"}}\n"));
    }
    let path = crate::helpers::write_file(&store, "wide.ndjson", lines.as_bytes());
    crate::helpers::import_file(&store, &path, "wide", None, None)
        .await
        .unwrap();
    let token = api_token(&store).await;
    let window = Duration::from_secs(1);
    let limits = ConnLimits {
        body_timeout: window,
        send_timeout: window,
        ..ConnLimits::default()
    };
    let state = AppState::new(store.store.clone(), "http://odqs.test")
        .with_index_policy(IndexPolicy::OFF)
        .with_conn_limits(limits);
    let resolver = state.resolver.clone();
    let server = Running::start(state).await;
    for path in [
        "/api/v1/graphql",
        "/api/v1/mcp",
        "/api/v1/auth/device",
        "/login",
    ] {
        let mut slow = connect_from([127, 0, 0, 2], server.addr).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: odqs.test\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        );
        slow.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();
        let mut closed = false;
        let mut got = Vec::new();
        // One byte every 200 ms: 5 bytes a second, far under the floor.
        while started.elapsed() < window * 4 {
            if slow.write_all(b" ").await.is_err() {
                closed = true;
                break;
            }
            if drained_and_closed_within(&mut slow, Duration::from_millis(200), &mut got).await {
                closed = true;
                break;
            }
        }
        // The answer goes out before the close and says what happened, alike everywhere.
        let answer = String::from_utf8_lossy(&got);
        assert!(
            answer.starts_with("HTTP/1.1 408") && answer.contains("\"request_timeout\""),
            "{path}: {answer}"
        );
        assert!(
            closed,
            "{path}: a trickled body still open after {:?}",
            started.elapsed()
        );
        assert!(started.elapsed() >= window / 2, "{path}: cut too early");
    }
    // A client that asks for the whole export and reads nothing.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(server.addr).await.unwrap();
    let request = format!(
        "GET /api/v1/datasets/wide/export HTTP/1.1\r\nHost: odqs.test\r\n\
         Authorization: Bearer {token}\r\n\r\n"
    );
    stalled.write_all(request.as_bytes()).await.unwrap();
    let mut first = [0u8; 12];
    stalled.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let counters = resolver.export_counters();
    let stalled_at = Instant::now();
    while counters.running() > 0 {
        assert!(
            stalled_at.elapsed() < window * 6,
            "an export nobody reads still runs after {:?}",
            stalled_at.elapsed()
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        counters.records_read() < 40_000,
        "the export was cut before its end, not finished: {} records read",
        counters.records_read()
    );
    // Others are served all along.
    let mut other = connect_from([127, 0, 0, 3], server.addr).await;
    assert_eq!(status_of(&mut other, "/healthz").await, 200);
    drop(stalled);
    server.stop().await;
}

/// Anonymous connections from many addresses fill the server's cap; a client with a valid
/// token still gets in (pushing out the oldest connection of the busiest address), and once
/// its token is confirmed its connection stays.
async fn floods_leave_room_for_valid_tokens(store: TestStore) {
    let token = api_token(&store).await;
    let limits = ConnLimits {
        header_timeout: Duration::from_secs(60),
        max_connections: 64,
        max_per_address: 64,
        ..ConnLimits::default()
    };
    let state = AppState::new(store.store.clone(), "http://odqs.test").with_conn_limits(limits);
    let server = Running::start(state).await;
    let mut flood = Vec::new();
    for host in 10..18u8 {
        for _ in 0..20 {
            let mut stream = connect_from([127, 0, 0, host], server.addr).await;
            // Half a head: held open until the header timeout.
            stream
                .write_all(b"GET /api/v1/datasets HTTP/1.1\r\n")
                .await
                .unwrap();
            flood.push(stream);
        }
    }
    let request = format!(
        "GET /api/v1/datasets HTTP/1.1\r\nHost: odqs.test\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    let mut kept = connect_from([127, 0, 0, 50], server.addr).await;
    kept.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(read_status(&mut kept).await, 200, "a valid client gets in");
    for round in 0..10 {
        // More flood, from a new address each round…
        for _ in 0..10 {
            let mut stream = connect_from([127, 0, 0, 20 + round], server.addr).await;
            let _ = stream.write_all(b"GET / HTTP/1.1\r\n").await;
            flood.push(stream);
        }
        // …and the confirmed connection is still served.
        kept.write_all(request.as_bytes()).await.unwrap();
        assert_eq!(read_status(&mut kept).await, 200, "round {round}");
        // A fresh connection with a token gets in too.
        let mut fresh = connect_from([127, 0, 0, 51], server.addr).await;
        fresh.write_all(request.as_bytes()).await.unwrap();
        assert_eq!(read_status(&mut fresh).await, 200, "round {round}: fresh");
    }
    drop(flood);
    server.stop().await;
}

/// Exports are bounded per token at once (429 over it, before any work), the slot comes back
/// when the stream ends; heavy requests weigh more in the rate limit, announced in
/// `RateLimit`.
async fn exports_and_heavy_requests_are_bounded(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let state = AppState::new(store.store.clone(), "http://odqs.test").with_rate_limits(1000, 100);
    let router = odqs::app::router(state);
    let export = |token: &str| {
        axum::http::Request::get("/api/v1/datasets/tw-scenic-spots/export")
            .header("authorization", format!("Bearer {token}"))
            .body(axum::body::Body::empty())
            .unwrap()
    };
    use tower::ServiceExt;
    let mut held = Vec::new();
    for _ in 0..odqs::auth::export_slots::EXPORTS_PER_TOKEN {
        let response = router.clone().oneshot(export(&token)).await.unwrap();
        assert_eq!(response.status(), 200);
        held.push(response);
    }
    let refused = get_with(
        &router,
        "/api/v1/datasets/tw-scenic-spots/export",
        Some(&token),
        &[],
    )
    .await;
    assert_eq!(refused.status, 429, "{:?}", refused.body);
    assert_eq!(refused.body["error"], "rate_limited");
    assert!(refused.headers.contains_key("retry-after"));
    // A finished (here: dropped) export gives its slot back.
    held.pop();
    let again = router.clone().oneshot(export(&token)).await.unwrap();
    assert_eq!(again.status(), 200);
    drop((held, again));

    // A page costs one request; grouped statistics and a full-text search over 100,001
    // records weigh 1 + 11. The budget refills while they run, which the comparison allows
    // for.
    let mut lines = String::new();
    for i in 0..100_001 {
        lines.push_str(&format!(
            "{{\"kind\":\"k{}\",\"note\":\"note number {i} of the heavy set\"}}\n",
            i % 7
        ));
    }
    let path = crate::helpers::write_file(&store, "heavy.ndjson", lines.as_bytes());
    crate::helpers::import_file(&store, &path, "heavy", None, None)
        .await
        .unwrap();
    let state = AppState::new(store.store.clone(), "http://odqs.test").with_rate_limits(100, 100);
    let router = odqs::app::router(state);
    let left = |answer: &crate::helpers::Answer| -> i64 {
        let header = answer.headers["ratelimit"].to_str().unwrap().to_string();
        let r = header.split(";r=").nth(1).unwrap();
        r.split(';').next().unwrap().parse().unwrap()
    };
    let extra = query::cost::scan_extra(100_001) as i64;
    assert_eq!(extra, 11);
    // The budget is read when a request is charged, at its start: refills count from there.
    let mut charged_at = Instant::now();
    let mut before = get_with(&router, "/api/v1/datasets/heavy/records", Some(&token), &[]).await;
    assert_eq!(before.status, 200);
    for (path, weight) in [
        ("/api/v1/datasets/heavy/agg?group_by=kind", 1 + extra),
        ("/api/v1/datasets/heavy/records?q=number", 1 + extra),
        ("/api/v1/datasets/heavy/records?kind=k3", 1),
        ("/api/v1/datasets/flights/agg?group_by=carrier", 2),
    ] {
        let started = Instant::now();
        let after = get_with(&router, path, Some(&token), &[]).await;
        assert_eq!(after.status, 200, "{path}");
        // 100 a minute: one request back every 0.6 s.
        let refilled = (charged_at.elapsed().as_secs_f64() / 0.6).ceil() as i64 + 1;
        charged_at = started;
        let charged = left(&before) - left(&after);
        assert!(
            (weight - refilled..=weight).contains(&charged),
            "{path}: charged {charged}, weighs {weight} ({:?})",
            after.headers["ratelimit"]
        );
        before = after;
    }
}

both_stores!(
    half_open_connections_are_closed,
    slow_bodies_and_stalled_readers_are_cut,
    floods_leave_room_for_valid_tokens,
    exports_and_heavy_requests_are_bounded,
    idle_keepalive_connections_are_closed,
    slow_answers_are_not_idleness,
    draining_has_a_deadline,
    odd_requests_get_json_errors,
    answers_announce_rate_limits,
    token_flood_stays_cheap,
    revocation_reaches_every_instance,
);

/// PostgreSQL connections killed under load (`pg_terminate_backend`) never give a 500: the
/// request is retried once on a fresh connection, or answered 503 `unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_store_connections_never_give_500() {
    let (_store, token, router, database) = store_answering_all().await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        tokio::spawn(async move {
            use sqlx::Connection;
            let mut admin = sqlx::PgConnection::connect(&crate::helpers::pg_admin_url())
                .await
                .unwrap();
            let mut kills = 0u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                kills += cut_sessions(&mut admin, &database).await as u64;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            kills
        })
    };
    let paths = [
        "/api/v1/datasets",
        "/api/v1/datasets/flights/records?carrier=UA&per_page=3",
        "/api/v1/datasets/flights/agg?group_by=carrier&field=dep_delay",
    ];
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..4 {
        let (router, token) = (router.clone(), token.clone());
        workers.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut i = w;
            while started.elapsed() < Duration::from_secs(4) {
                let path = paths[i % paths.len()];
                seen.push(get_with(&router, path, Some(&token), &[]).await.status);
                let query = "{ datasets { total } }";
                seen.push(
                    post_graphql(&router, Some(&token), query, serde_json::json!({}))
                        .await
                        .status,
                );
                i += 1;
            }
            seen
        }));
    }
    for worker in workers {
        for status in worker.await.unwrap() {
            *statuses.entry(status).or_default() += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let kills = killer.await.unwrap();
    println!("{kills} connections killed; answers by status: {statuses:?}");
    assert!(kills > 0, "no connection was killed");
    assert_eq!(statuses.get(&500), None, "{statuses:?}");
    assert!(
        statuses.keys().all(|s| [200, 503].contains(s)),
        "{statuses:?}"
    );
}

/// Every PostgreSQL connection cut at once, just after use, costs no answer: a read that meets
/// a dead session runs once more, and after a store fault the pool checks each session it
/// hands out, so the second try gets a live one (`store::alive`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_of_every_store_connection_fails_no_read() {
    use sqlx::Connection;
    let (_store, token, router, database) = store_answering_all().await;
    let path = "/api/v1/datasets/flights/records?carrier=UA&per_page=3";
    let reads = || async {
        let answers = all_at_once(&router, &token, vec![path.to_string(); 8]).await;
        answers.iter().map(|a| a.status).collect::<Vec<u16>>()
    };
    assert_eq!(reads().await, vec![200; 8], "before the cut");
    let mut admin = sqlx::PgConnection::connect(&crate::helpers::pg_admin_url())
        .await
        .unwrap();
    let backends =
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()";
    let cut = cut_sessions(&mut admin, &database).await;
    assert!(cut >= 2, "{cut} sessions cut");
    // Gone from the server before the reads (bounded: a terminated backend exits at once).
    for _ in 0..500 {
        let left: Vec<(i32,)> = sqlx::query_as(backends)
            .bind(&database)
            .fetch_all(&mut admin)
            .await
            .unwrap();
        if left.is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(reads().await, vec![200; 8], "after the cut");
}

/// Record bodies are read on sessions kept out of the pool (`engine::store::sessions`); every
/// session cut at once costs no record: a read that meets a dead kept session drops it and
/// reads through the pool instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_of_the_kept_sessions_fails_no_record() {
    use sqlx::Connection;
    let store = TestStore::new(crate::helpers::Kind::Postgres).await;
    load_demo(&store).await;
    let token = api_token(&store).await;
    let policy = IndexPolicy::waiting(query::memory::DEFAULT_BUDGET_BYTES);
    let router = odqs::app::router(store.state_with(policy).with_rate_limits(0, 0));
    let database = store.pg_database().unwrap().to_string();
    // The demo's flights are every 168th flight, ids 1, 169, 337, …; each id is read once, so
    // no kept body answers it.
    let (router, token) = (&router, &token);
    let records = |from: usize| async move {
        let ids: Vec<String> = (from..from + 8)
            .map(|n| (1 + 168 * n).to_string())
            .collect();
        let paths = ids
            .iter()
            .map(|id| format!("/api/v1/datasets/flights/records/{id}"));
        let answers = all_at_once(router, token, paths.collect()).await;
        let got = answers.iter().zip(&ids);
        got.map(|(a, id)| (a.status, a.body["_id"] == id.as_str()))
            .collect::<Vec<_>>()
    };
    assert_eq!(records(0).await, vec![(200, true); 8], "before the cut");
    let mut admin = sqlx::PgConnection::connect(&crate::helpers::pg_admin_url())
        .await
        .unwrap();
    let cut = cut_sessions(&mut admin, &database).await;
    assert!(cut >= 2, "{cut} sessions cut");
    assert_eq!(records(8).await, vec![(200, true); 8], "after the cut");
    assert_eq!(records(16).await, vec![(200, true); 8], "later");
}

/// The answers to GETs of `paths` with `token`, all sent at once, in the order of `paths`.
async fn all_at_once(
    router: &axum::Router,
    token: &str,
    paths: Vec<String>,
) -> Vec<crate::helpers::Answer> {
    let workers: Vec<_> = paths
        .into_iter()
        .map(|path| {
            let (router, token) = (router.clone(), token.to_string());
            tokio::spawn(async move { get_with(&router, &path, Some(&token), &[]).await })
        })
        .collect();
    let mut answers = Vec::new();
    for worker in workers {
        answers.push(worker.await.unwrap());
    }
    answers
}

/// A PostgreSQL store with the demo, a token, and a router on which the store answers
/// everything, so every request uses a pooled session (no budget gets in the way); with the
/// database's name.
async fn store_answering_all() -> (TestStore, String, axum::Router, String) {
    let store = TestStore::new(crate::helpers::Kind::Postgres).await;
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = odqs::app::router(store.state_with(IndexPolicy::OFF).with_rate_limits(0, 0));
    let database = store.pg_database().unwrap().to_string();
    (store, token, router, database)
}

/// Terminates every session of `database` but `admin`'s own; returns how many.
async fn cut_sessions(admin: &mut sqlx::PgConnection, database: &str) -> usize {
    let killed: Vec<(bool,)> = sqlx::query_as(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(database)
    .fetch_all(admin)
    .await
    .unwrap();
    killed.len()
}
