//! How the guides write values as Markdown and URLs: inline code and table cells that survive
//! any value, values as they go into a query string, a `curl` line, and the date format the
//! guides and the site's pages share.

use serde_json::Value;
use time::OffsetDateTime;
use time::macros::format_description;

use crate::http::url::encode;

/// A value as it goes into a URL query (`true`, `5`, `UA`).
pub(crate) fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Inline code for Markdown, safe inside a table cell.
pub(crate) fn code(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// Plain text for one line of Markdown (a table cell, a list item).
pub(crate) fn cell(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|")
}

pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// A URL query from (name, value) pairs, every part percent-encoded (UTF-8).
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A `curl` line for `url` with the token from `$ODQS_TOKEN`.
pub(crate) fn curl(url: &str) -> String {
    format!("curl -H \"Authorization: Bearer $ODQS_TOKEN\" \"{url}\"")
}

/// A time as the guides and the site show it: `2026-11-22 14:05 UTC`.
pub fn when(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(format_description!(
            "[year]-[month]-[day] [hour]:[minute] UTC"
        ))
        .unwrap_or_default()
}
