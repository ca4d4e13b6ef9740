//! Publishers (contract §14.1): the operator grants an account the right to publish the
//! datasets a pattern names (`odqs grant publish|list|revoke`). A pattern is a slug, a prefix
//! ending in `*`, or `*`; a token's `publish` scope works only where one of its account's
//! grants matches.

use entity::{grant, user};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set, SqlErr};
use time::OffsetDateTime;

use super::openapi::GrantInfo;
use super::token::{Principal, find_or_create_user};
use crate::import::valid_slug;
use crate::store::{Store, StoreError};

/// The pattern that names every dataset; a pattern ending in it names those whose slug starts
/// with the rest.
pub const ANY: char = '*';

/// Whether `pattern` can be granted: `*`, a slug, or the start of a slug followed by `*`.
pub fn valid_pattern(pattern: &str) -> bool {
    match pattern.strip_suffix(ANY) {
        Some("") => true,
        Some(prefix) => valid_slug(prefix),
        None => valid_slug(pattern),
    }
}

/// Whether `pattern` names the dataset `slug`.
pub fn matches(pattern: &str, slug: &str) -> bool {
    match pattern.strip_suffix(ANY) {
        Some(prefix) => slug.starts_with(prefix),
        None => pattern == slug,
    }
}

/// A grant as listed: whose, which right, over what, by whom, when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub email: String,
    pub right: String,
    pub pattern: String,
    pub granted_by: String,
    pub created_at: OffsetDateTime,
}

/// Grants `email`'s account (made if missing, as `odqs token create` does) the right to publish
/// what `pattern` names; `false` when it already held that grant.
pub async fn grant_publish(
    store: &Store,
    email: &str,
    pattern: &str,
    granted_by: &str,
) -> Result<bool, StoreError> {
    let account = find_or_create_user(store, email).await?;
    let inserted = grant::ActiveModel {
        user_id: Set(account.id),
        right: Set(grant::RIGHT_PUBLISH.into()),
        pattern: Set(pattern.to_string()),
        granted_by: Set(granted_by.to_string()),
        created_at: Set(OffsetDateTime::now_utc()),
        ..Default::default()
    }
    .insert(&store.db)
    .await;
    match inserted {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Takes back `email`'s grant of `pattern`; `false` when there was none.
pub async fn revoke_publish(store: &Store, email: &str, pattern: &str) -> Result<bool, StoreError> {
    let Some(account) = user::Entity::find()
        .filter(user::Column::Email.eq(email))
        .one(&store.db)
        .await?
    else {
        return Ok(false);
    };
    let removed = grant::Entity::delete_many()
        .filter(grant::Column::UserId.eq(account.id))
        .filter(grant::Column::Right.eq(grant::RIGHT_PUBLISH))
        .filter(grant::Column::Pattern.eq(pattern))
        .exec(&store.db)
        .await?;
    Ok(removed.rows_affected > 0)
}

/// The patterns account `user_id` may publish.
pub async fn publish_patterns(store: &Store, user_id: i64) -> Result<Vec<String>, StoreError> {
    Ok(grant::Entity::find()
        .filter(grant::Column::UserId.eq(user_id))
        .filter(grant::Column::Right.eq(grant::RIGHT_PUBLISH))
        .order_by_asc(grant::Column::Pattern)
        .all(&store.db)
        .await?
        .into_iter()
        .map(|g| g.pattern)
        .collect())
}

/// Whether a grant of account `user_id` names `slug`.
pub async fn may_publish(store: &Store, user_id: i64, slug: &str) -> Result<bool, StoreError> {
    let patterns = publish_patterns(store, user_id).await?;
    Ok(patterns.iter().any(|p| matches(p, slug)))
}

/// The patterns the account of `email` may publish; none for an address without an account.
pub async fn patterns_of_email(store: &Store, email: &str) -> Result<Vec<String>, StoreError> {
    let account = user::Entity::find()
        .filter(user::Column::Email.eq(email))
        .one(&store.db)
        .await?;
    match account {
        Some(account) => publish_patterns(store, account.id).await,
        None => Ok(Vec::new()),
    }
}

/// What `principal`'s token may publish: its account's patterns, each narrowed to the
/// token's `dataset:` words (a word a pattern names stands for itself); none without `publish`.
pub async fn token_grants(
    store: &Store,
    principal: &Principal,
) -> Result<Vec<GrantInfo>, StoreError> {
    if !principal.scope.publishes() {
        return Ok(Vec::new());
    }
    let patterns = publish_patterns(store, principal.user_id).await?;
    let datasets: Vec<String> = match principal.scope.datasets() {
        None => patterns,
        Some(named) => named
            .iter()
            .filter(|slug| patterns.iter().any(|p| matches(p, slug)))
            .cloned()
            .collect(),
    };
    Ok(datasets
        .into_iter()
        .map(|datasets| GrantInfo {
            right: grant::RIGHT_PUBLISH.into(),
            datasets,
        })
        .collect())
}

/// Every grant, by account and pattern.
pub async fn list(store: &Store) -> Result<Vec<Listed>, StoreError> {
    let rows = grant::Entity::find().all(&store.db).await?;
    let accounts = user::Entity::find()
        .filter(user::Column::Id.is_in(rows.iter().map(|g| g.user_id)))
        .all(&store.db)
        .await?;
    let mut listed: Vec<Listed> = rows
        .into_iter()
        .filter_map(|g| {
            let account = accounts.iter().find(|a| a.id == g.user_id)?;
            Some(Listed {
                email: account.email.clone(),
                right: g.right,
                pattern: g.pattern,
                granted_by: g.granted_by,
                created_at: g.created_at,
            })
        })
        .collect();
    listed.sort_by(|a, b| (&a.email, &a.pattern).cmp(&(&b.email, &b.pattern)));
    Ok(listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_name_a_slug_a_prefix_or_all() {
        for good in ["*", "flights", "city-*", "a*", "v1.2~x"] {
            assert!(valid_pattern(good), "{good}");
        }
        for bad in ["", "**", "-x", "a b", "ab*c", "*a", "a/b*"] {
            assert!(!valid_pattern(bad), "{bad}");
        }
        assert!(matches("*", "flights"));
        assert!(matches("flights", "flights"));
        assert!(!matches("flights", "flights-2"));
        assert!(matches("city-*", "city-parks"));
        assert!(matches("city-*", "city-"));
        assert!(!matches("city-*", "town-parks"));
    }
}
