//! What one GraphQL document may ask (contract §10: "query depth and complexity are bounded"):
//!
//! - depth at most [`MAX_DEPTH`] and complexity at most [`MAX_COMPLEXITY`], checked by
//!   async-graphql's own validation (`limit_depth`, `limit_complexity`); this extension gives
//!   its refusals a code (`query_too_deep`, `query_too_complex`) and a sentence naming the limit;
//! - at most [`MAX_FETCHES`] dataset fetches (`records`, `record`, `agg` fields, aliases and
//!   fragments included) in any operation of the document: `too_many_fetches`, before anything
//!   runs.
//!
//! Our types do not nest into themselves, so the depth limit binds only introspection
//! (`ofType { ofType { … } }`); it is high enough for GraphiQL's own introspection query.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextValidation,
};
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{ServerError, ServerResult, ValidationResult, Variables};

use super::errors::coded;

/// The deepest selection a document may nest.
pub const MAX_DEPTH: usize = 16;
/// The largest complexity: one per field, plus its page size for each `records`.
pub const MAX_COMPLEXITY: usize = 2000;
/// The most dataset fetches (`records`, `record`, `agg`) one document may hold.
pub const MAX_FETCHES: usize = 10;

/// The root fields that read records from the store.
const FETCH_FIELDS: [&str; 3] = ["records", "record", "agg"];

// async-graphql's messages for its two limits (pinned by a test).
const TOO_DEEP: &str = "Query is nested too deep.";
const TOO_COMPLEX: &str = "Query is too complex.";

/// The extension: install with `SchemaBuilder::extension(Limits)`.
pub struct Limits;

impl ExtensionFactory for Limits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Limits)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for Limits {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        let fetches = fetches(&document);
        if fetches > MAX_FETCHES {
            return Err(coded(
                "too_many_fetches",
                format!(
                    "This query reads datasets {fetches} times (records, record and agg fields); \
                     one query may read at most {MAX_FETCHES}. Split it into several queries."
                ),
            )
            .into_server_error(async_graphql::Pos::default()));
        }
        Ok(document)
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        next.run(ctx)
            .await
            .map_err(|errors| errors.into_iter().map(with_code).collect())
    }
}

/// A limit refusal of async-graphql, with our code and a clearer sentence.
fn with_code(error: ServerError) -> ServerError {
    let (code, message) = match error.message.as_str() {
        TOO_DEEP => (
            "query_too_deep",
            format!(
                "The query nests fields more than {MAX_DEPTH} levels deep; ask for less nesting."
            ),
        ),
        TOO_COMPLEX => (
            "query_too_complex",
            format!(
                "The query is too complex (more than {MAX_COMPLEXITY} points: one per field, plus \
                 the page size of each records field); ask for fewer fields or smaller pages."
            ),
        ),
        _ => return error,
    };
    let mut coded = coded(code, message).into_server_error(async_graphql::Pos::default());
    coded.locations = error.locations;
    coded
}

/// The most fetch fields any one operation of `document` selects at its root.
pub fn fetches(document: &ExecutableDocument) -> usize {
    document
        .operations
        .iter()
        .map(|(_, op)| {
            let mut seen = HashSet::new();
            count(document, &op.node.selection_set.node, &mut seen)
        })
        .max()
        .unwrap_or(0)
}

/// Fetch fields in a root selection set, through fragments (`seen` stops fragment cycles,
/// which validation refuses later anyway).
fn count<'a>(
    document: &'a ExecutableDocument,
    set: &'a SelectionSet,
    seen: &mut HashSet<&'a str>,
) -> usize {
    set.items
        .iter()
        .map(|item| match &item.node {
            Selection::Field(field) => {
                usize::from(FETCH_FIELDS.contains(&field.node.name.node.as_str()))
            }
            Selection::InlineFragment(inline) => {
                count(document, &inline.node.selection_set.node, seen)
            }
            Selection::FragmentSpread(spread) => {
                let name = spread.node.fragment_name.node.as_str();
                match document.fragments.get(&spread.node.fragment_name.node) {
                    Some(fragment) if seen.insert(name) => {
                        let n = count(document, &fragment.node.selection_set.node, seen);
                        seen.remove(name);
                        n
                    }
                    _ => 0,
                }
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches_are_counted_through_aliases_and_fragments() {
        let doc = async_graphql::parser::parse_query(
            "query A { a: records(slug: \"x\") { total } b: agg(slug: \"x\", groupBy: \"k\") { totalGroups } ...F ... on Query { record(slug: \"x\", id: \"1\") } datasets { total } }
             fragment F on Query { c: records(slug: \"y\") { total } d: records(slug: \"z\") { total } }
             query B { records(slug: \"x\") { total } }",
        )
        .unwrap();
        assert_eq!(fetches(&doc), 5);
    }

    #[test]
    fn the_limit_messages_are_async_graphqls() {
        // If async-graphql rewords its refusals, the codes would silently disappear.
        for (message, code) in [
            (TOO_DEEP, "query_too_deep"),
            (TOO_COMPLEX, "query_too_complex"),
        ] {
            let coded = with_code(ServerError::new(message, None));
            let ext = coded.extensions.expect("extensions");
            assert_eq!(
                ext.get("code"),
                Some(&async_graphql::Value::from(code)),
                "{message}"
            );
        }
    }
}
