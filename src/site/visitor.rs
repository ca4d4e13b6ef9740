//! Who is asking, for the site's pages: the session cookie, the CSRF token forms must echo,
//! and the client address that throttling counts ([`crate::http::client_addr`]).
//!
//! CSRF protection (contract §9) has three layers: cookies are `SameSite=Lax`, so a
//! cross-site POST carries none; every POST must carry a `csrf` field equal to the session's
//! token (signed in) or to the pre-session `odqs_csrf` cookie (signed out: the login and
//! sign-up forms, the double-submit pattern); and a POST whose `Origin` is not the public URL's
//! is refused. [`Posted`] applies all of them, so no form handler can forget one.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::pages::message_page;
use crate::auth::session::{self, SignedIn};
use crate::auth::token::random_secret;
use crate::http::client_addr;
use crate::state::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "odqs_session";
/// The pre-session CSRF cookie's name (forms shown to a visitor who is not signed in).
pub const CSRF_COOKIE: &str = "odqs_csrf";
/// Largest form body accepted.
const MAX_FORM: usize = 64 * 1024;

/// The visitor of a page: signed in or not, with the CSRF token their forms must carry.
#[derive(Clone, Debug)]
pub struct Visitor {
    pub signed_in: Option<SignedIn>,
    /// What a form's hidden `csrf` field must hold.
    pub csrf: String,
    /// A pre-session cookie was just made up and must be set on the response.
    fresh_csrf_cookie: bool,
    /// Cookies get `Secure` when the public URL is https.
    pub secure: bool,
    /// The client's address as per-address throttles count it
    /// ([`client_addr::throttle_subject`] of [`client_addr::of`]).
    pub address: String,
}

impl Visitor {
    /// The signed-in account's e-mail address, for the page header.
    pub fn email(&self) -> Option<&str> {
        self.signed_in.as_ref().map(|s| s.user.email.as_str())
    }

    /// Adds the headers every page gets: no caching (pages carry CSRF tokens and personal
    /// data), no framing (the approval page must not be click-jacked), and the pre-session
    /// cookie when it was just made.
    pub fn finish(&self, mut response: Response) -> Response {
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
        headers.insert(
            "content-security-policy",
            HeaderValue::from_static(
                "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self'; \
                 connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
        );
        headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
        headers.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        if self.fresh_csrf_cookie {
            self.set_cookie(headers, CSRF_COOKIE, &self.csrf, None);
        }
        response
    }

    /// Appends a `Set-Cookie` for `name`: HttpOnly, SameSite=Lax, Path=/, Secure on https;
    /// `max_age` `Some(0)` deletes it, `None` makes a browser-session cookie.
    pub fn set_cookie(
        &self,
        headers: &mut HeaderMap,
        name: &str,
        value: &str,
        max_age: Option<i64>,
    ) {
        let mut cookie = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
        if let Some(age) = max_age {
            cookie.push_str(&format!("; Max-Age={age}"));
        }
        if self.secure {
            cookie.push_str("; Secure");
        }
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Cookie values we make are base62; anything else is ignored rather than looked up.
fn plausible(value: &str) -> bool {
    (20..=100).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl FromRequestParts<AppState> for Visitor {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let secure = state.public_url.starts_with("https://");
        let address = client_addr::throttle_subject(client_addr::of(parts, &state.trusted_proxies));
        let signed_in = match cookie(&parts.headers, SESSION_COOKIE).filter(|v| plausible(v)) {
            Some(secret) => session::find(&state.store, secret).await.map_err(|e| {
                tracing::error!(error = %e, "site: session look-up failed");
                unavailable()
            })?,
            None => None,
        };
        let (csrf, fresh_csrf_cookie) = match &signed_in {
            Some(s) => (s.session.csrf_token.clone(), false),
            None => match cookie(&parts.headers, CSRF_COOKIE).filter(|v| plausible(v)) {
                Some(v) => (v.to_string(), false),
                None => (random_secret("").expose().to_string(), true),
            },
        };
        Ok(Visitor {
            signed_in,
            csrf,
            fresh_csrf_cookie,
            secure,
            address,
        })
    }
}

/// The 503 page when the store cannot be reached.
pub fn unavailable() -> Response {
    message_page(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        "Temporarily unavailable",
        "The service cannot reach its data store right now. Try again in a moment.",
    )
}

/// A form POST that passed the CSRF checks, with its visitor and its fields.
pub struct Posted<T> {
    pub visitor: Visitor,
    pub form: T,
}

fn forbidden(reason: &str) -> Response {
    message_page(
        StatusCode::FORBIDDEN,
        None,
        "Form refused",
        &format!("{reason} Go back, reload the page and send the form again."),
    )
}

/// `scheme://host[:port]` of a URL.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for Posted<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let visitor = Visitor::from_request_parts(&mut parts, state).await?;
        let site_origin = origin_of(&state.public_url);
        match parts
            .headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or(""))
        {
            Some(origin) if !origin.eq_ignore_ascii_case(site_origin) => {
                return Err(forbidden(&format!(
                    "This form was sent from {origin}, not from this site ({site_origin})."
                )));
            }
            Some(_) => {}
            None => {
                let cross = parts
                    .headers
                    .get("sec-fetch-site")
                    .is_some_and(|v| v.as_bytes() == b"cross-site");
                if cross {
                    return Err(forbidden("This form was sent from another site."));
                }
            }
        }
        let bytes = axum::body::to_bytes(body, MAX_FORM)
            .await
            .map_err(|_| forbidden("The form is too large."))?;
        let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
            .map_err(|_| forbidden("The form is malformed."))?;
        let sent = fields
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str());
        let matches = !visitor.fresh_csrf_cookie
            && sent.is_some_and(|s| constant_time_eq(s.as_bytes(), visitor.csrf.as_bytes()));
        if !matches {
            return Err(forbidden(
                "This form's security token is missing or out of date (or cookies are off).",
            ));
        }
        let form = serde_urlencoded::from_bytes(&bytes)
            .map_err(|_| forbidden("The form is missing a field."))?;
        Ok(Posted { visitor, form })
    }
}

/// Compares without stopping at the first difference, so timing tells nothing about a token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A redirect after a POST (303 See Other) or to the login page.
pub fn see_other(location: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(
            header::LOCATION,
            HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/")),
        )],
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(
            origin_of("https://odqs.example.org"),
            "https://odqs.example.org"
        );
        assert_eq!(
            origin_of("http://127.0.0.1:8080/x"),
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn cookies() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; odqs_session=abc; b=2"),
        );
        assert_eq!(cookie(&headers, "odqs_session"), Some("abc"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
