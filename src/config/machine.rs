//! What the machine gives the process, read once at start-up, so a default that depends on it
//! (the in-memory index budget) fits the machine or container odqs runs in.

/// The memory the process may use: the machine's (`MemTotal` in `/proc/meminfo`), or its
/// control group's limit when that is lower (a container started with `--memory`). `None`
/// where neither can be read (not Linux).
pub fn memory_bytes() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .as_deref()
        .and_then(meminfo_total);
    let limit = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|path| std::fs::read_to_string(path).ok())
    .find_map(|text| cgroup_limit(&text));
    match (total, limit) {
        (Some(total), Some(limit)) => Some(total.min(limit)),
        (total, limit) => total.or(limit),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
pub fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A control group's memory limit in bytes; `None` for `max` (no limit) and for cgroup v1's
/// "no limit", a number near `i64::MAX`.
pub fn cgroup_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes < 1 << 60).then_some(bytes)
}
