//! Raw `<`, `>` and `"` in query strings, as `curl 'http://…/records?sort=dep_delay<'` sends them.
//!
//! Contract §5 says `sort=name<` and `sort=name>` work raw as well as percent-encoded. hyper
//! reads the request line with `httparse`, which accepts every visible ASCII byte (and every
//! byte from 0x80) in the request-target, and then builds an `http::Uri`, whose query table
//! (http 1.x, `src/uri/path.rs`, `build_query_map`, after the WHATWG query state) allows only
//! 0x21, 0x24..=0x3B, 0x3D, 0x3F..=0x7E and 0x80..=0xFF. Of the bytes httparse lets through,
//! that leaves out `"` (0x22), `<` (0x3C) and `>` (0x3E) (`#`, 0x23, starts the fragment), so a
//! raw `<` or `>` got an empty `400 Bad Request` before the router saw the request. No hyper or
//! axum option relaxes this.
//!
//! [`RawQueryListener`] wraps every accepted connection in a [`RawQueryStream`], which
//! percent-encodes exactly those three bytes (`%22`, `%3C`, `%3E`) in the query part of the
//! request-target of HTTP/1.x request lines before hyper reads them; the handlers decode them
//! back, so a raw and an encoded request are the same request. `{`, `}`, `|`, `\`, `^` and `` ` ``
//! are valid in a query already and stay as they are, as do `%`, `+`, `&`, `=` and the rest. The
//! path, the headers and the bodies are never changed, and writes pass straight through.
//!
//! To find each request line on a keep-alive connection the stream follows the message framing:
//! header lines up to the blank line, then exactly `Content-Length` body bytes, or a chunked
//! body (`Transfer-Encoding: …, chunked`: size lines, chunk data, each chunk's line end, the
//! trailer lines up to a blank line); requests without `Content-Length` or `Transfer-Encoding`
//! have no body. Whatever it does not follow turns it into a plain pass-through for the rest of
//! the connection, where hyper answers exactly as it would without it:
//! - a `Transfer-Encoding` whose last coding is not `chunked`, or one beside `Content-Length`;
//! - `CONNECT` or an `Upgrade` header: what follows may not be HTTP;
//! - anything unparseable: a request line that is not `METHOD SP TARGET SP HTTP/1.x` (an HTTP/2
//!   preface, for one), a header line without `:` or folded onto the next line, an invalid or
//!   conflicting `Content-Length`, a chunk size that is not hexadecimal, a chunk not followed by
//!   its line end, a chunk or trailer line longer than [`MAX_LINE`].
//!
//! A head too large is answered here, before hyper (which answers one with an empty `414` or
//! `431` and closes): a request line longer than [`MAX_LINE`] (so a request-target the http
//! crate would refuse never reaches it) gets `414 URI Too Long`, a header line longer than
//! [`MAX_LINE`], a head of more than [`MAX_HEAD_BYTES`] or more than [`MAX_HEADERS`] header
//! lines (hyper's own count) `431 Request Header Fields Too Large`, each with the contract's JSON
//! error body and `Connection: close`. The stream writes the answer, shuts its side down, reads
//! and drops what the client still sends (at most [`DRAIN_BYTES`], so closing does not reset
//! the connection under the answer) and then ends the input hyper reads, which closes the
//! connection without an answer of its own.
//!
//! Like httparse, lines may end in `\r\n` or a bare `\n`, and blank lines before a request line
//! are skipped.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;

/// The longest line of a head (terminator included): a longer request line is answered `414`, a
/// longer header line `431`; a longer chunk-size or trailer line turns the connection into a
/// pass-through. A request line this long holds a target under the http crate's limit (65,534).
pub const MAX_LINE: usize = 64 * 1024;
/// The most bytes a request head may take (request line and header lines): more is answered
/// `431`. Below hyper's own read buffer limit (about 400 KiB), so hyper never answers first.
pub const MAX_HEAD_BYTES: usize = 256 * 1024;
/// The most header lines a request may have: more is answered `431` (hyper's own limit, which it
/// answers with an empty `431`).
pub const MAX_HEADERS: usize = 100;
/// The most bytes read and dropped after a refused head before the connection is closed.
pub const DRAIN_BYTES: u64 = 1024 * 1024;

/// A [`Listener`] whose connections percent-encode raw `<`, `>` and `"` in request queries (see
/// the [module documentation](self)). Accept errors are handled by the wrapped listener, for a
/// [`TcpListener`] as `axum::serve` does without the wrapper.
#[derive(Debug)]
pub struct RawQueryListener<L = TcpListener> {
    inner: L,
}

impl<L> RawQueryListener<L> {
    /// Wraps `inner`.
    pub fn new(inner: L) -> Self {
        RawQueryListener { inner }
    }
}

impl<L: Listener> Listener for RawQueryListener<L> {
    type Io = RawQueryStream<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = self.inner.accept().await;
        (RawQueryStream::new(io), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// One server-side connection whose reads have raw `<`, `>` and `"` in the query of each
/// HTTP/1.x request-target percent-encoded; writes pass straight through.
#[derive(Debug)]
pub struct RawQueryStream<S> {
    inner: S,
    mode: Mode,
    /// The unfinished line of a request head (request line or header line).
    line: Vec<u8>,
    /// Bytes ready for the reader, from `out_pos` on.
    out: Vec<u8>,
    out_pos: usize,
    /// The answer to a head too large, once one is ([`Mode::Refused`]).
    refusal: Option<Refusal>,
}

/// An answer the stream writes itself, and how far it got.
#[derive(Debug)]
struct Refusal {
    answer: Vec<u8>,
    written: usize,
    shut: bool,
    drained: u64,
}

/// Where the stream is in the current request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Before a request line (blank lines are skipped).
    RequestLine,
    /// In the header lines, with the `Content-Length` seen so far, whether the body is
    /// chunked, and the head's size so far (bytes, header lines).
    Headers {
        content_length: Option<u64>,
        chunked: bool,
        bytes: usize,
        lines: usize,
    },
    /// In a body of known length.
    Body { remaining: u64 },
    /// Before a chunk-size line of a chunked body.
    ChunkSize,
    /// In a chunk's data.
    ChunkData { remaining: u64 },
    /// Before the line end that follows a chunk's data.
    ChunkEnd,
    /// In the trailer lines after the last chunk, up to a blank line.
    Trailers,
    /// For the rest of the connection, bytes pass unchanged.
    PassThrough,
    /// The head was too large: the stream answers it ([`Refusal`]) and hyper reads no more.
    Refused,
}

impl<S> RawQueryStream<S> {
    /// Wraps a connection, before its first byte has been read.
    pub fn new(inner: S) -> Self {
        RawQueryStream {
            inner,
            mode: Mode::RequestLine,
            line: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            refusal: None,
        }
    }

    /// The wrapped connection.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Takes up to `n` bytes just read as body bytes that pass unchanged; returns how many.
    fn take_body(&mut self, n: usize) -> usize {
        let (remaining, next, more): (u64, Mode, fn(u64) -> Mode) = match self.mode {
            Mode::Body { remaining } => (remaining, Mode::RequestLine, |remaining| Mode::Body {
                remaining,
            }),
            Mode::ChunkData { remaining } => (remaining, Mode::ChunkEnd, |remaining| {
                Mode::ChunkData { remaining }
            }),
            _ => return 0,
        };
        let taken = remaining.min(n as u64);
        self.mode = match remaining - taken {
            0 => next,
            remaining => more(remaining),
        };
        taken as usize
    }

    /// Runs `input` through the framing, appending what the reader gets to `out` and keeping an
    /// unfinished line in `line`.
    fn process(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            match self.mode {
                Mode::PassThrough => {
                    self.out.extend_from_slice(input);
                    return;
                }
                Mode::Refused => return,
                Mode::Body { .. } | Mode::ChunkData { .. } => {
                    let taken = self.take_body(input.len());
                    self.out.extend_from_slice(&input[..taken]);
                    input = &input[taken..];
                }
                Mode::RequestLine
                | Mode::Headers { .. }
                | Mode::ChunkSize
                | Mode::ChunkEnd
                | Mode::Trailers => {
                    let end = input.iter().position(|&b| b == b'\n');
                    let (part, complete) = match end {
                        Some(i) => (&input[..=i], true),
                        None => (input, false),
                    };
                    self.line.extend_from_slice(part);
                    input = &input[part.len()..];
                    if self.line.len() > MAX_LINE {
                        match self.mode {
                            Mode::RequestLine => self.refuse(Oversized::Target),
                            Mode::Headers { .. } => self.refuse(Oversized::Head),
                            _ => self.give_up(),
                        }
                    } else if complete {
                        self.finish_line();
                    }
                }
            }
        }
    }

    /// Hands over the unfinished line as it came and passes everything after it through.
    fn give_up(&mut self) {
        self.out.append(&mut self.line);
        self.mode = Mode::PassThrough;
    }

    /// Answers a head too large ([`Refusal`]): nothing more reaches hyper.
    fn refuse(&mut self, what: Oversized) {
        self.line.clear();
        self.mode = Mode::Refused;
        self.refusal = Some(Refusal {
            answer: what.answer(),
            written: 0,
            shut: false,
            drained: 0,
        });
    }

    /// Handles the complete line in `line` (terminator included).
    fn finish_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        match self.mode {
            Mode::RequestLine => self.request_line(&line),
            Mode::Headers {
                content_length,
                chunked,
                bytes,
                lines,
            } => {
                // httparse fails on one header line too many before the head is complete, so
                // the line is counted before it is handed on.
                let header = !strip_eol(&line).is_empty();
                let (bytes, lines) = (bytes + line.len(), lines + usize::from(header));
                if bytes > MAX_HEAD_BYTES || lines > MAX_HEADERS {
                    self.refuse(Oversized::Head);
                    return;
                }
                self.header_line(&line, content_length, chunked, bytes, lines);
            }
            Mode::ChunkSize => self.chunk_size_line(&line),
            Mode::ChunkEnd => {
                self.out.extend_from_slice(&line);
                self.mode = match strip_eol(&line) {
                    b"" => Mode::ChunkSize,
                    _ => Mode::PassThrough,
                };
            }
            Mode::Trailers => {
                self.out.extend_from_slice(&line);
                if strip_eol(&line).is_empty() {
                    self.mode = Mode::RequestLine;
                }
            }
            Mode::Body { .. } | Mode::ChunkData { .. } | Mode::PassThrough | Mode::Refused => {
                unreachable!("no line outside a head")
            }
        }
        // Keep the allocation for the next line.
        self.line = line;
        self.line.clear();
    }

    fn request_line(&mut self, line: &[u8]) {
        let content = strip_eol(line);
        if content.is_empty() {
            // A blank line before a request line, which httparse skips.
            self.out.extend_from_slice(line);
            return;
        }
        let Some((method, target)) = split_request_line(content) else {
            self.out.extend_from_slice(line);
            self.mode = Mode::PassThrough;
            return;
        };
        if method == b"CONNECT" {
            self.out.extend_from_slice(line);
            self.mode = Mode::PassThrough;
            return;
        }
        let query = target
            .iter()
            .position(|&b| b == b'?')
            .map_or(target.len(), |i| i + 1);
        // Method, the space and the path as they came.
        let head = method.len() + 1 + query;
        self.out.extend_from_slice(&line[..head]);
        for &b in &target[query..] {
            match b {
                b'"' => self.out.extend_from_slice(b"%22"),
                b'<' => self.out.extend_from_slice(b"%3C"),
                b'>' => self.out.extend_from_slice(b"%3E"),
                _ => self.out.push(b),
            }
        }
        // The space, the version and the line's end as they came.
        self.out
            .extend_from_slice(&line[method.len() + 1 + target.len()..]);
        self.mode = Mode::Headers {
            content_length: None,
            chunked: false,
            bytes: line.len(),
            lines: 0,
        };
    }

    fn header_line(
        &mut self,
        line: &[u8],
        content_length: Option<u64>,
        chunked: bool,
        bytes: usize,
        lines: usize,
    ) {
        self.out.extend_from_slice(line);
        let content = strip_eol(line);
        if content.is_empty() {
            self.mode = match (content_length, chunked) {
                // Both: hyper's rules for the pair are not worth copying.
                (Some(_), true) => Mode::PassThrough,
                (None, true) => Mode::ChunkSize,
                (Some(n), false) if n > 0 => Mode::Body { remaining: n },
                _ => Mode::RequestLine,
            };
            return;
        }
        let folded = matches!(content[0], b' ' | b'\t');
        let Some(colon) = content.iter().position(|&b| b == b':') else {
            self.mode = Mode::PassThrough;
            return;
        };
        if folded {
            self.mode = Mode::PassThrough;
            return;
        }
        let name = &content[..colon];
        let headers = |content_length, chunked| Mode::Headers {
            content_length,
            chunked,
            bytes,
            lines,
        };
        self.mode = if name.eq_ignore_ascii_case(b"content-length") {
            match parse_content_length(&content[colon + 1..]) {
                Some(n) if content_length.is_none_or(|seen| seen == n) => headers(Some(n), chunked),
                _ => Mode::PassThrough,
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // One `Transfer-Encoding` line, ending in `chunked`; anything else passes through.
            let last = content[colon + 1..].rsplit(|&b| b == b',').next();
            match last.map(<[u8]>::trim_ascii) {
                Some(coding) if !chunked && coding.eq_ignore_ascii_case(b"chunked") => {
                    headers(content_length, true)
                }
                _ => Mode::PassThrough,
            }
        } else if name.eq_ignore_ascii_case(b"upgrade") {
            Mode::PassThrough
        } else {
            headers(content_length, chunked)
        };
    }

    /// `SIZE [; extensions]` in hexadecimal: that much chunk data follows, or the trailers
    /// when it is 0.
    fn chunk_size_line(&mut self, line: &[u8]) {
        self.out.extend_from_slice(line);
        let content = strip_eol(line);
        let size = content
            .split(|&b| b == b';')
            .next()
            .map(<[u8]>::trim_ascii)
            .filter(|digits| {
                !digits.is_empty() && digits.len() <= 16 && digits.iter().all(u8::is_ascii_hexdigit)
            })
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u64::from_str_radix(digits, 16).ok());
        self.mode = match size {
            Some(0) => Mode::Trailers,
            Some(n) => Mode::ChunkData { remaining: n },
            None => Mode::PassThrough,
        };
    }
}

/// What was too large in a refused head.
#[derive(Debug, Clone, Copy)]
enum Oversized {
    /// The request line: `414`.
    Target,
    /// A header line, or the whole head: `431`.
    Head,
}

impl Oversized {
    /// The whole answer: status line, headers, and the contract's JSON error.
    fn answer(self) -> Vec<u8> {
        let (status, error) = match self {
            Oversized::Target => (
                "414 URI Too Long",
                crate::error::ApiError::invalid(
                    "url",
                    format!(
                        "The request line is longer than {MAX_LINE} bytes; send fewer or \
                         shorter query parameters."
                    ),
                ),
            ),
            Oversized::Head => (
                "431 Request Header Fields Too Large",
                crate::error::ApiError::invalid(
                    "headers",
                    format!(
                        "The request's headers take more than {MAX_HEAD_BYTES} bytes, more than \
                         {MAX_HEADERS} lines or a line of more than {MAX_LINE} bytes; send fewer \
                         or shorter headers."
                    ),
                ),
            ),
        };
        let body = serde_json::to_vec(&error.body()).unwrap_or_default();
        let mut answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             cache-control: no-store\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        answer.extend_from_slice(&body);
        answer
    }
}

/// A line without its `\n` or `\r\n`.
fn strip_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `METHOD SP TARGET SP HTTP/1.x` → `(METHOD, TARGET)`.
fn split_request_line(content: &[u8]) -> Option<(&[u8], &[u8])> {
    let first = content.iter().position(|&b| b == b' ')?;
    let (method, rest) = (&content[..first], &content[first + 1..]);
    let second = rest.iter().position(|&b| b == b' ')?;
    let (target, version) = (&rest[..second], &rest[second + 1..]);
    let known = version == b"HTTP/1.1" || version == b"HTTP/1.0";
    (!method.is_empty() && !target.is_empty() && known).then_some((method, target))
}

/// A `Content-Length` value as hyper reads it: digits, or a comma-separated list of the same
/// digits.
fn parse_content_length(value: &[u8]) -> Option<u64> {
    let mut length = None;
    for item in value.split(|&b| b == b',') {
        let item = item.trim_ascii();
        if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n: u64 = std::str::from_utf8(item).ok()?.parse().ok()?;
        if length.is_some_and(|seen| seen != n) {
            return None;
        }
        length = Some(n);
    }
    length
}

impl<S: AsyncRead + AsyncWrite + Unpin> RawQueryStream<S> {
    /// Writes the refusal, shuts the writing side, drops what the client still sends (up to
    /// [`DRAIN_BYTES`]), then reports the end of input.
    fn poll_refuse(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(refusal) = self.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        while refusal.written < refusal.answer.len() {
            let n = ready!(
                Pin::new(&mut self.inner).poll_write(cx, &refusal.answer[refusal.written..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            refusal.written += n;
        }
        if !refusal.shut {
            ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
            ready!(Pin::new(&mut self.inner).poll_shutdown(cx))?;
            refusal.shut = true;
        }
        let mut scratch = [0u8; 8192];
        while refusal.drained < DRAIN_BYTES {
            let mut buf = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut self.inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                break;
            }
            refusal.drained += buf.filled().len() as u64;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RawQueryStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.out_pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_pos);
                buf.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.mode == Mode::PassThrough {
                // `line` is empty: giving up moved it to `out`.
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            if this.mode == Mode::Refused {
                return this.poll_refuse(cx);
            }
            // Read straight into the caller's buffer; body bytes stay there, the rest is moved
            // out and run through the framing.
            let start = buf.filled().len();
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let end = buf.filled().len();
            if end == start {
                // End of stream: an unfinished line goes to the reader as it came, then the end.
                if this.line.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                this.give_up();
                continue;
            }
            let body = this.take_body(end - start);
            if start + body < end {
                this.process(&buf.filled()[start + body..end]);
                buf.set_filled(start + body);
            }
            if body > 0 {
                return Poll::Ready(Ok(()));
            }
            // Nothing handed over yet: `out` has bytes, or they all went into an unfinished
            // line and the next read continues it. Returning now with nothing would mean the end.
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for RawQueryStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Yields `data` `chunk` bytes at a time, with a `Pending` (and a wake) before every chunk;
    /// keeps what is written to it.
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        chunk: usize,
        pending: bool,
        written: Vec<u8>,
        shut: bool,
    }

    impl AsyncWrite for Chunked {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.written.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.shut = true;
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncRead for Chunked {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            self.pending = !self.pending;
            if self.pending {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = self
                .chunk
                .min(self.data.len() - self.pos)
                .min(buf.remaining());
            let pos = self.pos;
            buf.put_slice(&self.data[pos..pos + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    /// What the reader gets from `input` arriving `chunk` bytes at a time, read `read` at a time.
    async fn through(input: &[u8], chunk: usize, read: usize) -> Vec<u8> {
        through_and_answer(input, chunk, read).await.0
    }

    /// [`through`], and what the stream wrote back itself (and whether it shut its side).
    async fn through_and_answer(
        input: &[u8],
        chunk: usize,
        read: usize,
    ) -> (Vec<u8>, Vec<u8>, bool) {
        let mut stream = RawQueryStream::new(Chunked {
            data: input.to_vec(),
            pos: 0,
            chunk,
            pending: false,
            written: Vec::new(),
            shut: false,
        });
        let mut output = Vec::new();
        let mut buf = vec![0; read];
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                let inner = stream.get_ref();
                return (output, inner.written.clone(), inner.shut);
            }
            output.extend_from_slice(&buf[..n]);
        }
    }

    /// Asserts that `input` comes out as `expected` however it is split and read.
    async fn check(input: &[u8], expected: &[u8]) {
        for chunk in 1..=input.len() {
            for read in [1, 2, 3, 7, 64, 8192] {
                let output = through(input, chunk, read).await;
                assert_eq!(
                    String::from_utf8_lossy(&output),
                    String::from_utf8_lossy(expected),
                    "chunks of {chunk}, reads of {read}"
                );
            }
        }
    }

    #[tokio::test]
    async fn encodes_the_query_of_the_request_target_only() {
        check(
            b"GET /a<b>/\"c\"?sort=x<,y>&q=\"hi\"&t={}|\\^`%3C+&u=v HTTP/1.1\r\n\
              Host: h\r\nX-Note: a<b>\"c\"?d<\r\n\r\n",
            b"GET /a<b>/\"c\"?sort=x%3C,y%3E&q=%22hi%22&t={}|\\^`%3C+&u=v HTTP/1.1\r\n\
              Host: h\r\nX-Note: a<b>\"c\"?d<\r\n\r\n",
        )
        .await;
    }

    #[tokio::test]
    async fn keep_alive_body_with_content_length_is_untouched() {
        check(
            b"POST /p?a<b HTTP/1.1\r\nContent-Length: 29\r\n\r\n<>\"\r\n\r\nGET /?x<y HTTP/1.1\r\n\r\n\
              GET /r?s=n> HTTP/1.1\r\nHost: h\r\n\r\n",
            b"POST /p?a%3Cb HTTP/1.1\r\nContent-Length: 29\r\n\r\n<>\"\r\n\r\nGET /?x<y HTTP/1.1\r\n\r\n\
              GET /r?s=n%3E HTTP/1.1\r\nHost: h\r\n\r\n",
        )
        .await;
    }

    #[tokio::test]
    async fn pipelined_requests_and_zero_length_bodies() {
        check(
            b"GET /?a=< HTTP/1.1\r\nUpgrade-Insecure-Requests: 1\r\n\r\nPOST /?b=> HTTP/1.0\r\ncontent-length: 0\r\n\r\n\
              \r\nGET /?c=\" HTTP/1.1\r\n\r\n",
            b"GET /?a=%3C HTTP/1.1\r\nUpgrade-Insecure-Requests: 1\r\n\r\nPOST /?b=%3E HTTP/1.0\r\ncontent-length: 0\r\n\r\n\
              \r\nGET /?c=%22 HTTP/1.1\r\n\r\n",
        )
        .await;
    }

    #[tokio::test]
    async fn bare_line_feeds_end_lines() {
        check(
            b"\nGET /?a<b HTTP/1.1\nContent-Length: 2, 2\n\n<>GET /?c>d HTTP/1.1\n\n",
            b"\nGET /?a%3Cb HTTP/1.1\nContent-Length: 2, 2\n\n<>GET /?c%3Ed HTTP/1.1\n\n",
        )
        .await;
    }

    /// Chunked bodies are followed (issue 33: a raw `<` after one got no answer): chunk data
    /// and trailers pass untouched, the next request line is rewritten.
    #[tokio::test]
    async fn chunked_bodies_are_followed() {
        let input = b"POST /?a<b HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n\
                      3\r\n<>\"\r\n1a;ext=\"x<y\"\r\nGET /?no<no HTTP/1.1\r\n\r\nab\r\n\
                      0\r\nX-Trailer: <>\r\n\r\nGET /?c<d HTTP/1.1\r\n\r\n\
                      POST /?e>f HTTP/1.1\ntransfer-encoding: chunked\n\n0\n\nGET /?g\"h HTTP/1.1\n\n";
        let expected = b"POST /?a%3Cb HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n\
                      3\r\n<>\"\r\n1a;ext=\"x<y\"\r\nGET /?no<no HTTP/1.1\r\n\r\nab\r\n\
                      0\r\nX-Trailer: <>\r\n\r\nGET /?c%3Cd HTTP/1.1\r\n\r\n\
                      POST /?e%3Ef HTTP/1.1\ntransfer-encoding: chunked\n\n0\n\nGET /?g%22h HTTP/1.1\n\n";
        check(input, expected).await;
    }

    /// What it cannot follow in a chunked body passes the rest through.
    #[tokio::test]
    async fn unreadable_chunks_pass_the_rest_through() {
        let cases: [&[u8]; 5] = [
            b"POST /?a<b HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"POST /?a<b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"POST /?a<b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"POST /?a<b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"POST /?a<b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
        ];
        for input in cases {
            let mut expected = input.to_vec();
            expected.splice(7..10, b"a%3Cb".iter().copied());
            check(input, &expected).await;
        }
    }

    #[tokio::test]
    async fn what_it_cannot_follow_passes_through() {
        let cases: [&[u8]; 8] = [
            // No version (HTTP/0.9 style), then a good request that must stay as it is too.
            b"GET /?a<b\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"GET  /?a<b HTTP/1.1\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"CONNECT h:443 HTTP/1.1\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"GET /?a<b HTTP/1.1\r\nUpgrade: x\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"GET /?a<b HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 2\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"GET /?a<b HTTP/1.1\r\nContent-Length: -1\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"GET /?a<b HTTP/1.1\r\nX: y\r\n folded\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
        ];
        for input in cases {
            let expected = match input.windows(7).position(|w| w == b"/?a<b H") {
                Some(i) if input.starts_with(b"GET /?a<b H") => {
                    // Only the first request line is rewritten: it came before the trouble.
                    [&input[..i], b"/?a%3Cb H", &input[i + 7..]].concat()
                }
                _ => input.to_vec(),
            };
            check(input, &expected).await;
        }
    }

    #[tokio::test]
    async fn a_header_without_colon_passes_through() {
        check(
            b"GET /?a<b HTTP/1.1\r\nnonsense\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
            b"GET /?a%3Cb HTTP/1.1\r\nnonsense\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n",
        )
        .await;
    }

    /// The JSON error of an answer the stream wrote itself, after checking its head.
    fn refusal_body(answer: &[u8], status: &str) -> serde_json::Value {
        let text = String::from_utf8_lossy(answer);
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("connection: close"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        serde_json::from_str(body).unwrap()
    }

    /// An overlong request line is answered 414 with a JSON body by the stream itself; hyper
    /// reads nothing of it.
    #[tokio::test]
    async fn an_overlong_request_line_is_answered_414() {
        let mut input = b"GET /?a<".to_vec();
        input.resize(MAX_LINE + 10, b'x');
        input.extend_from_slice(b" HTTP/1.1\r\n\r\nGET /?a<b HTTP/1.1\r\n\r\n");
        for chunk in [1000, 4096, MAX_LINE - 1, input.len()] {
            let (read, answer, shut) = through_and_answer(&input, chunk, 8192).await;
            assert!(read.is_empty(), "{}", read.len());
            assert!(shut);
            let body = refusal_body(&answer, "414");
            assert_eq!(body["error"], "invalid_parameter");
            assert!(
                body["message"]
                    .as_str()
                    .unwrap()
                    .contains(&MAX_LINE.to_string())
            );
        }
    }

    /// A header line too long, too many header lines, or a head too large: 431, after the
    /// lines before it went to the reader.
    #[tokio::test]
    async fn an_oversized_head_is_answered_431() {
        let mut long_line = b"GET /?a<b HTTP/1.1\r\nX-Long: ".to_vec();
        long_line.resize(MAX_LINE + 100, b'y');
        long_line.extend_from_slice(b"\r\n\r\n");
        let mut many = b"GET /?a<b HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let mut large = b"GET /?a<b HTTP/1.1\r\n".to_vec();
        for i in 0..(MAX_HEAD_BYTES / (MAX_LINE / 2) + 1) {
            large.extend_from_slice(format!("X-{i}: ").as_bytes());
            large.resize(large.len() + MAX_LINE / 2, b'z');
            large.extend_from_slice(b"\r\n");
        }
        large.extend_from_slice(b"\r\n");
        for input in [long_line, many, large] {
            let (read, answer, _) = through_and_answer(&input, 4096, 8192).await;
            assert!(read.starts_with(b"GET /?a%3Cb HTTP/1.1\r\n"));
            assert!(read.len() <= MAX_HEAD_BYTES, "{}", read.len());
            assert_eq!(refusal_body(&answer, "431")["error"], "invalid_parameter");
        }
        // At the limits, nothing is refused.
        let mut fits = b"GET /?a<b HTTP/1.1\r\n".to_vec();
        for i in 1..MAX_HEADERS {
            fits.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
        }
        fits.extend_from_slice(b"X-Last: ");
        fits.resize(fits.len() + MAX_LINE - 10, b'w');
        fits.extend_from_slice(b"\r\n\r\n");
        let (read, answer, _) = through_and_answer(&fits, 4096, 8192).await;
        assert!(answer.is_empty());
        assert_eq!(read.len(), fits.len() + 2);
    }

    #[tokio::test]
    async fn an_unfinished_line_comes_out_at_the_end() {
        check(b"GET /?a<b HTTP/1.1\r\nHos", b"GET /?a%3Cb HTTP/1.1\r\nHos").await;
        check(b"GET /?a<b HTT", b"GET /?a<b HTT").await;
    }

    #[tokio::test]
    async fn writes_pass_through_over_a_duplex() {
        let (client, server) = tokio::io::duplex(64);
        let mut server = RawQueryStream::new(server);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            client_write
                .write_all(b"GET /x?s=a< HTTP/1.1\r\nHost: h\r\n\r\n")
                .await
                .unwrap();
            client_write.shutdown().await.unwrap();
        });
        let mut received = Vec::new();
        server.read_to_end(&mut received).await.unwrap();
        writer.await.unwrap();
        assert_eq!(received, b"GET /x?s=a%3C HTTP/1.1\r\nHost: h\r\n\r\n");
        server.write_all(b"HTTP/1.1 200 OK <>\r\n").await.unwrap();
        server.shutdown().await.unwrap();
        let mut answer = Vec::new();
        client_read.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"HTTP/1.1 200 OK <>\r\n");
    }

    /// Property-based fuzzing (issue 11): arbitrary bytes and generated request sequences, in
    /// arbitrary splits: 2,000 cases each, about a second, in every `cargo test`.
    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// What the framing makes of `input` fed in pieces cut at `cuts` (the unfinished line
        /// included, as the reader gets it at end of input).
        fn feed(input: &[u8], cuts: &[usize]) -> Vec<u8> {
            let mut stream = RawQueryStream::new(());
            let mut at = 0;
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
            cuts.sort_unstable();
            for cut in cuts.into_iter().chain([input.len()]) {
                stream.process(&input[at..cut.max(at)]);
                at = cut.max(at);
            }
            let mut out = stream.out;
            out.extend_from_slice(&stream.line);
            out
        }

        /// Bytes drawn mostly from what HTTP heads are made of, so the framing's states are
        /// all reached.
        fn http_bytes() -> impl Strategy<Value = Vec<u8>> {
            let pieces = prop_oneof![
                Just(b"GET ".to_vec()),
                Just(b"POST ".to_vec()),
                Just(b"CONNECT ".to_vec()),
                Just(b"/p?".to_vec()),
                Just(b" HTTP/1.1".to_vec()),
                Just(b"\r\n".to_vec()),
                Just(b"\n".to_vec()),
                Just(b"Content-Length: ".to_vec()),
                Just(b"Transfer-Encoding: chunked".to_vec()),
                Just(b"Upgrade: x".to_vec()),
                Just(b" folded".to_vec()),
                Just(b"<".to_vec()),
                Just(b">".to_vec()),
                Just(b"\"".to_vec()),
                Just(b"%3C".to_vec()),
                "[0-9]{1,3}".prop_map(String::into_bytes),
                proptest::collection::vec(any::<u8>(), 1..8),
            ];
            proptest::collection::vec(pieces, 0..60).prop_map(|p| p.concat())
        }

        /// One well-formed request: its bytes, and what hyper must get.
        fn request() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
            let query = proptest::collection::vec(
                prop_oneof![
                    Just(b'<'),
                    Just(b'>'),
                    Just(b'"'),
                    Just(b'%'),
                    Just(b'?'),
                    0x21u8..0x7f
                ],
                0..40,
            );
            let body = proptest::collection::vec(any::<u8>(), 0..40);
            (
                prop_oneof![Just("GET"), Just("POST"), Just("HEAD")],
                "/[a-z<>\"]{0,8}",
                query,
                body,
                any::<bool>(),
            )
                .prop_filter("no fragment", |(_, _, q, _, _)| !q.contains(&b'#'))
                .prop_map(|(method, path, query, body, crlf)| {
                    let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
                    let head = |q: &[u8]| {
                        let mut r = format!("{method} {path}?").into_bytes();
                        r.extend_from_slice(q);
                        r.extend_from_slice(b" HTTP/1.1");
                        r.extend_from_slice(eol);
                        r.extend_from_slice(b"Host: h");
                        r.extend_from_slice(eol);
                        r.extend_from_slice(format!("Content-Length: {}", body.len()).as_bytes());
                        r.extend_from_slice(eol);
                        r.extend_from_slice(eol);
                        r.extend_from_slice(&body);
                        r
                    };
                    let encoded: Vec<u8> = query
                        .iter()
                        .flat_map(|&b| match b {
                            b'"' => b"%22".to_vec(),
                            b'<' => b"%3C".to_vec(),
                            b'>' => b"%3E".to_vec(),
                            _ => vec![b],
                        })
                        .collect();
                    (head(&query), head(&encoded))
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// Any bytes, cut anywhere: the same output (never a panic), and only `<`, `>`, `"`
            /// become three bytes each.
            #[test]
            fn any_bytes_in_any_split(input in http_bytes(), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
                let whole = feed(&input, &[]);
                prop_assert_eq!(&feed(&input, &cuts), &whole);
                let specials = input.iter().filter(|b| matches!(b, b'<' | b'>' | b'"')).count();
                prop_assert!(whole.len() >= input.len() && whole.len() <= input.len() + 2 * specials);
                let decoded = String::from_utf8_lossy(&whole)
                    .replace("%3C", "<").replace("%3E", ">").replace("%22", "\"");
                let original = String::from_utf8_lossy(&input)
                    .replace("%3C", "<").replace("%3E", ">").replace("%22", "\"");
                prop_assert_eq!(decoded, original);
            }

            /// Pipelined well-formed requests: each query is encoded, bodies untouched, and
            /// every request-target is one the http crate accepts.
            #[test]
            fn pipelined_requests(requests in proptest::collection::vec(request(), 1..5), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
                let input: Vec<u8> = requests.iter().flat_map(|(raw, _)| raw.clone()).collect();
                let expected: Vec<u8> = requests.iter().flat_map(|(_, want)| want.clone()).collect();
                prop_assert_eq!(feed(&input, &cuts), expected.clone());
                for (_, want) in &requests {
                    let line = want.split(|&b| b == b'\n').next().unwrap();
                    let target = line.split(|&b| b == b' ').nth(1).unwrap();
                    let query = &target[target.iter().position(|&b| b == b'?').unwrap()..];
                    prop_assert!(
                        axum::http::Uri::try_from(format!("/{}", String::from_utf8_lossy(query))).is_ok(),
                        "{:?}", String::from_utf8_lossy(target)
                    );
                }
            }
        }
    }
}
