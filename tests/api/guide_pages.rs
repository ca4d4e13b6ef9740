//! The guides drawn for a browser: `/catalog` and `/datasets/{slug}/skill` are HTML pages in the
//! site's layout, beside `/catalog.md` and `skill.md`, which keep answering Markdown. What an
//! importer wrote (a description with HTML, a `javascript:` link) is shown as text, never run;
//! links between guides lead to the pages; an unknown slug is the site's 404 page.

use crate::helpers::client::{Browser as Client, unescape};
use crate::helpers::{TestStore, import_file, write_file};

const SCHEMA: &str = r#"{
  "title": "Towns <script>alert('title')</script>",
  "description": "Small towns. <img src=x onerror=alert(1)> [click](javascript:alert(2))",
  "fields": [
    {"name": "code", "type": "keyword"},
    {"name": "name", "type": "text", "description": "The town's <b>name</b>"}
  ]
}"#;

async fn guides_are_pages_for_browsers(store: TestStore) {
    let path = write_file(&store, "towns.csv", b"code,name\na,Alpha\nb,Beta\n");
    import_file(&store, &path, "towns", Some(SCHEMA), Some("code"))
        .await
        .unwrap();
    let mut client = Client::new(store.router());

    // The Markdown stays Markdown.
    let markdown = client.get("/catalog.md").await;
    assert_eq!(markdown.status, 200);
    assert!(
        markdown
            .header("content-type")
            .unwrap()
            .starts_with("text/markdown")
    );
    let skill_md = client.get("/datasets/towns/skill.md").await;
    assert!(
        skill_md
            .header("content-type")
            .unwrap()
            .starts_with("text/markdown")
    );

    for (path, markdown_url) in [
        ("/catalog", "http://odqs.test/catalog.md"),
        (
            "/datasets/towns/skill",
            "http://odqs.test/datasets/towns/skill.md",
        ),
    ] {
        let page = client.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert!(
            page.header("content-type")
                .unwrap()
                .starts_with("text/html")
        );
        let policy = page.header("content-security-policy").unwrap();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        let html = &page.body;
        // The page names its Markdown, and draws it: headings, lists, code.
        assert!(unescape(html).contains(markdown_url), "{path}: {html}");
        assert!(
            html.contains("<h1>") || html.contains("<h2>"),
            "{path}: {html}"
        );
        // What the importer wrote is text.
        for raw in ["<script>alert", "<img src=x", "<b>name</b>", "javascript:"] {
            assert!(!html.contains(raw), "{path} holds {raw:?}: {html}");
        }
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{path}: {html}"
        );
    }
    // The catalog's link to the guide leads to its page.
    let catalog = client.get("/catalog").await;
    assert!(
        catalog
            .body
            .contains("href=\"http://odqs.test/datasets/towns/skill\""),
        "{}",
        catalog.body
    );
    let missing = client.get("/datasets/nowhere/skill").await;
    assert_eq!(missing.status, 404);
    assert!(
        missing
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
}

both_stores!(guides_are_pages_for_browsers);
