//! The readers' tests: formats, nesting, limits and the lines errors name.

use super::*;

fn read(name: &'static str, data: &'static [u8]) -> Result<Vec<Value>, ImportError> {
    let (format, gzip) = Format::from_name(name).unwrap();
    let source = Source::Bytes { name, data };
    let input = source.open(gzip, Arc::default())?;
    let mut out = Vec::new();
    read_records(input, format, 1 << 20, |r| {
        out.push(Value::Object(r.object));
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn formats_from_names() {
    assert_eq!(Format::from_name("a.CSV"), Some((Format::Csv, false)));
    assert_eq!(
        Format::from_name("a.ndjson.gz"),
        Some((Format::Ndjson, true))
    );
    assert_eq!(Format::from_name("a.jsonl"), Some((Format::Ndjson, false)));
    assert_eq!(Format::from_name("a.json.gz"), Some((Format::Json, true)));
    assert_eq!(Format::from_name("a.txt"), None);
}

#[test]
fn csv_nests_dotted_headers_and_skips_empty_cells() {
    let rows = read("x.csv", b"id,origin.city,n\n1,NYC,\n").unwrap();
    assert_eq!(
        rows,
        vec![serde_json::json!({"id": "1", "origin": {"city": "NYC"}})]
    );
}

#[test]
fn headers_are_checked() {
    let rows = read("x.csv", "\u{feff}id,n\n1,2\n".as_bytes()).unwrap();
    assert_eq!(rows, vec![serde_json::json!({"id": "1", "n": "2"})]);
    let err = read("x.csv", b"a,b,a\n1,2,3\n").unwrap_err();
    assert!(
        err.to_string().contains("line 1 column 3 (\"a\") repeats"),
        "{err}"
    );
    let err = read("x.csv", b"a.b,a\n1,2\n").unwrap_err();
    assert!(
        err.to_string().contains("column 2 (\"a\") and another"),
        "{err}"
    );
    let err = read("x.csv", b"a,,c\n1,2,3\n").unwrap_err();
    assert!(err.to_string().contains("column 2"), "{err}");
}

#[test]
fn errors_name_the_line() {
    let err = read("x.csv", b"a,b\n1,2\n3\n").unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    let err = read("x.ndjson", b"{\"a\":1}\n\n{\"a\":\n").unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    let err = read("x.json", b"[{\"a\":1}, 2]").unwrap_err();
    assert!(err.to_string().contains("record 2"), "{err}");
}

#[test]
fn json_array_streams() {
    let rows = read("x.json", b" [ {\"a\": 1}, {\"b\": {\"c\": true}} ] ").unwrap();
    assert_eq!(rows.len(), 2);
    assert!(read("x.json", b"{\"a\": 1}").is_err());
}
