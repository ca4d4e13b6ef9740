//! The MCP tools by name, in the order `tools/list` gives them: MCP registers them and
//! `catalog.md` lists them, each reading this one list, so neither front end imports the other.

/// The tools, in the order `tools/list` gives them.
pub const NAMES: [&str; 6] = [
    "list_datasets",
    "describe_dataset",
    "search_records",
    "get_record",
    "aggregate",
    "export_records",
];
