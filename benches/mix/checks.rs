//! Each query's answer, fetched once and compared with what the CSV says.

use anyhow::{Result, bail, ensure};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::load::Client;
use crate::reference::{Flights, GroupStats};
use crate::report::{PAGE, Query};

/// The outcome of one check.
#[derive(Clone, Debug)]
pub struct Check {
    pub ok: bool,
    pub note: String,
}

impl Check {
    pub fn describe(&self) -> String {
        format!("{} {}", if self.ok { "✓" } else { "✗" }, self.note)
    }
}

fn outcome(result: Result<String>) -> Check {
    match result {
        Ok(note) => Check { ok: true, note },
        Err(error) => Check {
            ok: false,
            note: format!("{error:#}"),
        },
    }
}

async fn get_body(client: &Client, path: &str) -> Result<Vec<u8>> {
    let response = client.get(path).await?;
    if response.status != 200 {
        bail!(
            "{path} answered {}: {}",
            response.status,
            response.snippet()
        );
    }
    Ok(response.body)
}

async fn get_json(client: &Client, path: &str) -> Result<Value> {
    Ok(serde_json::from_slice(&get_body(client, path).await?)?)
}

fn u64_at(v: &Value, key: &str) -> Result<u64> {
    v[key]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("no integer {key:?} in the answer"))
}

fn array_at<'a>(v: &'a Value, key: &str) -> Result<&'a Vec<Value>> {
    v[key]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("no array {key:?} in the answer"))
}

/// A JSON identifier, string or number, as text.
fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A statistic: a JSON number or null, compared bit for bit with the reference.
fn same_number(name: &str, got: &Value, want: Option<f64>) -> Result<()> {
    let got = if got.is_null() { None } else { got.as_f64() };
    ensure!(
        got.map(f64::to_bits) == want.map(f64::to_bits),
        "{name}: got {got:?}, expected {want:?}"
    );
    Ok(())
}

/// A number as the server wrote it, parsed with correct rounding (`serde_json` without its
/// `float_roundtrip` feature may land one unit in the last place away), or null.
fn exact_number(raw: &RawValue) -> Result<Option<f64>> {
    let text = raw.get().trim();
    if text == "null" {
        return Ok(None);
    }
    Ok(Some(
        text.parse::<f64>()
            .map_err(|_| anyhow::anyhow!("{text} is not a number"))?,
    ))
}

/// One group as an answer gave it: key, count, and (for f) sum, avg, min, max, p25, p50, p75.
struct GotGroup<'a> {
    key: String,
    count: u64,
    stats: Option<[(&'static str, &'a RawValue); 7]>,
}

/// Groups of e (count only) or f (every statistic) against the reference.
fn same_groups(got: &[GotGroup<'_>], expected: &[GroupStats]) -> Result<()> {
    ensure!(
        got.len() == expected.len(),
        "{} groups, expected {}",
        got.len(),
        expected.len()
    );
    for (group, want) in got.iter().zip(expected) {
        ensure!(
            group.key == want.key,
            "group {} where {} was expected",
            group.key,
            want.key
        );
        ensure!(
            group.count == want.count,
            "{}: count {}, expected {}",
            want.key,
            group.count,
            want.count
        );
        let Some(stats) = &group.stats else { continue };
        let wanted = [
            Some(want.sum),
            want.avg,
            want.min,
            want.max,
            want.p25,
            want.p50,
            want.p75,
        ];
        for ((name, raw), want_value) in stats.iter().zip(wanted) {
            let value = exact_number(raw)?;
            ensure!(
                value.map(f64::to_bits) == want_value.map(f64::to_bits),
                "{} {name}: got {}, expected {want_value:?}",
                want.key,
                raw.get()
            );
        }
    }
    Ok(())
}

/// odqs's agg answer, numbers kept as written.
#[derive(Deserialize)]
struct OdqsAgg<'a> {
    total_records: u64,
    #[serde(borrow)]
    groups: Vec<OdqsGroup<'a>>,
}

#[derive(Deserialize)]
struct OdqsGroup<'a> {
    key: String,
    #[serde(borrow)]
    stats: OdqsStats<'a>,
}

#[derive(Deserialize)]
struct OdqsStats<'a> {
    count: u64,
    #[serde(borrow)]
    sum: Option<&'a RawValue>,
    #[serde(borrow)]
    avg: Option<&'a RawValue>,
    #[serde(borrow)]
    min: Option<&'a RawValue>,
    #[serde(borrow)]
    max: Option<&'a RawValue>,
    #[serde(borrow)]
    percentiles: Option<OdqsPercentiles<'a>>,
}

#[derive(Deserialize)]
struct OdqsPercentiles<'a> {
    #[serde(borrow, rename = "25")]
    p25: &'a RawValue,
    #[serde(borrow, rename = "50")]
    p50: &'a RawValue,
    #[serde(borrow, rename = "75")]
    p75: &'a RawValue,
}

/// Datasette's answer to e or f (`_shape=objects`), numbers kept as written.
#[derive(Deserialize)]
struct DatasetteRows<'a> {
    #[serde(borrow)]
    rows: Vec<DatasetteGroup<'a>>,
}

#[derive(Deserialize)]
struct DatasetteGroup<'a> {
    carrier: String,
    n: Option<u64>,
    count: Option<u64>,
    #[serde(borrow)]
    sum: Option<&'a RawValue>,
    #[serde(borrow)]
    avg: Option<&'a RawValue>,
    #[serde(borrow)]
    min: Option<&'a RawValue>,
    #[serde(borrow)]
    max: Option<&'a RawValue>,
    #[serde(borrow)]
    p25: Option<&'a RawValue>,
    #[serde(borrow)]
    p50: Option<&'a RawValue>,
    #[serde(borrow)]
    p75: Option<&'a RawValue>,
}

/// Seven statistics, all present, or none.
#[allow(clippy::type_complexity)]
fn seven<'a>(
    values: [(&'static str, Option<&'a RawValue>); 7],
) -> Result<Option<[(&'static str, &'a RawValue); 7]>> {
    if values.iter().all(|(_, v)| v.is_none()) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(7);
    for (name, value) in values {
        let value = value.ok_or_else(|| anyhow::anyhow!("no {name} in a group"))?;
        out.push((name, value));
    }
    Ok(Some(out.try_into().map_err(|_| anyhow::anyhow!("seven"))?))
}

/// The term of g1 / g2.
pub fn term(name: &str) -> &'static str {
    if name == "g1" { "denver" } else { "boeing" }
}

/// Checks odqs's answer to one query.
pub async fn odqs(client: &Client, query: &Query, flights: &Flights, f: &[GroupStats]) -> Check {
    outcome(check_odqs(client, query, flights, f).await)
}

async fn check_odqs(
    client: &Client,
    query: &Query,
    flights: &Flights,
    f: &[GroupStats],
) -> Result<String> {
    let body = get_body(client, &query.odqs_paths[0]).await?;
    let v: Value = serde_json::from_slice(&body)?;
    let total = || u64_at(&v, "total");
    let records = || array_at(&v, "records");
    match query.name {
        "a" => {
            ensure!(total()? == flights.len() as u64, "total {}", total()?);
            ensure!(records()?.len() == PAGE, "{} records", records()?.len());
            ensure!(
                records()?[0]["_id"] == flights.ids[0].as_str(),
                "first record {}",
                records()?[0]["_id"]
            );
            Ok(format!("total {}", total()?))
        }
        "b" | "c" => odqs_ua_from_ewr(query.name, &v, flights),
        "d" => {
            let rows = records()?;
            let first = (1000 * PAGE).min(flights.len() - 1);
            ensure!(rows.len() == PAGE, "{} records", rows.len());
            ensure!(
                rows[0]["_id"] == flights.ids[first].as_str(),
                "first record {}, expected {}",
                rows[0]["_id"],
                flights.ids[first]
            );
            Ok(format!("first record {}", rows[0]["_id"]))
        }
        "e" | "f" => odqs_groups(query.name, &body, flights, f),
        "g1" | "g2" => {
            let want = flights.count_text(term(query.name)) as u64;
            ensure!(total()? == want, "total {}, expected {want}", total()?);
            Ok(format!("total {want}"))
        }
        "h" => {
            for path in query.odqs_paths.iter().take(20) {
                let v = get_json(client, path).await?;
                let id = path.rsplit('/').next().unwrap_or_default();
                ensure!(v["_id"] == id, "{path} answered _id {}", v["_id"]);
            }
            Ok("20 ids".into())
        }
        other => bail!("unknown query {other}"),
    }
}

/// Checks Datasette's answer to one query (its first path).
pub async fn datasette(
    client: &Client,
    name: &str,
    paths: &[String],
    flights: &Flights,
    f: &[GroupStats],
) -> Check {
    outcome(check_datasette(client, name, paths, flights, f).await)
}

async fn check_datasette(
    client: &Client,
    name: &str,
    paths: &[String],
    flights: &Flights,
    f: &[GroupStats],
) -> Result<String> {
    let body = get_body(client, &paths[0]).await?;
    let v: Value = serde_json::from_slice(&body)?;
    let rows = array_at(&v, "rows")?;
    let count = || u64_at(&v, "filtered_table_rows_count");
    let ub = flights.count_carrier_origin("UA", "EWR") as u64;
    match name {
        "a" => {
            ensure!(count()? == flights.len() as u64, "count {}", count()?);
            ensure!(rows.len() == PAGE, "{} rows", rows.len());
            ensure!(
                id_text(&rows[0]["id"]) == flights.ids[0],
                "first row {}",
                rows[0]["id"]
            );
            Ok(format!("count {}", count()?))
        }
        "b" | "c" => {
            ensure!(count()? == ub, "count {}, expected {ub}", count()?);
            ensure!(rows.len() == PAGE, "{} rows", rows.len());
            for r in rows {
                ensure!(
                    r["carrier"] == "UA" && r["origin"] == "EWR",
                    "row {} is not UA from EWR",
                    r["id"]
                );
            }
            if name == "c" {
                let max = flights.max_delay_carrier_origin("UA", "EWR");
                same_number("first dep_delay", &rows[0]["dep_delay"], max)?;
            }
            Ok(format!("count {}", count()?))
        }
        "d" => {
            let first = (1000 * PAGE).min(flights.len() - 1);
            ensure!(rows.len() == PAGE, "{} rows", rows.len());
            ensure!(
                id_text(&rows[0]["id"]) == flights.ids[first],
                "first row {}, expected {}",
                rows[0]["id"],
                flights.ids[first]
            );
            Ok(format!("first row {}", rows[0]["id"]))
        }
        "e" | "f" => datasette_groups(&body, f),
        "g1" | "g2" => {
            let want = flights.count_text(term(name)) as u64;
            ensure!(count()? == want, "count {}, expected {want}", count()?);
            Ok(format!("count {want}"))
        }
        "h" => datasette_ids(client, paths).await,
        other => bail!("unknown query {other}"),
    }
}

/// odqs's b and c: a page of UA flights from EWR, c's by departure delay, largest first.
fn odqs_ua_from_ewr(name: &str, v: &Value, flights: &Flights) -> Result<String> {
    let total = || u64_at(v, "total");
    let ub = flights.count_carrier_origin("UA", "EWR") as u64;
    ensure!(total()? == ub, "total {}, expected {ub}", total()?);
    let rows = array_at(v, "records")?;
    ensure!(rows.len() == PAGE, "{} records", rows.len());
    for r in rows {
        ensure!(
            r["carrier"] == "UA" && r["origin"] == "EWR",
            "record {} is not UA from EWR",
            r["_id"]
        );
    }
    if name == "c" {
        let max = flights.max_delay_carrier_origin("UA", "EWR");
        same_number("first dep_delay", &rows[0]["dep_delay"], max)?;
        let delays: Vec<f64> = rows
            .iter()
            .filter_map(|r| r["dep_delay"].as_f64())
            .collect();
        ensure!(
            delays.windows(2).all(|w| w[0] >= w[1]),
            "dep_delay not descending"
        );
        return Ok(format!(
            "total {}, first dep_delay {}",
            total()?,
            rows[0]["dep_delay"]
        ));
    }
    Ok(format!("total {}", total()?))
}

/// odqs's e and f: the groups of every flight, f's with their statistics, as the reference.
fn odqs_groups(name: &str, body: &[u8], flights: &Flights, f: &[GroupStats]) -> Result<String> {
    let agg: OdqsAgg = serde_json::from_slice(body)?;
    ensure!(
        agg.total_records == flights.len() as u64,
        "total_records {}",
        agg.total_records
    );
    let got = agg
        .groups
        .iter()
        .map(|g| {
            let s = &g.stats;
            let p = s.percentiles.as_ref();
            Ok(GotGroup {
                key: g.key.clone(),
                count: s.count,
                stats: seven([
                    ("sum", s.sum),
                    ("avg", s.avg),
                    ("min", s.min),
                    ("max", s.max),
                    ("p25", p.map(|p| p.p25)),
                    ("p50", p.map(|p| p.p50)),
                    ("p75", p.map(|p| p.p75)),
                ])?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    ensure!(
        got.iter().all(|g| g.stats.is_some() == (name == "f")),
        "statistics present or missing where they should not be"
    );
    same_groups(&got, f)?;
    Ok(format!("{} groups as the reference", got.len()))
}

/// Datasette's e and f: its rows of groups as the reference's.
fn datasette_groups(body: &[u8], f: &[GroupStats]) -> Result<String> {
    let answer: DatasetteRows = serde_json::from_slice(body)?;
    let got = answer
        .rows
        .iter()
        .map(|r| {
            Ok(GotGroup {
                key: r.carrier.clone(),
                count: r.n.or(r.count).unwrap_or_default(),
                stats: seven([
                    ("sum", r.sum),
                    ("avg", r.avg),
                    ("min", r.min),
                    ("max", r.max),
                    ("p25", r.p25),
                    ("p50", r.p50),
                    ("p75", r.p75),
                ])?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    same_groups(&got, f)?;
    Ok(format!("{} groups as the reference", got.len()))
}

/// Datasette's h: each of the first 20 paths answers the one row of its id.
async fn datasette_ids(client: &Client, paths: &[String]) -> Result<String> {
    for path in paths.iter().take(20) {
        let v = get_json(client, path).await?;
        let rows = array_at(&v, "rows")?;
        let id = path
            .rsplit('/')
            .next()
            .and_then(|last| last.split('.').next())
            .unwrap_or_default();
        ensure!(
            rows.len() == 1 && id_text(&rows[0]["id"]) == id,
            "{path} answered {rows:?}"
        );
    }
    Ok("20 ids".into())
}
