//! Compressed answers (contract §12.5): gzip, br and zstd as asked, the same JSON once decoded,
//! weak ETags that still answer `If-None-Match`, and guides compressed too; on both stores.

use std::io::Read;

use crate::helpers::client;
use crate::helpers::{TestStore, api_token, load_demo};
use axum::http::Method;

async fn fetch(
    router: &axum::Router,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, axum::http::HeaderMap, Vec<u8>) {
    let request = client::request(Method::GET, path, None, headers, None);
    let (status, headers, body) = client::exchange(router, request).await;
    (status, headers, body.to_vec())
}

async fn answers_are_compressed_as_asked(store: TestStore) {
    load_demo(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    let bearer = format!("Bearer {token}");
    let page = "/api/v1/datasets/flights/records?per_page=100";

    let (status, plain_headers, plain) = fetch(&router, page, &[("authorization", &bearer)]).await;
    assert_eq!(status, 200);
    assert!(plain_headers.get("content-encoding").is_none());
    let strong = plain_headers["etag"].to_str().unwrap().to_string();
    assert!(!strong.starts_with("W/"));

    for encoding in ["gzip", "br", "zstd"] {
        let (status, headers, body) = fetch(
            &router,
            page,
            &[("authorization", &bearer), ("accept-encoding", encoding)],
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(headers["content-encoding"], encoding);
        assert!(
            body.len() * 4 < plain.len(),
            "{encoding}: {} of {} bytes",
            body.len(),
            plain.len()
        );
        assert_eq!(headers["etag"].to_str().unwrap(), format!("W/{strong}"));
        let vary = headers
            .get_all("vary")
            .iter()
            .map(|v| v.to_str().unwrap().to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(",");
        assert!(
            vary.contains("accept-encoding") && vary.contains("authorization"),
            "{vary}"
        );
        if encoding == "gzip" {
            let mut decoded = Vec::new();
            flate2::read::GzDecoder::new(&body[..])
                .read_to_end(&mut decoded)
                .unwrap();
            assert_eq!(decoded, plain);
        }
        // The weak tag answers If-None-Match like the strong one.
        let weak = format!("W/{strong}");
        let (status, _, _) = fetch(
            &router,
            page,
            &[
                ("authorization", &bearer),
                ("accept-encoding", encoding),
                ("if-none-match", &weak),
            ],
        )
        .await;
        assert_eq!(status, 304);
    }

    // The guides too.
    let (status, headers, _) = fetch(
        &router,
        "/datasets/flights/skill.md",
        &[("accept-encoding", "br")],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-encoding"], "br");
}

both_stores!(answers_are_compressed_as_asked);
