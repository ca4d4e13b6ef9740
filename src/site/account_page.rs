//! `/account` (contract §9, §13.3): the account's tokens with their scope and expiry, token
//! generation (shown once) with a scope and a lifetime, and revocation. The form asks in the
//! terms a person thinks in (every dataset or chosen ones, export on or off, a lifetime from a
//! short list); what that means as a scope is [`query::Scope`]'s, checked against the store by
//! [`crate::auth::scope`], as the CLI and the device flow are.
//!
//! Every successful POST answers with a redirect to `GET /account` (POST-redirect-GET), so a
//! reload never sends a form again or meets a 405. The token just minted crosses that redirect
//! in a flash cookie ([`NEW_TOKEN_COOKIE`]: HttpOnly, `SameSite=Strict`, path `/account`, a
//! few minutes), read and deleted by the first `GET /account`, which shows it once. Revoking
//! asks first on a page of its own (`GET /account/tokens/{id}/revoke`), which needs no script.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use minijinja::value::Serde;
use minijinja::{Value, context};
use query::params::catalog_words;
use query::{Need, Paging, Scope};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::pages::{Empty, message_page, page, store_failed};
use super::visitor::{Posted, Visitor, cookie, see_other};
use crate::auth::{account, publishers, scope as auth_scope, token};
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
/// The flash cookie that carries a token just minted across the redirect to `/account`.
pub const NEW_TOKEN_COOKIE: &str = "odqs_new_token";
/// How long that cookie may wait for its `GET /account` (seconds).
const NEW_TOKEN_FLASH_SECS: i64 = 300;

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

/// Datasets the form offers as boxes to tick: every one when the catalog has no more, else the
/// best matches of the page's dataset search (`?find=`), beside a text box of slugs.
const CHOICES_SHOWN: u64 = 20;

/// A dataset the form offers to choose: ticked when the form sent back ticked it.
#[derive(Serialize)]
struct Choice {
    slug: String,
    title: String,
    ticked: bool,
}

/// What the page shows beside the list: a token just minted, a notice, or a form error; the
/// dataset search asked for (`?find=`, or the form's Find button); and the form as it was sent
/// back (a search or an error), so nothing typed is lost.
#[derive(Default)]
struct Shown {
    new_token: Option<Value>,
    notice: Option<&'static str>,
    error: Option<String>,
    find: Option<String>,
    form: Option<NewToken>,
}

/// The datasets the form offers (see [`CHOICES_SHOWN`]): the boxes (those `ticked` in the form
/// sent back first, still ticked), how many datasets are published, and how many match the
/// search.
async fn choices(
    state: &AppState,
    find: Option<&str>,
    ticked: &[String],
) -> Result<(Vec<Choice>, u64, u64), query::ApiError> {
    let resolver = &state.resolver;
    let total = resolver.dataset_count().await?;
    let words = catalog_words(find)?;
    let (rows, found) = if !words.is_empty() {
        let paging = Paging::new(None, Some(CHOICES_SHOWN))?;
        resolver
            .find_datasets(paging, &words, &Scope::default())
            .await?
    } else if total <= CHOICES_SHOWN {
        (resolver.catalog().await?, total)
    } else {
        (Vec::new(), 0)
    };
    // Ticked boxes the search no longer finds stay, first; the rest keep their order.
    let mut boxes: Vec<Choice> = ticked
        .iter()
        .filter(|slug| !rows.iter().any(|d| &d.slug == *slug))
        .map(|slug| Choice {
            slug: slug.clone(),
            title: String::new(),
            ticked: true,
        })
        .collect();
    boxes.extend(rows.into_iter().map(|d| Choice {
        ticked: ticked.contains(&d.slug),
        slug: d.slug,
        title: d.title,
    }));
    Ok((boxes, total, found))
}

async fn account_page(state: &AppState, visitor: &Visitor, shown: Shown) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login");
    };
    let tokens = match account::tokens(&state.store, signed_in.user.id).await {
        Ok(t) => t,
        Err(e) => return store_failed(e),
    };
    let publishes = match publishers::publish_patterns(&state.store, signed_in.user.id).await {
        Ok(patterns) => patterns,
        Err(e) => return store_failed(e),
    };
    let mut error = shown.error;
    let ticked = shown.form.as_ref().map_or(&[][..], |f| &f.ticked[..]);
    let (datasets, total, found) = match choices(state, shown.find.as_deref(), ticked).await {
        Ok(found) => found,
        Err(e) if crate::http::error::status(&e).is_client_error() => {
            error = Some(e.message());
            (Vec::new(), 0, 0)
        }
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
    let status = if error.is_some() {
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
            error,
            find => shown.find,
            form => shown.form.as_ref().map(NewToken::sent_back),
            many => total > CHOICES_SHOWN,
            total,
            found,
            shown_most => CHOICES_SHOWN,
            max_find => query::params::MAX_CATALOG_QUERY_CHARS,
            publishes,
        },
    )
}

/// Why a token may not publish: the account holds no grant.
const NO_GRANT: &str = "This account holds no grant to publish datasets: the operator of this service grants one (odqs grant publish).";

/// `?revoked=1` after a revocation's redirect; `?find=words`, the datasets to offer.
#[derive(Deserialize)]
pub struct AccountQuery {
    revoked: Option<String>,
    find: Option<String>,
}

/// `GET /account`: the list and the form; the token just minted (the flash cookie), once; or
/// the notice of a revocation.
pub async fn account(
    State(state): State<AppState>,
    visitor: Visitor,
    headers: HeaderMap,
    Query(q): Query<AccountQuery>,
) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login");
    };
    let mut shown = Shown {
        find: q.find.filter(|f| !f.trim().is_empty()),
        ..Shown::default()
    };
    if q.revoked.is_some() {
        shown.notice = Some("The token was revoked.");
    }
    let flash = cookie(&headers, NEW_TOKEN_COOKIE).map(str::to_owned);
    if let Some(secret) = &flash {
        // Shown only if it is a live token of this account.
        let hash = token::hash(secret);
        match account::tokens(&state.store, signed_in.user.id).await {
            Ok(tokens) => {
                if let Some(t) = tokens.iter().find(|t| t.token_hash == hash) {
                    shown.new_token = Some(context! {
                        name => t.name.clone(),
                        secret => secret.clone(),
                        grants => Scope::from_stored(&t.scope).describe(),
                        expires => t.expires_at.map(when).unwrap_or_else(|| "never".into()),
                    });
                }
            }
            Err(e) => return store_failed(e),
        }
    }
    let mut response = account_page(&state, &visitor, shown).await;
    if flash.is_some() {
        set_flash(&visitor, response.headers_mut(), "", 0);
    }
    response
}

/// `GET /account/tokens`: the form's address typed or reloaded: the account page.
pub async fn tokens_page() -> Response {
    see_other("/account")
}

/// Sets (or with `max_age` 0 deletes) the new-token flash cookie: HttpOnly, SameSite=Strict,
/// only sent to `/account`.
fn set_flash(visitor: &Visitor, headers: &mut HeaderMap, value: &str, max_age: i64) {
    let mut cookie = format!(
        "{NEW_TOKEN_COOKIE}={value}; Path=/account; HttpOnly; SameSite=Strict; Max-Age={max_age}"
    );
    if visitor.secure {
        cookie.push_str("; Secure");
    }
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.append(header::SET_COOKIE, value);
    }
}

/// The token form as sent: `name`, `datasets` (`all` or `chosen`), `dataset` (repeated, the
/// ticked slugs), `dataset_slugs` (more slugs typed, separated by spaces or commas), `export`
/// (present when ticked), `lifetime`, and `find` with `action=find` when its Find button sent
/// it (a dataset search, not a token).
#[derive(Clone, Default)]
struct NewToken {
    name: String,
    chosen: bool,
    ticked: Vec<String>,
    typed: String,
    export: bool,
    publish: bool,
    lifetime: String,
    find: Option<String>,
}

impl NewToken {
    fn read(fields: Vec<(String, String)>) -> Self {
        let mut form = NewToken {
            lifetime: "never".into(),
            ..NewToken::default()
        };
        let (mut searched, mut find_pressed) = (String::new(), false);
        for (name, value) in fields {
            match name.as_str() {
                "name" => form.name = value,
                "datasets" => form.chosen = value == "chosen",
                "dataset" if !form.ticked.contains(&value) => form.ticked.push(value),
                "dataset_slugs" => form.typed = value,
                "export" => form.export = true,
                "publish" => form.publish = true,
                "lifetime" => form.lifetime = value,
                "action" if value == "find" => find_pressed = true,
                "find" => searched = value,
                _ => {}
            }
        }
        form.find = find_pressed.then_some(searched);
        form
    }

    /// The slugs ticked, then those typed.
    fn datasets(&self) -> Vec<String> {
        let typed = self
            .typed
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|slug| !slug.is_empty())
            .map(str::to_string);
        self.ticked.iter().cloned().chain(typed).collect()
    }

    /// The form's fields for the template to fill it in again.
    fn sent_back(&self) -> Value {
        context! {
            name => self.name.clone(),
            chosen => self.chosen,
            typed => self.typed.clone(),
            export => self.export,
            publish => self.publish,
            lifetime => self.lifetime.clone(),
        }
    }

    /// The scope the form asks for, as `odqs token create --scope` would write it.
    fn scope_text(&self) -> Result<String, String> {
        let mut words = vec![Need::Read.word().to_string()];
        if self.export {
            words.push(Need::Export.word().into());
        }
        if self.publish {
            words.push(Need::Publish.word().into());
        }
        let datasets = self.datasets();
        if self.chosen {
            if datasets.is_empty() {
                return Err(
                    "Choose at least one dataset, or let the token read every dataset.".into(),
                );
            }
            words.extend(datasets.iter().map(|slug| format!("dataset:{slug}")));
        }
        Ok(words.join(" "))
    }
}

/// `POST /account/tokens`: mints a token with the scope and lifetime asked for and shows it,
/// once; or, sent by the Find button, shows the form again as it was with the datasets found.
pub async fn create_token(
    State(state): State<AppState>,
    posted: Posted<Vec<(String, String)>>,
) -> Response {
    let Posted { visitor, form } = posted;
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login");
    };
    let mut form = NewToken::read(form);
    if let Some(find) = form.find.take() {
        let shown = Shown {
            find: Some(find).filter(|f| !f.trim().is_empty()),
            form: Some(form),
            ..Shown::default()
        };
        return account_page(&state, &visitor, shown).await;
    }
    let refuse = |error: String| Shown {
        error: Some(error),
        form: Some(form.clone()),
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
    if scope.publishes() {
        match publishers::publish_patterns(&state.store, signed_in.user.id).await {
            Ok(patterns) if patterns.is_empty() => {
                let refused = refuse(NO_GRANT.into());
                return account_page(&state, &visitor, refused).await;
            }
            Ok(_) => {}
            Err(e) => return store_failed(e),
        }
    }
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
            let mut response = see_other("/account");
            set_flash(
                &visitor,
                response.headers_mut(),
                secret.expose(),
                NEW_TOKEN_FLASH_SECS,
            );
            visitor.finish(response)
        }
        Err(e) => store_failed(e),
    }
}

/// `GET /account/tokens/{id}/revoke`: asks before revoking, on a page of its own (no script
/// needed): which token, what it may do, and that programs using it stop at once.
pub async fn confirm_revoke(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    visitor: Visitor,
) -> Response {
    let Some(signed_in) = &visitor.signed_in else {
        return see_other("/login?next=/account");
    };
    let tokens = match account::tokens(&state.store, signed_in.user.id).await {
        Ok(t) => t,
        Err(e) => return store_failed(e),
    };
    let Some(t) = tokens.into_iter().find(|t| t.id == id) else {
        return no_such_token(&visitor);
    };
    let scope = Scope::from_stored(&t.scope);
    page(
        &visitor,
        StatusCode::OK,
        "revoke.html",
        context! {
            id => t.id,
            name => t.name,
            last4 => t.last4,
            grants => scope.describe(),
            scope => scope.to_string(),
            last_used => t.last_used_at.map(when).unwrap_or_else(|| "never".into()),
        },
    )
}

fn no_such_token(visitor: &Visitor) -> Response {
    message_page(
        StatusCode::NOT_FOUND,
        Some(visitor),
        "No such token",
        "This account has no such token; it may have been revoked already.",
    )
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
        Ok(true) => visitor.finish(see_other("/account?revoked=1")),
        Ok(false) => no_such_token(&visitor),
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
        assert_eq!(
            form(&[
                ("datasets", "chosen"),
                ("dataset", "towns"),
                ("dataset_slugs", " flights, rivers  lakes,")
            ])
            .scope_text()
            .unwrap(),
            "read dataset:towns dataset:flights dataset:rivers dataset:lakes"
        );
    }
}
