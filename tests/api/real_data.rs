//! The real open datasets of `testdata/` with their schema files on both stores: the scenic
//! spots whole and every fourth flight (84,194 flights from every day of 2013); every record
//! arrives, counted independently from the files, and the in-memory index answers as the
//! store. The sizes at which the index is built by two threads (`PARALLEL_FROM_ROWS`,
//! 100,000 rows) and SQLite's grouped statistics are read in two ranges (`SPLIT_FROM`,
//! 200,000) are crossed by `past_the_parallel_thresholds`, on generated records that import
//! in a fraction of the time; the whole flights file is imported and checked against the CSV
//! by the bench (`cargo bench --bench mix`).

use std::io::BufRead;

use crate::helpers::stored as records;
use crate::helpers::{TestStore, import_file, test_data};

/// Flights kept: every `FLIGHT_STRIDE`th, the file's last (id 336776) included.
const FLIGHT_STRIDE: usize = 4;

/// The flights whose id is a multiple of [`FLIGHT_STRIDE`], written as a gzipped CSV in the
/// store's directory (the header and every cell as in the file).
fn flights_slice(store: &TestStore) -> std::path::PathBuf {
    let mut source = csv::Reader::from_reader(flate2::read::MultiGzDecoder::new(
        std::fs::File::open(test_data("flights.csv.gz")).unwrap(),
    ));
    let mut writer = csv::Writer::from_writer(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    writer.write_record(source.headers().unwrap()).unwrap();
    for record in source
        .records()
        .skip(FLIGHT_STRIDE - 1)
        .step_by(FLIGHT_STRIDE)
    {
        writer.write_record(&record.unwrap()).unwrap();
    }
    let gzipped = writer.into_inner().unwrap().finish().unwrap();
    crate::helpers::write_file(store, "flights-slice.csv.gz", &gzipped)
}

fn lines_of(file: &str) -> usize {
    let reader = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
        std::fs::File::open(test_data(file)).unwrap(),
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
    let indexed = crate::helpers::get_with(&store.router(), path, Some(token), &[]).await;
    let from_store = crate::helpers::get_with(
        &store.router_with(query::memory::IndexPolicy::OFF),
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
    let schema = std::fs::read_to_string(test_data("flights.schema.json")).unwrap();
    let flights = import_file(
        &store,
        &flights_slice(&store),
        "flights",
        Some(&schema),
        None,
    )
    .await
    .unwrap();
    let in_file = lines_of("flights.csv.gz") - 1; // the header
    assert_eq!(in_file, 336_776);
    let expected = in_file / FLIGHT_STRIDE;
    assert_eq!(flights.records as usize, expected);
    assert_eq!(expected, 84_194);

    // Grouped statistics over every record: the store path gives the index's answer, every
    // number equal.
    let token = crate::helpers::api_token(&store).await;
    for path in [
        "/api/v1/datasets/flights/agg?group_by=carrier&field=dep_delay&percentiles=1,50,99.9",
        "/api/v1/datasets/flights/agg?group_by=origin,time_hour[month]&field=air_time&sort=key%3E",
        "/api/v1/datasets/flights/agg?group_by=distance[500]&field=arr_delay&sort=avg%3C",
    ] {
        let indexed = index_answers_as_the_store(&store, &token, path).await;
        assert_eq!(indexed["total_records"], 84_194, "{path}");
    }
    // Pages and records, by the index and by the store: ids, keyword and text codes,
    // numbers, every body equal.
    for path in [
        "/api/v1/datasets/flights/records?q=denver&sort=tailnum%3E,dep_delay&page=3",
        "/api/v1/datasets/flights/records?origin=EWR&dest=SEA&sort=arr_delay%3C&page=2",
        "/api/v1/datasets/flights/records/336776",
        "/api/v1/datasets/flights/records/168388",
    ] {
        index_answers_as_the_store(&store, &token, path).await;
    }
    let dataset = crate::helpers::stored::find_dataset(&store.store, "flights")
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
    assert_eq!(last.pos, 84_194);
    assert_eq!(last.doc["time_hour"], "2013-09-30T12:00:00Z");

    let schema = std::fs::read_to_string(test_data("tw-scenic-spots.schema.json")).unwrap();
    let spots = import_file(
        &store,
        &test_data("tw-scenic-spots.ndjson.gz"),
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
    let dataset = crate::helpers::stored::find_dataset(&store.store, "tw-scenic-spots")
        .await
        .unwrap()
        .unwrap();
    let fields = crate::helpers::stored::fields(&store.store, dataset.version_id)
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

/// Generated records past both sizes at which reads go parallel: the index built by two
/// threads, each reading half the positions, joined (keyword and text dictionaries, numbers,
/// dates, missing values), and SQLite's grouped statistics without conditions folded in two
/// ranges and merged, answer exactly as one read does: the index and the store (each path's
/// own way) agree on every number, page and record.
async fn past_the_parallel_thresholds(store: TestStore) {
    const ROWS: usize = 200_100;
    let words = [
        "harbour", "ridge", "valley", "temple", "market", "bridge", "garden",
    ];
    let mut csv = String::from("id,group,value,day,note\n");
    for i in 1..=ROWS {
        // Values missing here and there; groups and words spread so that both halves hold
        // some of every one, and some only in one half.
        let value = if i.is_multiple_of(11) {
            String::new()
        } else {
            format!("{}.{}", (i * 7_919) % 10_007, i % 4)
        };
        let group = if i > ROWS - 10 {
            "late".to_string()
        } else {
            format!("g{}", (i * 31) % 23)
        };
        let day = format!("2024-{:02}-{:02}", 1 + i % 12, 1 + i % 28);
        let note = format!("{} {} {}", words[i % 7], words[(i / 7) % 7], i % 97);
        csv.push_str(&format!("n{i},{group},{value},{day},{note}\n"));
    }
    let path = crate::helpers::write_file(&store, "generated.csv", csv.as_bytes());
    let schema = r#"{"id_field": "id", "fields": [{"name": "id", "type": "keyword"}, {"name": "group", "type": "keyword"}, {"name": "value", "type": "number"}, {"name": "day", "type": "date"}, {"name": "note", "type": "text"}]}"#;
    let imported = import_file(&store, &path, "generated", Some(schema), None)
        .await
        .unwrap();
    assert_eq!(imported.records as usize, ROWS);
    let token = crate::helpers::api_token(&store).await;
    for path in [
        // No conditions and a field: SQLite's store path reads this in two ranges.
        "/api/v1/datasets/generated/agg?group_by=group&field=value&percentiles=1,50,99.9",
        "/api/v1/datasets/generated/agg?group_by=day[month]&field=value&sort=key%3E",
    ] {
        let answer = index_answers_as_the_store(&store, &token, path).await;
        assert_eq!(answer["total_records"], ROWS, "{path}");
    }
    let late = index_answers_as_the_store(
        &store,
        &token,
        "/api/v1/datasets/generated/agg?group_by=group&field=value&sort=key%3C&limit=1",
    )
    .await;
    assert_eq!(late["groups"][0]["key"], "late");
    assert_eq!(late["groups"][0]["stats"]["count"], 10);
    for path in [
        "/api/v1/datasets/generated/records?q=temple%20bridge&sort=value%3C&page=2",
        "/api/v1/datasets/generated/records?group=g5&sort=day%3E,value&page=40",
        "/api/v1/datasets/generated/records/n1",
        "/api/v1/datasets/generated/records/n100050",
        "/api/v1/datasets/generated/records/n200100",
    ] {
        index_answers_as_the_store(&store, &token, path).await;
    }
}

both_stores!(flights_and_scenic_spots, past_the_parallel_thresholds);
