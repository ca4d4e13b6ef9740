//! Flights ×N: `flights.csv.gz` repeated N times, copy `k` with its ids offset by
//! `k` × the row count and its year (`year`, `time_hour`) shifted by `k`, so every id is unique
//! and the copies do not fold onto the same dates.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

/// Writes flights ×`scale` from `source` to `target` (gzip); answers the CSV's size unzipped.
pub fn write(source: &Path, target: &Path, scale: u32) -> Result<u64> {
    let file = File::open(source).with_context(|| format!("open {}", source.display()))?;
    let mut reader = csv::Reader::from_reader(GzDecoder::new(file));
    let headers = reader.headers()?.clone();
    let column = |name: &str| crate::reference::column(&headers, name);
    let (id_c, year_c, time_c) = (column("id")?, column("year")?, column("time_hour")?);
    let rows: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>()?;
    let count = rows.len() as u64;
    let out = File::create(target).with_context(|| format!("create {}", target.display()))?;
    let mut writer =
        csv::Writer::from_writer(GzEncoder::new(BufWriter::new(out), Compression::fast()));
    writer.write_record(&headers)?;
    let mut bytes = headers.as_byte_record().as_slice().len() as u64 + headers.len() as u64;
    for k in 0..u64::from(scale) {
        for row in &rows {
            let fields: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, value)| {
                    if k == 0 || value.is_empty() {
                        return value.to_string();
                    }
                    if i == id_c {
                        value
                            .parse::<u64>()
                            .map_or(value.to_string(), |id| (id + k * count).to_string())
                    } else if i == year_c {
                        value
                            .parse::<u64>()
                            .map_or(value.to_string(), |y| (y + k).to_string())
                    } else if i == time_c && value.len() >= 4 {
                        match value[..4].parse::<u64>() {
                            Ok(year) => format!("{}{}", year + k, &value[4..]),
                            Err(_) => value.to_string(),
                        }
                    } else {
                        value.to_string()
                    }
                })
                .collect();
            bytes += fields.iter().map(|f| f.len() as u64 + 1).sum::<u64>();
            writer.write_record(&fields)?;
        }
    }
    writer
        .into_inner()
        .map_err(|e| anyhow::anyhow!("finish {}: {e}", target.display()))?
        .finish()?;
    Ok(bytes)
}
