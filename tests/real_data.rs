//! The real open datasets of `shared/data`, imported whole with their schema files on both
//! stores: every record arrives, counted independently from the files.

mod common;

use std::io::BufRead;

use common::stored as records;
use common::{TestStore, import_file, shared_data};

fn lines_of(file: &str) -> usize {
    let reader = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
        std::fs::File::open(shared_data(file)).unwrap(),
    ));
    reader
        .lines()
        .map(Result::unwrap)
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// Asks `path` of the in-memory index and of the store alone; both answer 200, the same body,
/// which is returned.
async fn index_answers_as_the_store(
    store: &TestStore,
    token: &str,
    path: &str,
) -> serde_json::Value {
    let indexed = common::get_with(&store.router(), path, Some(token), &[]).await;
    let from_store = common::get_with(
        &store.router_with(graphql::query::memory::IndexPolicy::OFF),
        path,
        Some(token),
        &[],
    )
    .await;
    assert_eq!(indexed.status, 200, "{path}: {}", indexed.body);
    assert_eq!(indexed.body, from_store.body, "{path}");
    indexed.body
}

async fn flights_and_scenic_spots(store: TestStore) {
    let schema = std::fs::read_to_string(shared_data("flights.schema.json")).unwrap();
    let flights = import_file(
        &store,
        &shared_data("flights.csv.gz"),
        "flights",
        Some(&schema),
        None,
    )
    .await
    .unwrap();
    let expected = lines_of("flights.csv.gz") - 1; // the header
    assert_eq!(flights.records as usize, expected);
    assert_eq!(expected, 336_776);

    // Grouped statistics over every record: the store path (on SQLite, read in two ranges of
    // positions side by side and merged) gives the index's answer, every number equal.
    let token = common::api_token(&store).await;
    for path in [
        "/api/v1/datasets/flights/agg?group_by=carrier&field=dep_delay&percentiles=1,50,99.9",
        "/api/v1/datasets/flights/agg?group_by=origin,time_hour[month]&field=air_time&sort=key%3E",
        "/api/v1/datasets/flights/agg?group_by=distance[500]&field=arr_delay&sort=avg%3C",
    ] {
        let indexed = index_answers_as_the_store(&store, &token, path).await;
        assert_eq!(indexed["total_records"], 336_776, "{path}");
    }
    // Pages and a record, by the index (read from SQLite in two parts at once, and joined)
    // and by the store: ids, keyword and text codes, numbers, every body equal.
    for path in [
        "/api/v1/datasets/flights/records?q=denver&sort=tailnum%3E,dep_delay&page=3",
        "/api/v1/datasets/flights/records?origin=EWR&dest=SEA&sort=arr_delay%3C&page=2",
        "/api/v1/datasets/flights/records/336776",
        "/api/v1/datasets/flights/records/168388",
    ] {
        index_answers_as_the_store(&store, &token, path).await;
    }
    let dataset = common::stored::find_dataset(&store.store, "flights")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        records::count(&store.store, dataset.version_id)
            .await
            .unwrap() as usize,
        expected
    );
    let last = records::by_id(&store.store, dataset.version_id, "336776")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.pos, 336_776);
    assert_eq!(last.doc["time_hour"], "2013-09-30T12:00:00Z");

    let schema = std::fs::read_to_string(shared_data("tw-scenic-spots.schema.json")).unwrap();
    let spots = import_file(
        &store,
        &shared_data("tw-scenic-spots.ndjson.gz"),
        "tw-scenic-spots",
        Some(&schema),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        spots.records as usize,
        lines_of("tw-scenic-spots.ndjson.gz")
    );
    assert_eq!(spots.records, 5063);
    let dataset = common::stored::find_dataset(&store.store, "tw-scenic-spots")
        .await
        .unwrap()
        .unwrap();
    let fields = common::stored::fields(&store.store, dataset.version_id)
        .await
        .unwrap();
    // Fields the schema file does not list are kept, with inferred types, after its own.
    assert_eq!(fields[0].name, "ID");
    assert!(
        fields
            .iter()
            .any(|f| f.name == "ParkingPosition.PositionLat")
    );
    let first = records::in_order(&store.store, dataset.version_id, 0, 1)
        .await
        .unwrap();
    assert_eq!(first[0].id, "C1_315081200H_000080");
    assert_eq!(first[0].doc["Position"]["GeoHash"], "wsmb103ny");
}

both_stores!(flights_and_scenic_spots);
