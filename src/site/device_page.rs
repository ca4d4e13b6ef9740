//! `/device`, the browser side of the device flow (contract §8–§9, RFC 8628 §3.3): enter a
//! code (or arrive with `?code=`), compare it and the requesting `device_name` / `client` with
//! the terminal and what it asks to do (its scope in words), then 同意授權 (approve) or 拒絕 (refuse). Signing in comes first and returns
//! here. Unknown codes count against the account and the client address (RFC 8628 §5.1), so
//! guessing a live code is hopeless within its 15-minute lifetime; every attempt is counted
//! before the code is looked up, and given back when the code exists.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use minijinja::context;
use serde::Deserialize;

use super::pages::{page, store_failed, too_many};
use super::visitor::{Posted, Visitor, see_other};
use crate::auth::grant::{self, Decision, Lookup};
use crate::auth::throttle::{self, Verdict};
use crate::guides::when;
use crate::http::url::encode;
use crate::state::AppState;

/// `?code=` on `GET /device`.
#[derive(Deserialize)]
pub struct CodeQuery {
    code: Option<String>,
}

/// The approval form.
#[derive(Deserialize)]
pub struct DecisionForm {
    code: String,
    decision: String,
}

fn stage(visitor: &Visitor, status: StatusCode, stage: &str, ctx: minijinja::Value) -> Response {
    page(visitor, status, "device.html", context! { stage, ..ctx })
}

/// A problem page: the message in English and in Traditional Chinese (the page is bilingual;
/// the template marks the Chinese with `lang="zh-Hant"`).
fn problem(visitor: &Visitor, status: StatusCode, message: &str, message_zh: &str) -> Response {
    stage(visitor, status, "problem", context! { message, message_zh })
}

fn keys(visitor: &Visitor, user_id: i64) -> [(String, throttle::Limit); 2] {
    [
        (
            throttle::key("code:user", &user_id.to_string()),
            throttle::CODE_PER_ACCOUNT,
        ),
        (
            throttle::key("code:ip", &visitor.address),
            throttle::CODE_PER_ADDRESS,
        ),
    ]
}

/// Counts this attempt against the account and the address before the code is looked up, and
/// refuses when either is over its budget: counting first is what holds the budget when many
/// attempts arrive at once. A code that turns out to exist is given back
/// ([`throttle::Throttles::give_back`]); only unknown codes stay counted.
async fn take_attempt(
    state: &AppState,
    visitor: &Visitor,
    keys: &[(String, throttle::Limit)],
) -> Option<Response> {
    match state.throttles.take_all(keys).await {
        Ok(Verdict::Allowed) => None,
        Ok(Verdict::Refused { retry_after }) => Some(too_many(visitor, retry_after, "wrong codes")),
        Err(e) => Some(store_failed(e)),
    }
}

/// The page for a code that is not pending.
fn not_pending(visitor: &Visitor, lookup: &Lookup) -> Response {
    match lookup {
        Lookup::Expired => problem(
            visitor,
            StatusCode::GONE,
            "This code has expired. Start again in your terminal to get a new one.",
            "代碼已過期。請在終端機重新開始以取得新代碼。",
        ),
        Lookup::Decided => problem(
            visitor,
            StatusCode::CONFLICT,
            "This code has already been used. Start again in your terminal if you still need access.",
            "代碼已使用。如仍需存取，請在終端機重新開始。",
        ),
        _ => problem(
            visitor,
            StatusCode::NOT_FOUND,
            "No request has this code. Check the code in your terminal and type it again.",
            "查無此代碼。請核對終端機上的代碼後重新輸入。",
        ),
    }
}

/// `GET /device[?code=XXXX-XXXX]`.
pub async fn show(
    State(state): State<AppState>,
    visitor: Visitor,
    Query(q): Query<CodeQuery>,
) -> Response {
    let typed = q.code.unwrap_or_default();
    let normalized = grant::normalize_user_code(&typed);
    let Some(signed_in) = &visitor.signed_in else {
        let next = match &normalized {
            Some(code) => format!("/device?code={code}"),
            None => "/device".to_string(),
        };
        return see_other(&format!("/login?next={}", encode(&next)));
    };
    let user_id = signed_in.user.id;
    if typed.trim().is_empty() {
        return stage(&visitor, StatusCode::OK, "enter", context! { code => "" });
    }
    let Some(code) = normalized else {
        return stage(
            &visitor,
            StatusCode::BAD_REQUEST,
            "enter",
            context! {
                code => typed,
                error => "A code has eight letters, like BCDF-GHJK.",
                error_zh => "代碼為八個字母。",
            },
        );
    };
    let keys = keys(&visitor, user_id);
    if let Some(refused) = take_attempt(&state, &visitor, &keys).await {
        return refused;
    }
    let found = grant::look_up(&state.store, &code).await;
    if !matches!(found, Ok(Lookup::Unknown)) {
        state.throttles.give_back(&keys).await;
    }
    match found {
        Ok(Lookup::Pending(grant)) => stage(
            &visitor,
            StatusCode::OK,
            "confirm",
            context! {
                code,
                device_name => grant.device_name,
                client => grant.client,
                created => when(grant.created_at),
                access => format!(
                    "{} for {} hours",
                    query::Scope::from_stored(&grant.scope).describe(),
                    grant::TOKEN_EXPIRES_IN / 3600
                ),
                scope => grant.scope,
            },
        ),
        Ok(other) => not_pending(&visitor, &other),
        Err(e) => store_failed(e),
    }
}

/// `POST /device`: 同意授權 or 拒絕.
pub async fn decide(State(state): State<AppState>, posted: Posted<DecisionForm>) -> Response {
    let Posted { visitor, form } = posted;
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login?next=%2Fdevice");
    };
    let user_id = signed_in.user.id;
    let decision = match form.decision.as_str() {
        "approve" => Decision::Approve,
        "deny" => Decision::Deny,
        _ => {
            return problem(
                &visitor,
                StatusCode::BAD_REQUEST,
                "Choose Approve or Refuse.",
                "請選擇同意授權或拒絕。",
            );
        }
    };
    let Some(code) = grant::normalize_user_code(&form.code) else {
        return problem(
            &visitor,
            StatusCode::BAD_REQUEST,
            "A code has eight letters, like BCDF-GHJK.",
            "代碼為八個字母。",
        );
    };
    let keys = keys(&visitor, user_id);
    if let Some(refused) = take_attempt(&state, &visitor, &keys).await {
        return refused;
    }
    let decided = grant::decide(&state.store, &code, user_id, decision).await;
    if !matches!(decided, Ok(Lookup::Unknown)) {
        state.throttles.give_back(&keys).await;
    }
    match decided {
        Ok(Lookup::Pending(_)) => {
            let done = match decision {
                Decision::Approve => "approved",
                Decision::Deny => "denied",
            };
            stage(&visitor, StatusCode::OK, done, context! {})
        }
        Ok(other) => not_pending(&visitor, &other),
        Err(e) => store_failed(e),
    }
}
