//! How many exports run at once: per token, per account and in all. Exports are the heaviest
//! requests (each holds its list of positions and a batch of bodies while it streams), so
//! beside the rate limit ([`super::rate_limit`], which charges their records) their number is
//! bounded too; over a bound the export is refused before any work is done.

use std::collections::HashMap;
use std::sync::Arc;

use super::token::Principal;

/// Exports one token may run at once.
pub const EXPORTS_PER_TOKEN: usize = 2;
/// Exports one account may run at once, whatever the number of its tokens.
pub const EXPORTS_PER_ACCOUNT: usize = 3;
/// Exports this instance runs at once; more wait for a free slot (429). Each holds its list of
/// positions (4 bytes a record) and a batch of bodies, so this bounds their memory too.
pub const EXPORTS_AT_ONCE: usize = 32;
/// `Retry-After` of a refusal for too many exports at once, in seconds.
pub const EXPORT_SLOT_RETRY_SECS: u64 = 5;

/// The exports running now, by token, by account and in all.
#[derive(Debug, Default)]
pub struct ExportSlots {
    running: std::sync::Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    by_token: HashMap<i64, usize>,
    by_account: HashMap<i64, usize>,
    total: usize,
}

impl ExportSlots {
    /// A slot for one export of `principal`, held until the slot is dropped (the stream ends
    /// or the client goes away); `None` over a bound.
    pub fn take(self: &Arc<Self>, principal: &Principal) -> Option<ExportSlot> {
        let mut running = self.running.lock().expect("export slots lock");
        let token = running
            .by_token
            .get(&principal.token_id)
            .copied()
            .unwrap_or(0);
        let account = running
            .by_account
            .get(&principal.user_id)
            .copied()
            .unwrap_or(0);
        if token >= EXPORTS_PER_TOKEN
            || account >= EXPORTS_PER_ACCOUNT
            || running.total >= EXPORTS_AT_ONCE
        {
            return None;
        }
        *running.by_token.entry(principal.token_id).or_insert(0) += 1;
        *running.by_account.entry(principal.user_id).or_insert(0) += 1;
        running.total += 1;
        Some(ExportSlot {
            slots: self.clone(),
            token_id: principal.token_id,
            user_id: principal.user_id,
        })
    }
}

/// One running export's place in [`ExportSlots`].
#[derive(Debug)]
pub struct ExportSlot {
    slots: Arc<ExportSlots>,
    token_id: i64,
    user_id: i64,
}

impl Drop for ExportSlot {
    fn drop(&mut self) {
        let mut running = self.slots.running.lock().expect("export slots lock");
        let Running {
            by_token,
            by_account,
            total,
        } = &mut *running;
        for (map, key) in [(by_token, self.token_id), (by_account, self.user_id)] {
            if let Some(n) = map.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&key);
                }
            }
        }
        *total -= 1;
    }
}
