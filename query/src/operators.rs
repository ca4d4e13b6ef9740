//! Filter operators (contract §12.1): `name[op]=value`. Which operator each field type takes is
//! written here once; the schema entries (`filter.operators`), the `invalid_operator` errors,
//! GraphQL's inputs, the OpenAPI document and the guides all read it from [`Op::allowed`].

use entity::FieldType;
use serde::Serialize;

/// One operator of contract §12.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Gt,
    Gte,
    Lt,
    Lte,
    Ne,
    In,
    Nin,
    Exists,
    Prefix,
}

/// Every operator, in the order the contract lists them.
pub const ALL: [Op; 9] = [
    Op::Gt,
    Op::Gte,
    Op::Lt,
    Op::Lte,
    Op::Ne,
    Op::In,
    Op::Nin,
    Op::Exists,
    Op::Prefix,
];

/// The names of [`ALL`], in the same order.
pub const NAMES: [&str; 9] = [
    "gt", "gte", "lt", "lte", "ne", "in", "nin", "exists", "prefix",
];

/// The part of [`ALL`] a type takes: the list is ordered so that each type's operators are
/// one run of it.
fn allowed_range(field_type: FieldType) -> std::ops::Range<usize> {
    match field_type {
        FieldType::Keyword => 0..9,
        FieldType::Number | FieldType::Date => 0..8,
        FieldType::Boolean => 4..8,
        FieldType::Text => 7..8,
        FieldType::Json => 0..0,
    }
}

impl Op {
    /// The name used in `name[op]`.
    pub fn as_str(self) -> &'static str {
        NAMES[self as usize]
    }

    /// The operator called `name`.
    pub fn parse(name: &str) -> Option<Op> {
        ALL.into_iter().find(|op| op.as_str() == name)
    }

    /// The operators a field of `field_type` takes: ranges on ordered types (numbers as numbers,
    /// dates as instants, keywords in byte order), `ne`/`in`/`nin` wherever exact matches work,
    /// `prefix` on keywords, `exists` on every type that has a column (not `json`).
    pub fn allowed(field_type: FieldType) -> &'static [Op] {
        &ALL[allowed_range(field_type)]
    }

    /// The names of [`Op::allowed`] (schema entries' `filter.operators`).
    pub fn allowed_names(field_type: FieldType) -> &'static [&'static str] {
        &NAMES[allowed_range(field_type)]
    }

    /// Whether this operator takes a comma-separated list (`in`, `nin`).
    pub fn takes_list(self) -> bool {
        matches!(self, Op::In | Op::Nin)
    }

    /// Whether this operator bounds a range.
    pub fn is_range(self) -> bool {
        matches!(self, Op::Gt | Op::Gte | Op::Lt | Op::Lte)
    }
}

/// The names of [`Op::allowed`], for schema entries and messages.
pub fn names(ops: &[Op]) -> Vec<&'static str> {
    ops.iter().map(|op| op.as_str()).collect()
}

/// Splits `name[op]` into the field name and the operator text; `None` when the parameter is
/// not of that form.
pub fn split(parameter: &str) -> Option<(&str, &str)> {
    let inner = parameter.strip_suffix(']')?;
    let open = inner.rfind('[')?;
    let (name, op) = (&inner[..open], &inner[open + 1..]);
    (!name.is_empty()).then_some((name, op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_types_allow_what_the_contract_says() {
        for op in ALL {
            assert_eq!(Op::parse(op.as_str()), Some(op));
        }
        assert_eq!(Op::parse("between"), None);
        assert!(Op::allowed(FieldType::Keyword).contains(&Op::Prefix));
        assert!(!Op::allowed(FieldType::Number).contains(&Op::Prefix));
        assert!(Op::allowed(FieldType::Date).contains(&Op::Gte));
        assert_eq!(names(Op::allowed(FieldType::Text)), ["exists"]);
        assert_eq!(
            Op::allowed_names(FieldType::Boolean),
            names(Op::allowed(FieldType::Boolean))
        );
        assert_eq!(
            Op::allowed(FieldType::Boolean),
            [Op::Ne, Op::In, Op::Nin, Op::Exists]
        );
        assert!(
            !Op::allowed(FieldType::Boolean)
                .iter()
                .any(|op| op.is_range())
        );
    }

    #[test]
    fn bracket_names_split() {
        assert_eq!(split("dep_delay[gte]"), Some(("dep_delay", "gte")));
        assert_eq!(split("a.b[in]"), Some(("a.b", "in")));
        assert_eq!(split("x[a][gt]"), Some(("x[a]", "gt")));
        assert_eq!(split("[gt]"), None);
        assert_eq!(split("carrier"), None);
    }
}
