//! GraphQL client libraries nobody here wrote, from npm: urql 6 with its defaults
//! for GET, Apollo Client with `useGETForQueries`, graphql-request in GET mode
//! (`tests/api/helpers/node/graphql-clients.mjs`), against a served odqs on both stores. Each must
//! send its queries as `GET /api/v1/graphql?query=…`, get the same records and groups as REST, and
//! see an unknown field's `extensions.code`.

use crate::helpers::node;
use crate::helpers::{TestStore, api_token, load_demo};
use serde_json::Value;

/// Removes Apollo's `__typename` members, which its cache adds to every object.
fn without_typenames(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("__typename");
            map.values_mut().for_each(without_typenames);
        }
        Value::Array(items) => items.iter_mut().for_each(without_typenames),
        _ => {}
    }
}

async fn clients_query_by_get(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = crate::helpers::serve(&store).await;
    let url = format!("{site}/api/v1/graphql");
    let got = node::run_json("graphql-clients.mjs", vec![url, token.clone()]).await;

    let rest =
        |path: &str| crate::helpers::get_ok_json(format!("{site}/api/v1{path}"), token.clone());
    let records = rest(
        "/datasets/flights/records?carrier=UA&dep_delay%5Bgte%5D=60&sort=dep_delay%3C,_id&per_page=3&fields=carrier,dep_delay",
    )
    .await;
    let agg = rest("/datasets/flights/agg?group_by=origin&field=dep_delay&limit=2").await;
    assert!(records["total"].as_u64().unwrap() > 3);

    for client in ["urql", "apollo", "graphqlRequest"] {
        let mut answer = got[client].clone();
        without_typenames(&mut answer);
        assert_eq!(
            answer["methods"],
            serde_json::json!(["GET", "GET"]),
            "{client}"
        );
        assert_eq!(answer["error"], Value::Null, "{client}: {answer}");
        assert_eq!(
            answer["data"]["records"]["total"], records["total"],
            "{client}"
        );
        assert_eq!(
            answer["data"]["records"]["records"], records["records"],
            "{client}"
        );
        assert_eq!(
            answer["data"]["agg"]["totalGroups"], agg["total_groups"],
            "{client}"
        );
        let groups = answer["data"]["agg"]["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{client}");
        for (g, r) in groups.iter().zip(agg["groups"].as_array().unwrap()) {
            assert_eq!(g["key"], r["key"], "{client}");
            assert_eq!(g["stats"]["count"], r["stats"]["count"], "{client}");
            assert_eq!(g["stats"]["avg"], r["stats"]["avg"], "{client}");
        }
        assert_eq!(answer["badCode"], "unknown_field", "{client}");
    }
    let _ = stop.send(());
}

both_stores!(tier2: clients_query_by_get);
