//! Cursor paging (contract §13.2): the deepest page of flights reached by a cursor against the
//! first page of the same request, at one connection, in the same run. Run with the index
//! (the default) for the index path and with `--index-memory-mb 0` for the store path, whose
//! cursor pages read on by the sort keys and `pos` rather than by an offset.

use std::time::Duration;

use crate::load::{self, Client, LoadSpec, Outcome};

/// The requests paged through: (name, first page's path).
pub const REQUESTS: &[(&str, &str)] = &[
    (
        "sorted by dep_delay, descending",
        "/api/v1/datasets/flights/records?sort=dep_delay%3C&per_page=100",
    ),
    (
        "in file order",
        "/api/v1/datasets/flights/records?per_page=100",
    ),
    (
        "one carrier, sorted by distance",
        "/api/v1/datasets/flights/records?carrier=UA&sort=distance&per_page=100",
    ),
];

/// The deepest page may take at most this many times the first page's median: 1.5 from the
/// index, 3 from the store.
pub fn bound(store_path: bool) -> f64 {
    if store_path { 3.0 } else { 1.5 }
}

/// One request's figures.
pub struct Measured {
    pub name: &'static str,
    /// Records the request matches, and the page the deepest cursor leads to.
    pub total: u64,
    pub last_page: u64,
    pub first: Outcome,
    pub deepest: Outcome,
}

/// Finds the cursor of each request's last page (by asking for the page before it), then
/// measures the first page and the cursor's page, each alone at one connection.
pub async fn measure(
    client: &Client,
    warmup: Duration,
    duration: Duration,
) -> anyhow::Result<Vec<Measured>> {
    let mut out = Vec::new();
    for &(name, first_path) in REQUESTS {
        let first_page = client.get(first_path).await?;
        anyhow::ensure!(
            first_page.status == 200,
            "{first_path}: {}",
            first_page.snippet()
        );
        let body: serde_json::Value = serde_json::from_slice(&first_page.body)?;
        if body.get("next_cursor").is_none() {
            println!("  cursor paging: this build's answers carry no next_cursor; not measured");
            return Ok(Vec::new());
        }
        let total = body["total"].as_u64().unwrap_or(0);
        let last_page = total.div_ceil(100).max(1);
        let before_last = format!("{first_path}&page={}", last_page.saturating_sub(1).max(1));
        let answer = client.get(&before_last).await?;
        anyhow::ensure!(answer.status == 200, "{before_last}: {}", answer.snippet());
        let body: serde_json::Value = serde_json::from_slice(&answer.body)?;
        let cursor = body["next_cursor"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("{before_last}: no next_cursor"))?;
        let deepest_path = format!("{first_path}&cursor={cursor}");
        let check = client.get(&deepest_path).await?;
        anyhow::ensure!(check.status == 200, "{deepest_path}: {}", check.snippet());
        let run = |path: String| {
            let spec = LoadSpec {
                paths: vec![path].into(),
                connections: 1,
                warmup,
                duration,
            };
            async move { load::run(client, &spec).await }
        };
        let first = run(first_path.to_string()).await;
        let deepest = run(deepest_path).await;
        println!(
            "  cursor {name:<35} page 1 {} / page {last_page} by cursor {}",
            first.summary(),
            deepest.summary()
        );
        out.push(Measured {
            name,
            total,
            last_page,
            first,
            deepest,
        });
    }
    Ok(out)
}

/// The section of the report.
pub fn render(measured: &[Measured], store_path: bool) -> String {
    let path = if store_path {
        "the store"
    } else {
        "the in-memory index"
    };
    let mut out = format!(
        "### Cursor paging from {path}: the deepest page against the first (1 connection; ms)\n\n\
         | request | matches | deepest page | page 1 p50 | deepest by cursor p50 | ratio | bound |\n\
         |---|---:|---:|---:|---:|---:|---|\n"
    );
    let ms = |o: &Outcome| o.quantile(0.5).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    for m in measured {
        let ratio = ms(&m.deepest) / ms(&m.first);
        let bound = bound(store_path);
        out.push_str(&format!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.2}× | ≤ {bound:.1}×: {} |\n",
            m.name,
            m.total,
            m.last_page,
            ms(&m.first),
            ms(&m.deepest),
            ratio,
            if ratio <= bound { "met" } else { "**NOT met**" },
        ));
    }
    out
}
