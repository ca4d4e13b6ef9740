//! Headless Chromium over WebDriver for the browser tests (`browser.rs`, `explore.rs`): odqs on
//! a real socket, a chromedriver process, and the few WebDriver commands the tests use. Waits
//! poll for a condition; nothing sleeps for a fixed time hoping the page is ready.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`tests/tier2.sh` installs them); without them the
//! tests fail, they never skip.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

pub use crate::helpers::serve;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process, killed when dropped.
pub struct Driver {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    pub async fn start() -> Driver {
        for binary in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(binary).exists(),
                "{binary} is missing: install Debian's chromium and chromium-driver \
                 (apt-get install -y chromium chromium-driver; tests/tier2.sh does it)"
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let driver = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = match driver
                .http
                .get(format!("{}/status", driver.base))
                .send()
                .await
            {
                Ok(r) => r
                    .json::<Value>()
                    .await
                    .ok()
                    .is_some_and(|v| v["value"]["ready"] == true),
                Err(_) => false,
            };
            if ready {
                return driver;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not become ready in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A session with a phone-sized window.
    pub async fn session(&self) -> Browser {
        self.session_sized(412, 915).await
    }

    /// A session with a window of `width` × `height` pixels.
    pub async fn session_sized(&self, width: u32, height: u32) -> Browser {
        let created: Value = self
            .http
            .post(format!("{}/session", self.base))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", &format!("--window-size={width},{height}")]
                }
            }}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"));
        Browser {
            http: self.http.clone(),
            url: format!("{}/session/{id}", self.base),
        }
    }
}

/// One WebDriver session: the few commands this test needs.
pub struct Browser {
    http: reqwest::Client,
    url: String,
}

impl Browser {
    pub async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        if answer["value"].get("error").is_some() {
            panic!("WebDriver {path}: {}", answer["value"]);
        }
        answer["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    pub async fn current_url(&self) -> String {
        self.command(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    pub async fn source(&self) -> String {
        self.command(reqwest::Method::GET, "/source", None)
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    pub async fn find(&self, using: &str, value: &str) -> String {
        let found = self
            .command(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": using, "value": value})),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("{value}: {found}"))
            .to_string()
    }

    pub async fn click(&self, using: &str, value: &str) {
        let element = self.find(using, value).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find("css selector", css).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Signs up on `site`'s form as `email` (the helpers' password), going on to `next`.
    pub async fn sign_up(&self, site: &str, email: &str, next: &str) {
        self.goto(&format!("{site}/signup?next={next}")).await;
        self.type_into("#email", email).await;
        self.type_into("#password", "correct horse battery").await;
        self.click("css selector", "form[action='/signup'] button[type=submit]")
            .await;
    }

    /// Waits (at most 20 s) until the page's source contains `text`.
    pub async fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if self.source().await.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} did not appear; at {}:\n{}",
                self.current_url().await,
                self.source().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn screenshot(&self, path: &Path) {
        let png = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// Runs a Chrome DevTools Protocol command through chromedriver (`goog/cdp/execute`).
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.command(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            Some(json!({"cmd": cmd, "params": params})),
        )
        .await
    }

    /// Makes the page's viewport `width` × `height` CSS pixels, as a phone's below 500 px (the
    /// narrowest window Chromium opens is 500 px wide, so a window size cannot do it).
    pub async fn viewport(&self, width: u32, height: u32) {
        self.cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500}),
        )
        .await;
    }

    /// Runs `script` (a function body; `return` its answer) in the page.
    pub async fn eval(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Runs `script` (a function body that calls `done(answer)`, its last argument) in the page
    /// and waits for its answer.
    pub async fn eval_async(&self, script: &str) -> Value {
        let body = format!("const done = arguments[arguments.length - 1];\n{script}");
        self.command(
            reqwest::Method::POST,
            "/execute/async",
            Some(json!({"script": body, "args": []})),
        )
        .await
    }

    /// Waits (at most 20 s) until `condition` (a JavaScript expression) is true in the page.
    pub async fn wait_until(&self, condition: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let script = format!("return Boolean({condition});");
        loop {
            if self.eval(&script).await == Value::Bool(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{condition} did not become true; at {}:\n{}",
                self.current_url().await,
                self.source().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The text of the first element matching `css` (empty when there is none).
    pub async fn text(&self, css: &str) -> String {
        let css = serde_json::to_string(css).unwrap();
        self.eval(&format!(
            "const e = document.querySelector({css}); return e ? e.textContent : '';"
        ))
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    pub async fn close(&self) {
        let _ = self.http.delete(&self.url).send().await;
    }
}

pub fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("screenshots")
}
