//! Export (contract §12.3) on both stores, from the in-memory index and from the store: the
//! records of an export are those `/records` pages through, in the same order and shape; CSV
//! has the header, cells and quoting `odqs import` reads back into the same records and types
//! (the round trip, on the demo data and a slice of the real flights file); bad input is the
//! contract's 400s; the rate limit counts the records; gzip compresses; a client that hangs up
//! stops the reads.

use std::io::Read;
use std::sync::Arc;

use crate::helpers::client;
use crate::helpers::{
    TestStore, api_token, get_with, import_file, load_demo, test_data, write_file,
};
use axum::http::Method;
use odqs::state::AppState;
use query::memory::{DEFAULT_BUDGET_BYTES, IndexPolicy};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A raw answer: status, headers, body bytes.
struct Raw {
    status: u16,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no header {name}: {:?}", self.headers))
            .to_str()
            .unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn lines(&self) -> Vec<Value> {
        std::str::from_utf8(&self.body)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn csv(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut reader = csv::Reader::from_reader(self.body.as_slice());
        let header = reader.headers().unwrap().iter().map(String::from).collect();
        let rows = reader
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        (header, rows)
    }
}

/// `path` with what a request target cannot hold raw percent-encoded (non-ASCII, `<`, `>`,
/// brackets, spaces), as a client sends it.
fn uri(path: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'<')
        .add(b'>')
        .add(b'"')
        .add(b'[')
        .add(b']');
    percent_encoding::utf8_percent_encode(path, SET).to_string()
}

async fn raw(router: &axum::Router, path: &str, token: &str, headers: &[(&str, &str)]) -> Raw {
    let request = client::request(Method::GET, &uri(path), Some(token), headers, None);
    let (status, headers, body) = client::exchange(router, request).await;
    Raw {
        status,
        headers,
        body: body.to_vec(),
    }
}

/// Every record `/records` gives for `query`, paging through (100 a page).
async fn all_records(router: &axum::Router, token: &str, slug: &str, query: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for page in 1.. {
        let answer = get_with(
            router,
            &uri(&format!(
                "/api/v1/datasets/{slug}/records?{query}&per_page=100&page={page}"
            )),
            Some(token),
            &[],
        )
        .await;
        assert_eq!(answer.status, 200, "{query}: {}", answer.body);
        let records = answer.body["records"].as_array().unwrap().clone();
        let total = answer.body["total"].as_u64().unwrap() as usize;
        let done = records.is_empty();
        out.extend(records);
        if done || out.len() >= total {
            break;
        }
    }
    out
}

/// The CSV cell odqs writes for a JSON value.
fn cell_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A record's value at a dotted path.
fn at<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(record, |v, key| v.get(key))
}

/// The two ways a request is answered: from the in-memory index and from the store.
fn routers(store: &TestStore) -> [(&'static str, axum::Router); 2] {
    [
        ("memory", store.router()),
        ("store", store.router_with(IndexPolicy::OFF)),
    ]
}

const DEMO_QUERIES: &[(&str, &str)] = &[
    ("flights", ""),
    ("flights", "carrier=UA&origin=EWR"),
    ("flights", "sort=dep_delay<,carrier"),
    ("flights", "sort=tailnum>&carrier=AA"),
    ("flights", "q=denver&fields=carrier,dest_name"),
    ("flights", "_ids=1,5,9,12345&sort=_id<"),
    ("flights", "carrier=ZZ"),
    (
        "flights",
        "dep_delay[gte]=60&dep_delay[lt]=120&sort=dep_delay<",
    ),
    (
        "flights",
        "carrier[ne]=UA&tailnum[prefix]=N5&fields=tailnum",
    ),
    ("flights", "dep_time[exists]=false&sort=origin"),
    ("flights", "q=nosuchword"),
    ("tw-scenic-spots", "fields=Position,Name"),
    ("tw-scenic-spots", "q=日月潭"),
    ("tw-scenic-spots", "sort=ZipCode<"),
];

/// NDJSON is exactly what `/records` pages through; CSV has the same values; both carry the
/// total up front and the attachment headers.
async fn exports_are_what_records_show(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    for (path_name, router) in routers(&store) {
        for (slug, query) in DEMO_QUERIES {
            let what = format!("{path_name} {slug}?{query}");
            let expected = all_records(&router, &token, slug, query).await;
            let base = format!("/api/v1/datasets/{slug}/export?{query}");
            let ndjson = raw(&router, &base, &token, &[]).await;
            assert_eq!(ndjson.status, 200, "{what}: {}", ndjson.json());
            assert_eq!(ndjson.header("content-type"), "application/x-ndjson");
            assert_eq!(
                ndjson.header("content-disposition"),
                format!("attachment; filename=\"{slug}.ndjson\"")
            );
            assert_eq!(ndjson.header("x-total-count"), expected.len().to_string());
            let lines = ndjson.lines();
            assert_eq!(lines.len(), expected.len(), "{what}");
            for (line, record) in lines.iter().zip(&expected) {
                // Same keys in the same order: compare the serialized text.
                assert_eq!(line.to_string(), record.to_string(), "{what}");
            }

            let csv = raw(&router, &format!("{base}&format=csv"), &token, &[]).await;
            assert_eq!(csv.status, 200, "{what}");
            assert_eq!(csv.header("content-type"), "text/csv; charset=utf-8");
            assert_eq!(
                csv.header("content-disposition"),
                format!("attachment; filename=\"{slug}.csv\"")
            );
            assert_eq!(csv.header("x-total-count"), expected.len().to_string());
            let (header, rows) = csv.csv();
            assert_eq!(header[0], "_id", "{what}");
            assert_eq!(rows.len(), expected.len(), "{what}");
            for (row, record) in rows.iter().zip(&expected) {
                for (name, cell) in header.iter().zip(row) {
                    assert_eq!(*cell, cell_of(at(record, name)), "{what}: {name}");
                }
            }
        }
    }
    // The header is the schema's order, restricted by the projection, nested names dotted.
    let router = store.router();
    let (header, _) = raw(
        &router,
        "/api/v1/datasets/tw-scenic-spots/export?format=csv&fields=Position,Name",
        &token,
        &[],
    )
    .await
    .csv();
    assert_eq!(
        &header[..5],
        [
            "_id",
            "Name",
            "Position.PositionLat",
            "Position.PositionLon",
            "Position.GeoHash"
        ]
    );
    // An empty export is a CSV header and no rows, or an empty NDJSON body.
    let empty = raw(
        &router,
        "/api/v1/datasets/flights/export?format=csv&carrier=ZZ&fields=carrier",
        &token,
        &[],
    )
    .await;
    assert_eq!(empty.body, b"_id,carrier\r\n");
    let empty = raw(
        &router,
        "/api/v1/datasets/flights/export?carrier=ZZ",
        &token,
        &[],
    )
    .await;
    assert!(empty.body.is_empty());
    assert_eq!(empty.header("x-total-count"), "0");
}

/// Refusals before the first byte are the contract's JSON errors.
async fn bad_input_is_refused(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    let cases: &[(&str, u16, &str)] = &[
        ("page=1", 400, "invalid_parameter"),
        ("per_page=10", 400, "invalid_parameter"),
        ("format=xml", 400, "invalid_parameter"),
        ("format=csv&format=ndjson", 400, "invalid_parameter"),
        ("sort=nope", 400, "unknown_field"),
        ("sort=plane", 400, "invalid_parameter"),
        ("sort=a<>", 400, "unknown_field"),
        ("sort=<", 400, "invalid_parameter"),
        ("fields=nope", 400, "unknown_field"),
        ("fields=,", 400, "invalid_parameter"),
        ("plane=x", 400, "text_field_exact_match"),
        ("nope=x", 400, "unknown_field"),
        ("dep_delay=soon", 400, "invalid_parameter"),
        ("q[carrier]=x", 400, "invalid_parameter"),
        ("_ids=,", 400, "invalid_parameter"),
    ];
    for (query, status, code) in cases {
        let answer = raw(
            &router,
            &format!("/api/v1/datasets/flights/export?{query}"),
            &token,
            &[],
        )
        .await;
        assert_eq!(answer.status, *status, "{query}");
        assert_eq!(answer.json()["error"], *code, "{query}: {}", answer.json());
        assert!(
            answer
                .header("content-type")
                .starts_with("application/json")
        );
    }
    let missing = raw(&router, "/api/v1/datasets/nope/export", &token, &[]).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "dataset_not_found");
    let anonymous = get_with(&router, "/api/v1/datasets/flights/export", None, &[]).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.body["error"], "missing_token");
}

/// A schema file for re-importing an export: the dataset's own fields and types, and `_id`
/// as the identifier column.
/// The dataset's own schema file (`GET …/schema.json`, which the export links to), with `_id`
/// as the id field, as `odqs import export.csv --schema schema.json --id-field _id` reads it.
async fn schema_of(router: &axum::Router, token: &str, slug: &str) -> String {
    let answer = get_with(
        router,
        &format!("/api/v1/datasets/{slug}/schema.json"),
        Some(token),
        &[],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let mut schema = answer.body;
    let meta = get_with(
        router,
        &format!("/api/v1/datasets/{slug}"),
        Some(token),
        &[],
    )
    .await;
    // The same title, types and descriptions as the metadata, `_id` left out.
    assert_eq!(schema["title"], meta.body["title"]);
    let entries: Vec<Value> = meta.body["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] != "_id")
        .map(|f| {
            let mut entry = json!({"name": f["name"], "type": f["type"]});
            if !f["description"].is_null() {
                entry["description"] = f["description"].clone();
            }
            entry
        })
        .collect();
    assert_eq!(schema["fields"], json!(entries));
    schema["id_field"] = json!("_id");
    schema.to_string()
}

/// Exports `slug` whole in `format`, imports the file as `copy` and checks that the copy
/// exports the same records (NDJSON, byte for byte) with the same schema.
async fn round_trip(
    store: &TestStore,
    router: &axum::Router,
    token: &str,
    slug: &str,
    format: &str,
) {
    let what = format!("{slug} as {format}");
    let export = raw(
        router,
        &format!("/api/v1/datasets/{slug}/export?format={format}"),
        token,
        &[],
    )
    .await;
    assert_eq!(export.status, 200, "{what}");
    assert_eq!(
        export.header("link"),
        format!("<http://odqs.test/api/v1/datasets/{slug}/schema.json>; rel=\"describedby\""),
        "{what}"
    );
    let path = write_file(store, &format!("{slug}-export.{format}"), &export.body);
    let schema = schema_of(router, token, slug).await;
    let copy = format!("{slug}-copy-{format}");
    import_file(store, &path, &copy, Some(&schema), None)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let original = raw(
        router,
        &format!("/api/v1/datasets/{slug}/export"),
        token,
        &[],
    )
    .await;
    let again = raw(
        router,
        &format!("/api/v1/datasets/{copy}/export"),
        token,
        &[],
    )
    .await;
    assert_eq!(
        original.header("x-total-count"),
        again.header("x-total-count")
    );
    let (mut a, b) = (original.lines(), again.lines());
    if format == "csv" {
        // A CSV cell cannot say "an empty object": the one thing the scenic spots lose.
        a.iter_mut().for_each(drop_empty_objects);
    }
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(&b) {
        // Serialized, so that the key order counts too.
        let (x_text, y_text) = (x.to_string(), y.to_string());
        if x_text != y_text {
            let keys: Vec<String> = x
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, v)| y.get(k.as_str()) != Some(v))
                .map(|(k, v)| format!("{k}: {v} vs {:?}", y.get(k.as_str())))
                .collect();
            panic!(
                "{what}: record {} differs: {keys:?}; key order {:?} vs {:?}",
                x["_id"],
                x.as_object().unwrap().keys().collect::<Vec<_>>(),
                y.as_object().unwrap().keys().collect::<Vec<_>>()
            );
        }
    }
    let fields = |slug: String| async move {
        get_with(
            router,
            &format!("/api/v1/datasets/{slug}"),
            Some(token),
            &[],
        )
        .await
        .body["fields"]
            .clone()
    };
    assert_eq!(fields(slug.to_string()).await, fields(copy).await, "{what}");
}

/// Removes members whose value is an empty object, at any depth.
fn drop_empty_objects(value: &mut Value) {
    if let Value::Object(map) = value {
        map.values_mut().for_each(drop_empty_objects);
        map.retain(|_, v| v.as_object().is_none_or(|o| !o.is_empty()));
    }
}

/// `odqs import` of an export gives back the same records and types, on both demo datasets
/// in both formats (the scenic spots' empty objects, `"ParkingPosition": {}`, excepted in CSV,
/// which has no way to write one).
async fn demo_round_trip(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    round_trip(&store, &router, &token, "flights", "csv").await;
    round_trip(&store, &router, &token, "flights", "ndjson").await;
    round_trip(&store, &router, &token, "tw-scenic-spots", "ndjson").await;
    round_trip(&store, &router, &token, "tw-scenic-spots", "csv").await;
}

/// An export counts as one request plus one per started 1,000 records, charged up front; the
/// headers say what is left; an export the budget cannot cover is 429.
async fn rate_limit_counts_records(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = odqs::app::router(
        store
            .state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES))
            .with_api_rate_limit(10),
    );
    // The demo flights are 2,005 records: 1 + 3 requests.
    let first = raw(&router, "/api/v1/datasets/flights/export", &token, &[]).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("x-total-count"), "2005");
    assert_eq!(first.header("ratelimit-policy"), "\"token\";q=10;w=60");
    assert!(
        first.header("ratelimit").starts_with("\"token\";r=6;"),
        "{}",
        first.header("ratelimit")
    );
    let second = raw(
        &router,
        "/api/v1/datasets/flights/export?format=csv",
        &token,
        &[],
    )
    .await;
    assert_eq!(second.status, 200);
    assert!(second.header("ratelimit").starts_with("\"token\";r=2;"));
    // 1 more request fits, 3 more do not.
    let refused = raw(&router, "/api/v1/datasets/flights/export", &token, &[]).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.json()["error"], "rate_limited");
    assert!(refused.header("retry-after").parse::<u64>().unwrap() >= 1);
    assert!(refused.header("ratelimit").starts_with("\"token\";r=0;"));
    // An export with no match costs the request alone, which still fits.
    let empty = raw(
        &router,
        "/api/v1/datasets/flights/export?carrier=ZZ",
        &token,
        &[],
    )
    .await;
    assert_eq!(empty.status, 200, "{}", empty.json());
    assert!(empty.header("ratelimit").starts_with("\"token\";r=0;"));

    // More than the whole budget can never run: the message says how to narrow it.
    let router = odqs::app::router(
        store
            .state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES))
            .with_api_rate_limit(2),
    );
    let never = raw(&router, "/api/v1/datasets/flights/export", &token, &[]).await;
    assert_eq!(never.status, 429);
    assert_eq!(never.json()["error"], "rate_limited");
    let message = never.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("2005 records") && message.contains("at most 1000"),
        "{message}"
    );
    assert_eq!(never.header("retry-after"), "60");
}

/// `Accept-Encoding: gzip` compresses the stream; CORS exposes the export's headers.
async fn compressed_and_exposed(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    for format in ["ndjson", "csv"] {
        let path = format!("/api/v1/datasets/flights/export?format={format}");
        let plain = raw(&router, &path, &token, &[]).await;
        let gzipped = raw(
            &router,
            &path,
            &token,
            &[
                ("accept-encoding", "gzip"),
                ("origin", "https://example.org"),
            ],
        )
        .await;
        assert_eq!(gzipped.status, 200);
        assert_eq!(gzipped.header("content-encoding"), "gzip", "{format}");
        assert!(gzipped.body.len() * 4 < plain.body.len(), "{format}");
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(gzipped.body.as_slice())
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, plain.body, "{format}");
        let exposed = gzipped
            .header("access-control-expose-headers")
            .to_ascii_lowercase();
        for name in ["x-total-count", "content-disposition", "ratelimit"] {
            assert!(exposed.contains(name), "{exposed}");
        }
    }
}

/// Every `FLIGHTS_STRIDE`th flight of the real file: 21,049 flights, about 58 of every day of
/// 2013, from every carrier and airport, with the file's empty cells (cancelled flights),
/// numbers, dates and texts, in 22 batches of bodies (`BATCH_RECORDS`). The whole file's round
/// trip is the same code on sixteen times the records (the bench imports the whole file);
/// the store's position statements (`POSITION_BATCH`) are crossed by
/// `store_positions_cross_statements`.
const FLIGHTS_STRIDE: usize = 16;

/// The slice of the real flights file: its header and rows, and the slice written as a
/// gzipped CSV file in the store's directory.
fn flights_slice(store: &TestStore) -> (Vec<String>, Vec<Vec<String>>, std::path::PathBuf) {
    let mut source = csv::Reader::from_reader(flate2::read::MultiGzDecoder::new(
        std::fs::File::open(test_data("flights.csv.gz")).unwrap(),
    ));
    let header: Vec<String> = source.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<Vec<String>> = source
        .records()
        .step_by(FLIGHTS_STRIDE)
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    let mut writer = csv::Writer::from_writer(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    writer.write_record(&header).unwrap();
    for row in &rows {
        writer.write_record(row).unwrap();
    }
    let gzipped = writer.into_inner().unwrap().finish().unwrap();
    let path = write_file(store, "flights-slice.csv.gz", &gzipped);
    (header, rows, path)
}

/// A slice of the real flights file (every sixteenth flight): exported whole in both formats (from the index and from the store) and
/// compared with the source, cell for cell; the CSV export re-imported gives the same records
/// and types; a client that hangs up after the first bytes stops the reads.
async fn real_flights(store: TestStore) {
    let schema = std::fs::read_to_string(test_data("flights.schema.json")).unwrap();
    let (source_header, source_rows, slice) = flights_slice(&store);
    assert_eq!(source_rows.len(), 336_776_usize.div_ceil(FLIGHTS_STRIDE));
    import_file(&store, &slice, "flights", Some(&schema), None)
        .await
        .unwrap();
    let total = source_rows.len().to_string();
    let token = api_token(&store).await;
    let numbers: Vec<bool> = {
        let schema: Value = serde_json::from_str(&schema).unwrap();
        source_header
            .iter()
            .map(|name| {
                schema["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["name"] == *name && f["type"] == "number")
            })
            .collect()
    };
    // A source cell and an exported value are the same: text as written, numbers as numbers.
    let same = |source: &str, exported: &str, number: bool| {
        source == exported || (number && source.parse::<f64>().ok() == exported.parse::<f64>().ok())
    };
    for (path_name, router) in routers(&store) {
        let csv = raw(
            &router,
            "/api/v1/datasets/flights/export?format=csv",
            &token,
            &[],
        )
        .await;
        assert_eq!(csv.status, 200);
        assert_eq!(csv.header("x-total-count"), total);
        let (header, rows) = csv.csv();
        assert_eq!(header[0], "_id");
        assert_eq!(header[1..], source_header[..], "{path_name}");
        assert_eq!(rows.len(), source_rows.len(), "{path_name}");
        for (row, src) in rows.iter().zip(&source_rows) {
            assert_eq!(row[0], src[0], "{path_name}: _id is the id field");
            for (i, cell) in src.iter().enumerate() {
                assert!(
                    same(cell, &row[i + 1], numbers[i]),
                    "{path_name} {}: {cell:?} vs {:?}",
                    source_header[i],
                    row[i + 1]
                );
            }
        }
        drop(rows);
        let ndjson = raw(&router, "/api/v1/datasets/flights/export", &token, &[]).await;
        let lines = ndjson.lines();
        assert_eq!(lines.len(), source_rows.len(), "{path_name}");
        for (line, src) in lines.iter().zip(&source_rows) {
            assert_eq!(line["_id"], src[0]);
            for (i, cell) in src.iter().enumerate() {
                let exported = cell_of(line.get(&source_header[i]));
                assert!(
                    same(cell, &exported, numbers[i]),
                    "{path_name} {}: {cell:?} vs {exported:?}",
                    source_header[i]
                );
            }
        }
    }
    drop(source_rows);

    let router = store.router();
    round_trip(&store, &router, &token, "flights", "csv").await;
    hang_up_stops_the_reads(&store, &token, &total).await;
}

/// An export the store answers lists the positions of its records `POSITION_BATCH` (50,000)
/// a statement: on more records than that, sorted and unsorted, with values missing in the
/// sorted field (the two-part sort: records with the value, then those without), every
/// record arrives once, in the order `records` pages through and the index gives.
async fn store_positions_cross_statements(store: TestStore) {
    let batch = query::export::POSITION_BATCH as usize;
    let count = batch + 1_234;
    let mut csv = String::from("id,n,k\n");
    for i in 1..=count {
        // n: a few thousand distinct values, many ties, missing in every seventh record.
        let n = if i.is_multiple_of(7) {
            String::new()
        } else {
            ((i * 7_919) % 4_001).to_string()
        };
        csv.push_str(&format!("r{i},{n},{}\n", ["a", "b", "c"][i % 3]));
    }
    let path = write_file(&store, "many.csv", csv.as_bytes());
    let schema = r#"{"id_field": "id", "fields": [{"name": "id", "type": "keyword"}, {"name": "n", "type": "number"}, {"name": "k", "type": "keyword"}]}"#;
    import_file(&store, &path, "many", Some(schema), None)
        .await
        .unwrap();
    let token = api_token(&store).await;
    // The expected order of `sort=n<`: values descending, ties in file order, missing last.
    let n_of = |i: usize| (!i.is_multiple_of(7)).then(|| (i * 7_919) % 4_001);
    let mut by_n: Vec<usize> = (1..=count).collect();
    by_n.sort_by_key(|&i| (n_of(i).is_none(), std::cmp::Reverse(n_of(i)), i));
    let ids = |order: &[usize]| order.iter().map(|i| format!("r{i}")).collect::<Vec<_>>();
    let file_order: Vec<usize> = (1..=count).collect();
    let exported_ids = |raw: &Raw| -> Vec<String> {
        raw.lines()
            .iter()
            .map(|l| l["_id"].as_str().unwrap().to_string())
            .collect()
    };
    let [(_, memory), (_, from_store)] = routers(&store);
    for (query, expected) in [("", ids(&file_order)), ("&sort=n<", ids(&by_n))] {
        let path = format!("/api/v1/datasets/many/export?fields=n{query}");
        let stored = raw(&from_store, &path, &token, &[]).await;
        assert_eq!(stored.status, 200, "{query}");
        assert_eq!(stored.header("x-total-count"), count.to_string());
        assert!(
            exported_ids(&stored) == expected,
            "{query}: the store's order"
        );
        let indexed = raw(&memory, &path, &token, &[]).await;
        assert!(
            indexed.body == stored.body,
            "{query}: the index and the store differ"
        );
    }
}

/// A client that reads the first bytes of an export of flights and closes the connection:
/// the export's stream is dropped and it stops reading records well before the end.
async fn hang_up_stops_the_reads(store: &TestStore, token: &str, total: &str) {
    let state: AppState = store.state_with(IndexPolicy::waiting(DEFAULT_BUDGET_BYTES));
    let resolver = Arc::clone(&state.resolver);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(odqs::app::serve(state, listener, async move {
        let _ = stopped.await;
    }));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "GET /api/v1/datasets/flights/export HTTP/1.1\r\nHost: odqs.test\r\nAuthorization: Bearer {token}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut first = vec![0u8; 4096];
    let n = stream.read(&mut first).await.unwrap();
    let head = String::from_utf8_lossy(&first[..n]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("x-total-count: {total}")),
        "{head}"
    );
    let counters = resolver.export_counters();
    assert_eq!(counters.running(), 1, "the export is under way");
    drop(stream);
    // The server notices at its next write: wait for the export to be dropped.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while counters.running() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the export kept running after the hang-up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let read = counters.records_read();
    assert!(
        read < total.parse::<u64>().unwrap() / 2,
        "read {read} records for a client that left"
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

both_stores!(
    exports_are_what_records_show,
    bad_input_is_refused,
    demo_round_trip,
    rate_limit_counts_records,
    compressed_and_exposed,
    real_flights,
    store_positions_cross_statements,
);
