//! What a new token may do and for how long (contract §13.3), as the account page, the CLI
//! and the device flow ask for it. The scope's words and what each grants are the query
//! layer's ([`query::Scope`]); minting adds what only the store can tell: that every dataset
//! the scope names is published.

use entity::dataset;
use query::{ApiError, Scope};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};
use time::{Duration, OffsetDateTime};

use crate::store::Store;

/// The longest lifetime a token can be minted with.
pub const MAX_LIFETIME_DAYS: i64 = 3650;

/// A scope as asked for at minting: [`Scope::parse`], then every `dataset:<slug>` it names
/// must be published (`invalid_scope` names the first that is not), unless the scope carries
/// `publish`, whose datasets may be yet to publish. Whether the account may publish them is
/// asked at each write, against its grants.
pub async fn asked(store: &Store, text: &str) -> Result<Scope, ApiError> {
    let scope = Scope::parse(text)?;
    if let Some(named) = scope.datasets().filter(|_| !scope.publishes()) {
        let published: Vec<String> = dataset::Entity::find()
            .select_only()
            .column(dataset::Column::Slug)
            .filter(dataset::Column::Slug.is_in(named.iter().cloned()))
            .into_tuple()
            .all(&store.db)
            .await?;
        if let Some(missing) = named.iter().find(|slug| !published.contains(slug)) {
            return Err(ApiError::InvalidScope {
                message: format!(
                    "The scope names dataset:{missing}, and no dataset {missing:?} is published; GET /api/v1/datasets lists them."
                ),
            });
        }
    }
    Ok(scope)
}

/// A token's lifetime as written by a person: `never`, or a positive whole number followed by
/// `m` (minutes), `h` (hours), `d` (days) or `y` (365 days), such as `30d`; at most
/// [`MAX_LIFETIME_DAYS`]. `None` is a token that never expires.
pub fn lifetime(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    let malformed = || {
        format!(
            "{text:?} is not a lifetime: write a positive number and a unit, such as 90m, 12h, 30d or 1y, or never."
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(malformed)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| malformed())?;
    let minutes_per = match unit {
        "m" => 1,
        "h" => 60,
        "d" => 24 * 60,
        "y" => 365 * 24 * 60,
        _ => return Err(malformed()),
    };
    if number == 0 {
        return Err(format!(
            "{text:?} would end the token before it starts; give a lifetime above zero."
        ));
    }
    let minutes = number
        .checked_mul(minutes_per)
        .filter(|m| *m <= MAX_LIFETIME_DAYS * 24 * 60)
        .ok_or_else(|| {
            format!("{text:?} is longer than a token may live: at most {MAX_LIFETIME_DAYS} days.")
        })?;
    Ok(Some(Duration::minutes(minutes)))
}

/// When a token of `lifetime` minted now expires.
pub fn expiry(lifetime: Option<Duration>) -> Option<OffsetDateTime> {
    lifetime.map(|l| OffsetDateTime::now_utc() + l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes() {
        assert_eq!(lifetime("never"), Ok(None));
        assert_eq!(lifetime("30d"), Ok(Some(Duration::days(30))));
        assert_eq!(lifetime("12h"), Ok(Some(Duration::hours(12))));
        assert_eq!(lifetime("1y"), Ok(Some(Duration::days(365))));
        for bad in [
            "",
            "d",
            "30",
            "30 d",
            "-1d",
            "0d",
            "1w",
            "1.5d",
            "99999999999999999999d",
        ] {
            assert!(lifetime(bad).is_err(), "{bad}");
        }
        assert!(lifetime("3651d").is_err());
        assert!(lifetime("3650d").is_ok());
    }
}
