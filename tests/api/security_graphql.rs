//! Security, the GraphQL side: documents built to make parsing, validation or the limit checks
//! themselves expensive are refused with a coded GraphQL error before anything runs, on both
//! stores.

use crate::helpers::{TestStore, api_token, load_demo, post_graphql};
use graphql::{MAX_ALIASES, MAX_DOCUMENT_BYTES, MAX_FRAGMENT_SPREADS, MAX_NESTING};
use serde_json::Value;

fn code(body: &Value) -> &str {
    body["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or_default()
}

/// Fragments each spreading the next twice, `levels` deep (the 1.2 KB document of the issue).
fn doubling(levels: usize) -> String {
    let mut doc = String::from("query { ...F0 }\n");
    for i in 0..levels {
        doc += &format!(
            "fragment F{i} on QueryRoot {{ ...F{n} ...F{n} }}\n",
            n = i + 1
        );
    }
    doc += &format!(
        "fragment F{levels} on QueryRoot {{ a: records(slug: \"flights\") {{ total }} }}\n"
    );
    doc
}

async fn expensive_documents_are_refused_before_running(store: TestStore) {
    load_demo(&store).await;
    let router = store.router();
    let token = api_token(&store).await;
    let refused = |body: &Value| {
        assert!(body.get("data").is_none_or(Value::is_null), "{body}");
        assert!(
            body["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    };

    // Doubling fragments: 2^levels fields once expanded, refused in one linear pass. A small
    // one still runs, through the same checks.
    for levels in [22, 25, 40] {
        let answer = post_graphql(&router, Some(&token), &doubling(levels), Value::Null).await;
        assert_eq!(answer.status, 200);
        assert_eq!(code(&answer.body), "query_too_complex", "{}", answer.body);
        refused(&answer.body);
    }
    let small = post_graphql(&router, Some(&token), &doubling(2), Value::Null).await;
    assert!(small.body.get("errors").is_none(), "{}", small.body);
    assert!(
        small.body["data"]["a"]["total"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );

    // Spreads visited, counted once expanded.
    let spreads = format!(
        "query {{ ...F }} fragment F on QueryRoot {{ {} }} fragment G on QueryRoot {{ __typename }}",
        "...G ".repeat(MAX_FRAGMENT_SPREADS)
    );
    let answer = post_graphql(&router, Some(&token), &spreads, Value::Null).await;
    assert_eq!(
        code(&answer.body),
        "too_many_fragment_spreads",
        "{}",
        answer.body
    );
    refused(&answer.body);

    // Aliases.
    let aliases: String = (0..=MAX_ALIASES)
        .map(|i| format!("a{i}: __typename "))
        .collect();
    let answer = post_graphql(
        &router,
        Some(&token),
        &format!("{{ {aliases} }}"),
        Value::Null,
    )
    .await;
    assert_eq!(code(&answer.body), "too_many_aliases", "{}", answer.body);
    refused(&answer.body);

    // Document size, and bracket nesting checked on the text before the parser recurses.
    let long = format!(
        "{{ datasets {{ total }} }}\n#{}",
        "x".repeat(MAX_DOCUMENT_BYTES)
    );
    let answer = post_graphql(&router, Some(&token), &long, Value::Null).await;
    assert_eq!(code(&answer.body), "query_too_large", "{}", answer.body);
    refused(&answer.body);
    let nested = format!(
        "{{ {}datasets {{ total }}{} }}",
        "... on QueryRoot { ".repeat(MAX_NESTING),
        " }".repeat(MAX_NESTING)
    );
    let answer = post_graphql(&router, Some(&token), &nested, Value::Null).await;
    assert_eq!(code(&answer.body), "query_too_deep", "{}", answer.body);
    refused(&answer.body);
    let brackets = format!("{{ datasets {} }}", "[".repeat(10_000));
    let answer = post_graphql(&router, Some(&token), &brackets, Value::Null).await;
    assert_eq!(code(&answer.body), "query_too_deep", "{}", answer.body);

    // A chain of single spreads deeper than the parser allows (cheap for our checks: async-graphql
    // refuses it, with our code).
    let mut chain = String::from("query { ...C0 }\n");
    for i in 0..40 {
        chain += &format!("fragment C{i} on QueryRoot {{ ...C{} }}\n", i + 1);
    }
    chain += "fragment C40 on QueryRoot { datasets { total } }";
    let answer = post_graphql(&router, Some(&token), &chain, Value::Null).await;
    assert_eq!(code(&answer.body), "query_too_deep", "{}", answer.body);
    refused(&answer.body);

    // Every other refusal carries a code too.
    let answer = post_graphql(&router, Some(&token), "{ datasets { total }", Value::Null).await;
    assert_eq!(
        code(&answer.body),
        "graphql_parse_failed",
        "{}",
        answer.body
    );
    let answer = post_graphql(&router, Some(&token), "{ nothing }", Value::Null).await;
    assert_eq!(
        code(&answer.body),
        "graphql_validation_failed",
        "{}",
        answer.body
    );
    let cycle = "query { ...A } fragment A on QueryRoot { ...B } fragment B on QueryRoot { ...A }";
    let answer = post_graphql(&router, Some(&token), cycle, Value::Null).await;
    assert_eq!(
        code(&answer.body),
        "graphql_validation_failed",
        "{}",
        answer.body
    );
}

both_stores!(expensive_documents_are_refused_before_running);
