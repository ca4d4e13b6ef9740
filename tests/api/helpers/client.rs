//! The one test client. Requests go through the real router in-process: JSON, forms and
//! GraphQL, with or without a bearer token. An answer is read as JSON ([`Answer`]) or as text
//! ([`Page`]); a [`Browser`] keeps cookies like a browser, sends from a client address, and
//! reads the CSRF token out of the last form it saw. [`get_ok_json`] is the same GET over a real
//! socket, for a server started with [`super::serve`].

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Method, Request, header};
use tower::ServiceExt;

/// Bodies are read whole, however large (an export runs to tens of megabytes).
const MAX_BODY: usize = usize::MAX;

/// A request to `path` with `Authorization: Bearer token` (when given), extra headers, and a
/// body of `content_type` (when given).
pub fn request(
    method: Method,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> Request<Body> {
    let mut request = Request::builder().method(method).uri(path);
    if let Some((content_type, _)) = &body {
        request = request.header(header::CONTENT_TYPE, *content_type);
    }
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = body.map_or_else(Body::empty, |(_, text)| Body::from(text));
    request.body(body).unwrap()
}

/// Sends `request` through the router; the status, the headers and the whole body.
pub async fn exchange(router: &axum::Router, request: Request<Body>) -> (u16, HeaderMap, Bytes) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), MAX_BODY)
        .await
        .unwrap();
    (status, headers, bytes)
}

/// An answer of the router: status, headers and the body as JSON (`Null` when it is not JSON).
pub struct Answer {
    pub status: u16,
    pub headers: axum::http::HeaderMap,
    pub body: serde_json::Value,
}

/// Sends `request` through the router and reads the answer as JSON.
pub async fn answer(router: &axum::Router, request: Request<Body>) -> Answer {
    let (status, headers, bytes) = exchange(router, request).await;
    Answer {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    }
}

/// Sends `GET path`; returns status and JSON body.
pub async fn get_json(router: &axum::Router, path: &str) -> (u16, serde_json::Value) {
    let answer = get_with(router, path, None, &[]).await;
    (answer.status, answer.body)
}

/// Sends `GET path` with `Authorization: Bearer token` (when given) and extra headers.
pub async fn get_with(
    router: &axum::Router,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> Answer {
    answer(router, request(Method::GET, path, token, headers, None)).await
}

/// POSTs a GraphQL request (`query` and `variables`) to `/api/v1/graphql` with the token.
pub async fn post_graphql(
    router: &axum::Router,
    token: Option<&str>,
    query: &str,
    variables: serde_json::Value,
) -> Answer {
    let body = serde_json::json!({"query": query, "variables": variables}).to_string();
    let request = request(
        Method::POST,
        "/api/v1/graphql",
        token,
        &[],
        Some(("application/json", body)),
    );
    answer(router, request).await
}

/// `GET url` over a socket with `Authorization: Bearer token`; the answer must be 200 JSON.
pub async fn get_ok_json(url: String, token: String) -> serde_json::Value {
    let response = reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// One answer.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    /// The `csrf` hidden field of the page's first form.
    pub fn csrf(&self) -> String {
        hidden(&self.body, "csrf").unwrap_or_else(|| panic!("no csrf field in:\n{}", self.body))
    }

    /// `Location` of a redirect.
    pub fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no Location in a {} answer", self.status))
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The value of `<input … name="NAME" value="…">` in `html`, unescaped.
pub fn hidden(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(unescape(&html[start..end]))
}

/// Undoes the HTML escaping the templates apply.
pub fn unescape(html: &str) -> String {
    html.replace("&#x2f;", "/")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A client with a cookie jar and an address.
pub struct Browser {
    pub router: axum::Router,
    pub cookies: BTreeMap<String, String>,
    pub address: SocketAddr,
}

impl Browser {
    pub fn new(router: axum::Router) -> Self {
        Browser {
            router,
            cookies: BTreeMap::new(),
            address: "192.0.2.1:40000".parse().unwrap(),
        }
    }

    /// The same browser seen from another client address.
    pub fn at(mut self, address: &str) -> Self {
        self.address = format!("{address}:40000").parse().unwrap();
        self
    }

    pub async fn send(&mut self, mut request: Request<Body>) -> Page {
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            request
                .headers_mut()
                .insert(header::COOKIE, jar.join("; ").parse().unwrap());
        }
        request.extensions_mut().insert(ConnectInfo(self.address));
        let (status, headers, bytes) = exchange(&self.router, request).await;
        for set in headers.get_all(header::SET_COOKIE) {
            let set = set.to_str().unwrap();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_string(), value.to_string());
            }
        }
        Page {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.send(request(Method::GET, path, None, &[], None)).await
    }

    /// A form POST with the fields as given (add `csrf` yourself).
    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let form = Some(("application/x-www-form-urlencoded", body));
        self.send(request(Method::POST, path, None, &[], form))
            .await
    }

    /// GETs `form_page`, then POSTs its form to `path` with its CSRF token and `fields`.
    pub async fn submit(&mut self, form_page: &str, path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.get(form_page).await.csrf();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    /// Signs up (and so in) with `email` and a fixed password.
    pub async fn sign_up(&mut self, email: &str) -> Page {
        let page = self
            .submit(
                "/signup",
                "/signup",
                &[("email", email), ("password", PASSWORD)],
            )
            .await;
        assert_eq!(page.status, 303, "sign-up failed: {}", page.body);
        page
    }
}

/// The password the helpers sign up with.
pub const PASSWORD: &str = "correct horse battery";

/// POSTs JSON to an API path (no cookies).
pub async fn post_json(router: &axum::Router, path: &str, body: serde_json::Value) -> Page {
    let request = request(
        Method::POST,
        path,
        None,
        &[],
        Some(("application/json", body.to_string())),
    );
    Browser::new(router.clone()).send(request).await
}

/// POSTs a form to an API path (no cookies).
pub async fn post_form(router: &axum::Router, path: &str, fields: &[(&str, &str)]) -> Page {
    Browser::new(router.clone()).post(path, fields).await
}

/// GETs an API path with a bearer token.
pub async fn get_with_token(router: &axum::Router, path: &str, token: &str) -> Page {
    let request = request(Method::GET, path, Some(token), &[], None);
    Browser::new(router.clone()).send(request).await
}
