//! The guides (`catalog.md`, each dataset's `skill.md`) drawn as HTML for a person's browser,
//! beside their Markdown, which agents and scripts keep reading at the same `.md` URLs. The
//! guides hold what importers wrote (titles, descriptions, source URLs), so HTML inside them is
//! shown as text and a link goes only to `http`, `https`, `mailto` or a path of this site.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

/// `markdown` as HTML. Links to this site's guides (`{site}/catalog.md`,
/// `{site}/datasets/{slug}/skill.md`) lead to their HTML pages, so a reader stays in the browser.
pub fn to_html(markdown: &str, site: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(text) | Event::InlineHtml(text) => Event::Text(text),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_link(dest_url, site),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_link(dest_url, site),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// `url` if its scheme is harmless (else `#`), with this site's guides pointed at their pages.
fn safe_link<'a>(url: CowStr<'a>, site: &str) -> CowStr<'a> {
    let lower = url.trim_start().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s).filter(|s| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if scheme.is_some_and(|s| !matches!(s, "http" | "https" | "mailto")) {
        return CowStr::Borrowed("#");
    }
    let Some(path) = url.strip_prefix(site) else {
        return url;
    };
    if let Some(query) = path.strip_prefix("/catalog.md")
        && (query.is_empty() || query.starts_with('?'))
    {
        return CowStr::from(format!("{site}/catalog{query}"));
    }
    match path.strip_suffix("/skill.md") {
        Some(dataset) if dataset.starts_with("/datasets/") => {
            CowStr::from(format!("{site}{dataset}/skill"))
        }
        _ => url,
    }
}

#[cfg(test)]
mod tests {
    use super::to_html;

    const SITE: &str = "https://data.example";

    #[test]
    fn html_in_a_guide_is_text() {
        let html = to_html(
            "# T\n\n<script>alert(1)</script>\n\nsee <b onclick=x>this</b>\n",
            SITE,
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<b "), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn links_go_only_where_they_are_harmless() {
        let html = to_html(
            "[a](javascript:alert(1)) [b](JavaScript:x) [c](data:text/html,x) [d](https://ok.example/x) [e](/docs) [f](mailto:a@b.c)",
            SITE,
        );
        assert_eq!(html.matches("href=\"#\"").count(), 3, "{html}");
        for kept in ["https://ok.example/x", "/docs", "mailto:a@b.c"] {
            assert!(html.contains(&format!("href=\"{kept}\"")), "{kept}: {html}");
        }
    }

    #[test]
    fn guides_link_to_their_pages() {
        let html = to_html(
            "[catalog](https://data.example/catalog.md) [spots](https://data.example/datasets/tw-spots/skill.md) [api](https://data.example/api/v1/datasets)",
            SITE,
        );
        assert!(
            html.contains("href=\"https://data.example/catalog\""),
            "{html}"
        );
        assert!(
            html.contains("href=\"https://data.example/datasets/tw-spots/skill\""),
            "{html}"
        );
        assert!(
            html.contains("href=\"https://data.example/api/v1/datasets\""),
            "{html}"
        );
    }

    #[test]
    fn tables_are_drawn() {
        let html = to_html("| a | b |\n|---|---|\n| 1 | 2 |\n", SITE);
        assert!(
            html.contains("<table>") && html.contains("<td>2</td>"),
            "{html}"
        );
    }
}
