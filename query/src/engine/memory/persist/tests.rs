//! Each structure written and read back equal, and files that must not be used refused.

use std::io::Cursor;

use super::columns::{Put, Take};
use super::raw::{Sink, Source};
use super::*;
use crate::engine::memory::column::{
    Codes, IdColumn, Ids, MISSING, NumBuilder, NumColumn, Numbers, Postings, StrBuilder, StrColumn,
    TextColumn, code_counts,
};
use crate::engine::memory::rows::{Bits, RowList};

/// `value` written alone and read back over `rows` rows.
fn round_trip<T: Put + Take>(value: &T, rows: usize) -> T {
    let mut sink = Sink::new(Vec::new());
    value.put(&mut sink).unwrap();
    let (bytes, size) = sink.finish().unwrap();
    assert_eq!(size, bytes.len() as u64);
    let mut source = Source::new(Cursor::new(&bytes), size).unwrap();
    let back = T::take(&mut source, rows).unwrap();
    source.finish().unwrap();
    back
}

fn strings(values: &[Option<&str>]) -> StrColumn {
    let mut b = StrBuilder::default();
    values.iter().for_each(|v| b.push(*v));
    b.finish()
}

fn dict(values: &[&str]) -> Dict {
    let mut d = Dict::default();
    values.iter().for_each(|v| d.push(v));
    d
}

fn id_list(values: &[&str]) -> Ids {
    let mut ids = Ids::default();
    values.iter().for_each(|v| ids.push(v));
    ids
}

#[test]
fn dictionaries_and_codes_of_every_width() {
    let d = dict(&["", "a", "ä", "zz"]);
    let back = round_trip(&d, 0);
    assert_eq!((back.text, back.ends), (d.text, d.ends));
    let u8s = Codes::new(vec![0, MISSING, 3], 4);
    let u16s = Codes::new(vec![300, MISSING, 0], 301);
    let u32s = Codes::new(vec![70_000, MISSING, 1], 70_001);
    for (codes, width) in [(u8s, 1), (u16s, 2), (u32s, 4)] {
        assert_eq!(codes.bytes(), 3 * width);
        let back = round_trip(&codes, 3);
        assert_eq!(
            (back.to_vec(), back.bytes()),
            (codes.to_vec(), codes.bytes())
        );
    }
}

#[test]
fn row_lists_both_forms_and_bit_sets() {
    let split = RowList::new((0..200_000).step_by(3).collect());
    let wide = RowList::new(vec![0, 70_000, 1, 140_000, 5, 199_999]);
    assert!(matches!(split, RowList::Split { .. }) && matches!(wide, RowList::Wide(_)));
    for list in [split, wide] {
        let back = round_trip(&list, 200_000);
        assert_eq!(back.all().to_vec(), list.all().to_vec());
        assert_eq!(back.bytes(), list.bytes());
    }
    let mut bits = Bits::new(130);
    [0, 64, 129].iter().for_each(|&r| bits.insert(r));
    assert_eq!(round_trip(&bits, 130), bits);
}

#[test]
fn string_columns_with_lists_and_bit_sets() {
    // "f" holds 40 of 240 rows (a bit set), each "r…" 2 or 3 (a row list), some rows none.
    let values: Vec<Option<String>> = (0..240)
        .map(|row| match row {
            _ if row % 6 == 0 => Some("f".to_string()),
            _ if row % 7 == 0 => None,
            _ => Some(format!("r{}", row % 100)),
        })
        .collect();
    let column = strings(&values.iter().map(Option::as_deref).collect::<Vec<_>>());
    let back = round_trip(&column, 240);
    assert_eq!(back.codes.to_vec(), column.codes.to_vec());
    for code in 0..column.dict.len() as u32 {
        assert_eq!(back.dict.get(code), column.dict.get(code));
        assert_eq!(back.postings.len(code), column.postings.len(code));
        assert_eq!(
            back.postings.rows(code).to_vec(),
            column.postings.rows(code).to_vec()
        );
        assert_eq!(back.dense(code), column.dense(code));
    }
    assert!(back.dense(column.dict.find("f").unwrap()).is_some());
    assert_eq!(back.bytes(), column.bytes());
}

#[test]
fn ids_and_text_columns() {
    let ids = IdColumn::new(id_list(&["b", "B", "10", "2", "a"])).unwrap();
    let back = round_trip(&ids, 5);
    assert_eq!(back.sorted().all().to_vec(), ids.sorted().all().to_vec());
    assert_eq!(back.find("2"), Some(3));
    let numbers = IdColumn::new(id_list(&["5", "10", "0", "7"])).unwrap();
    assert!(matches!(numbers.ids, Ids::Numbers(_)));
    let back = round_trip(&numbers, 4);
    assert!(matches!(back.ids, Ids::Numbers(_)));
    assert_eq!(back.sorted().all().to_vec(), [2, 1, 0, 3]);
    assert_eq!(back.find("7"), Some(3));
    assert_eq!(back.bytes(), numbers.bytes());
    let codes = Codes::new(vec![1, 0, MISSING, 1], 2);
    let counts = code_counts(&codes, 2);
    let text = TextColumn {
        postings: Postings::listing(&codes, &counts, |code| code == 1),
        codes,
    };
    let back = round_trip(&text, 4);
    assert_eq!(back.codes.to_vec(), text.codes.to_vec());
    assert_eq!(back.postings.rows(1).to_vec(), [0, 3]);
    assert_eq!(back.postings.len(0), 1);
}

#[test]
fn number_columns_of_every_type() {
    let columns: Vec<Vec<f64>> = vec![
        vec![1.0, f64::NAN, -3.0],
        vec![1000.0, f64::NAN, -3.0],
        vec![100_000.0, 2.0, f64::NAN],
        vec![0.5, f64::NAN, 2.25],
        vec![0.1, 1e300, f64::NAN],
    ];
    for (values, kind) in columns.into_iter().zip(0..) {
        let column = NumColumn::new(values);
        let expected = ["I8", "I16", "I32", "F32", "F64"][kind];
        assert!(format!("{:?}", column.values).starts_with(expected));
        let back = round_trip(&column, 3);
        let all = |c: &NumColumn| {
            (0..3)
                .map(|r| c.values.get(r).to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(all(&back), all(&column));
        assert_eq!(back.order.all().to_vec(), column.order.all().to_vec());
    }
    let mut b = NumBuilder::default();
    b.push(1.0);
    assert!(matches!(round_trip(&b.finish().values, 1), Numbers::I8(_)));
}

/// A small index: `_id`, a keyword, a number, a text, a JSON field and the id field.
fn index(version_id: i64) -> MemIndex {
    let texts = dict(&["hello world", "hi"]);
    let codes = Codes::new(vec![0, 1, 0], 2);
    let counts = code_counts(&codes, 2);
    let fields = vec![
        FieldIndex::Str(strings(&[Some("x"), None, Some("y")])),
        FieldIndex::Num(NumColumn::new(vec![2.5, 1.0, f64::NAN])),
        FieldIndex::Text(TextColumn {
            postings: Postings::new(&codes, &counts),
            codes,
        }),
        FieldIndex::None,
        FieldIndex::Id,
    ];
    let id = IdColumn::new(id_list(&["r1", "r2", "r3"])).unwrap();
    MemIndex::new(version_id, 3, id, fields, texts)
}

fn header(version_id: i64) -> Header {
    Header {
        version_id,
        rows: 3,
        fingerprint: [7; 32],
    }
}

fn file(index: &MemIndex, header: &Header) -> Vec<u8> {
    write(index, header, Vec::new()).unwrap().0
}

#[test]
fn an_index_reads_back_as_it_was_written() {
    let built = index(12);
    let bytes = file(&built, &header(12));
    let back = read(Cursor::new(&bytes), bytes.len() as u64, &header(12)).unwrap();
    assert_eq!(
        (back.version_id, back.rows, back.bytes),
        (12, 3, built.bytes)
    );
    assert_eq!(back.text_lengths, built.text_lengths);
    assert_eq!(back.id.find("r2"), Some(1));
    assert_eq!(format!("{:?}", back.fields), format!("{:?}", built.fields));
    assert_eq!(back.texts.get(1), "hi");
}

#[test]
fn files_of_another_version_schema_or_format_and_corrupt_ones_are_refused() {
    let bytes = file(&index(12), &header(12));
    let refused = |bytes: &[u8], expected: &Header| {
        read(Cursor::new(bytes), bytes.len() as u64, expected)
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(refused(&bytes, &header(13)), "another version");
    let other_schema = Header {
        fingerprint: [8; 32],
        ..header(12)
    };
    assert_eq!(refused(&bytes, &other_schema), "another dataset or schema");
    let mut older = bytes.clone();
    older[MAGIC.len()..MAGIC.len() + 8].copy_from_slice(&(FORMAT + 1).to_le_bytes());
    assert_eq!(refused(&older, &header(12)), "another format");
    // Any byte flipped past the header: the checksum (or a length it breaks) refuses it.
    for at in (120..bytes.len()).step_by(7) {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x5a;
        read(Cursor::new(&flipped), flipped.len() as u64, &header(12)).expect_err("corrupt");
    }
    assert!(!refused(&bytes[..bytes.len() - 9], &header(12)).is_empty());
}

#[test]
fn files_are_saved_loaded_refused_and_pruned() {
    let dir = std::env::temp_dir().join(format!("odqs-persist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = Files::new(dir.join("indexes"));
    assert!(matches!(files.load(&header(12)), Found::Missing));
    let size = files.save(&index(12), &header(12)).unwrap();
    assert_eq!(std::fs::metadata(files.path(12)).unwrap().len(), size);
    assert!(matches!(files.load(&header(12)), Found::Index(i) if i.rows == 3));
    std::fs::copy(files.path(12), files.path(13)).unwrap();
    assert!(matches!(files.load(&header(13)), Found::Refused(_)));
    assert!(!files.path(13).exists(), "a refused file is deleted");
    std::fs::write(dir.join("indexes/v14.idx.tmp-1-0"), b"torn").unwrap();
    std::fs::write(dir.join("indexes/notes.txt"), b"kept").unwrap();
    assert_eq!(files.prune(&[12].into_iter().collect()), 1);
    assert_eq!(files.prune(&HashSet::new()), 1);
    assert!(!files.path(12).exists() && dir.join("indexes/notes.txt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
