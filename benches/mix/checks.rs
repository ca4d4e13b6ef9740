//! Each query's answer, fetched once and compared with what the CSV says.

use anyhow::{Result, bail, ensure};
use serde_json::Value;

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

async fn get_json(client: &Client, path: &str) -> Result<Value> {
    let response = client.get(path).await?;
    if response.status != 200 {
        bail!("{path} answered {}: {}", response.status, response.snippet());
    }
    response.json()
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

/// Groups of e (count only) or f (every statistic) against the reference.
fn same_groups(
    rows: &[Value],
    expected: &[GroupStats],
    with_stats: bool,
    field: impl Fn(&Value, &str) -> Value,
) -> Result<()> {
    ensure!(
        rows.len() == expected.len(),
        "{} groups, expected {}",
        rows.len(),
        expected.len()
    );
    for (row, want) in rows.iter().zip(expected) {
        let key = field(row, "key");
        ensure!(
            key.as_str() == Some(want.key.as_str()),
            "group {key} where {} was expected",
            want.key
        );
        let count = field(row, "count").as_u64();
        ensure!(
            count == Some(want.count),
            "{}: count {count:?}, expected {}",
            want.key,
            want.count
        );
        if with_stats {
            let k = &want.key;
            same_number(&format!("{k} sum"), &field(row, "sum"), Some(want.sum))?;
            same_number(&format!("{k} avg"), &field(row, "avg"), want.avg)?;
            same_number(&format!("{k} min"), &field(row, "min"), want.min)?;
            same_number(&format!("{k} max"), &field(row, "max"), want.max)?;
            same_number(&format!("{k} p25"), &field(row, "p25"), want.p25)?;
            same_number(&format!("{k} p50"), &field(row, "p50"), want.p50)?;
            same_number(&format!("{k} p75"), &field(row, "p75"), want.p75)?;
        }
    }
    Ok(())
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
    let v = get_json(client, &query.odqs_paths[0]).await?;
    let total = || u64_at(&v, "total");
    let records = || array_at(&v, "records");
    let ub = flights.count_carrier_origin("UA", "EWR") as u64;
    match query.name {
        "a" => {
            ensure!(total()? == flights.len() as u64, "total {}", total()?);
            ensure!(records()?.len() == PAGE, "{} records", records()?.len());
            ensure!(
                records()?[0]["_id"] == Value::from(flights.ids[0].clone()),
                "first record {}",
                records()?[0]["_id"]
            );
            Ok(format!("total {}", total()?))
        }
        "b" | "c" => {
            ensure!(total()? == ub, "total {}, expected {ub}", total()?);
            let rows = records()?;
            ensure!(rows.len() == PAGE, "{} records", rows.len());
            for r in rows {
                ensure!(
                    r["carrier"] == "UA" && r["origin"] == "EWR",
                    "record {} is not UA from EWR",
                    r["_id"]
                );
            }
            if query.name == "c" {
                let max = flights.max_delay_carrier_origin("UA", "EWR");
                same_number("first dep_delay", &rows[0]["dep_delay"], max)?;
                let delays: Vec<f64> = rows.iter().filter_map(|r| r["dep_delay"].as_f64()).collect();
                ensure!(
                    delays.windows(2).all(|w| w[0] >= w[1]),
                    "dep_delay not descending"
                );
                return Ok(format!("total {}, first dep_delay {}", total()?, rows[0]["dep_delay"]));
            }
            Ok(format!("total {}", total()?))
        }
        "d" => {
            let rows = records()?;
            let first = (1000 * PAGE).min(flights.len() - 1);
            ensure!(rows.len() == PAGE, "{} records", rows.len());
            ensure!(
                rows[0]["_id"] == Value::from(flights.ids[first].clone()),
                "first record {}, expected {}",
                rows[0]["_id"],
                flights.ids[first]
            );
            Ok(format!("first record {}", rows[0]["_id"]))
        }
        "e" | "f" => {
            ensure!(
                u64_at(&v, "total_records")? == flights.len() as u64,
                "total_records {}",
                v["total_records"]
            );
            let groups = array_at(&v, "groups")?;
            same_groups(groups, f, query.name == "f", |g, name| match name {
                "key" => g["key"].clone(),
                "count" | "sum" | "avg" | "min" | "max" => g["stats"][name].clone(),
                p => g["stats"]["percentiles"][&p[1..]].clone(),
            })?;
            Ok(format!("{} groups as the reference", groups.len()))
        }
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
    let v = get_json(client, &paths[0]).await?;
    let rows = array_at(&v, "rows")?;
    let count = || u64_at(&v, "filtered_table_rows_count");
    let ub = flights.count_carrier_origin("UA", "EWR") as u64;
    match name {
        "a" => {
            ensure!(count()? == flights.len() as u64, "count {}", count()?);
            ensure!(rows.len() == PAGE, "{} rows", rows.len());
            ensure!(id_text(&rows[0]["id"]) == flights.ids[0], "first row {}", rows[0]["id"]);
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
        "e" | "f" => {
            same_groups(rows, f, name == "f", |row, field| match field {
                "key" => row["carrier"].clone(),
                "count" if name == "e" => row["n"].clone(),
                other => row[other].clone(),
            })?;
            Ok(format!("{} groups as the reference", rows.len()))
        }
        "g1" | "g2" => {
            let want = flights.count_text(term(name)) as u64;
            ensure!(count()? == want, "count {}, expected {want}", count()?);
            Ok(format!("count {want}"))
        }
        "h" => {
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
        other => bail!("unknown query {other}"),
    }
}
