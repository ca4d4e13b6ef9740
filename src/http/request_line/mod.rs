//! Raw `<`, `>` and `"` in query strings, as `curl 'http://…/records?sort=dep_delay<'` sends them.
//!
//! Contract §5 says `sort=name<` and `sort=name>` work raw as well as percent-encoded. hyper
//! reads the request line with `httparse`, which accepts every visible ASCII byte (and every
//! byte from 0x80) in the request-target, and then builds an `http::Uri`, whose query table
//! (http 1.x, `src/uri/path.rs`, `build_query_map`, after the WHATWG query state) allows only
//! 0x21, 0x24..=0x3B, 0x3D, 0x3F..=0x7E and 0x80..=0xFF. Of the bytes httparse lets through,
//! that leaves out `"` (0x22), `<` (0x3C) and `>` (0x3E) (`#`, 0x23, starts the fragment), so a
//! raw `<` or `>` gets an empty `400 Bad Request` before the router sees the request. No hyper
//! or axum option relaxes this.
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

mod framing;
mod refusal;

use framing::{parse_content_length, split_request_line, strip_eol};
use refusal::{Oversized, Refusal};

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
        self.refusal = Some(Refusal::new(what));
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
                return match this.refusal.as_mut() {
                    Some(refusal) => refusal.poll(&mut this.inner, cx),
                    None => Poll::Ready(Ok(())),
                };
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
mod tests;
