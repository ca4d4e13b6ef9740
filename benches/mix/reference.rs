//! The in-memory reference: flights.csv.gz in columns, and a straightforward, efficient
//! computation of query e+f (count per carrier, and sum, average, extremes and quartiles of
//! `dep_delay` per carrier) timed in this process. Also the facts the checks compare answers
//! with (counts of b, g1, g2; the rows of c, d, h).

use std::collections::HashMap;
use std::fs::File;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use flate2::read::GzDecoder;

/// The text fields `q` searches.
pub const TEXT_FIELDS: [&str; 4] = ["carrier_name", "origin_name", "dest_name", "plane"];

/// No carrier (an empty cell).
const NONE: u16 = u16::MAX;

/// The columns the benchmark needs.
pub struct Flights {
    pub ids: Vec<String>,
    /// Carrier of each row as an index into `carriers` (`NONE` when empty).
    carrier: Vec<u16>,
    pub carriers: Vec<String>,
    origin: Vec<u16>,
    origins: Vec<String>,
    pub dep_delay: Vec<Option<f64>>,
    /// For each row, its four text values as indexes into `texts` (lower-cased).
    text: Vec<[u32; 4]>,
    texts: Vec<String>,
}

/// One group of e+f.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupStats {
    pub key: String,
    pub count: u64,
    pub sum: f64,
    pub avg: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub p25: Option<f64>,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
}

fn intern(map: &mut HashMap<String, u32>, values: &mut Vec<String>, value: &str) -> u32 {
    if let Some(&code) = map.get(value) {
        return code;
    }
    let code = values.len() as u32;
    values.push(value.to_string());
    map.insert(value.to_string(), code);
    code
}

/// The position of column `name` in flights.csv's header.
pub fn column(headers: &csv::StringRecord, name: &str) -> Result<usize> {
    headers
        .iter()
        .position(|h| h == name)
        .with_context(|| format!("flights.csv has no column {name}"))
}

impl Flights {
    pub fn load(path: &Path) -> Result<Self> {
        let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
        let mut reader = csv::Reader::from_reader(GzDecoder::new(file));
        let headers = reader.headers()?.clone();
        let column = |name: &str| column(&headers, name);
        let (id_c, carrier_c, origin_c, delay_c) = (
            column("id")?,
            column("carrier")?,
            column("origin")?,
            column("dep_delay")?,
        );
        let text_c = [
            column(TEXT_FIELDS[0])?,
            column(TEXT_FIELDS[1])?,
            column(TEXT_FIELDS[2])?,
            column(TEXT_FIELDS[3])?,
        ];
        let mut flights = Flights {
            ids: Vec::new(),
            carrier: Vec::new(),
            carriers: Vec::new(),
            origin: Vec::new(),
            origins: Vec::new(),
            dep_delay: Vec::new(),
            text: Vec::new(),
            texts: Vec::new(),
        };
        let (mut carriers, mut origins, mut texts) =
            (HashMap::new(), HashMap::new(), HashMap::new());
        let mut record = csv::StringRecord::new();
        while reader.read_record(&mut record)? {
            flights.ids.push(record[id_c].to_string());
            let code = |map: &mut HashMap<String, u32>, values: &mut Vec<String>, v: &str| {
                if v.is_empty() {
                    NONE
                } else {
                    intern(map, values, v) as u16
                }
            };
            flights.carrier.push(code(
                &mut carriers,
                &mut flights.carriers,
                &record[carrier_c],
            ));
            flights
                .origin
                .push(code(&mut origins, &mut flights.origins, &record[origin_c]));
            let delay = &record[delay_c];
            flights.dep_delay.push(if delay.is_empty() {
                None
            } else {
                Some(
                    delay
                        .parse::<f64>()
                        .with_context(|| format!("dep_delay {delay:?} is not a number"))?,
                )
            });
            let mut text = [0u32; 4];
            for (slot, &c) in text.iter_mut().zip(&text_c) {
                *slot = intern(&mut texts, &mut flights.texts, &record[c].to_lowercase());
            }
            flights.text.push(text);
        }
        if flights.carriers.len() >= NONE as usize || flights.origins.len() >= NONE as usize {
            bail!("too many distinct carriers or origins");
        }
        Ok(flights)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// e+f: groups by count descending, then key ascending.
    pub fn agg(&self) -> Vec<GroupStats> {
        let mut counts = vec![0u64; self.carriers.len()];
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); self.carriers.len()];
        for (&carrier, delay) in self.carrier.iter().zip(&self.dep_delay) {
            if carrier == NONE {
                continue;
            }
            counts[carrier as usize] += 1;
            if let Some(delay) = delay {
                values[carrier as usize].push(*delay);
            }
        }
        let mut groups: Vec<GroupStats> = values
            .into_iter()
            .enumerate()
            .filter(|&(code, _)| counts[code] > 0)
            .map(|(code, mut v)| {
                v.sort_unstable_by(f64::total_cmp);
                let sum: f64 = v.iter().sum();
                let n = v.len();
                GroupStats {
                    key: self.carriers[code].clone(),
                    count: counts[code],
                    sum,
                    avg: (n > 0).then(|| sum / n as f64),
                    min: v.first().copied(),
                    max: v.last().copied(),
                    p25: percentile(&v, 25.0),
                    p50: percentile(&v, 50.0),
                    p75: percentile(&v, 75.0),
                }
            })
            .collect();
        groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        groups
    }

    /// The median time of `runs` computations of e+f, and its answer.
    pub fn time_agg(&self, runs: usize) -> (Duration, Vec<GroupStats>) {
        let answer = self.agg();
        let mut times: Vec<Duration> = (0..runs.max(1))
            .map(|_| {
                let started = Instant::now();
                black_box(self.agg());
                started.elapsed()
            })
            .collect();
        times.sort_unstable();
        (times[times.len() / 2], answer)
    }

    /// Rows with this carrier and origin.
    pub fn count_carrier_origin(&self, carrier: &str, origin: &str) -> usize {
        let code =
            |values: &[String], v: &str| values.iter().position(|x| x == v).map(|c| c as u16);
        let (Some(c), Some(o)) = (code(&self.carriers, carrier), code(&self.origins, origin))
        else {
            return 0;
        };
        self.carrier
            .iter()
            .zip(&self.origin)
            .filter(|&(&rc, &ro)| rc == c && ro == o)
            .count()
    }

    /// The largest `dep_delay` among rows with this carrier and origin.
    pub fn max_delay_carrier_origin(&self, carrier: &str, origin: &str) -> Option<f64> {
        (0..self.len())
            .filter(|&i| {
                self.carrier[i] != NONE
                    && self.carriers[self.carrier[i] as usize] == carrier
                    && self.origin[i] != NONE
                    && self.origins[self.origin[i] as usize] == origin
            })
            .filter_map(|i| self.dep_delay[i])
            .max_by(f64::total_cmp)
    }

    /// Rows where `term` occurs in some text field, case-insensitively (`q=term`).
    pub fn count_text(&self, term: &str) -> usize {
        let term = term.to_lowercase();
        let hits: Vec<bool> = self.texts.iter().map(|t| t.contains(&term)).collect();
        self.text
            .iter()
            .filter(|row| row.iter().any(|&t| hits[t as usize]))
            .count()
    }

    /// A fixed pseudo-random list of record ids (the same on every run).
    pub fn sample_ids(&self, n: usize) -> Vec<String> {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                self.ids[((state >> 33) % self.len() as u64) as usize].clone()
            })
            .collect()
    }
}

/// Linear interpolation between closest ranks of sorted values.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = p / 100.0 * last as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    Some(sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64))
}
