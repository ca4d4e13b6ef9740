//! The input every reader reads from: it refuses to hand out more than a record's limit past
//! the start of the record being read (so one huge field or line is refused before it is held
//! whole), and counts the line breaks it handed out (so an error names the right line).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{BufRead, Read};
use std::rc::Rc;

use super::{ImportError, Location};

/// Bytes a reader may have read past the start of a record beyond the limit itself: the CSV
/// reader's own read-ahead buffer (8 KiB) fits, so a record within the limit is never refused
/// because the next one was read ahead.
pub(super) const READ_AHEAD: u64 = 64 * 1024;

/// The record size limit and where the current record started, shared by the reading loop
/// (which moves the start at each record boundary) and the [`Bounded`] input.
pub(super) struct Bounds {
    limit: u64,
    /// Bytes handed out so far.
    pub(super) read: Cell<u64>,
    /// `read` when the current record began.
    start: Cell<u64>,
    /// Whether a read was refused for going past the limit.
    exceeded: Cell<bool>,
    /// Line breaks handed out, for [`Bounds::line_at`] (CSV only: the csv crate's own line
    /// count is one short on `\r\n` files, whose `\n` it reads with the next record).
    lines: Option<Lines>,
    /// Whether the input has ended.
    pub(super) ended: Cell<bool>,
    /// The last byte handed out that ends no line (not `\r` or `\n`).
    pub(super) last_byte: Cell<Option<u8>>,
}

/// The offsets of the `\n` bytes handed out and not yet counted, and how many were counted:
/// queries come in increasing order, so this holds at most a record and the read-ahead.
#[derive(Default)]
struct Lines {
    pending: RefCell<VecDeque<u64>>,
    counted: Cell<u64>,
}

impl Bounds {
    /// Marks the start of the next record at `byte` (a count of bytes handed out).
    pub(super) fn record_starts_at(&self, byte: u64) {
        self.start.set(byte);
    }

    /// Bytes that may still be handed out for the current record.
    pub(super) fn allowance(&self) -> std::io::Result<usize> {
        let end = self.start.get() + self.limit + READ_AHEAD;
        match end.saturating_sub(self.read.get()) {
            0 => {
                self.exceeded.set(true);
                Err(std::io::Error::other("the record is larger than the limit"))
            }
            n => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        }
    }

    /// The refusal of a record that started at `location` and took `bytes`, if over the limit.
    pub(super) fn check(&self, location: Location, bytes: u64) -> Result<(), ImportError> {
        if bytes > self.limit {
            return Err(self.too_large(location));
        }
        Ok(())
    }

    /// Notes the bytes just handed out, which began at offset `start`.
    pub(super) fn note(&self, start: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            self.ended.set(true);
            return;
        }
        if let Some(&last) = bytes.iter().rev().find(|&&b| b != b'\n' && b != b'\r') {
            self.last_byte.set(Some(last));
        }
        if let Some(lines) = &self.lines {
            let mut pending = lines.pending.borrow_mut();
            for (i, _) in bytes.iter().enumerate().filter(|&(_, &b)| b == b'\n') {
                pending.push_back(start + i as u64);
            }
        }
    }

    /// The 1-based line of the byte at `offset` (line breaks before it, plus one). Offsets
    /// must not decrease from one call to the next.
    pub(super) fn line_at(&self, offset: u64) -> u64 {
        let Some(lines) = &self.lines else {
            return 1;
        };
        let mut pending = lines.pending.borrow_mut();
        while pending.front().is_some_and(|&at| at < offset) {
            pending.pop_front();
            lines.counted.set(lines.counted.get() + 1);
        }
        lines.counted.get() + 1
    }

    pub(super) fn too_large(&self, location: Location) -> ImportError {
        ImportError::RecordTooLarge {
            location,
            limit: self.limit,
        }
    }

    /// After a reader failed: the refusal of the record at `location` when the failure was the
    /// limit's doing, else the reader's own error.
    pub(super) fn error_or(
        &self,
        location: Location,
        other: impl FnOnce() -> ImportError,
    ) -> ImportError {
        if self.exceeded.get() {
            self.too_large(location)
        } else {
            other()
        }
    }
}

/// An input that hands out at most [`Bounds::limit`] (plus [`READ_AHEAD`]) bytes past the start
/// of the current record, then fails, so no reader buffers an endless record.
pub(super) struct Bounded<R> {
    inner: R,
    bounds: Rc<Bounds>,
}

impl<R> Bounded<R> {
    pub(super) fn new(inner: R, limit: u64) -> (Self, Rc<Bounds>) {
        Self::with_lines(inner, limit, false)
    }

    /// Like [`Bounded::new`], counting line breaks when `lines` ([`Bounds::line_at`]).
    pub(super) fn with_lines(inner: R, limit: u64, lines: bool) -> (Self, Rc<Bounds>) {
        let bounds = Rc::new(Bounds {
            limit,
            read: Cell::new(0),
            start: Cell::new(0),
            exceeded: Cell::new(false),
            lines: lines.then(Lines::default),
            ended: Cell::new(false),
            last_byte: Cell::new(None),
        });
        (
            Bounded {
                inner,
                bounds: Rc::clone(&bounds),
            },
            bounds,
        )
    }
}

impl<R: BufRead> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let allowed = self.bounds.allowance()?.min(buf.len());
        let n = self.inner.read(&mut buf[..allowed])?;
        if allowed > 0 {
            self.bounds.note(self.bounds.read.get(), &buf[..n]);
        }
        self.bounds.read.set(self.bounds.read.get() + n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Bounded<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        let allowed = self.bounds.allowance()?;
        let buf = self.inner.fill_buf()?;
        Ok(&buf[..buf.len().min(allowed)])
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
        self.bounds.read.set(self.bounds.read.get() + amount as u64);
    }
}
