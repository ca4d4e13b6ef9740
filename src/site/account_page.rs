//! `/account` (contract §9, §13.3): the account's tokens with their scope and expiry, token
//! generation (shown once) with a scope and a lifetime, and revocation. The form asks in the
//! terms a person thinks in (every dataset or chosen ones, export on or off, a lifetime from a
//! short list); what that means as a scope is [`query::Scope`]'s, checked against the store by
//! [`crate::auth::scope`], as the CLI and the device flow are.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use minijinja::value::Serde;
use minijinja::{Value, context};
use query::{Need, Scope};
use serde::Serialize;
use time::OffsetDateTime;

use super::pages::{Empty, message_page, page, store_failed};
use super::visitor::{Posted, Visitor, see_other};
use crate::auth::{account, scope as auth_scope, token};
use crate::guides::when;
use crate::state::AppState;

/// The lifetimes the form offers: its value (as `odqs token create --expires-in` reads it)
/// and its label.
const LIFETIMES: [(&str, &str); 4] = [
    ("never", "never expires"),
    ("1d", "1 day"),
    ("30d", "30 days"),
    ("1y", "1 year"),
];
/// The longest token name kept.
const MAX_NAME_CHARS: usize = 100;

/// A token as the account page lists it.
#[derive(Serialize)]
struct TokenRow {
    id: i64,
    name: String,
    last4: String,
    created: String,
    last_used: String,
    expires: String,
    scope: String,
    /// The scope in words ("read the dataset flights only").
    grants: String,
}

/// A dataset the form offers to choose.
#[derive(Serialize)]
struct Choice {
    slug: String,
    title: String,
}

/// What the page shows beside the list: a token just minted, a notice, or a form error.
#[derive(Default)]
struct Shown {
    new_token: Option<Value>,
    notice: Option<&'static str>,
    error: Option<String>,
}

async fn account_page(state: &AppState, visitor: &Visitor, shown: Shown) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login");
    };
    let tokens = match account::tokens(&state.store, signed_in.user.id).await {
        Ok(t) => t,
        Err(e) => return store_failed(e),
    };
    let datasets: Vec<Choice> = match state.resolver.catalog().await {
        Ok(rows) => rows
            .into_iter()
            .map(|d| Choice {
                slug: d.slug,
                title: d.title,
            })
            .collect(),
        Err(e) => {
            tracing::error!(error = %e, "site: the catalog cannot be read");
            return super::visitor::unavailable();
        }
    };
    let now = OffsetDateTime::now_utc();
    let rows: Vec<TokenRow> = tokens
        .into_iter()
        .map(|t| {
            let scope = Scope::from_stored(&t.scope);
            TokenRow {
                id: t.id,
                name: t.name,
                last4: t.last4,
                created: when(t.created_at),
                last_used: t.last_used_at.map(when).unwrap_or_else(|| "never".into()),
                expires: match t.expires_at {
                    None => "never".into(),
                    Some(at) if at <= now => format!("expired {}", when(at)),
                    Some(at) => when(at),
                },
                grants: scope.describe(),
                scope: scope.to_string(),
            }
        })
        .collect();
    let status = if shown.error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let lifetimes: Vec<_> = LIFETIMES
        .iter()
        .map(|&(value, label)| context! { value, label })
        .collect();
    page(
        visitor,
        status,
        "account.html",
        context! {
            tokens => Value::from(Serde(&rows)),
            datasets => Value::from(Serde(&datasets)),
            lifetimes,
            new_token => shown.new_token,
            notice => shown.notice,
            error => shown.error,
        },
    )
}

/// `GET /account`.
pub async fn account(State(state): State<AppState>, visitor: Visitor) -> Response {
    if visitor.signed_in.is_none() {
        return see_other("/login");
    }
    account_page(&state, &visitor, Shown::default()).await
}

/// The token form as sent: `name`, `datasets` (`all` or `chosen`), `dataset` (repeated, the
/// chosen slugs), `export` (present when ticked) and `lifetime`.
#[derive(Default)]
struct NewToken {
    name: String,
    chosen: bool,
    datasets: Vec<String>,
    export: bool,
    lifetime: String,
}

impl NewToken {
    fn read(fields: Vec<(String, String)>) -> Self {
        let mut form = NewToken {
            lifetime: "never".into(),
            ..NewToken::default()
        };
        for (name, value) in fields {
            match name.as_str() {
                "name" => form.name = value,
                "datasets" => form.chosen = value == "chosen",
                "dataset" => form.datasets.push(value),
                "export" => form.export = true,
                "lifetime" => form.lifetime = value,
                _ => {}
            }
        }
        form
    }

    /// The scope the form asks for, as `odqs token create --scope` would write it.
    fn scope_text(&self) -> Result<String, String> {
        let mut words = vec![Need::Read.word().to_string()];
        if self.export {
            words.push(Need::Export.word().into());
        }
        if self.chosen {
            if self.datasets.is_empty() {
                return Err(
                    "Choose at least one dataset, or let the token read every dataset.".into(),
                );
            }
            words.extend(self.datasets.iter().map(|slug| format!("dataset:{slug}")));
        }
        Ok(words.join(" "))
    }
}

/// `POST /account/tokens`: mints a token with the scope and lifetime asked for and shows it,
/// once.
pub async fn create_token(
    State(state): State<AppState>,
    posted: Posted<Vec<(String, String)>>,
) -> Response {
    let Posted { visitor, form } = posted;
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login");
    };
    let form = NewToken::read(form);
    let refuse = |error: String| Shown {
        error: Some(error),
        ..Shown::default()
    };
    let lifetime = match auth_scope::lifetime(&form.lifetime) {
        Ok(l) => l,
        Err(e) => return account_page(&state, &visitor, refuse(e)).await,
    };
    let scope = match form.scope_text() {
        Ok(text) => auth_scope::asked(&state.store, &text).await,
        Err(e) => return account_page(&state, &visitor, refuse(e)).await,
    };
    let scope = match scope {
        Ok(scope) => scope,
        Err(query::ApiError::InvalidScope { message }) => {
            return account_page(&state, &visitor, refuse(message)).await;
        }
        Err(e) => {
            tracing::error!(error = %e, "site: a scope could not be checked");
            return super::visitor::unavailable();
        }
    };
    let mut name: String = form.name.trim().chars().take(MAX_NAME_CHARS).collect();
    if name.is_empty() {
        name = format!("token of {}", when(OffsetDateTime::now_utc()));
    }
    let expires_at = auth_scope::expiry(lifetime);
    let minted = token::mint(
        &state.store,
        signed_in.user.id,
        &name,
        "account",
        &scope,
        expires_at,
    )
    .await;
    match minted {
        Ok((secret, _)) => {
            let shown = context! {
                name,
                secret => secret.expose(),
                grants => scope.describe(),
                expires => expires_at.map(when).unwrap_or_else(|| "never".into()),
            };
            let shown = Shown {
                new_token: Some(shown),
                ..Shown::default()
            };
            account_page(&state, &visitor, shown).await
        }
        Err(e) => store_failed(e),
    }
}

/// `POST /account/tokens/{id}/revoke`.
pub async fn revoke_token(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    posted: Posted<Empty>,
) -> Response {
    let visitor = posted.visitor;
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login");
    };
    let revoked = account::revoke(&state.store, signed_in.user.id, id).await;
    if matches!(revoked, Ok(true)) {
        // Refused by this instance at once; others within the cache's FRESH_FOR.
        state.token_cache.forget_token(id);
    }
    match revoked {
        Ok(true) => {
            let shown = Shown {
                notice: Some("The token was revoked."),
                ..Shown::default()
            };
            account_page(&state, &visitor, shown).await
        }
        Ok(false) => message_page(
            StatusCode::NOT_FOUND,
            Some(&visitor),
            "No such token",
            "This account has no such token; it may have been revoked already.",
        ),
        Err(e) => store_failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_becomes_a_scope() {
        let form = |pairs: &[(&str, &str)]| {
            NewToken::read(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        assert_eq!(form(&[]).scope_text().unwrap(), "read");
        assert_eq!(
            form(&[("export", "on"), ("datasets", "all"), ("dataset", "towns")])
                .scope_text()
                .unwrap(),
            "read export"
        );
        assert_eq!(
            form(&[
                ("datasets", "chosen"),
                ("dataset", "towns"),
                ("dataset", "flights")
            ])
            .scope_text()
            .unwrap(),
            "read dataset:towns dataset:flights"
        );
        assert!(form(&[("datasets", "chosen")]).scope_text().is_err());
    }
}
