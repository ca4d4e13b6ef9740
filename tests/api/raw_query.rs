//! Raw `<` and `>` in a query string, as curl sends `?sort=n<`, through the real server on a
//! socket (contract §5: "Raw and percent-encoded `<`/`>` both work"), on both stores.

use crate::helpers::{TestStore, import_file, write_file};
use odqs::auth::token::{find_or_create_user, mint};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CSV: &str = "\
id,n,label
a,3,three
b,10,ten
c,-1,minus one
d,7,seven
e,2,two
";

/// One HTTP/1.1 answer read off `stream`: status, headers (lower-cased names) and body.
async fn read_response(stream: &mut TcpStream) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut data = Vec::new();
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut buf = [0; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed in a response head: {data:?}");
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, value) = l.split_once(':').unwrap();
            (name.trim().to_ascii_lowercase(), value.trim().to_string())
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut rest = data[head_end..].to_vec();
    let mut more = async |rest: &mut Vec<u8>| {
        let mut buf = [0; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed in a response body");
        rest.extend_from_slice(&buf[..n]);
    };
    let body = if let Some(length) = header("content-length") {
        let length: usize = length.parse().unwrap();
        while rest.len() < length {
            more(&mut rest).await;
        }
        assert_eq!(rest.len(), length, "nothing follows an answer we wait for");
        rest
    } else {
        assert_eq!(header("transfer-encoding").as_deref(), Some("chunked"));
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                more(&mut rest).await;
            };
            let size_text = String::from_utf8(rest[..line_end].to_vec()).unwrap();
            let size =
                usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
            while rest.len() < line_end + 2 + size + 2 {
                more(&mut rest).await;
            }
            body.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
            rest.drain(..line_end + 2 + size + 2);
            if size == 0 {
                break;
            }
        }
        body
    };
    (status, headers, body)
}

/// Sends `GET {target}` on `stream` (kept alive) and reads the answer.
async fn get(stream: &mut TcpStream, target: &str, token: &str) -> (u16, Vec<u8>) {
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: odqs.test\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let (status, headers, body) = read_response(stream).await;
    assert!(
        !headers
            .iter()
            .any(|(n, v)| n == "connection" && v.eq_ignore_ascii_case("close")),
        "the connection stays open: {headers:?}"
    );
    (status, body)
}

fn ns(body: &[u8]) -> Vec<f64> {
    let page: Value = serde_json::from_slice(body).unwrap();
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n"].as_f64().unwrap())
        .collect()
}

async fn raw_sort_operators_on_one_connection(store: TestStore) {
    let path = write_file(&store, "numbers.csv", CSV.as_bytes());
    import_file(&store, &path, "numbers", None, Some("id"))
        .await
        .unwrap();
    let user = find_or_create_user(&store.store, "raw@example.org")
        .await
        .unwrap();
    let (token, _) = mint(
        &store.store,
        user.id,
        "raw query test",
        "cli",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    let token = token.expose().to_string();

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = odqs::state::AppState::new(store.store.clone(), "http://odqs.test");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(odqs::app::serve(state, listener, async move {
        let _ = stopped.await;
    }));

    let mut stream = TcpStream::connect(addr).await.unwrap();
    let base = "/api/v1/datasets/numbers/records";

    let (status, raw_desc) = get(&mut stream, &format!("{base}?sort=n<&per_page=3"), &token).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw_desc));
    let (status, encoded_desc) =
        get(&mut stream, &format!("{base}?sort=n%3C&per_page=3"), &token).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&encoded_desc));
    assert_eq!(
        raw_desc, encoded_desc,
        "raw and encoded `<` are one request"
    );
    assert_eq!(ns(&raw_desc), [10.0, 7.0, 3.0]);

    let (status, raw_asc) = get(&mut stream, &format!("{base}?sort=n>&per_page=3"), &token).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&raw_asc));
    assert_ne!(raw_asc, raw_desc);
    assert_eq!(ns(&raw_asc), [-1.0, 2.0, 3.0]);
    let (status, encoded_asc) =
        get(&mut stream, &format!("{base}?sort=n%3E&per_page=3"), &token).await;
    assert_eq!(status, 200);
    assert_eq!(raw_asc, encoded_asc, "raw and encoded `>` are one request");

    // A raw `"` too; a key in quotes matches nothing, but the request is answered.
    let (status, body) = get(&mut stream, &format!("{base}?id=\"a\""), &token).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let page: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(page["total"], 0);

    // The path is left as it was: a raw `<` there is still hyper's 400.
    stream
        .write_all(b"GET /api/v1/datasets/a<b/records HTTP/1.1\r\nHost: odqs.test\r\n\r\n")
        .await
        .unwrap();
    let (status, _, _) = read_response(&mut stream).await;
    assert_eq!(status, 400);

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

both_stores!(raw_sort_operators_on_one_connection);
