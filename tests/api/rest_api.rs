//! The REST API through the real router, row by row of contract §3–§7 and §11, on both stores.
//! A small hand-made dataset (`places`) makes every expected answer checkable by eye; the demo
//! datasets check Chinese search, dotted grouping and percentiles against values computed here
//! from the bundled files.

use std::io::Read;

use crate::helpers::{Answer, TestStore, api_token, get_with, import_file, load_demo, write_file};
use query::params::MAX_PAGE;
use serde_json::{Value, json};

const PLACES: &str = r#"{"code":"p1","name":"Denver Central Library","city":"Denver","kind":"library","rating":4.5,"visits":120,"open":true,"since":"2001-05-01","note":"Big reading rooms","geo":{"hash":"9xj6","lat":39.7}}
{"code":"p2","name":"日月潭 遊客中心","city":"Nantou","kind":"park","rating":5,"visits":300,"open":true,"since":"2010-01-01","note":"湖景 很美","geo":{"hash":"wsq4","lat":23.8}}
{"code":"p3","name":"Boulder Creek Path","city":"Boulder","kind":"park","rating":4.5,"visits":80,"open":false,"since":"1999-07-04","note":"Runs toward Denver","geo":{"hash":"9xj5","lat":40.0}}
{"code":"p4","name":"Old Mill","city":"Denver","kind":"museum","visits":15,"open":false,"note":"closed in winter","geo":{"hash":"9xj6","lat":39.8}}
{"code":"p5","name":"Harbor Museum","city":"Boston","kind":"museum","rating":3,"visits":45,"open":true,"since":"2015-03-03","note":"Ships and DENVER boots"}
{"code":"p6","name":"阿里山 車站","city":"Chiayi","kind":"station","rating":5.0,"visits":300,"open":true,"since":"1912-12-25","note":"森林鐵路","geo":{"hash":"wsm7","lat":23.5}}
{"code":"p7","name":"City Park","city":"Denver","kind":"park","rating":2,"visits":7,"open":true,"since":"2020-02-02","note":"dogs welcome","geo":{"hash":"9xj6","lat":39.75}}
{"code":"p8","name":"Night Market","city":"Taipei","kind":"market","visits":500,"open":true,"since":"2005-05-05","note":"小吃 and 夜市","geo":{"hash":"wsqq","lat":25.0}}
{"code":"p10","name":"Quiet Garden","city":"Boulder","kind":"park","rating":4.5,"visits":60,"open":false,"since":"2018-08-08","note":"tea house","geo":{"hash":"9xj5","lat":40.01}}
{"code":"p9","name":"Space Center","city":"Houston","kind":"museum","rating":4,"visits":250,"open":true,"since":"1992-10-10","note":"rockets","geo":{"hash":"9vk1","lat":29.5}}
"#;

const PLACES_SCHEMA: &str = r#"{
  "title": "Places", "description": "Test places", "license": "CC0-1.0",
  "source_url": "https://example.org/places", "id_field": "code",
  "fields": [
    {"name": "code", "type": "keyword"},
    {"name": "name", "type": "text", "description": "Name of the place"},
    {"name": "city", "type": "keyword"},
    {"name": "kind", "type": "keyword"},
    {"name": "rating", "type": "number"},
    {"name": "visits", "type": "number"},
    {"name": "open", "type": "boolean"},
    {"name": "since", "type": "date"},
    {"name": "note", "type": "text"},
    {"name": "geo.hash", "type": "keyword"},
    {"name": "geo.lat", "type": "number"}
  ]
}"#;

/// A store with `places` imported, its router and a token.
struct Api {
    store: TestStore,
    router: axum::Router,
    token: String,
}

impl Api {
    async fn new(store: TestStore) -> Self {
        Self::with_slug(store, "places").await
    }

    async fn with_slug(store: TestStore, slug: &str) -> Self {
        let path = write_file(&store, "places.ndjson", PLACES.as_bytes());
        import_file(&store, &path, slug, Some(PLACES_SCHEMA), None)
            .await
            .unwrap();
        let token = api_token(&store).await;
        let router = store.router();
        Api {
            store,
            router,
            token,
        }
    }

    async fn get(&self, path: &str) -> Answer {
        get_with(&self.router, path, Some(&self.token), &[]).await
    }

    /// `GET` that must answer 200; returns the body.
    async fn ok(&self, path: &str) -> Value {
        let answer = self.get(path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        answer.body
    }

    /// `GET` that must fail with `status` and `code`; returns the body.
    async fn fails(&self, path: &str, status: u16, code: &str) -> Value {
        let answer = self.get(path).await;
        assert_eq!(
            (answer.status, answer.body["error"].as_str()),
            (status, Some(code)),
            "{path}: {}",
            answer.body
        );
        assert!(
            answer.body["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        answer.body
    }

    /// The `_id`s of a records answer, with its total.
    async fn ids(&self, query: &str) -> (u64, Vec<String>) {
        let body = self
            .ok(&format!("/api/v1/datasets/places/records?{query}"))
            .await;
        (body["total"].as_u64().unwrap(), ids(&body))
    }
}

fn ids(body: &Value) -> Vec<String> {
    body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["_id"].as_str().unwrap().to_string())
        .collect()
}

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ---- §3 datasets and metadata ------------------------------------------------------------------

async fn dataset_list_and_metadata(store: TestStore) {
    let api = Api::new(store).await;
    let body = api.ok("/api/v1/datasets").await;
    assert_eq!(keys(&body), ["datasets", "total"]);
    assert_eq!(body["total"], 1);
    let item = &body["datasets"][0];
    assert_eq!(
        keys(item),
        [
            "slug",
            "title",
            "description",
            "record_count",
            "updated_at",
            "url"
        ]
    );
    assert_eq!(item["slug"], "places");
    assert_eq!(item["record_count"], 10);
    assert_eq!(item["url"], "http://odqs.test/api/v1/datasets/places");
    assert!(
        time::OffsetDateTime::parse(
            item["updated_at"].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339
        )
        .is_ok()
    );
    assert_eq!(
        api.ok("/api/v1/datasets?page=2").await["datasets"],
        json!([])
    );
    api.fails("/api/v1/datasets?per_page=0", 400, "invalid_parameter")
        .await;
    api.fails("/api/v1/datasets?sort=slug", 400, "invalid_parameter")
        .await;

    let meta = api.ok("/api/v1/datasets/places").await;
    for key in [
        "slug",
        "title",
        "description",
        "record_count",
        "updated_at",
        "url",
        "license",
        "source_url",
        "id_field",
        "created_at",
        "version",
        "fields",
        "links",
    ] {
        assert!(meta.get(key).is_some(), "metadata lacks {key}: {meta}");
    }
    assert_eq!(meta["license"], "CC0-1.0");
    assert_eq!(meta["id_field"], "code");
    assert_eq!(
        meta["links"],
        json!({
            "records": "http://odqs.test/api/v1/datasets/places/records",
            "agg": "http://odqs.test/api/v1/datasets/places/agg",
            "skill": "http://odqs.test/datasets/places/skill.md",
            "versions": "http://odqs.test/api/v1/datasets/places/versions",
        })
    );
    let entry = |name: &str| {
        meta["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no schema entry {name}"))
    };
    assert_eq!(
        entry("name"),
        json!({"name": "name", "type": "text", "description": "Name of the place",
               "filter": {"exact": false, "fulltext": true, "sort": false, "group_by": false,
                          "operators": ["exists"], "buckets": []}})
    );
    let flags = |name: &str| entry(name)["filter"].clone();
    assert_eq!(
        flags("city"),
        json!({"exact": true, "fulltext": false, "sort": true, "group_by": true,
               "operators": ["gt", "gte", "lt", "lte", "ne", "in", "nin", "exists", "prefix"],
               "buckets": []})
    );
    assert_eq!(
        flags("rating"),
        json!({"exact": true, "fulltext": false, "sort": true, "group_by": false,
               "operators": ["gt", "gte", "lt", "lte", "ne", "in", "nin", "exists"],
               "buckets": ["<width>"]})
    );
    assert_eq!(
        flags("open")["operators"],
        json!(["ne", "in", "nin", "exists"])
    );
    assert_eq!(
        flags("since")["buckets"],
        json!(["year", "month", "day", "hour"])
    );
    assert_eq!(flags("open")["exact"], true);
    assert_eq!(flags("since")["sort"], true);
    assert_eq!(flags("geo.hash")["group_by"], true);
    assert_eq!(entry("geo.hash")["type"], "keyword");

    api.fails("/api/v1/datasets/nope", 404, "dataset_not_found")
        .await;
    api.fails("/api/v1/datasets/nope/records", 404, "dataset_not_found")
        .await;
    api.fails(
        "/api/v1/datasets/nope/agg?group_by=x",
        404,
        "dataset_not_found",
    )
    .await;
}

async fn slugs_with_dots_and_tildes(store: TestStore) {
    let api = Api::with_slug(store, "places.v1~test").await;
    let meta = api.ok("/api/v1/datasets/places.v1~test").await;
    assert_eq!(meta["slug"], "places.v1~test");
    assert_eq!(
        meta["url"],
        "http://odqs.test/api/v1/datasets/places.v1~test"
    );
    let body = api
        .ok("/api/v1/datasets/places.v1~test/records?city=Denver")
        .await;
    assert_eq!(body["total"], 3);
    let one = api.ok("/api/v1/datasets/places.v1~test/records/p2").await;
    assert_eq!(one["_id"], "p2");
    let agg = api
        .ok("/api/v1/datasets/places.v1~test/agg?group_by=kind")
        .await;
    assert_eq!(agg["total_records"], 10);
}

// ---- §5 records: full text ---------------------------------------------------------------------

async fn full_text_search(store: TestStore) {
    let api = Api::new(store).await;
    // Every term, case-insensitively, in some text field; `city` is a keyword and not searched.
    assert_eq!(api.ids("q=denver").await, (3, list(&["p1", "p3", "p5"])));
    assert_eq!(api.ids("q=DENVER%20library").await, (1, list(&["p1"])));
    // Terms may be found in different fields of the same record.
    assert_eq!(api.ids("q=reading+denver").await, (1, list(&["p1"])));
    assert_eq!(api.ids("q=denver&q=boots").await, (1, list(&["p5"])));
    assert_eq!(api.ids("q[note]=denver").await, (2, list(&["p3", "p5"])));
    assert_eq!(api.ids("q[name]=Denver").await, (1, list(&["p1"])));
    assert_eq!(
        api.ids("q[name]=denver&q[note]=rooms").await,
        (1, list(&["p1"]))
    );
    // Chinese matches as substrings, without spaces: two characters (a dictionary scan) and
    // three (the trigram index).
    assert_eq!(api.ids("q=日月").await, (1, list(&["p2"])));
    assert_eq!(api.ids("q=遊客中").await, (1, list(&["p2"])));
    assert_eq!(api.ids("q=夜市").await, (1, list(&["p8"])));
    assert_eq!(api.ids("q=很美").await, (1, list(&["p2"])));
    assert_eq!(api.ids("q=%E6%A3%AE%E6%9E%97").await, (1, list(&["p6"])));
    assert_eq!(api.ids("q=zzzz").await, (0, vec![]));
    assert_eq!(api.ids("q=denver+zzzz").await, (0, vec![]));
    // An empty q is no condition.
    assert_eq!(api.ids("q=").await.0, 10);
    let body = api
        .fails(
            "/api/v1/datasets/places/records?q[city]=x",
            400,
            "invalid_parameter",
        )
        .await;
    assert!(body["message"].as_str().unwrap().contains("city"));
    api.fails(
        "/api/v1/datasets/places/records?q[nope]=x",
        400,
        "unknown_field",
    )
    .await;
    api.fails(
        "/api/v1/datasets/places/records?q[=x",
        400,
        "invalid_parameter",
    )
    .await;
}

// ---- §5 records: exact match, _ids -------------------------------------------------------------

async fn exact_match_and_ids(store: TestStore) {
    let api = Api::new(store).await;
    assert_eq!(api.ids("city=Denver").await, (3, list(&["p1", "p4", "p7"])));
    assert_eq!(api.ids("city=denver").await, (0, vec![]));
    assert_eq!(
        api.ids("city=Denver&city=Boston").await,
        (4, list(&["p1", "p4", "p5", "p7"]))
    );
    assert_eq!(api.ids("city=Denver&kind=park").await, (1, list(&["p7"])));
    // Numbers compare as numbers: 5 matches 5.0.
    assert_eq!(api.ids("rating=5").await, (2, list(&["p2", "p6"])));
    assert_eq!(api.ids("rating=5.0").await, (2, list(&["p2", "p6"])));
    assert_eq!(api.ids("rating=4.5&rating=2").await.0, 4);
    assert_eq!(api.ids("open=true").await.0, 7);
    assert_eq!(api.ids("open=false").await, (3, list(&["p3", "p4", "p10"])));
    assert_eq!(api.ids("since=2001-05-01").await, (1, list(&["p1"])));
    assert_eq!(
        api.ids("geo.hash=9xj6").await,
        (3, list(&["p1", "p4", "p7"]))
    );
    assert_eq!(api.ids("_id=p4").await, (1, list(&["p4"])));
    assert_eq!(api.ids("_ids=p3,p1,zzz").await, (2, list(&["p1", "p3"])));
    assert_eq!(api.ids("_ids=p3,p1&city=Denver").await, (1, list(&["p1"])));

    let body = api
        .fails(
            "/api/v1/datasets/places/records?note=x",
            400,
            "text_field_exact_match",
        )
        .await;
    assert_eq!(body["field"], "note");
    assert!(
        body["message"].as_str().unwrap().contains("q[note]"),
        "{body}"
    );
    api.fails(
        "/api/v1/datasets/places/records?name=x",
        400,
        "text_field_exact_match",
    )
    .await;
    let body = api
        .fails(
            "/api/v1/datasets/places/records?nope=1",
            400,
            "unknown_field",
        )
        .await;
    assert_eq!(body["field"], "nope");
    api.fails(
        "/api/v1/datasets/places/records?rating=abc",
        400,
        "invalid_parameter",
    )
    .await;
    api.fails(
        "/api/v1/datasets/places/records?open=maybe",
        400,
        "invalid_parameter",
    )
    .await;
    api.fails(
        "/api/v1/datasets/places/records?_ids=,",
        400,
        "invalid_parameter",
    )
    .await;
}

// ---- §5 records: paging ------------------------------------------------------------------------

async fn paging_bounds(store: TestStore) {
    let api = Api::new(store).await;
    let body = api.ok("/api/v1/datasets/places/records").await;
    assert_eq!(
        keys(&body),
        [
            "total",
            "page",
            "per_page",
            "records",
            "next_cursor",
            "schema"
        ]
    );
    assert_eq!(
        (body["page"].clone(), body["per_page"].clone()),
        (json!(1), json!(20))
    );
    assert_eq!(body["records"].as_array().unwrap().len(), 10);
    assert_eq!(body["schema"][0]["name"], "_id");
    assert_eq!(
        api.ok("/api/v1/datasets/places/records?per_page=100").await["per_page"],
        100
    );
    for bad in [
        "per_page=101",
        "per_page=0",
        "per_page=-1",
        "page=0",
        "page=-1",
        "page=abc",
        "page=1.5",
        "page=%ZZ",
        "page=1&page=2",
    ] {
        api.fails(
            &format!("/api/v1/datasets/places/records?{bad}"),
            400,
            "invalid_parameter",
        )
        .await;
    }
    assert_eq!(api.ids("page=4&per_page=3").await, (10, list(&["p9"])));
    // A page past the end: no records and the true total.
    assert_eq!(api.ids("page=5&per_page=3").await, (10, vec![]));
    // The largest page (as GraphQL's 64-bit Int and SQL's OFFSET allow) is a page past the end;
    // one more is out of range, as the OpenAPI document's `maximum` says.
    let far = api
        .ok(&format!(
            "/api/v1/datasets/places/records?page={MAX_PAGE}&per_page=100"
        ))
        .await;
    assert_eq!(
        (far["total"].clone(), far["records"].clone()),
        (json!(10), json!([]))
    );
    api.fails(
        &format!(
            "/api/v1/datasets/places/records?page={}&per_page=100",
            MAX_PAGE + 1
        ),
        400,
        "invalid_parameter",
    )
    .await;
    // Pages of one query are consecutive slices of one order.
    let mut paged = Vec::new();
    for page in 1..=4 {
        paged.extend(
            api.ids(&format!("sort=visits%3C&per_page=3&page={page}"))
                .await
                .1,
        );
    }
    assert_eq!(paged, api.ids("sort=visits%3C").await.1);
}

/// Without an id field `_id` is the row number, and records read in file order (2 before 10).
async fn natural_order(store: TestStore) {
    let mut csv = String::from("name,n\n");
    for i in 1..=12 {
        csv.push_str(&format!("row {i},{}\n", i % 3));
    }
    let path = write_file(&store, "rows.csv", csv.as_bytes());
    import_file(&store, &path, "rows", None, None)
        .await
        .unwrap();
    let token = api_token(&store).await;
    let router = store.router();
    let body = get_with(&router, "/api/v1/datasets/rows/records", Some(&token), &[])
        .await
        .body;
    let expected: Vec<String> = (1..=12).map(|i| i.to_string()).collect();
    assert_eq!(ids(&body), expected);
    // Ties follow file order too.
    let body = get_with(
        &router,
        "/api/v1/datasets/rows/records?sort=n%3E",
        Some(&token),
        &[],
    )
    .await
    .body;
    assert_eq!(
        ids(&body),
        list(&[
            "3", "6", "9", "12", "1", "4", "7", "10", "2", "5", "8", "11"
        ])
    );
}

// ---- §5 records: sort --------------------------------------------------------------------------

async fn sorting(store: TestStore) {
    let api = Api::new(store).await;
    let descending = list(&["p2", "p6", "p1", "p3", "p10", "p9", "p5", "p7", "p4", "p8"]);
    let ascending = list(&["p7", "p5", "p9", "p1", "p3", "p10", "p2", "p6", "p4", "p8"]);
    // Records without the value come last in both directions; ties in file order.
    assert_eq!(api.ids("sort=rating%3C").await.1, descending);
    assert_eq!(api.ids("sort=rating%3E").await.1, ascending);
    assert_eq!(api.ids("sort=rating").await.1, ascending);
    // Across the boundary between records with and without the value.
    assert_eq!(
        api.ids("sort=rating%3C&per_page=3&page=3").await.1,
        list(&["p5", "p7", "p4"])
    );
    assert_eq!(
        api.ids("sort=rating%3C&per_page=3&page=4").await.1,
        list(&["p8"])
    );
    assert_eq!(
        api.ids("sort=rating%3C&per_page=4&page=3").await.1,
        list(&["p4", "p8"])
    );
    assert_eq!(
        api.ids("sort=city%3E,visits%3C").await.1,
        list(&["p5", "p3", "p10", "p6", "p1", "p4", "p7", "p9", "p2", "p8"])
    );
    assert_eq!(
        api.ids("sort=geo.lat%3C").await.1,
        list(&["p10", "p3", "p4", "p7", "p1", "p9", "p8", "p2", "p6", "p5"])
    );
    assert_eq!(
        api.ids("sort=since%3C&per_page=2").await.1,
        list(&["p7", "p10"])
    );
    assert_eq!(
        api.ids("sort=_id%3C&per_page=3").await.1,
        list(&["p9", "p8", "p7"])
    );
    assert_eq!(
        api.ids("city=Denver&sort=visits%3E").await.1,
        list(&["p7", "p4", "p1"])
    );
    api.fails(
        "/api/v1/datasets/places/records?sort=name%3C",
        400,
        "invalid_parameter",
    )
    .await;
    api.fails(
        "/api/v1/datasets/places/records?sort=nope",
        400,
        "unknown_field",
    )
    .await;
    // `rating<>` names a field `rating<` (a trailing mark is the direction only when
    // the rest names a field), which this dataset does not have.
    api.fails(
        "/api/v1/datasets/places/records?sort=rating%3C%3E",
        400,
        "unknown_field",
    )
    .await;
    for bad in ["%3C", "%3E", "rating,,city", "rating,rating%3C"] {
        api.fails(
            &format!("/api/v1/datasets/places/records?sort={bad}"),
            400,
            "invalid_parameter",
        )
        .await;
    }
}

// ---- §5 records: fields, single records --------------------------------------------------------

async fn projection_and_single_records(store: TestStore) {
    let api = Api::new(store).await;
    let body = api
        .ok("/api/v1/datasets/places/records?fields=geo.hash,name&_ids=p1")
        .await;
    assert_eq!(
        serde_json::to_string(&body["records"][0]).unwrap(),
        r#"{"_id":"p1","name":"Denver Central Library","geo":{"hash":"9xj6"}}"#
    );
    let body = api
        .ok("/api/v1/datasets/places/records?fields=geo&_ids=p1")
        .await;
    assert_eq!(
        body["records"][0],
        json!({"_id": "p1", "geo": {"hash": "9xj6", "lat": 39.7}})
    );
    let body = api
        .ok("/api/v1/datasets/places/records?fields=_id&per_page=2")
        .await;
    assert_eq!(body["records"], json!([{"_id": "p1"}, {"_id": "p2"}]));
    api.fails(
        "/api/v1/datasets/places/records?fields=nope",
        400,
        "unknown_field",
    )
    .await;
    api.fails(
        "/api/v1/datasets/places/records?fields=",
        400,
        "invalid_parameter",
    )
    .await;

    // The whole record, in the file's key order (also on PostgreSQL, whose JSONB reorders).
    let one = api.ok("/api/v1/datasets/places/records/p2").await;
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        r#"{"_id":"p2","code":"p2","name":"日月潭 遊客中心","city":"Nantou","kind":"park","rating":5,"visits":300,"open":true,"since":"2010-01-01","note":"湖景 很美","geo":{"hash":"wsq4","lat":23.8}}"#
    );
    let listed = api.ok("/api/v1/datasets/places/records?_ids=p2").await;
    assert_eq!(listed["records"][0], one);
    // Records asked for at once (PostgreSQL joins their reads) each come back whole and right,
    // the same record asked twice at once included.
    let mut asked = tokio::task::JoinSet::new();
    for id in ["p1", "p2", "p3", "p4", "p5", "p9", "p10", "p2", "p1", "p3"].repeat(4) {
        let (router, token) = (api.router.clone(), api.token.clone());
        asked.spawn(async move {
            let path = format!("/api/v1/datasets/places/records/{id}");
            (id, get_with(&router, &path, Some(&token), &[]).await)
        });
    }
    while let Some(done) = asked.join_next().await {
        let (id, answer) = done.unwrap();
        assert_eq!(answer.status, 200, "{id}: {}", answer.body);
        assert_eq!(
            (answer.body["_id"].as_str(), answer.body["code"].as_str()),
            (Some(id), Some(id))
        );
        if id == "p2" {
            assert_eq!(answer.body, one);
        }
    }
    assert_eq!(
        api.ok("/api/v1/datasets/places/records/p2?fields=city")
            .await,
        json!({"_id": "p2", "city": "Nantou"})
    );
    let body = api
        .fails(
            "/api/v1/datasets/places/records/zzz",
            404,
            "record_not_found",
        )
        .await;
    assert!(body["message"].as_str().unwrap().contains("zzz"));
    api.fails(
        "/api/v1/datasets/places/records/p2?fields=nope",
        400,
        "unknown_field",
    )
    .await;
    // As for the list: `fields` names at least one field.
    for empty in ["", ",", "%20,%20"] {
        api.fails(
            &format!("/api/v1/datasets/places/records/p2?fields={empty}"),
            400,
            "invalid_parameter",
        )
        .await;
    }
    api.fails(
        "/api/v1/datasets/places/records/p2?city=x",
        400,
        "invalid_parameter",
    )
    .await;
}

// ---- §6 agg ------------------------------------------------------------------------------------

async fn aggregation_rules(store: TestStore) {
    let api = Api::new(store).await;
    let agg = |q: &str| format!("/api/v1/datasets/places/agg?{q}");
    let body = api.fails(&agg(""), 400, "missing_parameter").await;
    assert_eq!(body["parameter"], "group_by");
    api.fails(&agg("field=rating"), 400, "missing_parameter")
        .await;
    let body = api
        .fails(&agg("group_by=name"), 400, "invalid_group_by")
        .await;
    assert_eq!(body["type"], "text");
    assert!(body["message"].as_str().unwrap().contains("text"), "{body}");
    let body = api
        .fails(&agg("group_by=rating"), 400, "invalid_group_by")
        .await;
    assert!(body["message"].as_str().unwrap().contains("number"));
    api.fails(&agg("group_by=open"), 400, "invalid_group_by")
        .await;
    api.fails(&agg("group_by=nope"), 400, "unknown_field").await;
    let body = api
        .fails(&agg("group_by=kind&field=city"), 400, "invalid_field")
        .await;
    assert_eq!(body["type"], "keyword");
    api.fails(&agg("group_by=kind&field=nope"), 400, "unknown_field")
        .await;
    api.fails(&agg("group_by=kind&page=2"), 400, "invalid_parameter")
        .await;
    api.fails(&agg("group_by=kind&note=x"), 400, "text_field_exact_match")
        .await;

    // Ordered by count descending, then key ascending.
    let body = api.ok(&agg("group_by=kind")).await;
    assert_eq!(
        body,
        json!({"total_records": 10, "total_groups": 5, "ungrouped_records": 0, "groups": [
            {"key": "park", "keys": {"kind": "park"}, "stats": {"count": 4}},
            {"key": "museum", "keys": {"kind": "museum"}, "stats": {"count": 3}},
            {"key": "library", "keys": {"kind": "library"}, "stats": {"count": 1}},
            {"key": "market", "keys": {"kind": "market"}, "stats": {"count": 1}},
            {"key": "station", "keys": {"kind": "station"}, "stats": {"count": 1}},
        ]})
    );
    // Records without the group_by value count in total_records, in no group.
    let body = api.ok(&agg("group_by=geo.hash")).await;
    assert_eq!(body["total_records"], 10);
    assert_eq!(body["total_groups"], 6);
    assert_eq!(body["ungrouped_records"], 1);
    let groups: Vec<(String, u64)> = body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap().into(),
                g["stats"]["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        vec![
            ("9xj6".into(), 3),
            ("9xj5".into(), 2),
            ("9vk1".into(), 1),
            ("wsm7".into(), 1),
            ("wsq4".into(), 1),
            ("wsqq".into(), 1)
        ]
    );
    // Statistics; percentiles by linear interpolation; a group without values: sum 0, nulls.
    let body = api.ok(&agg("group_by=kind&field=rating")).await;
    assert_eq!(
        body["groups"][0],
        json!({"key": "park", "keys": {"kind": "park"}, "stats": {"count": 4, "sum": 16,
            "avg": 4, "min": 2, "max": 5, "missing": 0,
            "percentiles": {"25": 3.875, "50": 4.5, "75": 4.625}}})
    );
    assert_eq!(
        body["groups"][3],
        json!({"key": "market", "keys": {"kind": "market"}, "stats": {"count": 1, "sum": 0,
            "avg": null, "min": null, "max": null, "missing": 1,
            "percentiles": {"25": null, "50": null, "75": null}}})
    );
    // Museums: p4 has no rating, so count 3 but statistics over 2 values.
    assert_eq!(body["groups"][1]["stats"]["count"], 3);
    assert_eq!(body["groups"][1]["stats"]["avg"], 3.5);
    assert_eq!(body["groups"][1]["stats"]["missing"], 1);
    // A sum of integers is an integer.
    let body = api.ok(&agg("group_by=city&field=visits")).await;
    let denver = body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "Denver")
        .unwrap();
    assert!(denver["stats"]["sum"].is_u64(), "{denver}");
    assert_eq!(denver["stats"]["sum"], 142);
    // Every filter of §5 applies.
    let body = api.ok(&agg("group_by=kind&city=Denver")).await;
    assert_eq!(body["total_records"], 3);
    assert_eq!(body["total_groups"], 3);
    let body = api.ok(&agg("group_by=city&q=denver")).await;
    assert_eq!(
        body["groups"],
        json!([
            {"key": "Boston", "keys": {"city": "Boston"}, "stats": {"count": 1}},
            {"key": "Boulder", "keys": {"city": "Boulder"}, "stats": {"count": 1}},
            {"key": "Denver", "keys": {"city": "Denver"}, "stats": {"count": 1}},
        ])
    );
    let body = api
        .ok(&agg("group_by=city&_ids=p1,p2&q[name]=denver"))
        .await;
    assert_eq!(body["total_records"], 1);
    let body = api.ok(&agg("group_by=city&q=zzzz&field=visits")).await;
    assert_eq!(
        body,
        json!({"total_records": 0, "total_groups": 0, "ungrouped_records": 0, "groups": []})
    );
}

// ---- §7 authentication and errors --------------------------------------------------------------

async fn authentication(store: TestStore) {
    use entity::api_token;
    use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};

    let api = Api::new(store).await;
    let path = "/api/v1/datasets/places/records";
    for (header, code) in [
        (None, "missing_token"),
        (Some("Basic dXNlcjpwdw=="), "missing_token"),
        (Some("Bearer"), "invalid_token"),
        (Some("Bearer odqs_nonsense"), "invalid_token"),
    ] {
        let headers: Vec<(&str, &str)> = header.map(|h| ("authorization", h)).into_iter().collect();
        let answer = get_with(&api.router, path, None, &headers).await;
        assert_eq!(
            (answer.status, answer.body["error"].as_str()),
            (401, Some(code))
        );
        let challenge = answer.headers["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
    }
    // Every endpoint needs the token.
    for path in [
        "/api/v1/datasets",
        "/api/v1/datasets/places",
        "/api/v1/datasets/places/records/p1",
        "/api/v1/datasets/places/agg?group_by=kind",
    ] {
        assert_eq!(
            get_with(&api.router, path, None, &[]).await.status,
            401,
            "{path}"
        );
    }

    // Revoked and expired tokens are refused.
    let user = odqs::auth::token::find_or_create_user(&api.store.store, "other@example.org")
        .await
        .unwrap();
    let (revoked, model) = odqs::auth::token::mint(
        &api.store.store,
        user.id,
        "r",
        "account",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        get_with(&api.router, path, Some(revoked.expose()), &[])
            .await
            .status,
        200
    );
    api_token::ActiveModel {
        id: Set(model.id),
        revoked_at: Set(Some(time::OffsetDateTime::now_utc())),
        ..Default::default()
    }
    .update(&api.store.store.db)
    .await
    .unwrap();
    // Revoked behind the instance's back (another instance, or the store itself): the cached
    // confirmation lapses within FRESH_FOR, and the token is refused from then on.
    let revoked_at = std::time::Instant::now();
    loop {
        let answer = get_with(&api.router, path, Some(revoked.expose()), &[]).await;
        if answer.status == 401 {
            assert_eq!(answer.body["error"], "invalid_token");
            break;
        }
        assert!(
            revoked_at.elapsed() < odqs::auth::token::FRESH_FOR * 2,
            "a revoked token still works after {:?}",
            revoked_at.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (expired, _) = odqs::auth::token::mint(
        &api.store.store,
        user.id,
        "e",
        "device",
        &Default::default(),
        Some(time::OffsetDateTime::now_utc() - time::Duration::seconds(1)),
    )
    .await
    .unwrap();
    let answer = get_with(&api.router, path, Some(expired.expose()), &[]).await;
    assert_eq!(answer.body["error"], "invalid_token");
    let (live, live_model) = odqs::auth::token::mint(
        &api.store.store,
        user.id,
        "d",
        "device",
        &Default::default(),
        Some(time::OffsetDateTime::now_utc() + time::Duration::hours(24)),
    )
    .await
    .unwrap();
    assert_eq!(
        get_with(&api.router, path, Some(live.expose()), &[])
            .await
            .status,
        200
    );

    // "Last used" is recorded (off the request path, so wait for it with a deadline).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let row = api_token::Entity::find()
            .filter(api_token::Column::Id.eq(live_model.id))
            .one(&api.store.store.db)
            .await
            .unwrap()
            .unwrap();
        if row.last_used_at.is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "last_used_at never written"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Each token has a budget of requests a minute; beyond it, 429 with `Retry-After`.
async fn rate_limits(store: TestStore) {
    let api = Api::new(store).await;
    let router = odqs::app::router(
        odqs::state::AppState::new(api.store.store.clone(), "http://odqs.test")
            .with_api_rate_limit(3),
    );
    let path = "/api/v1/datasets/places/records?per_page=1";
    for _ in 0..3 {
        assert_eq!(
            get_with(&router, path, Some(&api.token), &[]).await.status,
            200
        );
    }
    let limited = get_with(&router, path, Some(&api.token), &[]).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.body["error"], "rate_limited");
    assert_eq!(limited.headers["retry-after"], "20");
    assert_eq!(limited.body["retry_after"], 20);
    // Another token has its own budget.
    let user = odqs::auth::token::find_or_create_user(&api.store.store, "b@example.org")
        .await
        .unwrap();
    let (other, _) = odqs::auth::token::mint(
        &api.store.store,
        user.id,
        "b",
        "cli",
        &Default::default(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        get_with(&router, path, Some(other.expose()), &[])
            .await
            .status,
        200
    );
}

async fn errors_are_json(store: TestStore) {
    use tower::ServiceExt;
    let api = Api::new(store).await;
    for (method, path) in [
        ("POST", "/api/v1/datasets"),
        ("PUT", "/api/v1/datasets/places/records"),
        ("PATCH", "/api/v1/datasets/places/records/p1"),
        ("POST", "/api/v1/datasets/places/agg"),
    ] {
        let response = api
            .router
            .clone()
            .oneshot(
                axum::http::Request::builder()
                    .method(method)
                    .uri(path)
                    .header("authorization", format!("Bearer {}", api.token))
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method} {path}");
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"], "method_not_allowed");
    }
    api.fails("/api/v1/nothing", 404, "not_found").await;
    api.fails("/api/v1/datasets/places/records/p1/more", 404, "not_found")
        .await;
    // Nothing internal in any error body.
    for path in [
        "/api/v1/datasets/places/records?sort=rating%3C%3C",
        "/api/v1/datasets/places/records?rating=1e999",
        "/api/v1/datasets/places/records?q=%27%22;DROP%20TABLE",
        "/api/v1/datasets/places/records?city=%27%20OR%201=1--",
        "/api/v1/datasets/places/records?%22c1%22=1",
    ] {
        let answer = api.get(path).await;
        let text = answer.body.to_string().to_lowercase();
        for leak in ["select", "records_v", "sqlx", "panicked", "/work", ".rs:"] {
            assert!(!text.contains(leak), "{path} leaked {leak}: {text}");
        }
    }
    assert_eq!(api.ids("city=%27%20OR%201=1--").await.0, 0);
}

// ---- §11 operations ----------------------------------------------------------------------------

async fn caching_headers_and_cors(store: TestStore) {
    let api = Api::new(store).await;
    let path = "/api/v1/datasets/places/records?city=Denver";
    let first = api.get(path).await;
    assert_eq!(first.headers["cache-control"], "private");
    assert!(
        first
            .headers
            .get_all("vary")
            .iter()
            .any(|v| v.to_str().unwrap().contains("Authorization"))
    );
    let etag = first.headers["etag"].to_str().unwrap().to_string();
    let again = get_with(
        &api.router,
        path,
        Some(&api.token),
        &[("if-none-match", &etag)],
    )
    .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.body, Value::Null);
    assert_eq!(again.headers["etag"], etag.as_str());
    // Another request, another tag; a stale tag gets the full answer.
    let other = api.get("/api/v1/datasets/places/records?city=Boston").await;
    assert_ne!(other.headers["etag"], etag.as_str());
    let stale = get_with(
        &api.router,
        path,
        Some(&api.token),
        &[("if-none-match", "\"stale\"")],
    )
    .await;
    assert_eq!(stale.status, 200);
    // Equivalent requests share a tag (normalized: order of values, encoding).
    let a = api
        .get("/api/v1/datasets/places/records?city=Denver&city=Boston")
        .await;
    let b = api
        .get("/api/v1/datasets/places/records?city=Boston&city=Denver")
        .await;
    assert_eq!(a.headers["etag"], b.headers["etag"]);
    for path in [
        "/api/v1/datasets/places/records/p1",
        "/api/v1/datasets/places/agg?group_by=kind",
    ] {
        let answer = api.get(path).await;
        let tag = answer.headers["etag"].to_str().unwrap().to_string();
        let again = get_with(
            &api.router,
            path,
            Some(&api.token),
            &[("if-none-match", &tag)],
        )
        .await;
        assert_eq!(again.status, 304, "{path}");
    }
    // Errors carry the API headers too.
    let error = api.get("/api/v1/datasets/nope").await;
    assert_eq!(error.headers["cache-control"], "private");

    // CORS for bearer-token clients, without cookies.
    use tower::ServiceExt;
    let preflight = api
        .router
        .clone()
        .oneshot(
            axum::http::Request::builder()
                .method("OPTIONS")
                .uri(path)
                .header("origin", "https://app.example")
                .header("access-control-request-method", "GET")
                .header("access-control-request-headers", "authorization")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(preflight.status().is_success());
    let headers = preflight.headers();
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert!(
        headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .to_lowercase()
            .contains("authorization")
    );
    assert!(headers.get("access-control-allow-credentials").is_none());
    let simple = get_with(
        &api.router,
        path,
        Some(&api.token),
        &[("origin", "https://app.example")],
    )
    .await;
    assert_eq!(simple.headers["access-control-allow-origin"], "*");
}

async fn openapi_and_docs(store: TestStore) {
    let api = Api::new(store).await;
    let doc = get_with(&api.router, "/api/v1/openapi.json", None, &[]).await;
    assert_eq!(doc.status, 200);
    assert!(doc.body["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(doc.body["servers"][0]["url"], "http://odqs.test/api/v1");
    for path in [
        "/datasets",
        "/datasets/{slug}",
        "/datasets/{slug}/records",
        "/datasets/{slug}/records/{id}",
        "/datasets/{slug}/agg",
    ] {
        assert!(doc.body["paths"][path]["get"].is_object(), "{path} missing");
    }
    assert!(doc.body["components"]["securitySchemes"]["bearer"].is_object());
    assert!(doc.body["components"]["schemas"]["RecordPage"].is_object());

    use tower::ServiceExt;
    let response = api
        .router
        .clone()
        .oneshot(
            axum::http::Request::get("/docs")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let html = String::from_utf8(html.to_vec()).unwrap();
    // Redoc draws the document in the browser (`docs_page.rs`); the page names it.
    let html = crate::helpers::client::unescape(&html);
    assert!(html.contains("/api/v1/openapi.json"), "{html}");
}

/// Totals are kept per version: a re-import answers with the new data's counts at once.
async fn totals_follow_reimports(store: TestStore) {
    let api = Api::new(store).await;
    assert_eq!(api.ids("city=Denver").await.0, 3);
    assert_eq!(api.ids("q=denver").await.0, 3);
    let fewer: String = PLACES
        .lines()
        .filter(|l| !l.contains("\"p1\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = write_file(&api.store, "fewer.ndjson", fewer.as_bytes());
    import_file(&api.store, &path, "places", Some(PLACES_SCHEMA), None)
        .await
        .unwrap();
    assert_eq!(api.ids("city=Denver").await.0, 2);
    assert_eq!(api.ids("q=denver").await.0, 2);
    let agg = api.ok("/api/v1/datasets/places/agg?group_by=city").await;
    assert_eq!(agg["total_records"], 9);
}

// ---- the demo data: Chinese search, dotted group_by, percentiles --------------------------------

fn read_gz(path: &str) -> String {
    let file =
        std::fs::File::open(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

fn close(a: &Value, b: f64) -> bool {
    let a = a.as_f64().unwrap();
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// `GET /datasets?q=`: every word somewhere in the title, the description, a field's name or a
/// field's description, best match first; the same through GraphQL.
async fn catalog_search(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    let cases: &[(&str, &[&str])] = &[
        ("", &["flights", "tw-scenic-spots"]),
        ("%20%20", &["flights", "tw-scenic-spots"]),
        // The title, any case; a word inside a word.
        ("FLIGHTS", &["flights"]),
        ("taiw", &["tw-scenic-spots"]),
        // Chinese without spaces: a substring of the title.
        ("%E8%A7%80%E5%85%89", &["tw-scenic-spots"]),
        // A field's name, a field's description.
        ("dep_delay", &["flights"]),
        ("two-letter", &["flights"]),
        // Every word, anywhere: both here (best match first), then in no one dataset.
        ("demo%20slice", &["tw-scenic-spots", "flights"]),
        ("taiwan%20carrier", &[]),
        ("nothing-like-this", &[]),
    ];
    for (q, want) in cases {
        let path = format!("/api/v1/datasets?q={q}");
        let answer = get_with(&router, &path, Some(&token), &[]).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        let slugs: Vec<&str> = answer.body["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["slug"].as_str().unwrap())
            .collect();
        assert_eq!(slugs, *want, "{path}");
        assert_eq!(answer.body["total"], want.len(), "{path}");
    }
    // Paging applies to the datasets found, in their order.
    let answer = get_with(
        &router,
        "/api/v1/datasets?q=demo%20slice&per_page=1&page=2",
        Some(&token),
        &[],
    )
    .await;
    assert_eq!(answer.body["total"], 2, "{}", answer.body);
    assert_eq!(answer.body["datasets"][0]["slug"], "flights");
    // Refusals: too long, given twice.
    let long = format!("/api/v1/datasets?q={}", "a".repeat(501));
    for path in [long.as_str(), "/api/v1/datasets?q=a&q=b"] {
        let answer = get_with(&router, path, Some(&token), &[]).await;
        assert_eq!(answer.status, 400, "{path}");
        assert_eq!(answer.body["error"], "invalid_parameter", "{path}");
        assert_eq!(answer.body["parameter"], "q", "{path}");
    }
    // GraphQL answers alike.
    let answer = crate::helpers::post_graphql(
        &router,
        Some(&token),
        "query($q: String) { datasets(q: $q) { total datasets { slug } } }",
        json!({"q": "taiwan"}),
    )
    .await;
    assert_eq!(
        answer.body["data"]["datasets"],
        json!({"total": 1, "datasets": [{"slug": "tw-scenic-spots"}]}),
        "{}",
        answer.body
    );
}

async fn demo_data(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    let get = |path: String| {
        let router = router.clone();
        let token = token.clone();
        async move {
            let answer = get_with(&router, &path, Some(&token), &[]).await;
            assert_eq!(answer.status, 200, "{path}: {}", answer.body);
            answer.body
        }
    };

    // Chinese q without spaces, against a count made here from the bundled file.
    let spots: Vec<Value> = read_gz("demo/tw-scenic-spots.ndjson.gz")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text_fields = [
        "Name",
        "DescriptionDetail",
        "Description",
        "Address",
        "TravelInfo",
        "OpenTime",
        "Keyword",
        "TicketInfo",
        "ParkingInfo",
        "Remarks",
    ];
    let text_of = |spot: &Value| -> String {
        let mut all: Vec<String> = text_fields
            .iter()
            .filter_map(|f| spot[*f].as_str().map(str::to_lowercase))
            .collect();
        if let Some(p) = spot["Picture"]["PictureDescription1"].as_str() {
            all.push(p.to_lowercase());
        }
        all.join("\u{0}")
    };
    for term in ["日月潭", "步道", "溫泉", "老街"] {
        let expected = spots.iter().filter(|s| text_of(s).contains(term)).count();
        assert!(expected > 0, "{term} should occur in the demo");
        let body = get(format!(
            "/api/v1/datasets/tw-scenic-spots/records?q={term}&fields=Name"
        ))
        .await;
        assert_eq!(body["total"], expected as u64, "q={term}");
    }
    let both = spots
        .iter()
        .filter(|s| {
            let t = text_of(s);
            t.contains("步道") && t.contains("公園")
        })
        .count();
    let body = get("/api/v1/datasets/tw-scenic-spots/records?q=步道+公園".into()).await;
    assert_eq!(body["total"], both as u64);

    // Dotted group_by: Position.GeoHash.
    let mut hashes = std::collections::HashMap::<String, u64>::new();
    for s in &spots {
        if let Some(h) = s["Position"]["GeoHash"].as_str().filter(|h| !h.is_empty()) {
            *hashes.entry(h.to_string()).or_default() += 1;
        }
    }
    let body = get("/api/v1/datasets/tw-scenic-spots/agg?group_by=Position.GeoHash".into()).await;
    assert_eq!(body["total_records"], spots.len() as u64);
    assert_eq!(body["total_groups"], hashes.len() as u64);
    for group in body["groups"].as_array().unwrap() {
        assert_eq!(
            group["stats"]["count"],
            hashes[group["key"].as_str().unwrap()]
        );
    }
    let body =
        get("/api/v1/datasets/tw-scenic-spots/agg?group_by=City&field=Position.PositionLat".into())
            .await;
    assert!(body["total_groups"].as_u64().unwrap() > 5);

    // Percentiles of dep_delay by carrier, computed here from the CSV.
    let csv = read_gz("demo/flights.csv.gz");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (carrier, delay) = (col("carrier"), col("dep_delay"));
    let mut by_carrier = std::collections::HashMap::<String, (u64, Vec<f64>)>::new();
    for row in reader.records() {
        let row = row.unwrap();
        let entry = by_carrier.entry(row[carrier].to_string()).or_default();
        entry.0 += 1;
        if let Ok(v) = row[delay].parse::<f64>() {
            entry.1.push(v);
        }
    }
    let body = get("/api/v1/datasets/flights/agg?group_by=carrier&field=dep_delay".into()).await;
    assert_eq!(body["total_groups"], by_carrier.len() as u64);
    let mut previous: Option<(u64, String)> = None;
    for group in body["groups"].as_array().unwrap() {
        let key = group["key"].as_str().unwrap().to_string();
        let stats = &group["stats"];
        let (count, values) = by_carrier.get_mut(&key).unwrap();
        values.sort_by(f64::total_cmp);
        assert_eq!(stats["count"], *count, "{key}");
        let sum: f64 = values.iter().sum();
        assert!(close(&stats["sum"], sum), "{key} sum");
        assert!(close(&stats["avg"], sum / values.len() as f64), "{key} avg");
        assert!(close(&stats["min"], values[0]));
        assert!(close(&stats["max"], *values.last().unwrap()));
        for p in [25.0, 50.0, 75.0] {
            let label = format!("{}", p as u32);
            assert!(
                close(&stats["percentiles"][&label], percentile(values, p)),
                "{key} p{label}: {} vs {}",
                stats["percentiles"][&label],
                percentile(values, p)
            );
        }
        let this = (stats["count"].as_u64().unwrap(), key);
        if let Some(prev) = &previous {
            assert!(
                prev.0 > this.0 || (prev.0 == this.0 && prev.1 < this.1),
                "order"
            );
        }
        previous = Some(this);
    }
}

/// Fields whose names hold `<` or `>` can be sorted on. A trailing `<`/`>` is the
/// direction when the rest names a field; otherwise the whole key is the field, ascending.
async fn sorting_fields_named_with_marks(store: TestStore) {
    let token = api_token(&store).await;
    let csv = write_file(
        &store,
        "marks.csv",
        b"id,a,a<,<b>\nr1,1,30,x\nr2,2,10,z\nr3,3,20,y\n",
    );
    import_file(&store, &csv, "marks", None, Some("id"))
        .await
        .unwrap();
    let router = store.router();
    let ids = |sort: &'static str| {
        let router = router.clone();
        let token = token.clone();
        async move {
            let encoded: String = form_urlencoded::byte_serialize(sort.as_bytes()).collect();
            let path = format!("/api/v1/datasets/marks/records?sort={encoded}");
            let answer = get_with(&router, &path, Some(&token), &[]).await;
            assert_eq!(answer.status, 200, "{sort}: {}", answer.body);
            answer.body["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["_id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    // `a<`: the field `a`, descending (the rest names a field).
    assert_eq!(ids("a<").await, ["r3", "r2", "r1"]);
    // `a<>` and `a<<`: the field `a<`, ascending and descending.
    assert_eq!(ids("a<>").await, ["r2", "r3", "r1"]);
    assert_eq!(ids("a<<").await, ["r1", "r3", "r2"]);
    // `<b>`: no field `<b`, so the whole key; `<b><` descending.
    assert_eq!(ids("<b>").await, ["r1", "r3", "r2"]);
    assert_eq!(ids("<b><").await, ["r2", "r3", "r1"]);
    assert_eq!(ids("<b>>,a").await, ["r1", "r3", "r2"]);
    // Unknown either way; one field twice, however written.
    let path = "/api/v1/datasets/marks/records?sort=c%3C";
    let answer = get_with(&router, path, Some(&token), &[]).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body["error"], "unknown_field", "{}", answer.body);
    let path = "/api/v1/datasets/marks/records?sort=%3Cb%3E,%3Cb%3E%3E";
    let answer = get_with(&router, path, Some(&token), &[]).await;
    assert_eq!(answer.body["error"], "invalid_parameter", "{}", answer.body);
}

/// `in` and `=` read a value alike: `carrier[in]=%20UA` no longer matches `UA`.
async fn in_and_equals_read_values_alike(store: TestStore) {
    load_demo(&store).await;
    let token = api_token(&store).await;
    let router = store.router();
    let total = |query: &'static str| {
        let router = router.clone();
        let token = token.clone();
        async move {
            let path = format!("/api/v1/datasets/flights/records?per_page=1&{query}");
            let answer = get_with(&router, &path, Some(&token), &[]).await;
            assert_eq!(answer.status, 200, "{query}: {}", answer.body);
            answer.body["total"].as_u64().unwrap()
        }
    };
    let ua = total("carrier=UA").await;
    assert!(ua > 0);
    assert_eq!(total("carrier[in]=UA").await, ua);
    assert_eq!(total("carrier=%20UA").await, 0);
    assert_eq!(total("carrier[in]=%20UA").await, 0);
    assert_eq!(total("carrier[in]=UA%20").await, 0);
    let aa = total("carrier=AA").await;
    assert_eq!(total("carrier[in]=UA,AA").await, ua + aa);
    assert_eq!(total("carrier[in]=UA,%20AA").await, ua);
    // Numbers are numbers either way, spaces or not.
    assert_eq!(
        total("distance[in]=%201400").await,
        total("distance=1400%20").await
    );
}

/// Reads one answer with a `Content-Length` from `stream`: status and JSON body.
async fn read_answer(stream: &mut tokio::net::TcpStream) -> (u16, Value) {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(
            n > 0,
            "closed before an answer: {}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or_else(|| panic!("no content-length: {head}"));
        if buf.len() >= end + 4 + length {
            let body = serde_json::from_slice(&buf[end + 4..end + 4 + length]).unwrap();
            return (head[9..12].parse().unwrap(), body);
        }
    }
}

/// At the edges of the HTTP stack, on a real socket: a URL or a head too large gets
/// a JSON error (not an empty 414/431); after a chunked request, a raw `<` on the same
/// connection is answered; the device flow's endpoints refuse a large body early, in OAuth's
/// JSON shape.
async fn refusals_at_the_edges_are_json(store: TestStore) {
    use odqs::http::request_line::{MAX_HEADERS, MAX_LINE};
    use odqs::http::resilience::MAX_FORM_BODY_BYTES;
    use tokio::io::AsyncWriteExt;
    load_demo(&store).await;
    let token = api_token(&store).await;
    let (site, stop) = crate::helpers::serve(&store).await;
    let addr = site.strip_prefix("http://").unwrap().to_string();

    let long = format!(
        "GET /api/v1/datasets?x={} HTTP/1.1\r\nHost: h\r\n\r\n",
        "u".repeat(MAX_LINE)
    );
    let mut many = String::from("GET /api/v1/datasets HTTP/1.1\r\nHost: h\r\n");
    for i in 0..MAX_HEADERS {
        many.push_str(&format!("X-H{i}: v\r\n"));
    }
    many.push_str("\r\n");
    for (request, status) in [(long, 414), (many, 431)] {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let (got, body) = read_answer(&mut stream).await;
        assert_eq!(got, status, "{body}");
        assert_eq!(body["error"], "invalid_parameter", "{body}");
        assert!(body["message"].as_str().unwrap().len() > 20, "{body}");
    }

    // A chunked GraphQL request, then a raw `<` on the same connection.
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let query = br#"{"query": "{ datasets { total } }"}"#;
    let mut request = format!(
        "POST /api/v1/graphql HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for part in query.chunks(10) {
        request.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        request.extend_from_slice(part);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&request).await.unwrap();
    let (status, body) = read_answer(&mut stream).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["datasets"]["total"], 2, "{body}");
    let raw = format!(
        "GET /api/v1/datasets/flights/records?sort=dep_delay<&per_page=1 HTTP/1.1\r\n\
         Host: h\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(raw.as_bytes()).await.unwrap();
    let (status, body) = read_answer(&mut stream).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"].as_array().unwrap().len(), 1, "{body}");

    // The device flow's endpoints: a body over the limit is 413 in OAuth's shape.
    let client = reqwest::Client::new();
    for path in ["/api/v1/auth/device", "/api/v1/auth/token"] {
        let response = client
            .post(format!("{site}{path}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "client_id=x&pad={}",
                "p".repeat(MAX_FORM_BODY_BYTES)
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 413, "{path}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "payload_too_large", "{body}");
        assert!(
            body["error_description"]
                .as_str()
                .unwrap()
                .contains("16384")
        );
        assert_eq!(body["limit_bytes"], MAX_FORM_BODY_BYTES, "{body}");
        // Within the limit, the request is read (and refused for what it says, not its size).
        let response = client
            .post(format!("{site}{path}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "grant_type=nope&pad={}",
                "p".repeat(MAX_FORM_BODY_BYTES / 2)
            ))
            .send()
            .await
            .unwrap();
        assert_ne!(response.status(), 413, "{path}");
    }
    let _ = stop.send(());
}

both_stores!(
    sorting_fields_named_with_marks,
    in_and_equals_read_values_alike,
    refusals_at_the_edges_are_json,
    dataset_list_and_metadata,
    slugs_with_dots_and_tildes,
    full_text_search,
    exact_match_and_ids,
    paging_bounds,
    natural_order,
    sorting,
    projection_and_single_records,
    aggregation_rules,
    authentication,
    rate_limits,
    errors_are_json,
    caching_headers_and_cors,
    openapi_and_docs,
    totals_follow_reimports,
    demo_data,
    catalog_search,
);

/// `GET /api/v1` (and with a trailing slash) lists the entry points, without a token; each is
/// a URL the service answers.
#[tokio::test]
async fn the_base_url_lists_the_entry_points() {
    let store = TestStore::new(crate::helpers::Kind::Sqlite).await;
    let router = store.router();
    for path in ["/api/v1", "/api/v1/"] {
        let (status, index) = crate::helpers::client::get_json(&router, path).await;
        assert_eq!(status, 200, "{path}: {index}");
        for key in [
            "openapi", "docs", "datasets", "graphql", "mcp", "token", "catalog", "account",
        ] {
            assert!(
                index[key].as_str().is_some_and(|u| u.starts_with("http")),
                "{key}: {index}"
            );
        }
        let openapi = index["openapi"].as_str().unwrap();
        let at = openapi.find("/api/v1/").unwrap();
        let (status, doc) = crate::helpers::client::get_json(&router, &openapi[at..]).await;
        assert_eq!((status, doc["openapi"].as_str()), (200, Some("3.1.0")));
    }
}
