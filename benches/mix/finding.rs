//! Finding things (contract §13.4), each against its plain counterpart in the same run: a
//! search ordered by relevance against the same search in file order, a page with two facets
//! against the same page without, and a circle against the box of the same area. One
//! connection each, so the ratio is the added cost of one request.

use std::time::Duration;

use crate::load::{self, Client, LoadSpec, Outcome};

/// One comparison: what is measured against what, and the bound on the latency ratio.
pub struct Pair {
    pub name: &'static str,
    pub plain: &'static str,
    pub variant: &'static str,
    /// The variant's median latency may be at most this many times the plain one's.
    pub bound: f64,
}

pub const PAIRS: &[Pair] = &[
    Pair {
        name: "_score, a common term (flights, ~58k matches)",
        plain: "/api/v1/datasets/flights/records?q=united",
        variant: "/api/v1/datasets/flights/records?q=united&sort=_score%3C",
        bound: 2.0,
    },
    Pair {
        name: "_score, scenic spots",
        plain: "/api/v1/datasets/tw-scenic-spots/records?q=%E6%BA%AB%E6%B3%89",
        variant: "/api/v1/datasets/tw-scenic-spots/records?q=%E6%BA%AB%E6%B3%89&sort=_score%3C",
        bound: 2.0,
    },
    Pair {
        name: "two facets, a filtered page (flights)",
        plain: "/api/v1/datasets/flights/records?origin=JFK",
        variant: "/api/v1/datasets/flights/records?origin=JFK&facet=carrier,dest",
        bound: 1.5,
    },
    Pair {
        name: "two facets, the first page (flights)",
        plain: "/api/v1/datasets/flights/records",
        variant: "/api/v1/datasets/flights/records?facet=carrier,origin",
        bound: 1.5,
    },
    Pair {
        name: "near against the box of the same area (scenic spots)",
        plain: "/api/v1/datasets/tw-scenic-spots/records?bbox=120.4348,23.7290,120.8282,24.0888",
        variant: "/api/v1/datasets/tw-scenic-spots/records?near=23.9089,120.6315,20km",
        bound: 2.0,
    },
];

/// One pair's figures: the first request of each (nothing of it kept yet: a whole order or
/// facets computed), then each under load.
pub struct Measured {
    pub plain_first: Duration,
    pub variant_first: Duration,
    pub plain: Outcome,
    pub variant: Outcome,
}

/// Measures every pair, plain then variant, at one connection, after timing the first
/// request of each (which must answer 200).
pub async fn measure(
    client: &Client,
    warmup: Duration,
    duration: Duration,
) -> anyhow::Result<Vec<Measured>> {
    let mut out = Vec::new();
    for pair in PAIRS {
        let first = |path: &'static str| async move {
            let started = std::time::Instant::now();
            let answer = client.get(path).await?;
            anyhow::ensure!(answer.status == 200, "{path}: {}", answer.snippet());
            anyhow::Ok(started.elapsed())
        };
        let plain_first = first(pair.plain).await?;
        let variant_first = first(pair.variant).await?;
        let run = |path: &'static str| {
            let spec = LoadSpec {
                paths: vec![path.to_string()].into(),
                connections: 1,
                warmup,
                duration,
            };
            async move { load::run(client, &spec).await }
        };
        let plain = run(pair.plain).await;
        let variant = run(pair.variant).await;
        println!(
            "  finding {:<55} first {:.2} / {:.2} ms; plain {} / variant {}",
            pair.name,
            plain_first.as_secs_f64() * 1e3,
            variant_first.as_secs_f64() * 1e3,
            plain.summary(),
            variant.summary()
        );
        out.push(Measured {
            plain_first,
            variant_first,
            plain,
            variant,
        });
    }
    Ok(out)
}

/// The section of the report: first requests, medians under load, the ratio of the medians
/// and whether it is within its bound.
pub fn render(measured: &[Measured]) -> String {
    let mut out = String::from(
        "### Finding things, against the plain request (1 connection; ms)\n\n\
         The first request of each computes what is then kept (a whole order, facets); the \
         medians are of the same request repeated.\n\n\
         | comparison | plain first | variant first | plain p50 | variant p50 | ratio of p50 | bound |\n\
         |---|---:|---:|---:|---:|---:|---|\n",
    );
    let ms = |o: &Outcome| o.quantile(0.5).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    for (pair, m) in PAIRS.iter().zip(measured) {
        let ratio = ms(&m.variant) / ms(&m.plain);
        let errors = m.plain.error_count() + m.variant.error_count();
        out.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2}× | ≤ {:.1}×: {}{} |\n",
            pair.name,
            m.plain_first.as_secs_f64() * 1e3,
            m.variant_first.as_secs_f64() * 1e3,
            ms(&m.plain),
            ms(&m.variant),
            ratio,
            pair.bound,
            if ratio <= pair.bound {
                "met"
            } else {
                "**NOT met**"
            },
            if errors > 0 {
                format!(" (**{errors} errors**)")
            } else {
                String::new()
            }
        ));
    }
    out
}
