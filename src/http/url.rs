//! The one percent-encoder of the crate: every URL the service writes (the guides' examples,
//! MCP's resource URIs, the site's links and redirects) encodes its components here, so they
//! all read back the same way through the request-line and query-string readers.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters is percent-encoded (as UTF-8).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one URL component (a path segment, a query name or value).
pub fn encode(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn encoding() {
        assert_eq!(super::encode("dep_delay<"), "dep_delay%3C");
        assert_eq!(super::encode("q[Name]"), "q%5BName%5D");
        assert_eq!(super::encode("臺東"), "%E8%87%BA%E6%9D%B1");
        assert_eq!(super::encode("a b/c"), "a%20b%2Fc");
    }
}
