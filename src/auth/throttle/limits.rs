//! The throttles' budgets, one constant a kind of key, each read wherever it is enforced or
//! shown.

/// A budget of attempts per window for one kind of key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Attempts allowed in a window; later ones are refused until the window ends.
    pub max: i32,
    /// Length of the window, in seconds.
    pub window_secs: i64,
}

/// Wrong passwords per e-mail address: 5 in 15 minutes.
pub const LOGIN_PER_ACCOUNT: Limit = Limit {
    max: 5,
    window_secs: 15 * 60,
};
/// Wrong passwords per client address: 20 in 15 minutes (a few people may share an address).
pub const LOGIN_PER_ADDRESS: Limit = Limit {
    max: 20,
    window_secs: 15 * 60,
};
/// Wrong user codes per account: 10 in 15 minutes. With 20⁸ ≈ 2.6·10¹⁰ possible codes and a
/// 15-minute code lifetime, each account can try 10 of them per lifetime of a code.
pub const CODE_PER_ACCOUNT: Limit = Limit {
    max: 10,
    window_secs: 15 * 60,
};
/// Wrong user codes per client address: 30 in 15 minutes, so many accounts behind one address
/// do not multiply the budget.
pub const CODE_PER_ADDRESS: Limit = Limit {
    max: 30,
    window_secs: 15 * 60,
};
/// Device authorizations started per client address (`POST /auth/device`): 30 in 15 minutes,
/// a code's lifetime. Each start stores a grant row until it expires, so this bounds the rows
/// one address can keep alive; a person signing in a few machines never meets it.
pub const DEVICE_START_PER_ADDRESS: Limit = Limit {
    max: 30,
    window_secs: 15 * 60,
};
/// Token polls per client address (`POST /auth/token`): 120 a minute, the polls of ten
/// clients waiting side by side at the 5-second interval. Every poll locks a grant row (on
/// SQLite, the store's write lock), so one address cannot keep the store busy.
pub const TOKEN_POLL_PER_ADDRESS: Limit = Limit {
    max: 120,
    window_secs: 60,
};
/// Revocations per client address (`POST /auth/revoke`): 60 a minute. A revocation writes to
/// the store only for a live token, and a made-up token cannot be told from a revoked one, so
/// this only keeps one address from keeping the store busy with look-ups.
pub const REVOKE_PER_ADDRESS: Limit = Limit {
    max: 60,
    window_secs: 60,
};
/// Sign-up attempts per client address (`POST /signup`): 10 an hour. Accounts are free and
/// each carries its own API budget, so this bounds how many budgets one address can collect
/// (240 a day, not one a request); a classroom behind one address signs up over an hour or
/// two. Attempts count whether or not the address was taken (the answer says which), so the
/// form cannot be used to test many addresses either.
pub const SIGNUP_PER_ADDRESS: Limit = Limit {
    max: 10,
    window_secs: 60 * 60,
};
/// Sign-up attempts on the whole site: 100 in 5 minutes (1,200 an hour, far above what a
/// public instance sees on a busy day), so many addresses together cannot mint accounts or
/// keep the password hashing busy without bound either.
pub const SIGNUP_GLOBAL: Limit = Limit {
    max: 100,
    window_secs: 5 * 60,
};

/// The longest window of the limits above: a counter whose window started longer ago than
/// this is stale for every limit and can be dropped.
pub const LONGEST_WINDOW_SECS: i64 = {
    let all = [
        LOGIN_PER_ACCOUNT,
        LOGIN_PER_ADDRESS,
        CODE_PER_ACCOUNT,
        CODE_PER_ADDRESS,
        DEVICE_START_PER_ADDRESS,
        TOKEN_POLL_PER_ADDRESS,
        REVOKE_PER_ADDRESS,
        SIGNUP_PER_ADDRESS,
        SIGNUP_GLOBAL,
    ];
    let mut longest = 0;
    let mut i = 0;
    while i < all.len() {
        if all[i].window_secs > longest {
            longest = all[i].window_secs;
        }
        i += 1;
    }
    longest
};
