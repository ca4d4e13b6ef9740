//! Account pages (contract §9): `/signup`, `/login`, `/logout`, and the helpers every page
//! uses; `/account` and its tokens are in [`super::account_page`]. Handlers are thin: the
//! store work is in `crate::auth`.

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use minijinja::{Value, context};
use serde::Deserialize;

use super::visitor::{Posted, SESSION_COOKIE, Visitor, see_other, unavailable};
use crate::auth::account::{self, SigninError, SignupError};
use crate::auth::throttle::Verdict;
use crate::auth::{password, session, throttle, token};
use crate::state::AppState;
use crate::store::StoreError;
use crate::templates::render;

/// Renders `template` for `visitor` with `status`; the header's context (who is signed in,
/// the CSRF token) is added to `ctx`.
pub fn page(visitor: &Visitor, status: StatusCode, template: &str, ctx: Value) -> Response {
    let ctx = context! { user => visitor.email(), csrf => visitor.csrf.clone(), ..ctx };
    let response = match render(template, ctx) {
        Ok(html) => (status, Html(html)).into_response(),
        Err(status) => status.into_response(),
    };
    visitor.finish(response)
}

/// A page with a heading and one message (errors, refusals, throttling).
pub fn message_page(
    status: StatusCode,
    visitor: Option<&Visitor>,
    heading: &str,
    message: &str,
) -> Response {
    let ctx = context! { heading, message };
    match visitor {
        Some(v) => page(v, status, "message.html", ctx),
        None => match render("message.html", ctx) {
            Ok(html) => {
                let mut r = (status, Html(html)).into_response();
                r.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                r
            }
            Err(status) => status.into_response(),
        },
    }
}

/// Logs a store failure and answers the 503 page.
pub fn store_failed(e: StoreError) -> Response {
    tracing::error!(error = %e, "site: store failure");
    unavailable()
}

/// A read through the resolver layer failed (the store is down): the 503 page.
pub fn read_failed(e: crate::http::error::ApiError) -> Response {
    tracing::error!(error = %e, "site: read failure");
    unavailable()
}

/// 429 with `Retry-After`.
pub fn too_many(visitor: &Visitor, retry_after: i64, what: &str) -> Response {
    let minutes = (retry_after + 59) / 60;
    let mut response = message_page(
        StatusCode::TOO_MANY_REQUESTS,
        Some(visitor),
        "Too many attempts",
        &format!("Too many {what}. Try again in {minutes} minute(s)."),
    );
    if let Ok(v) = HeaderValue::from_str(&retry_after.max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

/// 503 with `Retry-After` when every password-hashing worker is taken and the line waiting
/// for one is full ([`password::Hashing`]): refused at once rather than queued.
pub fn hashing_busy(visitor: &Visitor) -> Response {
    let mut response = message_page(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(visitor),
        "Busy",
        "Too many people are signing in or up right now. Try again in a few seconds.",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(password::BUSY_RETRY_AFTER_SECS),
    );
    response
}

/// Where to go after signing in: a path on this site only (no open redirect).
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && !n.chars().any(|c| c.is_control()) =>
        {
            n.to_string()
        }
        _ => "/account".to_string(),
    }
}

fn next_query(next: &str) -> String {
    if next == "/account" {
        String::new()
    } else {
        format!("?next={}", crate::http::url::encode(next))
    }
}

/// `?next=` on the login and sign-up pages.
#[derive(Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

/// The login and sign-up forms' fields.
#[derive(Deserialize)]
pub struct Credentials {
    email: String,
    password: String,
    next: Option<String>,
}

fn credentials_page(
    visitor: &Visitor,
    status: StatusCode,
    template: &str,
    next: &str,
    email: &str,
    error: Option<&str>,
) -> Response {
    page(
        visitor,
        status,
        template,
        context! {
            next, next_query => next_query(next), email, error,
            min_len => password::MIN_LEN,
            reason => (next.starts_with("/device")).then_some("Log in to approve the device request; you will come back to it."),
        },
    )
}

/// Starts a session for `user_id` and redirects to `next` with its cookie.
async fn start_session(state: &AppState, visitor: &Visitor, user_id: i64, next: &str) -> Response {
    match session::create(&state.store, user_id).await {
        Ok((secret, _)) => {
            let mut response = see_other(next);
            visitor.set_cookie(
                response.headers_mut(),
                SESSION_COOKIE,
                secret.expose(),
                Some(session::LIFETIME.whole_seconds()),
            );
            visitor.finish(response)
        }
        Err(e) => store_failed(e),
    }
}

/// `GET /signup`.
pub async fn signup_form(visitor: Visitor, Query(q): Query<NextQuery>) -> Response {
    let next = safe_next(q.next.as_deref());
    if visitor.signed_in.is_some() {
        return see_other(&next);
    }
    credentials_page(&visitor, StatusCode::OK, "signup.html", &next, "", None)
}

/// `POST /signup`: creates the account and signs in. The cheap checks come first (the CSRF
/// token in [`Posted`], the form, the per-address and site-wide throttles, whether the address
/// is taken), so only a request that may create an account reaches the password hash, and that
/// through the bounded [`password::Hashing`] workers.
pub async fn signup(State(state): State<AppState>, posted: Posted<Credentials>) -> Response {
    let Posted { visitor, form } = posted;
    let next = safe_next(form.next.as_deref());
    let refuse = |msg: &str| {
        credentials_page(
            &visitor,
            StatusCode::BAD_REQUEST,
            "signup.html",
            &next,
            &form.email,
            Some(msg),
        )
    };
    let Some(email) = token::normalize_email(&form.email) else {
        return refuse("That is not an e-mail address.");
    };
    let length = form.password.chars().count();
    if length < password::MIN_LEN {
        return refuse(&format!(
            "Choose a password of at least {} characters.",
            password::MIN_LEN
        ));
    }
    if length > password::MAX_LEN {
        return refuse("That password is too long.");
    }
    let address_key = [(
        throttle::key("signup:ip", &visitor.address),
        throttle::SIGNUP_PER_ADDRESS,
    )];
    match state.throttles.take_all(&address_key).await {
        Ok(Verdict::Allowed) => {}
        Ok(Verdict::Refused { retry_after }) => {
            return too_many(&visitor, retry_after, "sign-ups from this address");
        }
        Err(e) => return store_failed(e),
    }
    // The site's budget is counted only for attempts within their address's, so one address
    // cannot spend it; a refusal here gives the address's attempt back.
    let site_key = throttle::key("signup:all", "");
    match state
        .throttles
        .take(&site_key, throttle::SIGNUP_GLOBAL)
        .await
    {
        Ok(Verdict::Allowed) => {}
        Ok(Verdict::Refused { retry_after }) => {
            state.throttles.give_back(&address_key).await;
            return too_many(&visitor, retry_after, "sign-ups on this site just now");
        }
        Err(e) => {
            state.throttles.give_back(&address_key).await;
            return store_failed(e);
        }
    }
    let both = [address_key[0].clone(), (site_key, throttle::SIGNUP_GLOBAL)];
    match account::sign_up(&state.store, &state.hashing, &email, form.password.clone()).await {
        Ok(user) => start_session(&state, &visitor, user.id, &next).await,
        Err(SignupError::Taken) => credentials_page(
            &visitor,
            StatusCode::CONFLICT,
            "signup.html",
            &next,
            &form.email,
            Some("This address already has an account. Log in instead."),
        ),
        Err(SignupError::Busy) => {
            // Nothing was created: the attempt does not count.
            state.throttles.give_back(&both).await;
            hashing_busy(&visitor)
        }
        Err(SignupError::Store(e)) => {
            state.throttles.give_back(&both).await;
            store_failed(e)
        }
    }
}

/// `GET /login`.
pub async fn login_form(visitor: Visitor, Query(q): Query<NextQuery>) -> Response {
    let next = safe_next(q.next.as_deref());
    if visitor.signed_in.is_some() {
        return see_other(&next);
    }
    credentials_page(&visitor, StatusCode::OK, "login.html", &next, "", None)
}

/// `POST /login`, throttled per account and per client address (wrong passwords only count;
/// a right one clears the account's counter).
pub async fn login(State(state): State<AppState>, posted: Posted<Credentials>) -> Response {
    let Posted { visitor, form } = posted;
    let next = safe_next(form.next.as_deref());
    let email =
        token::normalize_email(&form.email).unwrap_or_else(|| form.email.trim().to_lowercase());
    let account_key = throttle::key("login:email", &email);
    // The address first: an address over its budget is refused from memory before a key for
    // the typed e-mail address is made (a flood of invented addresses makes no keys).
    let keys = [
        (
            throttle::key("login:ip", &visitor.address),
            throttle::LOGIN_PER_ADDRESS,
        ),
        (account_key.clone(), throttle::LOGIN_PER_ACCOUNT),
    ];
    // Counted before the password is checked, so concurrent guesses cannot outrun the budget;
    // a right password gives its attempt back.
    match state.throttles.take_all(&keys).await {
        Ok(Verdict::Allowed) => {}
        Ok(Verdict::Refused { retry_after }) => {
            return too_many(&visitor, retry_after, "failed logins");
        }
        Err(e) => return store_failed(e),
    }
    let signed_in =
        account::sign_in(&state.store, &state.hashing, &email, form.password.clone()).await;
    match signed_in {
        Ok(Some(user)) => {
            let _ = state.throttles.clear(&account_key).await;
            state.throttles.give_back(&keys[..1]).await;
            start_session(&state, &visitor, user.id, &next).await
        }
        Ok(None) => credentials_page(
            &visitor,
            StatusCode::UNAUTHORIZED,
            "login.html",
            &next,
            &form.email,
            Some("Wrong e-mail address or password."),
        ),
        Err(SigninError::Busy) => {
            // The password was not checked: the attempt does not count.
            state.throttles.give_back(&keys).await;
            hashing_busy(&visitor)
        }
        Err(SigninError::Store(e)) => {
            state.throttles.give_back(&keys).await;
            store_failed(e)
        }
    }
}

/// `GET /logout`: a button, because a link must not be able to log anyone out.
pub async fn logout_form(visitor: Visitor) -> Response {
    page(&visitor, StatusCode::OK, "logout.html", context! {})
}

/// The CSRF field only.
#[derive(Deserialize)]
pub struct Empty {}

/// `POST /logout`: deletes the session row and the cookie.
pub async fn logout(State(state): State<AppState>, posted: Posted<Empty>) -> Response {
    let visitor = posted.visitor;
    if let Some(signed_in) = &visitor.signed_in {
        if let Err(e) = session::delete(&state.store, signed_in.session.id).await {
            return store_failed(e);
        }
        if let Err(e) = account::end_explorer_tokens(&state.store, signed_in.user.id).await {
            return store_failed(e);
        }
        // Ended here: refused at once, not when the cached confirmation lapses.
        state.token_cache.forget_user(signed_in.user.id);
    }
    let mut response = see_other("/");
    visitor.set_cookie(response.headers_mut(), SESSION_COOKIE, "", Some(0));
    response
}

#[cfg(test)]
mod tests {
    #[test]
    fn next_stays_on_the_site() {
        assert_eq!(
            super::safe_next(Some("/device?code=BCDF-GHJK")),
            "/device?code=BCDF-GHJK"
        );
        assert_eq!(super::safe_next(Some("//evil.example")), "/account");
        assert_eq!(super::safe_next(Some("https://evil.example")), "/account");
        assert_eq!(super::safe_next(None), "/account");
    }
}
