//! Who the client is: the one place that decides which address a request counts against
//! (throttles, rate limits, logs).
//!
//! The address is the TCP peer's (`ConnectInfo<SocketAddr>`, recorded by [`crate::app::serve`]).
//! `X-Forwarded-For` is believed only when that peer is a trusted proxy (`ODQS_TRUSTED_PROXIES`,
//! empty by default: never believed), because anyone can send the header. Then the chain is read
//! from the right, skipping trusted proxies, and the right-most address that is not one is the
//! client: every entry left of it was written by a party we do not trust.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

/// The address requests count against when the server recorded no peer (a router driven
/// in-process without `ConnectInfo`): they all share one budget.
pub const UNKNOWN: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

/// The client address of a request, as [`of`] decides it.
pub fn of(parts: &Parts, proxies: &TrustedProxies) -> IpAddr {
    decide(&parts.extensions, &parts.headers, proxies)
}

/// [`of`] for a whole request (middleware).
pub fn of_request(request: &axum::extract::Request, proxies: &TrustedProxies) -> IpAddr {
    decide(request.extensions(), request.headers(), proxies)
}

fn decide(
    extensions: &axum::http::Extensions,
    headers: &HeaderMap,
    proxies: &TrustedProxies,
) -> IpAddr {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| a.ip());
    match peer {
        Some(peer) => proxies.client(peer, headers),
        None => UNKNOWN,
    }
}

/// The client address as an extractor, for handlers that take no [`Parts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// Any state that can lend the trusted proxies: this floor knows no application state.
impl<S> FromRequestParts<S> for ClientAddr
where
    S: Send + Sync,
    Arc<TrustedProxies>: FromRef<S>,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(of(
            parts,
            &Arc::<TrustedProxies>::from_ref(state),
        )))
    }
}

/// What a per-address budget is keyed by: an IPv4 address as it is, an IPv6 address by its
/// /64 (one subscriber's network, whose addresses a client can rotate through at will).
pub fn throttle_subject(ip: IpAddr) -> String {
    match network(ip) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("{v6}/64"),
    }
}

/// The address a per-address budget or cap counts: an IPv4 address as it is (IPv4-mapped
/// IPv6 included), an IPv6 address as its /64.
pub fn network(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
    }
}

/// One entry of `ODQS_TRUSTED_PROXIES`: an address range `network/prefix`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    fn parse(text: &str) -> Option<Cidr> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let network: IpAddr = addr.parse().ok()?;
        let network = network.to_canonical();
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok()?,
            Some(_) => return None,
            None => bits,
        };
        (prefix <= bits).then_some(Cidr { network, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// The proxies whose `X-Forwarded-For` is believed (`ODQS_TRUSTED_PROXIES`); empty by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Cidr>);

impl TrustedProxies {
    /// Parses a comma-separated list of addresses and CIDR ranges (`10.0.0.0/8, ::1`); the
    /// error names the entry that is neither.
    pub fn parse(list: &str) -> Result<Self, String> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| Cidr::parse(entry).ok_or_else(|| entry.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(TrustedProxies)
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|cidr| cidr.contains(ip))
    }

    /// The client behind a connection from `peer` carrying `headers`: the peer itself unless it
    /// is trusted; else the right-most `X-Forwarded-For` entry that is not a trusted proxy (all
    /// trusted: the left-most). An entry that is not an address ends the walk at the nearest
    /// trusted hop, which is all that can be known.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        // Several header lines make one list, in order (RFC 9110 §5.3).
        let lines: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .map(|v| v.to_str().unwrap_or(""))
            .collect();
        let entries = lines
            .iter()
            .rev()
            .flat_map(|line| line.rsplit(','))
            .map(str::trim)
            .filter(|entry| !entry.is_empty());
        let mut client = peer;
        for entry in entries {
            match parse_forwarded(entry) {
                Some(ip) => {
                    client = ip;
                    if !self.contains(ip) {
                        return ip;
                    }
                }
                None => return client,
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: `203.0.113.7`, `203.0.113.7:4711`, `2001:db8::1` or
/// `[2001:db8::1]:4711`.
fn parse_forwarded(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(socket) = entry.parse::<SocketAddr>() {
        return Some(socket.ip().to_canonical());
    }
    entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .and_then(|e| e.parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn forwarded(lines: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append("x-forwarded-for", HeaderValue::from_str(line).unwrap());
        }
        headers
    }

    #[test]
    fn the_list_parses_and_names_a_bad_entry() {
        let proxies = TrustedProxies::parse(" 10.0.0.0/8, 192.0.2.1 ,fd00::/8,,").unwrap();
        assert!(proxies.contains(ip("10.200.3.4")));
        assert!(proxies.contains(ip("192.0.2.1")));
        assert!(!proxies.contains(ip("192.0.2.2")));
        assert!(proxies.contains(ip("fd12::1")));
        assert!(proxies.contains(ip("::ffff:10.1.1.1")), "IPv4-mapped");
        assert!(!proxies.contains(ip("fe80::1")));
        assert_eq!(
            TrustedProxies::parse("").unwrap(),
            TrustedProxies::default()
        );
        assert_eq!(
            TrustedProxies::parse("10.0.0.0/33").unwrap_err(),
            "10.0.0.0/33"
        );
        assert_eq!(TrustedProxies::parse("10.0.0.0/").unwrap_err(), "10.0.0.0/");
        assert_eq!(
            TrustedProxies::parse("proxy.local").unwrap_err(),
            "proxy.local"
        );
        assert!(
            TrustedProxies::parse("0.0.0.0/0")
                .unwrap()
                .contains(ip("8.8.8.8"))
        );
        assert!(
            TrustedProxies::parse("::/0")
                .unwrap()
                .contains(ip("2001:db8::1"))
        );
    }

    #[test]
    fn forwarded_for_is_ignored_without_trusted_proxies() {
        let none = TrustedProxies::default();
        let headers = forwarded(&["198.51.100.1"]);
        assert_eq!(none.client(ip("192.0.2.1"), &headers), ip("192.0.2.1"));
        let other = TrustedProxies::parse("10.0.0.1").unwrap();
        assert_eq!(other.client(ip("192.0.2.1"), &headers), ip("192.0.2.1"));
    }

    #[test]
    fn the_right_most_untrusted_address_is_the_client() {
        let proxies = TrustedProxies::parse("10.0.0.0/8").unwrap();
        let peer = ip("10.0.0.2");
        // The client forged the first entry; the proxy appended what it saw.
        let headers = forwarded(&["1.1.1.1, 198.51.100.7"]);
        assert_eq!(proxies.client(peer, &headers), ip("198.51.100.7"));
        // Two proxies: the inner one is skipped.
        let headers = forwarded(&["1.1.1.1, 198.51.100.7, 10.0.0.9"]);
        assert_eq!(proxies.client(peer, &headers), ip("198.51.100.7"));
        // Several header lines are one list.
        let headers = forwarded(&["1.1.1.1", "198.51.100.7:4711", "10.0.0.9"]);
        assert_eq!(proxies.client(peer, &headers), ip("198.51.100.7"));
        let headers = forwarded(&["[2001:db8::7]:443"]);
        assert_eq!(proxies.client(peer, &headers), ip("2001:db8::7"));
        // Every hop trusted: the left-most.
        let headers = forwarded(&["10.1.1.1, 10.2.2.2"]);
        assert_eq!(proxies.client(peer, &headers), ip("10.1.1.1"));
        // No header, or an empty one: the proxy itself.
        assert_eq!(proxies.client(peer, &HeaderMap::new()), peer);
        assert_eq!(proxies.client(peer, &forwarded(&[""])), peer);
        // Garbage stops the walk at the nearest trusted hop.
        let headers = forwarded(&["198.51.100.7, unknown, 10.0.0.9"]);
        assert_eq!(proxies.client(peer, &headers), ip("10.0.0.9"));
        let headers = forwarded(&["nonsense"]);
        assert_eq!(proxies.client(peer, &headers), peer);
    }

    #[test]
    fn ipv6_clients_are_throttled_by_their_64() {
        assert_eq!(throttle_subject(ip("198.51.100.7")), "198.51.100.7");
        assert_eq!(throttle_subject(ip("::ffff:198.51.100.7")), "198.51.100.7");
        assert_eq!(
            throttle_subject(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            throttle_subject(ip("2001:db8:1:2::1")),
            throttle_subject(ip("2001:db8:1:2:ffff::9"))
        );
    }
}
