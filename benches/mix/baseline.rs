//! The hardware's yardstick: a minimal axum 0.8 server that answers each simple read
//! of the mix (a, d, h) with the very bytes odqs answered, from memory, behind a bearer-header
//! check, on its own two-worker runtime like `odqs serve`. The load generator drives it in the
//! same run, so odqs's throughput is reported as a share of what this machine can do for an
//! answer of the same size.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The rows measured against the baseline, and the share of it each must reach.
pub const ROWS: [&str; 3] = ["a", "d", "h"];
pub const TARGET_SHARE: f64 = 0.25;

#[derive(Clone)]
struct Answers {
    authorization: Arc<str>,
    bodies: Arc<HashMap<String, Bytes>>,
}

async fn answer(State(answers): State<Answers>, request: Request) -> Response {
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v.as_bytes() == answers.authorization.as_bytes());
    if !authorized {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let path = request.uri().path_and_query().map_or("", |p| p.as_str());
    match answers.bodies.get(path) {
        Some(body) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body.clone(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The running server; dropping it stops it.
pub struct Baseline {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Baseline {
    /// Serves `bodies` (path and query → body) to requests carrying `authorization`.
    pub fn start(authorization: &str, bodies: HashMap<String, Bytes>) -> Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("bind the baseline")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let answers = Answers {
            authorization: authorization.into(),
            bodies: Arc::new(bodies),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("baseline runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let app = Router::new().fallback(answer).with_state(answers);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Ok(Self {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
