//! A small browser for the site tests: sends requests through the real router in-process,
//! keeps cookies like a browser, and reads the CSRF token out of the last form it saw.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Request, header};
use tower::ServiceExt;

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
        let response = self.router.clone().oneshot(request).await.unwrap();
        for set in response.headers().get_all(header::SET_COOKIE) {
            let set = set.to_str().unwrap();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_string(), value.to_string());
            }
        }
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 4 << 20)
            .await
            .unwrap();
        Page {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.send(Request::get(path).body(Body::empty()).unwrap())
            .await
    }

    /// A form POST with the fields as given (add `csrf` yourself).
    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(fields).unwrap();
        self.send(
            Request::post(path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(body))
                .unwrap(),
        )
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
    Browser::new(router.clone())
        .send(
            Request::post(path)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
}

/// POSTs a form to an API path (no cookies).
pub async fn post_form(router: &axum::Router, path: &str, fields: &[(&str, &str)]) -> Page {
    Browser::new(router.clone()).post(path, fields).await
}

/// GETs an API path with a bearer token.
pub async fn get_with_token(router: &axum::Router, path: &str, token: &str) -> Page {
    Browser::new(router.clone())
        .send(
            Request::get(path)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
}
