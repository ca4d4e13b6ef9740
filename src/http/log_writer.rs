//! `odqs serve`'s log lines, written to standard error by a thread of their own.
//! Every answered request logs one line; written from the request's thread, each line would be
//! a `write` system call on the path of the answer. Here a request only appends its formatted
//! line to a shared buffer; the writer thread takes everything pending at once and writes it in
//! one call. Nothing is dropped: when standard error does not keep up and
//! [`MAX_PENDING_BYTES`] are waiting, a request waits for the writer, as it would wait for
//! `write`. A line appears on standard error within [`GATHER_FOR`] of being logged.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// Log bytes waiting for the writer thread before a request waits for it.
pub const MAX_PENDING_BYTES: usize = 1024 * 1024;

/// What the requests and the writer thread share.
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<Pending>,
    /// Signalled when lines arrive in an empty buffer.
    arrived: Condvar,
    /// Signalled when the writer has taken and written a batch.
    written: Condvar,
}

#[derive(Debug, Default)]
struct Pending {
    lines: Vec<u8>,
    /// The writer holds a batch it has not written yet.
    writing: bool,
    /// The writer waits for lines to arrive (and must be woken).
    idle: bool,
    /// No writer thread could be started: lines go straight to standard error.
    direct: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding the lock leaves only bytes behind: keep using them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The tracing writer of `odqs serve` (`MakeWriter`). Dropping it waits until every line
/// logged so far is written, so the last lines before exit are not lost.
#[derive(Debug)]
pub struct BackgroundStderr {
    shared: Arc<Shared>,
}

impl BackgroundStderr {
    /// Starts the writer thread, writing to standard error.
    pub fn start() -> Self {
        Self::start_to(io::stderr())
    }

    /// Starts the writer thread, writing to `sink`.
    fn start_to(sink: impl Write + Send + 'static) -> Self {
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        let started = thread::Builder::new()
            .name("odqs-log".into())
            .spawn(move || write_batches(&worker, sink));
        if started.is_err() {
            shared.lock().direct = true;
        }
        BackgroundStderr { shared }
    }

    /// A handle for the subscriber; the guard stays with the caller.
    pub fn handle(&self) -> LogLines {
        LogLines {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for BackgroundStderr {
    fn drop(&mut self) {
        let mut pending = self.shared.lock();
        while !pending.direct && (pending.writing || !pending.lines.is_empty()) {
            pending = self
                .shared
                .written
                .wait(pending)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The writer thread: takes every pending line at once and writes them in one call, then
/// rests [`GATHER_FOR`] so that under load the lines of many requests share a call; with
/// nothing pending it sleeps until a request wakes it.
fn write_batches(shared: &Shared, mut sink: impl Write) {
    let mut batch = Vec::new();
    loop {
        {
            let mut pending = shared.lock();
            pending.writing = false;
            shared.written.notify_all();
            while pending.lines.is_empty() {
                pending.idle = true;
                pending = shared
                    .arrived
                    .wait(pending)
                    .unwrap_or_else(|e| e.into_inner());
            }
            pending.idle = false;
            std::mem::swap(&mut pending.lines, &mut batch);
            pending.writing = true;
            shared.written.notify_all();
        }
        let _ = sink.write_all(&batch).and_then(|()| sink.flush());
        batch.clear();
        thread::sleep(GATHER_FOR);
    }
}

/// How long the writer rests after a write: a line waits at most this long (plus the write
/// before it) to appear, and a request wakes the writer only when it rests with nothing to do.
const GATHER_FOR: Duration = Duration::from_millis(10);

/// Where the subscriber writes each formatted line (one `write_all` per event).
#[derive(Clone, Debug)]
pub struct LogLines {
    shared: Arc<Shared>,
}

impl Write for &LogLines {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        let mut pending = self.shared.lock();
        if pending.direct {
            drop(pending);
            return io::stderr().write(line);
        }
        while pending.lines.len() >= MAX_PENDING_BYTES {
            pending = self
                .shared
                .written
                .wait(pending)
                .unwrap_or_else(|e| e.into_inner());
        }
        if pending.idle {
            pending.idle = false;
            self.shared.arrived.notify_one();
        }
        pending.lines.extend_from_slice(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogLines {
    type Writer = &'a LogLines;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the test reads back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("sink").extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Lines written from many threads all reach the sink, whole and each once, by the time
    /// dropping the guard returns.
    #[test]
    fn every_line_is_written_before_the_guard_is_gone() {
        let sink = Sink::default();
        let background = BackgroundStderr::start_to(sink.clone());
        let lines = background.handle();
        thread::scope(|scope| {
            for t in 0..4 {
                let lines = lines.clone();
                scope.spawn(move || {
                    for i in 0..500 {
                        (&lines)
                            .write_all(format!("line {t} {i}\n").as_bytes())
                            .expect("appended");
                    }
                });
            }
        });
        drop(background);
        let written = String::from_utf8(sink.0.lock().expect("sink").clone()).expect("text");
        let mut got: Vec<&str> = written.lines().collect();
        got.sort_unstable();
        let mut expected: Vec<String> = (0..4)
            .flat_map(|t| (0..500).map(move |i| format!("line {t} {i}")))
            .collect();
        expected.sort_unstable();
        assert_eq!(got, expected);
    }
}
