//! Progress of a long import: a self-updating line on a terminal, a line every few seconds in a
//! log, nothing at all for the demo load and the tests.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Receives progress from the import pipeline (from its reader thread, hence `Sync`).
pub trait Progress: Send + Sync {
    /// `records` read so far; `consumed` stored bytes read so far.
    fn records(&self, records: u64, consumed: &AtomicU64);
    /// A new phase began ("building indexes").
    fn phase(&self, phase: &str);
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn records(&self, _: u64, _: &AtomicU64) {}
    fn phase(&self, _: &str) {}
}

/// Reports to standard error: on a terminal a line redrawn five times a second, otherwise a
/// plain line every ten seconds.
pub struct Stderr {
    label: String,
    total_bytes: Option<u64>,
    terminal: bool,
    last: Mutex<Option<Instant>>,
    /// When the import began: a log's lines say how long it has run, so a reader sees where a
    /// long import spends its time (loading, then building indexes).
    started: Instant,
}

impl Stderr {
    pub fn new(label: &str, total_bytes: Option<u64>) -> Self {
        Stderr {
            label: label.to_string(),
            total_bytes,
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            last: Mutex::new(None),
            started: Instant::now(),
        }
    }
}

impl Progress for Stderr {
    fn records(&self, records: u64, consumed: &AtomicU64) {
        let every = if self.terminal {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(10)
        };
        let mut last = self.last.lock().expect("progress lock");
        let now = Instant::now();
        if last.is_some_and(|at| now - at < every) {
            return;
        }
        *last = Some(now);
        let percent = self
            .total_bytes
            .filter(|&t| t > 0)
            .map(|t| {
                format!(
                    " ({:.0}%)",
                    consumed.load(Ordering::Relaxed) as f64 * 100.0 / t as f64
                )
            })
            .unwrap_or_default();
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[K{}: {records} records{percent}", self.label);
        } else {
            let _ = writeln!(
                err,
                "{}: {records} records{percent} after {:.0} s",
                self.label,
                self.started.elapsed().as_secs_f64()
            );
        }
        let _ = err.flush();
    }

    fn phase(&self, phase: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[K");
        }
        if self.terminal {
            let _ = writeln!(err, "{}: {phase}", self.label);
        } else {
            let _ = writeln!(
                err,
                "{}: {phase} (after {:.0} s)",
                self.label,
                self.started.elapsed().as_secs_f64()
            );
        }
        *self.last.lock().expect("progress lock") = None;
    }
}
