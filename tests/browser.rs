//! The device flow end to end, as a person and a program live it (contract §8): the real
//! `oauth2` crate's device-flow client requests a code and polls, while headless Chromium,
//! driven over WebDriver, opens `verification_uri_complete`, is sent to log in, signs up,
//! comes back to the same request and presses 同意授權 (or 拒絕). The approved client ends
//! with a token that reads `/api/v1/datasets`; the refused one ends in `access_denied`.
//! Screenshots of `/device` and `/account` go to `target/screenshots/`.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them); without them
//! this test fails, it never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::TestStore;
use oauth2::basic::BasicClient;
use oauth2::{
    ClientId, DeviceAuthorizationUrl, DeviceCodeErrorResponseType, RequestTokenError,
    StandardDeviceAuthorizationResponse, TokenResponse, TokenUrl,
};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// odqs on a real socket, with the public URL it is reached at.
async fn serve(store: &TestStore) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = format!("http://{}", listener.local_addr().unwrap());
    let state = odqs::app::AppState::new(store.store.clone(), &site);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(odqs::app::serve(state, listener, async {
        let _ = stopped.await;
    }));
    (site, stop)
}

/// A chromedriver process, killed when dropped.
struct Driver {
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
    async fn start() -> Driver {
        for binary in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(binary).exists(),
                "{binary} is missing: install Debian's chromium and chromium-driver \
                 (apt-get install -y chromium chromium-driver; .ci/run does it)"
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

    async fn session(&self) -> Browser {
        let created: Value = self
            .http
            .post(format!("{}/session", self.base))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--window-size=412,915"]
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
struct Browser {
    http: reqwest::Client,
    url: String,
}

impl Browser {
    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
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

    async fn goto(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    async fn current_url(&self) -> String {
        self.command(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn source(&self) -> String {
        self.command(reqwest::Method::GET, "/source", None)
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn find(&self, using: &str, value: &str) -> String {
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

    async fn click(&self, using: &str, value: &str) {
        let element = self.find(using, value).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let element = self.find("css selector", css).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Waits (at most 20 s) until the page's source contains `text`.
    async fn wait_for(&self, text: &str) {
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

    async fn screenshot(&self, path: &Path) {
        let png = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    async fn close(&self) {
        let _ = self.http.delete(&self.url).send().await;
    }
}

fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("screenshots")
}

async fn device_flow_in_a_browser(store: TestStore) {
    let kind = format!("{:?}", store.kind).to_lowercase();
    let (site, stop) = serve(&store).await;
    let driver = Driver::start().await;
    let browser = driver.session().await;

    // The program: the real oauth2 device-flow client, two requests.
    let client = BasicClient::new(ClientId::new("odqs-e2e".to_string()))
        .set_device_authorization_url(
            DeviceAuthorizationUrl::new(format!("{site}/api/v1/auth/device")).unwrap(),
        )
        .set_token_uri(TokenUrl::new(format!("{site}/api/v1/auth/token")).unwrap());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut requests: Vec<StandardDeviceAuthorizationResponse> = Vec::new();
    for _ in 0..2 {
        requests.push(
            client
                .exchange_device_code()
                .request_async(&http)
                .await
                .unwrap(),
        );
    }
    let pollers: Vec<_> = requests
        .iter()
        .map(|details| {
            let (client, http, details) = (client.clone(), http.clone(), details.clone());
            tokio::spawn(async move {
                client
                    .exchange_device_access_token(&details)
                    .request_async(&http, tokio::time::sleep, Some(Duration::from_secs(120)))
                    .await
            })
        })
        .collect();
    let approve_uri = requests[0]
        .verification_uri_complete()
        .unwrap()
        .secret()
        .to_string();
    let deny_uri = requests[1]
        .verification_uri_complete()
        .unwrap()
        .secret()
        .to_string();
    let approve_code = requests[0].user_code().secret().to_string();
    assert_eq!(approve_uri, format!("{site}/device?code={approve_code}"));

    // The person: opens the link, is sent to log in, signs up instead, comes back.
    browser.goto(&approve_uri).await;
    assert!(browser.current_url().await.contains("/login?next="));
    browser
        .click("css selector", "a[href^='/signup?next=']")
        .await;
    browser.wait_for("Create a free account").await;
    browser
        .type_into("#email", &format!("ada-{kind}@example.org"))
        .await;
    browser
        .type_into("#password", "correct horse battery")
        .await;
    browser
        .click("css selector", "form[action='/signup'] button[type=submit]")
        .await;
    browser.wait_for("同意授權").await;
    assert_eq!(
        browser.current_url().await,
        approve_uri,
        "back at the same request"
    );
    let page = browser.source().await;
    assert!(
        page.contains(&approve_code) && page.contains("odqs-e2e"),
        "code and client shown"
    );
    browser
        .screenshot(&screenshots().join(format!("{kind}-device.png")))
        .await;
    browser
        .click("xpath", "//button[normalize-space()='同意授權']")
        .await;
    browser.wait_for("id=\"result\"").await;
    assert!(browser.source().await.contains("Approved"));

    browser.goto(&deny_uri).await;
    browser.wait_for("拒絕").await;
    browser
        .click("xpath", "//button[normalize-space()='拒絕']")
        .await;
    browser.wait_for("id=\"result\"").await;
    assert!(browser.source().await.contains("Refused"));

    // The program: one token, which reads the API; one refusal.
    let mut pollers = pollers.into_iter();
    let approved = pollers
        .next()
        .unwrap()
        .await
        .unwrap()
        .expect("a token after 同意授權");
    assert_eq!(approved.expires_in(), Some(Duration::from_secs(86400)));
    let token = approved.access_token().secret().clone();
    assert!(token.starts_with("odqs_"));
    match pollers.next().unwrap().await.unwrap() {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), DeviceCodeErrorResponseType::AccessDenied);
        }
        other => panic!("expected access_denied after 拒絕, got {other:?}"),
    }

    // The account page lists the device token and makes a long-lived one, shown once.
    browser.goto(&format!("{site}/account")).await;
    browser.type_into("#name", "laptop scripts").await;
    browser
        .click(
            "css selector",
            "form[action='/account/tokens'] button[type=submit]",
        )
        .await;
    browser.wait_for("id=\"new-token\"").await;
    let page = browser.source().await;
    assert!(page.contains("odqs-e2e") && page.contains("laptop scripts"));
    browser
        .screenshot(&screenshots().join(format!("{kind}-account.png")))
        .await;

    // The device token reads the API.
    let datasets = reqwest::Client::new()
        .get(format!("{site}/api/v1/datasets"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(datasets.status(), 200);
    let body: Value = datasets.json().await.unwrap();
    assert!(body["datasets"].is_array(), "{body}");

    browser.close().await;
    let _ = stop.send(());
}

both_stores!(device_flow_in_a_browser);
