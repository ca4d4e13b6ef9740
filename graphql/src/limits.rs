//! What one GraphQL document may ask (contract §10: "query depth and complexity are bounded"),
//! checked so that no document can make the checks themselves expensive:
//!
//! - at most [`MAX_DOCUMENT_BYTES`] of text, and brackets nested at most [`MAX_NESTING`] deep,
//!   checked on the text before it is parsed: `query_too_large`, `query_too_deep`;
//! - once parsed, and before async-graphql's validation walks it, one pass over the document
//!   that expands each fragment once (memoized, so the pass is linear in the document's text
//!   even when fragments spread each other twice at every level) and counts, per operation,
//!   the fields selected ([`MAX_COMPLEXITY`]: `query_too_complex`), the fragment spreads
//!   visited ([`MAX_FRAGMENT_SPREADS`]: `too_many_fragment_spreads`), the aliases
//!   ([`MAX_ALIASES`]: `too_many_aliases`) and the dataset fetches ([`MAX_FETCHES`]:
//!   `too_many_fetches`);
//! - depth at most [`MAX_DEPTH`] and complexity at most [`MAX_COMPLEXITY`], checked by
//!   async-graphql's own validation (`limit_depth`, `limit_complexity`); this extension gives
//!   its refusals a code (`query_too_deep`, `query_too_complex`) and a sentence naming the limit.
//!
//! Every other parse or validation error carries `graphql_parse_failed` or
//! `graphql_validation_failed`, and the two refusals of choosing the operation to run (a name
//! the document does not hold; several operations and no name) `unknown_operation` and
//! `operation_name_required`, so every refusal has a code.
//!
//! Our types do not nest into themselves, so the depth limit binds only introspection
//! (`ofType { ofType { … } }`); it is high enough for GraphiQL's own introspection query.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextPrepareRequest, NextRequest,
    NextValidation,
};
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{Request, Response, ServerError, ServerResult, ValidationResult, Variables};

use crate::errors::{coded, with_default_code};
use query::error::Code;

/// The deepest selection a document may nest.
pub const MAX_DEPTH: usize = 16;
/// The largest complexity: one per field, plus its page size for each `records`. Also the most
/// fields one document may select once its fragments are expanded.
pub const MAX_COMPLEXITY: usize = 2000;
/// The most dataset fetches (`records`, `record`, `agg`) one document may hold.
pub const MAX_FETCHES: usize = 10;
/// The longest document text, in bytes (GraphiQL's introspection query is about 2 KB).
pub const MAX_DOCUMENT_BYTES: usize = 32 * 1024;
/// The deepest the text may nest `{`, `(` and `[` (checked before parsing, so the parser never
/// recurses further; the depth of selections proper is [`MAX_DEPTH`]).
pub const MAX_NESTING: usize = 32;
/// The most fragment spreads one document may visit once expanded.
pub const MAX_FRAGMENT_SPREADS: usize = 500;
/// The most aliased fields one document may select once expanded.
pub const MAX_ALIASES: usize = 100;

/// The root fields that read records from the store.
const FETCH_FIELDS: [&str; 3] = ["records", "record", "agg"];

// async-graphql's messages for its two limits (pinned by a test).
pub const TOO_DEEP: &str = "Query is nested too deep.";
pub const TOO_COMPLEX: &str = "Query is too complex.";
// async-graphql's parse-time recursion checks (text, then through fragment spreads).
const RECURSION_LIMIT: &str = "recursion limit exceeded.";
const RECURSION_PREFIX: &str = "The recursion depth of the query cannot be greater than";
// async-graphql's messages when it cannot choose the operation to run (pinned by a test).
const UNKNOWN_OPERATION_PREFIX: &str = "Unknown operation named ";
const OPERATION_NAME_REQUIRED: &str = "Operation name required in request.";

/// The code when the request names an operation the document does not hold.
pub const UNKNOWN_OPERATION: &str = Code::UnknownOperation.name();
/// The code when a document holds several operations and the request names none.
pub const OPERATION_NAME_REQUIRED_CODE: &str = Code::OperationNameRequired.name();

/// Every refusal of this module: one code and one sentence each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Longer than [`MAX_DOCUMENT_BYTES`].
    TooLarge(usize),
    /// Nested deeper than [`MAX_DEPTH`] (selections) or [`MAX_NESTING`] (brackets).
    TooDeep,
    /// More than [`MAX_COMPLEXITY`] points, or fields once expanded.
    TooComplex,
    /// More than [`MAX_FRAGMENT_SPREADS`] spreads visited.
    TooManySpreads,
    /// More than [`MAX_ALIASES`] aliases.
    TooManyAliases,
    /// More than [`MAX_FETCHES`] dataset reads.
    TooManyFetches(usize),
    /// A fragment that spreads itself (directly or through others): invalid GraphQL, refused
    /// here because the checks downstream would follow it as deep as they allow.
    FragmentCycle,
}

impl Refusal {
    /// The code in `extensions.code`.
    pub fn code(self) -> Code {
        match self {
            Refusal::TooLarge(_) => Code::QueryTooLarge,
            Refusal::TooDeep => Code::QueryTooDeep,
            Refusal::TooComplex => Code::QueryTooComplex,
            Refusal::TooManySpreads => Code::TooManyFragmentSpreads,
            Refusal::TooManyAliases => Code::TooManyAliases,
            Refusal::TooManyFetches(_) => Code::TooManyFetches,
            Refusal::FragmentCycle => Code::GraphqlValidationFailed,
        }
    }

    /// The sentence, naming the limit.
    pub fn message(self) -> String {
        match self {
            Refusal::TooLarge(bytes) => format!(
                "The query is {bytes} bytes long; one query may be at most {MAX_DOCUMENT_BYTES} \
                 bytes. Ask for less, or split it into several queries."
            ),
            Refusal::TooDeep => format!(
                "The query nests fields more than {MAX_DEPTH} levels deep (or brackets more than \
                 {MAX_NESTING}); ask for less nesting."
            ),
            Refusal::TooComplex => format!(
                "The query is too complex (more than {MAX_COMPLEXITY} points: one per field once \
                 fragments are expanded, plus the page size of each records field); ask for \
                 fewer fields or smaller pages."
            ),
            Refusal::TooManySpreads => format!(
                "The query spreads fragments more than {MAX_FRAGMENT_SPREADS} times once they are \
                 expanded; use fewer fragments."
            ),
            Refusal::TooManyAliases => format!(
                "The query uses more than {MAX_ALIASES} aliases once fragments are expanded; ask \
                 for fewer aliased fields."
            ),
            Refusal::TooManyFetches(n) => format!(
                "This query reads datasets {n} times (records, record and agg fields); one query \
                 may read at most {MAX_FETCHES}. Split it into several queries."
            ),
            Refusal::FragmentCycle => {
                "A fragment spreads itself, directly or through other fragments.".to_string()
            }
        }
    }

    fn into_error(self) -> ServerError {
        coded(self.code(), self.message()).into_server_error(async_graphql::Pos::default())
    }
}

/// The extension: install with `SchemaBuilder::extension(Limits)`.
pub struct Limits;

impl ExtensionFactory for Limits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Limits)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for Limits {
    /// The checks run here, before async-graphql's own parse-time check (which follows every
    /// fragment spread without memo) and its validation: the text is checked, parsed once, the
    /// parsed document checked and handed on, so nothing downstream parses it again.
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        check_text(&request.query).map_err(Refusal::into_error)?;
        let document = request.parsed_query().map_err(parse_failure)?;
        check_document(document).map_err(Refusal::into_error)?;
        next.run(ctx, request).await
    }

    /// async-graphql refuses an operation name the document does not hold, or a missing name
    /// when it holds several, with no code; the answer gets one here.
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        let mut response = next.run(ctx).await;
        for error in &mut response.errors {
            operation_code(error);
        }
        response
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        next.run(ctx, query, variables).await.map_err(parse_failure)
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

/// A parse error with a code: `query_too_deep` for the parser's recursion limits (fragments
/// spreading each other deeper than it allows), `graphql_parse_failed` for the rest.
fn parse_failure(error: ServerError) -> ServerError {
    if error.message.starts_with(RECURSION_PREFIX) || error.message == RECURSION_LIMIT {
        let mut coded = Refusal::TooDeep.into_error();
        coded.locations = error.locations;
        return coded;
    }
    with_default_code(error, Code::GraphqlParseFailed)
}

/// The checks on the text: its length, and how deep its brackets nest (outside strings and
/// comments), in one pass over the bytes.
pub fn check_text(query: &str) -> Result<(), Refusal> {
    if query.len() > MAX_DOCUMENT_BYTES {
        return Err(Refusal::TooLarge(query.len()));
    }
    let (mut depth, mut in_string, mut in_comment, mut escaped) = (0usize, false, false, false);
    for &byte in query.as_bytes() {
        if in_comment {
            in_comment = !matches!(byte, b'\n' | b'\r');
        } else if in_string {
            // Block strings (`"""`) toggle three times, which leaves the state right.
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'#' => in_comment = true,
                b'{' | b'(' | b'[' => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        return Err(Refusal::TooDeep);
                    }
                }
                b'}' | b')' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    Ok(())
}

/// What a selection set costs once its fragments are expanded; every count saturates, so a
/// fragment doubling at every level cannot overflow.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Cost {
    /// Fetch fields at the top of the set (through fragments, not into sub-selections).
    fetches: usize,
    fields: usize,
    spreads: usize,
    aliases: usize,
}

impl Cost {
    fn add(self, other: Cost) -> Cost {
        Cost {
            fetches: self.fetches.saturating_add(other.fetches),
            fields: self.fields.saturating_add(other.fields),
            spreads: self.spreads.saturating_add(other.spreads),
            aliases: self.aliases.saturating_add(other.aliases),
        }
    }

    fn check(self) -> Result<(), Refusal> {
        if self.fields > MAX_COMPLEXITY {
            Err(Refusal::TooComplex)
        } else if self.spreads > MAX_FRAGMENT_SPREADS {
            Err(Refusal::TooManySpreads)
        } else if self.aliases > MAX_ALIASES {
            Err(Refusal::TooManyAliases)
        } else if self.fetches > MAX_FETCHES {
            Err(Refusal::TooManyFetches(self.fetches))
        } else {
            Ok(())
        }
    }
}

/// The checks on the parsed document, before validation: every operation's expanded cost (the
/// fields, spreads and aliases of all operations together, since validation walks them all;
/// the fetches of the costliest operation, since one runs), and each fragment's own, since
/// validation walks every definition too.
pub fn check_document(document: &ExecutableDocument) -> Result<(), Refusal> {
    let mut walk = Walk {
        document,
        memo: HashMap::new(),
        visiting: HashSet::new(),
        cycle: false,
    };
    let mut total = Cost::default();
    let mut fetches = 0;
    for (_, operation) in document.operations.iter() {
        let cost = walk.set(&operation.node.selection_set.node);
        fetches = fetches.max(cost.fetches);
        total = total.add(Cost { fetches: 0, ..cost });
    }
    Cost { fetches, ..total }.check()?;
    for name in document.fragments.keys() {
        walk.fragment(name.as_str()).check()?;
    }
    if walk.cycle {
        return Err(Refusal::FragmentCycle);
    }
    Ok(())
}

/// The most fetch fields any one operation of `document` selects at its root.
pub fn fetches(document: &ExecutableDocument) -> usize {
    let mut walk = Walk {
        document,
        memo: HashMap::new(),
        visiting: HashSet::new(),
        cycle: false,
    };
    document
        .operations
        .iter()
        .map(|(_, op)| walk.set(&op.node.selection_set.node).fetches)
        .max()
        .unwrap_or(0)
}

/// One pass over a document: each fragment's cost is computed once and remembered.
struct Walk<'a> {
    document: &'a ExecutableDocument,
    memo: HashMap<&'a str, Cost>,
    /// Fragments being expanded, to find cycles.
    visiting: HashSet<&'a str>,
    /// Whether a fragment was found spreading itself.
    cycle: bool,
}

impl<'a> Walk<'a> {
    fn set(&mut self, set: &'a SelectionSet) -> Cost {
        let mut cost = Cost::default();
        for item in &set.items {
            let part = match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let inner = self.set(&field.selection_set.node);
                    Cost {
                        fetches: usize::from(FETCH_FIELDS.contains(&field.name.node.as_str())),
                        fields: inner.fields.saturating_add(1),
                        spreads: inner.spreads,
                        aliases: inner
                            .aliases
                            .saturating_add(usize::from(field.alias.is_some())),
                    }
                }
                Selection::InlineFragment(inline) => self.set(&inline.node.selection_set.node),
                Selection::FragmentSpread(spread) => {
                    let inner = self.fragment(spread.node.fragment_name.node.as_str());
                    Cost {
                        spreads: inner.spreads.saturating_add(1),
                        ..inner
                    }
                }
            };
            cost = cost.add(part);
        }
        cost
    }

    fn fragment(&mut self, name: &'a str) -> Cost {
        if let Some(cost) = self.memo.get(name) {
            return *cost;
        }
        let Some((key, fragment)) = self.document.fragments.get_key_value(name) else {
            return Cost::default();
        };
        if !self.visiting.insert(key.as_str()) {
            self.cycle = true;
            return Cost::default();
        }
        let cost = self.set(&fragment.node.selection_set.node);
        self.visiting.remove(key.as_str());
        self.memo.insert(key.as_str(), cost);
        cost
    }
}

/// A limit refusal of async-graphql, with our code and a clearer sentence; any other
/// validation error with `graphql_validation_failed`.
pub fn with_code(error: ServerError) -> ServerError {
    let refusal = match error.message.as_str() {
        TOO_DEEP => Refusal::TooDeep,
        TOO_COMPLEX => Refusal::TooComplex,
        _ => return with_default_code(error, Code::GraphqlValidationFailed),
    };
    let mut coded = refusal.into_error();
    coded.locations = error.locations;
    coded
}

/// A refusal to choose the operation, with its code (see [`Limits`]'s `request`).
fn operation_code(error: &mut ServerError) {
    let code = if error.message.starts_with(UNKNOWN_OPERATION_PREFIX) {
        Code::UnknownOperation
    } else if error.message == OPERATION_NAME_REQUIRED {
        Code::OperationNameRequired
    } else {
        return;
    };
    *error = with_default_code(std::mem::replace(error, ServerError::new("", None)), code);
}
