//! Places (`near`, `bbox`), on both stores, from the in-memory index and from the store: the
//! demo's scenic spots within circles and boxes, checked against the points of the bundled
//! file with the haversine formula computed here, on records, agg and export; the geo pair in
//! the metadata and the schema file; and the refusals.

use std::io::Read;

use crate::helpers::TestStore;
use crate::helpers::cases::{encode, load};
use crate::helpers::client::{exchange, request};
use axum::http::Method;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};

const SPOTS: &str = "/datasets/tw-scenic-spots";

/// (_id, lat, lon) of every spot of the bundled file that has a position.
fn points() -> Vec<(String, f64, f64)> {
    let demo = odqs::demo::DATASETS
        .iter()
        .find(|d| d.slug == "tw-scenic-spots")
        .expect("the scenic spots demo");
    let mut text = String::new();
    flate2::read::GzDecoder::new(demo.data)
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter_map(|spot| {
            let id = spot["ID"].as_str()?.to_string();
            let lat = spot["Position"]["PositionLat"].as_f64()?;
            let lon = spot["Position"]["PositionLon"].as_f64()?;
            Some((id, lat, lon))
        })
        .collect()
}

/// The great-circle distance in metres, on the contract's sphere.
fn haversine(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let r = 6_371_008.8_f64;
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let (dp, dl) = ((lat2 - lat1).to_radians(), (lon2 - lon1).to_radians());
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * r * h.sqrt().asin()
}

/// `GET /api/v1{path}`: the status, the body as JSON (`null` for an export) and its bytes.
async fn ask(router: &axum::Router, token: &str, path: &str) -> (u16, Value, Vec<u8>) {
    let path = format!("/api/v1{}", encode(path));
    let (status, _, bytes) =
        exchange(router, request(Method::GET, &path, Some(token), &[], None)).await;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body, bytes.to_vec())
}

fn ids(body: &Value) -> Vec<String> {
    body["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["_id"].as_str().unwrap().to_string())
        .collect()
}

async fn spots_within_circles_and_boxes(store: TestStore) {
    let (_, token) = load(&store).await;
    let points = points();
    assert!(points.len() > 400, "{} points", points.len());
    let (_, lat0, lon0) = points[0].clone();
    let circles = [
        (lat0, lon0, "25km", 25_000.0),
        (lat0, lon0, "2500m", 2_500.0),
        (25.0340, 121.5645, "12.5km", 12_500.0),
        (0.0, 0.0, "10km", 10_000.0),
        (23.5, 121.0, "20000km", 20_000_000.0),
    ];
    let boxes = [
        [120.5, 23.8, 120.7, 24.0],
        [121.4, 24.9, 121.7, 25.2],
        [0.0, 0.0, 1.0, 1.0],
    ];
    let mut bodies: Vec<Vec<Vec<u8>>> = Vec::new();
    for (path_name, router) in [
        (
            "index",
            store.router_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES)),
        ),
        ("store", store.router_with(IndexPolicy::OFF)),
    ] {
        let mut answers = Vec::new();
        let mut cases: Vec<(String, Vec<String>)> = Vec::new();
        for (lat, lon, radius, metres) in circles {
            let mut want: Vec<String> = points
                .iter()
                .filter(|(_, y, x)| haversine(lat, lon, *y, *x) <= metres)
                .map(|(id, _, _)| id.clone())
                .collect();
            want.sort();
            cases.push((format!("near={lat},{lon},{radius}"), want));
        }
        for [min_lon, min_lat, max_lon, max_lat] in boxes {
            let mut want: Vec<String> = points
                .iter()
                .filter(|(_, y, x)| {
                    (min_lat..=max_lat).contains(y) && (min_lon..=max_lon).contains(x)
                })
                .map(|(id, _, _)| id.clone())
                .collect();
            want.sort();
            cases.push((
                format!("bbox={min_lon},{min_lat},{max_lon},{max_lat}"),
                want,
            ));
        }
        assert!(
            cases.iter().any(|(_, w)| w.len() > 5),
            "some case must find spots"
        );
        assert!(
            cases.iter().any(|(_, w)| w.is_empty()),
            "some case must find none"
        );
        for (place, want) in &cases {
            let context = format!("{:?} {path_name}: {place}", store.kind);
            let path = format!("{SPOTS}/records?{place}&sort=_id&per_page=100&fields=Name");
            let (status, body, bytes) = ask(&router, &token, &path).await;
            assert_eq!(status, 200, "{context}: {body}");
            assert_eq!(body["total"], json!(want.len()), "{context}");
            let mut got = ids(&body);
            got.sort();
            let shown: Vec<String> = want.iter().take(100).cloned().collect();
            assert_eq!(got, shown, "{context}");
            answers.push(bytes);
            // agg counts the same records; export sends them.
            let path = format!("{SPOTS}/agg?{place}&group_by=Class1&limit=1");
            let (status, body, bytes) = ask(&router, &token, &path).await;
            assert_eq!(status, 200, "{context}: {body}");
            assert_eq!(body["total_records"], json!(want.len()), "{context} agg");
            answers.push(bytes);
            let path = format!("{SPOTS}/export?{place}&fields=Name");
            let (status, _, bytes) = ask(&router, &token, &path).await;
            assert_eq!(status, 200, "{context} export");
            let lines = bytes
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count();
            assert_eq!(lines, want.len(), "{context} export");
        }
        // Nearest first (farthest first with `<`), ties by `_id`, each with its distance.
        for (mark, farthest) in [(">", false), ("<", true)] {
            let (lat, lon) = (lat0, lon0);
            let mut want: Vec<(String, f64)> = points
                .iter()
                .map(|(id, y, x)| (id.clone(), haversine(lat, lon, *y, *x)))
                .filter(|(_, d)| *d <= 60_000.0)
                .collect();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            want.sort_by(|a, b| {
                let order = a.1.total_cmp(&b.1);
                if farthest { order.reverse() } else { order }
            });
            assert!(want.len() > 10, "{} spots within 60 km", want.len());
            let path = format!(
                "{SPOTS}/records?near={lat},{lon},60km&sort=_distance{mark},_id&per_page=7&page=2&fields=Name"
            );
            let (status, body, bytes) = ask(&router, &token, &path).await;
            let context = format!("{:?} {path_name}: {path}", store.kind);
            assert_eq!(status, 200, "{context}: {body}");
            assert_eq!(body["total"], json!(want.len()), "{context}");
            let page: Vec<&(String, f64)> = want.iter().skip(7).take(7).collect();
            let records = body["records"].as_array().unwrap();
            let got: Vec<&str> = records.iter().map(|r| r["_id"].as_str().unwrap()).collect();
            let expected: Vec<&str> = page.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(got, expected, "{context}");
            for (record, (_, metres)) in records.iter().zip(&page) {
                let got = record["_distance_m"]
                    .as_u64()
                    .expect("_distance_m in whole metres");
                assert!(
                    (got as f64 - metres).abs() <= 1.0,
                    "{context}: {got} vs {metres}"
                );
            }
            answers.push(bytes);
        }
        // Near and a box together, with another condition: each narrows.
        let path =
            format!("{SPOTS}/records?near={lat0},{lon0},25km&bbox=120.5,23.8,120.7,24.0&q=步道");
        let (status, body, bytes) = ask(&router, &token, &path).await;
        assert_eq!(status, 200, "{body}");
        answers.push(bytes);
        bodies.push(answers);
    }
    assert!(
        bodies[0] == bodies[1],
        "{:?}: the index and the store answer alike",
        store.kind
    );

    // The pair in the metadata and the schema file.
    let router = store.router();
    let (_, meta, _) = ask(&router, &token, SPOTS).await;
    assert_eq!(
        meta["geo"],
        json!({"lat": "Position.PositionLat", "lon": "Position.PositionLon"})
    );
    let (_, file, _) = ask(&router, &token, &format!("{SPOTS}/schema.json")).await;
    assert_eq!(file["geo"], meta["geo"]);
    let (_, flights, _) = ask(&router, &token, "/datasets/flights").await;
    assert!(flights.get("geo").is_none(), "{}", flights["geo"]);

    // Refusals, each naming its parameter.
    for (path, code, parameter) in [
        (
            "/datasets/flights/records?near=40.6,-73.8,5km",
            "no_geo_fields",
            "near",
        ),
        (
            "/datasets/flights/agg?group_by=carrier&bbox=-74,40,-73,41",
            "no_geo_fields",
            "bbox",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=91,121,1km",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=25,181,1km",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=25,121,0km",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=25,121,-5m",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=25,121,5",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=25,121,20001km",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?bbox=121,25,120,26",
            "invalid_parameter",
            "bbox",
        ),
        (
            "/datasets/tw-scenic-spots/records?bbox=121,25,122",
            "invalid_parameter",
            "bbox",
        ),
        (
            "/datasets/tw-scenic-spots/export?near=25,121,1km&near=25,121,2km",
            "invalid_parameter",
            "near",
        ),
        (
            "/datasets/tw-scenic-spots/records?sort=_distance>",
            "invalid_parameter",
            "sort",
        ),
        (
            "/datasets/tw-scenic-spots/records?near=25,121,1km&sort=Class1,_distance>",
            "invalid_parameter",
            "sort",
        ),
        (
            "/datasets/flights/records?sort=_distance>",
            "no_geo_fields",
            "sort",
        ),
    ] {
        let (status, body, _) = ask(&router, &token, path).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["error"], code, "{path}: {body}");
        assert_eq!(body["parameter"], parameter, "{path}: {body}");
    }
}

both_stores!(spots_within_circles_and_boxes);
