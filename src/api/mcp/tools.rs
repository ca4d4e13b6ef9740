//! The MCP tools (contract §12.4): one per API read, each a thin call into the same resolver
//! functions as its REST handler, answering the same JSON. A broken rule is a tool error
//! whose structured content is the API's error body (`{"error": code, "message", …}`).
//! The descriptions are rendered from `templates/mcp_tools.md` with the query layer's
//! constants and operator table, the facts `skill.md` is written from.

use axum::http::request::Parts;
use minijinja::context;
use query::cost::extra_requests;
use query::log_text::clip;
use query::params::{
    DEFAULT_FACET_SIZE, DEFAULT_PER_PAGE, MAX_FACET_SIZE, MAX_FACETS, MAX_GROUP_BY_FIELDS,
    MAX_GROUPS, MAX_IDS, MAX_PER_PAGE, MAX_PERCENTILES, ProjectionParams, catalog_words,
};
use query::{ApiError, ExportFormat, Need, Paging, operators};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::args::{Aggregate, Describe, ExportRecords, GetRecord, ListDatasets, SearchRecords};
use crate::auth::cost_gate::TokenGate;
use crate::auth::http::gate::Authenticated;
use crate::auth::token::Principal;
use crate::guides::catalog::CATALOG_MD_PER_PAGE;
use crate::guides::tools::NAMES;
use crate::state::AppState;
use crate::templates;

/// The most records `export_records` sends: a slice an agent can read in one answer; the
/// whole of a dataset is the REST export's job.
pub const MAX_EXPORT_RECORDS: u64 = 1_000;

/// The MCP server of one request: the application's state, shared.
#[derive(Clone)]
pub struct Tools {
    state: AppState,
}

impl Tools {
    /// The tools over `state`.
    pub fn new(state: AppState) -> Self {
        Tools { state }
    }

    /// Runs tool `name` with `arguments`, as the token `principal`.
    async fn call(
        &self,
        name: &str,
        arguments: Value,
        principal: Principal,
    ) -> Result<CallToolResult, ApiError> {
        let resolver = &self.state.resolver;
        let gate = TokenGate::new(self.state.rate_limits.clone(), principal.token_id);
        let caller = principal.caller(gate.as_ref());
        let answer = match name {
            "list_datasets" => {
                let args: ListDatasets = parse(arguments)?;
                principal.scope.require(Need::Read, None)?;
                json(
                    resolver
                        .list_datasets(
                            Paging::new(args.page, args.per_page)?,
                            &catalog_words(args.q.as_deref())?,
                            &principal.scope,
                        )
                        .await?,
                )
            }
            "describe_dataset" => {
                let args: Describe = parse(arguments)?;
                principal.require(Need::Read, &args.dataset)?;
                // The metadata, and what the dataset's guide says of each field.
                let mut detail = json(resolver.dataset_detail(&args.dataset).await?);
                let values = self.state.guides.field_values(&args.dataset).await?;
                if let Value::Object(map) = &mut detail {
                    map.insert("values".into(), values);
                }
                detail
            }
            "search_records" => {
                let args: SearchRecords = parse(arguments)?;
                let params = args.params()?;
                let ready = resolver
                    .call_records(&caller, &args.dataset, &params)
                    .await?;
                json(ready.run().await?.as_ref())
            }
            "get_record" => {
                let args: GetRecord = parse(arguments)?;
                let projection = ProjectionParams::parse(args.fields().as_deref())?;
                let record = (args.id.as_str(), projection.fields.as_deref());
                let ready = resolver
                    .call_record(&caller, &args.dataset, record, args.version)
                    .await?;
                ready.run().await?.as_ref().clone()
            }
            "aggregate" => {
                let args: Aggregate = parse(arguments)?;
                let params = args.params()?;
                let ready = resolver.call_agg(&caller, &args.dataset, &params).await?;
                json(ready.run().await?.as_ref())
            }
            "export_records" => {
                let args: ExportRecords = parse(arguments)?;
                principal.require(Need::Export, &args.dataset)?;
                return self.export(args, principal).await;
            }
            _ => {
                return Err(ApiError::invalid(
                    "name",
                    format!(
                        "There is no tool {name}; the tools are {}.",
                        NAMES.join(", ")
                    ),
                ));
            }
        };
        Ok(CallToolResult::structured(answer))
    }

    /// `export_records`: the export's bytes as text, when the slice is small enough.
    async fn export(
        &self,
        args: ExportRecords,
        principal: Principal,
    ) -> Result<CallToolResult, ApiError> {
        let resolver = &self.state.resolver;
        let params = args.params()?;
        let prepared = resolver.prepare_export(&args.dataset, &params).await?;
        let url = format!(
            "{}/export",
            resolver.dataset_url(&prepared.dataset.meta.slug)
        );
        let mut export = resolver.run_export(prepared).await?;
        let total = export.total();
        if total > MAX_EXPORT_RECORDS {
            return Err(ApiError::invalid(
                "filters",
                format!(
                    "This export would send {total} records; the tool sends at most {MAX_EXPORT_RECORDS}. Narrow it with filters, or download it whole from GET {url}."
                ),
            ));
        }
        // The same charge as the REST export: one request more per started 1,000 records.
        self.state
            .rate_limits
            .weigh(principal.token_id, extra_requests(total))
            .map_err(|refused| ApiError::RateLimited {
                retry_after: refused.reset_secs,
            })?;
        let mut bytes = Vec::new();
        while let Some(chunk) = export.next_chunk().await? {
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(bytes).map_err(|_| ApiError::Internal)?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

/// A failure the client cannot act on, as a protocol error carrying the API's code.
fn internal(error: ApiError) -> ErrorData {
    ErrorData::internal_error(error.message(), Some(error.body()))
}

/// A tool's arguments as its type, or `invalid_parameter` naming what serde found wrong.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, ApiError> {
    serde_json::from_value(arguments).map_err(|e| {
        ApiError::invalid(
            "arguments",
            format!("The tool's arguments do not fit its input schema: {e}."),
        )
    })
}

/// An answer as the JSON REST would send.
fn json(answer: impl serde::Serialize) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}

/// Who the API gate found the HTTP request behind this call to act for.
fn principal(context: &RequestContext<RoleServer>) -> Option<Principal> {
    match context
        .extensions
        .get::<Parts>()?
        .extensions
        .get::<Authenticated>()?
    {
        Authenticated(Ok(Some(principal))) => Some(principal.clone()),
        _ => None,
    }
}

/// One tool's description, rendered from `templates/mcp_tools.md`.
fn description(tool: &str) -> String {
    let operators: Vec<_> = [
        entity::field_type::FieldType::Keyword,
        entity::field_type::FieldType::Number,
        entity::field_type::FieldType::Date,
        entity::field_type::FieldType::Boolean,
        entity::field_type::FieldType::Text,
    ]
    .into_iter()
    .map(|t| context! { type => t.to_string(), ops => operators::Op::allowed_names(t).to_vec() })
    .collect();
    let formats: Vec<_> = ExportFormat::ALL.iter().map(|f| f.as_str()).collect();
    templates::render(
        "mcp_tools.md",
        context! {
            tool,
            default_per_page => DEFAULT_PER_PAGE,
            max_per_page => MAX_PER_PAGE,
            max_ids => MAX_IDS,
            max_groups => MAX_GROUPS,
            max_percentiles => MAX_PERCENTILES,
            max_group_by => MAX_GROUP_BY_FIELDS,
            max_facets => MAX_FACETS,
            default_facet_size => DEFAULT_FACET_SIZE,
            max_facet_size => MAX_FACET_SIZE,
            max_export => MAX_EXPORT_RECORDS,
            operators,
            formats,
        },
    )
    .unwrap_or_default()
    .trim()
    .to_string()
}

fn tool<T: JsonSchema + 'static>(name: &'static str) -> Tool {
    Tool::new(name, description(name), schema_for_type::<T>())
        .annotate(ToolAnnotations::new().read_only(true))
}

/// Every tool with its description and input schema, rendered once.
static LIST: std::sync::LazyLock<Vec<Tool>> = std::sync::LazyLock::new(|| {
    vec![
        tool::<ListDatasets>("list_datasets"),
        tool::<Describe>("describe_dataset"),
        tool::<SearchRecords>("search_records"),
        tool::<GetRecord>("get_record"),
        tool::<Aggregate>("aggregate"),
        tool::<ExportRecords>("export_records"),
    ]
});

impl Tools {
    fn site_url(&self) -> &str {
        self.state.public_url.trim_end_matches('/')
    }

    /// The URL of a dataset's guide, which is also its resource URI.
    fn guide_uri(&self, slug: &str) -> String {
        self.state.guides.skill_url(slug)
    }
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let site_url = self.state.public_url.trim_end_matches('/');
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("odqs", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            templates::render("mcp_instructions.md", context! { site_url }).unwrap_or_default(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(LIST.clone()))
    }

    /// Each dataset's guide (`skill.md`), the per-dataset context an agent reads first: of the
    /// datasets the token's scope may read, in the catalog's order, as many a page as
    /// `catalog.md` lists ([`CATALOG_MD_PER_PAGE`]); `nextCursor` is where the next page starts.
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let Some(scope) = principal(&context).map(|p| p.scope) else {
            return Err(internal(ApiError::MissingToken));
        };
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ErrorData::invalid_params(
                    format!(
                        "The cursor {} is not one resources/list gave; start without one.",
                        clip(&cursor)
                    ),
                    None,
                )
            })?,
        };
        let per_page = CATALOG_MD_PER_PAGE as usize;
        let datasets = self.state.resolver.catalog().await.map_err(internal)?;
        let readable: Vec<_> = datasets
            .iter()
            .filter(|d| scope.allows(Need::Read, Some(&d.slug)))
            .collect();
        let resources = readable
            .iter()
            .skip(start)
            .take(per_page)
            .map(|d| {
                Resource::new(self.guide_uri(&d.slug), format!("{} guide", d.slug))
                    .with_title(format!("{} (skill.md)", d.title))
                    .with_description(format!(
                        "How to query {}: fields, operators, values and worked examples.",
                        d.slug
                    ))
                    .with_mime_type("text/markdown")
            })
            .collect();
        let mut page = ListResourcesResult::with_all_items(resources);
        let next = start.saturating_add(per_page);
        page.next_cursor = (next < readable.len()).then(|| next.to_string());
        Ok(page)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let prefix = format!("{}/datasets/", self.site_url());
        let slug = request
            .uri
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix("/skill.md"))
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            });
        let Some(slug) = slug else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "No resource {}; resources/list names them.",
                    clip(&request.uri)
                ),
                None,
            ));
        };
        match self.state.guides.skill(&slug).await {
            Ok(text) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text.as_str(), request.uri.clone())
                    .with_mime_type("text/markdown"),
            ])
            .into()),
            Err(ApiError::DatasetNotFound { .. }) => Err(ErrorData::resource_not_found(
                format!("No dataset is published as {}.", clip(&slug)),
                None,
            )),
            Err(e) => Err(internal(e)),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(principal) = principal(&context) else {
            // require_token stands before the service; this is a routing bug.
            tracing::error!("an MCP call reached the tools without a token");
            return Ok(CallToolResult::structured_error(ApiError::Internal.body()).into());
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match self.call(&request.name, arguments, principal).await {
            Ok(result) => result,
            Err(error) => {
                if error == ApiError::Internal {
                    tracing::error!(tool = %clip(&request.name), "MCP tool failed");
                }
                CallToolResult::structured_error(error.body())
            }
        };
        Ok(result.into())
    }

    /// A request rmcp could not read as one of the protocol's: a method it knows whose params
    /// do not fit (`tools/call` without a `name`, say) is `-32602` Invalid params, as JSON-RPC
    /// says; any other method is `-32601` Method not found. The method is named clipped
    /// (`query::log_text`), since rmcp logs the error and a client may send a megabyte of it.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(unreadable_request(&request.method))
    }
}

/// The methods a client may call, as rmcp's model names them; one that reaches
/// [`ServerHandler::on_custom_request`] had params rmcp could not read.
pub const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// The protocol error for a request rmcp could not read (see [`Tools::on_custom_request`]).
fn unreadable_request(method: &str) -> ErrorData {
    if CLIENT_METHODS.contains(&method) {
        ErrorData::invalid_params(
            format!(
                "The params of {method} do not fit the method's schema; tools/list gives each tool's input schema."
            ),
            None,
        )
    } else {
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {}", clip(method)),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use query::log_text::MAX_LOGGED_BYTES;

    #[test]
    fn unreadable_requests_answer_their_code() {
        let error = unreadable_request("tools/call");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("tools/call"), "{}", error.message);
        let long = "m".repeat(1 << 20);
        let error = unreadable_request(&long);
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(
            error.message.len() < MAX_LOGGED_BYTES + 60,
            "{}",
            error.message.len()
        );
        assert!(error.message.ends_with(" bytes)"), "{}", error.message);
    }
}
