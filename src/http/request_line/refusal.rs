//! The answer to a request head too large, written by the stream itself before hyper reads
//! it (hyper would answer with an empty `414` or `431`): the contract's JSON error, then the
//! writing side shut and what the client still sends read and dropped, up to [`DRAIN_BYTES`].

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{DRAIN_BYTES, MAX_HEAD_BYTES, MAX_HEADERS, MAX_LINE};

/// An answer the stream writes itself, and how far it got.
#[derive(Debug)]
pub(super) struct Refusal {
    answer: Vec<u8>,
    written: usize,
    shut: bool,
    drained: u64,
}

impl Refusal {
    /// The answer to `what`, not yet written.
    pub(super) fn new(what: Oversized) -> Self {
        Refusal {
            answer: what.answer(),
            written: 0,
            shut: false,
            drained: 0,
        }
    }
}

/// What was too large in a refused head.
#[derive(Debug, Clone, Copy)]
pub(super) enum Oversized {
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
                crate::http::error::ApiError::invalid(
                    "url",
                    format!(
                        "The request line is longer than {MAX_LINE} bytes; send fewer or \
                         shorter query parameters."
                    ),
                ),
            ),
            Oversized::Head => (
                "431 Request Header Fields Too Large",
                crate::http::error::ApiError::invalid(
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

impl Refusal {
    /// Writes the refusal, shuts the writing side, drops what the client still sends (up to
    /// [`DRAIN_BYTES`]), then reports the end of input.
    pub(super) fn poll<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        inner: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let refusal = self;
        while refusal.written < refusal.answer.len() {
            let n =
                ready!(Pin::new(&mut *inner).poll_write(cx, &refusal.answer[refusal.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            refusal.written += n;
        }
        if !refusal.shut {
            ready!(Pin::new(&mut *inner).poll_flush(cx))?;
            ready!(Pin::new(&mut *inner).poll_shutdown(cx))?;
            refusal.shut = true;
        }
        let mut scratch = [0u8; 8192];
        while refusal.drained < DRAIN_BYTES {
            let mut buf = ReadBuf::new(&mut scratch);
            ready!(Pin::new(&mut *inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                break;
            }
            refusal.drained += buf.filled().len() as u64;
        }
        Poll::Ready(Ok(()))
    }
}
