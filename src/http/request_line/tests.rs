//! The request-line adapter's tests: framing followed across reads, heads refused.

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
async fn through_and_answer(input: &[u8], chunk: usize, read: usize) -> (Vec<u8>, Vec<u8>, bool) {
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

/// Chunked bodies are followed (a raw `<` after one must get an answer): chunk data
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

/// Property-based fuzzing: arbitrary bytes and generated request sequences, in
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
