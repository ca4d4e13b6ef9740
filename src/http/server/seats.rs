//! Who may hold a connection: the global cap, the per-address cap, and the room kept for
//! clients with a valid token when the cap nears.
//!
//! A connection is *anonymous* from accept until a request on it presents a token the API
//! confirms ([`Seat::confirm`], called by the API's gate); then it is *trusted*. Only anonymous
//! connections can be pushed out. Two rules keep a flood of anonymous connections (a trickled
//! body, a stalled reader, a half-open head) from locking valid clients out, as 34 addresses
//! with 128 stalled connections each did:
//!
//! - **The per-address cap tapers** once half the global cap is in use: from
//!   [`ConnLimits::max_per_address`] at half the cap down to [`MIN_PER_ADDRESS_NEAR_CAP`] at
//!   the cap, so the last free slots are spread over many addresses instead of going to the
//!   first few.
//! - **Anonymous connections do not keep the last slots**: when the anonymous ones reach
//!   [`ANONYMOUS_SHARE`] of the cap (or the cap itself is reached), a new connection pushes out
//!   the oldest anonymous connection of the address that holds the most of them, unless that is
//!   the newcomer's own address (then it gets a free slot if one is left, or is refused). A valid client's new connection therefore always gets in
//!   while anonymous connections hold the slots, and once its first request is answered it
//!   cannot be pushed out.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::ConnLimits;
use crate::http::client_addr::network;

/// The smallest per-address cap when the global cap is reached (see the module's rules).
pub const MIN_PER_ADDRESS_NEAR_CAP: usize = 8;
/// The share of the global cap anonymous connections may hold before a new connection pushes
/// the oldest of the busiest address out: seven eighths, so an eighth stays for connections
/// that carry a valid token.
pub const ANONYMOUS_SHARE: (usize, usize) = (7, 8);

/// The open connections, in all, by address, and the anonymous ones in age order.
#[derive(Debug, Default)]
pub struct Seats {
    inner: Mutex<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
    /// Anonymous connections per address, by id (ids grow, so the first is the oldest), each
    /// with its push-out bell.
    anonymous: HashMap<IpAddr, BTreeMap<u64, Arc<Notify>>>,
    anonymous_total: usize,
    next_id: u64,
}

/// What [`Seats::admit`] decided.
#[derive(Debug)]
pub enum Admission {
    /// In, holding this seat until it is dropped.
    Seated(Arc<Seat>),
    /// Refused: the address is at its (tapered) cap.
    AddressFull,
    /// Refused: the server is at its cap and nobody can be pushed out.
    ServerFull,
}

impl Seats {
    /// A seat for a new connection from `ip`, or why not.
    pub fn admit(self: &Arc<Self>, ip: IpAddr, limits: &ConnLimits) -> Admission {
        let key = network(ip);
        let mut registry = self.inner.lock().expect("seats lock");
        let own = registry.by_address.get(&key).copied().unwrap_or(0);
        if own >= per_address_cap(registry.total, limits) {
            return Admission::AddressFull;
        }
        let cap = limits.max_connections;
        let anonymous_cap = (cap * ANONYMOUS_SHARE.0 / ANONYMOUS_SHARE.1).max(1);
        let crowded = registry.total >= cap || registry.anonymous_total >= anonymous_cap;
        if crowded && !registry.push_out_for(key) && registry.total >= cap {
            return Admission::ServerFull;
        }
        let id = registry.next_id;
        registry.next_id += 1;
        registry.total += 1;
        *registry.by_address.entry(key).or_insert(0) += 1;
        let bell = Arc::new(Notify::new());
        registry
            .anonymous
            .entry(key)
            .or_default()
            .insert(id, bell.clone());
        registry.anonymous_total += 1;
        Admission::Seated(Arc::new(Seat {
            seats: self.clone(),
            id,
            key,
            trusted: AtomicBool::new(false),
            bell,
        }))
    }

    /// Open connections.
    pub fn open(&self) -> usize {
        self.inner.lock().expect("seats lock").total
    }
}

/// The per-address cap when `total` connections are open: the configured cap up to half the
/// global cap, then tapering linearly to [`MIN_PER_ADDRESS_NEAR_CAP`] at the global cap.
fn per_address_cap(total: usize, limits: &ConnLimits) -> usize {
    let full = limits.max_per_address;
    let half = limits.max_connections / 2;
    if total <= half || half == 0 {
        return full;
    }
    let free = limits.max_connections.saturating_sub(total);
    let tapered = full.saturating_mul(free) / half.max(1);
    tapered.max(MIN_PER_ADDRESS_NEAR_CAP).min(full)
}

impl Registry {
    /// Pushes out the oldest anonymous connection of the address holding the most of them,
    /// unless that is `newcomer` itself (an address cannot push itself forward). Whether one
    /// was pushed out. Its slot is given back at once; the connection closes on its own task.
    fn push_out_for(&mut self, newcomer: IpAddr) -> bool {
        let busiest = self
            .anonymous
            .iter()
            .filter(|(_, ids)| !ids.is_empty())
            .max_by_key(|(address, ids)| (ids.len(), std::cmp::Reverse(**address)))
            .map(|(address, _)| *address);
        let Some(busiest) = busiest.filter(|&address| address != newcomer) else {
            return false;
        };
        let Some(id) = self
            .anonymous
            .get(&busiest)
            .and_then(|ids| ids.first_key_value().map(|(id, _)| *id))
        else {
            return false;
        };
        if let Some(bell) = self.forget_anonymous(busiest, id) {
            bell.notify_one();
        }
        tracing::debug!(address = %busiest, "connection pushed out to make room for another address");
        true
    }

    /// Takes connection `id` of `key` off the anonymous ones; its bell, if it was one.
    fn forget_anonymous(&mut self, key: IpAddr, id: u64) -> Option<Arc<Notify>> {
        let ids = self.anonymous.get_mut(&key)?;
        let removed = ids.remove(&id);
        if ids.is_empty() {
            self.anonymous.remove(&key);
        }
        if removed.is_some() {
            self.anonymous_total -= 1;
        }
        removed
    }
}

/// One open connection's place, given back on drop.
#[derive(Debug)]
pub struct Seat {
    seats: Arc<Seats>,
    id: u64,
    key: IpAddr,
    trusted: AtomicBool,
    bell: Arc<Notify>,
}

impl Seat {
    /// A request on this connection carried a valid token: it can no longer be pushed out.
    pub fn confirm(&self) {
        if self.trusted.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut registry = self.seats.inner.lock().expect("seats lock");
        registry.forget_anonymous(self.key, self.id);
    }

    /// Resolves when this connection was pushed out to make room.
    pub async fn pushed_out(&self) {
        self.bell.notified().await;
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut registry = self.seats.inner.lock().expect("seats lock");
        registry.forget_anonymous(self.key, self.id);
        registry.total -= 1;
        if let Some(open) = registry.by_address.get_mut(&self.key) {
            *open -= 1;
            if *open == 0 {
                registry.by_address.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(admission: Admission) -> Arc<Seat> {
        match admission {
            Admission::Seated(seat) => seat,
            other => panic!("refused: {other:?}"),
        }
    }

    #[test]
    fn caps_hold_and_slots_come_back() {
        let seats = Arc::new(Seats::default());
        let limits = ConnLimits {
            max_connections: 64,
            max_per_address: 2,
            ..ConnLimits::default()
        };
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let first = seat(seats.admit(a, &limits));
        let _second = seat(seats.admit(a, &limits));
        assert!(matches!(seats.admit(a, &limits), Admission::AddressFull));
        drop(first);
        assert_eq!(seats.open(), 1);
        let _again = seat(seats.admit(a, &limits));
    }

    #[test]
    fn the_per_address_cap_tapers_near_the_global_cap() {
        let limits = ConnLimits {
            max_connections: 1000,
            max_per_address: 128,
            ..ConnLimits::default()
        };
        assert_eq!(per_address_cap(0, &limits), 128);
        assert_eq!(per_address_cap(500, &limits), 128);
        assert_eq!(per_address_cap(750, &limits), 64);
        assert_eq!(per_address_cap(990, &limits), MIN_PER_ADDRESS_NEAR_CAP);
        assert_eq!(per_address_cap(1000, &limits), MIN_PER_ADDRESS_NEAR_CAP);
    }

    #[tokio::test]
    async fn anonymous_floods_make_room_for_trusted_and_other_addresses() {
        let seats = Arc::new(Seats::default());
        let limits = ConnLimits {
            max_connections: 16,
            max_per_address: 16,
            ..ConnLimits::default()
        };
        let flood: IpAddr = "192.0.2.66".parse().unwrap();
        let client: IpAddr = "198.51.100.7".parse().unwrap();
        // The flood is held back by its tapering per-address cap before the server is full.
        let mut held = Vec::new();
        while let Admission::Seated(seat) = seats.admit(flood, &limits) {
            held.push(seat);
            assert!(held.len() <= 16);
        }
        assert!((8..16).contains(&held.len()), "{}", held.len());
        // Clients from other addresses get in; once anonymous connections hold their share,
        // each newcomer pushes out the flood's oldest.
        let oldest = held[0].clone();
        let mut others = Vec::new();
        for host in 1..=8u8 {
            others.push(seat(
                seats.admit(IpAddr::from([198, 51, 100, host]), &limits),
            ));
        }
        tokio::time::timeout(std::time::Duration::from_secs(1), oldest.pushed_out())
            .await
            .expect("the oldest flood connection is told to close");
        let mine = seat(seats.admit(client, &limits));
        mine.confirm();
        // Trusted, it is never the one pushed out, however many come after.
        for _ in 0..40 {
            let _ = seats.admit("203.0.113.9".parse().unwrap(), &limits);
        }
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), mine.pushed_out())
                .await
                .is_err()
        );
    }
}
