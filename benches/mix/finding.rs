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
        plain: "/datasets/flights/records?q=united",
        variant: "/datasets/flights/records?q=united&sort=_score%3C",
        bound: 2.0,
    },
    Pair {
        name: "_score, scenic spots",
        plain: "/datasets/tw-scenic-spots/records?q=%E6%BA%AB%E6%B3%89",
        variant: "/datasets/tw-scenic-spots/records?q=%E6%BA%AB%E6%B3%89&sort=_score%3C",
        bound: 2.0,
    },
    Pair {
        name: "two facets, a filtered page (flights)",
        plain: "/datasets/flights/records?origin=JFK",
        variant: "/datasets/flights/records?origin=JFK&facet=carrier,dest",
        bound: 1.5,
    },
    Pair {
        name: "two facets, the first page (flights)",
        plain: "/datasets/flights/records",
        variant: "/datasets/flights/records?facet=carrier,origin",
        bound: 1.5,
    },
    Pair {
        name: "near against the box of the same area (scenic spots)",
        plain: "/datasets/tw-scenic-spots/records?bbox=120.4348,23.7290,120.8282,24.0888",
        variant: "/datasets/tw-scenic-spots/records?near=23.9089,120.6315,20km",
        bound: 2.0,
    },
];

/// Measures every pair, plain then variant, at one connection.
pub async fn measure(
    client: &Client,
    warmup: Duration,
    duration: Duration,
) -> Vec<(Outcome, Outcome)> {
    let mut out = Vec::new();
    for pair in PAIRS {
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
            "  finding {:<55} plain {} / variant {}",
            pair.name,
            plain.summary(),
            variant.summary()
        );
        out.push((plain, variant));
    }
    out
}

/// The section of the report: medians, the ratio and whether it is within its bound.
pub fn render(outcomes: &[(Outcome, Outcome)]) -> String {
    let mut out = String::from(
        "### Finding things, against the plain request (1 connection; median ms)\n\n\
         | comparison | plain p50 | variant p50 | ratio | bound |\n|---|---:|---:|---:|---|\n",
    );
    let ms = |o: &Outcome| o.quantile(0.5).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    for (pair, (plain, variant)) in PAIRS.iter().zip(outcomes) {
        let ratio = ms(variant) / ms(plain);
        let errors = plain.error_count() + variant.error_count();
        out.push_str(&format!(
            "| {} | {:.3} | {:.3} | {:.2}× | ≤ {:.1}×: {}{} |\n",
            pair.name,
            ms(plain),
            ms(variant),
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
