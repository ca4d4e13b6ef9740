//! `X-Request-Id`: every answer carries one, and its access-log line too, so a client's report
//! ("request 5f3a…-42 failed") leads to its line in the logs. An id sent by a trusted proxy
//! (`ODQS_TRUSTED_PROXIES`: the load balancer in front) is kept, so one id follows a request
//! through the proxy's log and this one's; from anyone else the header is ignored (a client
//! could otherwise write what it likes into the logs).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderMap, HeaderValue};

use crate::http::client_addr::TrustedProxies;

/// The header's name.
pub const HEADER: &str = "x-request-id";

/// The longest id taken from a proxy; a longer one is replaced.
pub const MAX_ID_BYTES: usize = 128;

/// Makes the ids of one serving process: a random prefix per process (instances behind one
/// balancer do not collide) and a counter.
#[derive(Debug)]
pub struct RequestIds {
    /// The random prefix in hexadecimal (eight digits), written once: every id starts with it.
    prefix_hex: String,
    next: AtomicU64,
}

impl Default for RequestIds {
    fn default() -> Self {
        let prefix: u32 = rand::random();
        RequestIds {
            prefix_hex: query::hex(&prefix.to_be_bytes()),
            next: AtomicU64::new(1),
        }
    }
}

impl RequestIds {
    /// The id of a request from `peer` with `headers`: the proxy's when `peer` is a trusted
    /// proxy and its id is printable ASCII within [`MAX_ID_BYTES`], else a new one.
    pub fn of(
        &self,
        peer: Option<IpAddr>,
        headers: &HeaderMap,
        proxies: &TrustedProxies,
    ) -> HeaderValue {
        if let Some(peer) = peer
            && proxies.contains(peer)
            && let Some(sent) = headers.get(HEADER)
            && (1..=MAX_ID_BYTES).contains(&sent.len())
            && sent.as_bytes().iter().all(|b| b.is_ascii_graphic())
        {
            return sent.clone();
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut id = Vec::with_capacity(self.prefix_hex.len() + 1 + 20);
        id.extend_from_slice(self.prefix_hex.as_bytes());
        id.push(b'-');
        id.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        HeaderValue::from_bytes(&id).expect("hex digits and a number make a header value")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kept_only_from_trusted_proxies() {
        let ids = RequestIds::default();
        let proxies = TrustedProxies::parse("10.0.0.0/8").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(HEADER, HeaderValue::from_static("lb-7f3a"));
        let proxy = Some("10.1.2.3".parse().unwrap());
        let stranger = Some("192.0.2.9".parse().unwrap());
        assert_eq!(ids.of(proxy, &headers, &proxies), "lb-7f3a");
        let made = ids.of(stranger, &headers, &proxies);
        assert_ne!(made, "lb-7f3a");
        let n = ids.next.load(Ordering::Relaxed) - 1;
        let prefix = u32::from_str_radix(&ids.prefix_hex, 16).unwrap();
        assert_eq!(made, format!("{prefix:08x}-{n}").as_str());
        assert_ne!(
            ids.of(stranger, &headers, &proxies),
            made,
            "two requests, one id"
        );
        assert_ne!(ids.of(None, &headers, &proxies), "lb-7f3a");
        headers.insert(HEADER, HeaderValue::from_static("has space"));
        assert_ne!(ids.of(proxy, &headers, &proxies), "has space");
        let long = "x".repeat(MAX_ID_BYTES + 1);
        headers.insert(HEADER, HeaderValue::try_from(long.as_str()).unwrap());
        assert_ne!(ids.of(proxy, &headers, &proxies), long.as_str());
    }
}
