//! The column shapes checked on small columns: byte order, postings, narrow types, parts.

use super::*;

#[test]
fn dictionaries_sort_by_bytes_and_list_rows() {
    let mut b = StrBuilder::default();
    for v in [Some("b"), None, Some("B"), Some("b"), Some("a")] {
        b.push(v);
    }
    let c = b.finish();
    assert_eq!(
        (0..3).map(|i| c.dict.get(i)).collect::<Vec<_>>(),
        ["B", "a", "b"]
    );
    assert_eq!(c.codes.to_vec(), [2, MISSING, 0, 2, 1]);
    assert_eq!(c.dict.find("b"), Some(2));
    assert_eq!(c.dict.find("c"), None);
}

#[test]
fn frequent_values_are_bit_sets_and_others_row_lists() {
    let mut b = StrBuilder::default();
    // "f" holds 40 of 240 rows (at least 1/32: a bit set); each "r…" 2 or 3 (a list).
    for row in 0..240 {
        let value = if row % 6 == 0 {
            "f".to_string()
        } else {
            format!("r{}", row % 100)
        };
        b.push(Some(&value));
    }
    let c = b.finish();
    let f = c.dict.find("f").expect("f");
    assert_eq!(c.postings.len(f), 40);
    assert!(c.postings.rows(f).is_empty());
    let bits = c.dense(f).expect("a bit set");
    assert_eq!(
        bits.iter().collect::<Vec<_>>(),
        (0..240).step_by(6).collect::<Vec<u32>>()
    );
    let r7 = c.dict.find("r7").expect("r7");
    assert!(c.dense(r7).is_none());
    assert_eq!(c.postings.len(r7), 3);
    assert_eq!(c.postings.rows(r7).to_vec(), [7, 107, 207]);
}

#[test]
fn ids_are_found_and_sorted_by_bytes() {
    let mut ids = Ids::default();
    for id in ["b", "B", "10", "2", "a"] {
        ids.push(id);
    }
    let column = IdColumn::new(ids).expect("unique");
    assert_eq!(column.sorted().all().to_vec(), [2, 3, 1, 4, 0]);
    assert_eq!(column.find("2"), Some(3));
    assert_eq!(column.find("1"), None);
    assert_eq!(column.find("c"), None);
    let mut twice = Ids::default();
    for id in ["x", "y", "x"] {
        twice.push(id);
    }
    assert!(IdColumn::new(twice).is_none());
}

#[test]
fn codes_take_the_narrowest_type_and_keep_missing() {
    for (distinct, kind) in [(3, "U8"), (254, "U8"), (255, "U16"), (70_000, "U32")] {
        let codes = vec![0, MISSING, distinct as u32 - 1, 1];
        let narrow = Codes::new(codes.clone(), distinct);
        assert!(format!("{narrow:?}").starts_with(kind), "{distinct}");
        assert_eq!(narrow.to_vec(), codes);
    }
    // A build pushes codes before it knows how many there are: the type widens.
    let pushed: Vec<u32> = (0..70_000).chain([MISSING, 3]).collect();
    let mut grown = Codes::default();
    pushed.iter().for_each(|&c| grown.push(c));
    assert!(matches!(grown, Codes::U32(_)));
    assert_eq!(grown.to_vec(), pushed);
    let mut grown = Codes::default();
    [MISSING, 300, 2].iter().for_each(|&c| grown.push(c));
    assert!(matches!(grown, Codes::U16(_)));
    assert_eq!(grown.to_vec(), [MISSING, 300, 2]);
}

#[test]
fn numbers_keep_file_order_within_equal_values() {
    let n = NumColumn::new(vec![2.0, f64::NAN, 1.0, 2.0, -0.0]);
    assert_eq!(n.order.all().to_vec(), [4, 2, 0, 3]);
    assert_eq!(n.equal(2.0).to_vec(), [0, 3]);
    assert_eq!(n.equal(0.0).to_vec(), [4]);
    assert!(n.equal(5.0).is_empty());
}

#[test]
fn numbers_take_the_narrowest_exact_type() {
    let nan = f64::NAN;
    for (values, kind) in [
        (vec![1.0, nan, -127.0, 127.0], "I8"),
        (vec![1.0, -128.0], "I16"),
        (vec![2013.0, nan, 32767.0], "I16"),
        (vec![40000.0, -5.0], "I32"),
        (vec![1.5, nan, 0.25], "F32"),
        (vec![3e9, 1.0], "F32"),
        (vec![0.1, 2.0], "F64"),
        (vec![1e300, 1.0], "F64"),
    ] {
        let column = NumColumn::new(values.clone());
        assert!(
            format!("{:?}", column.values).starts_with(kind),
            "{values:?}"
        );
        for (row, v) in values.iter().enumerate() {
            let got = column.values.get(row);
            assert!(
                got == *v || (got.is_nan() && v.is_nan()),
                "{v} came back {got}"
            );
        }
    }
}

/// A build read in two parts and appended gives the columns one read gives: strings met
/// first in either part, missing values, a second part whose numbers need a wider type
/// (and one that fits the first's), codes that widen, ids in order.
#[test]
fn parts_appended_equal_one_read() {
    let nan = f64::NAN;
    let strings: Vec<Option<String>> = (0..600)
        .map(|r| (r % 7 != 3).then(|| format!("v{}", (r * 37) % if r < 300 { 40 } else { 290 })))
        .collect();
    let numbers: Vec<Vec<f64>> = vec![
        (0..600)
            .map(|r| if r % 5 == 0 { nan } else { (r % 100) as f64 })
            .collect(),
        (0..600)
            .map(|r| {
                if r < 300 {
                    (r % 9) as f64
                } else {
                    r as f64 * 1000.5
                }
            })
            .collect(),
        (0..600)
            .map(|r| if r < 300 { r as f64 * 0.1 } else { 3.0 })
            .collect(),
    ];
    let codes: Vec<u32> = (0..600)
        .map(|r| if r % 4 == 0 { MISSING } else { r as u32 })
        .collect();
    for split in [0, 1, 299, 300, 599, 600] {
        let (mut s1, mut s2) = (StrBuilder::default(), StrBuilder::default());
        let mut whole = StrBuilder::default();
        let (mut c1, mut c2) = (Codes::with_capacity(0, 0), Codes::with_capacity(0, 0));
        let (mut d1, mut d2, mut dw) = (Dict::default(), Dict::default(), Dict::default());
        for (r, value) in strings.iter().enumerate() {
            let (b, c, d) = if r < split {
                (&mut s1, &mut c1, &mut d1)
            } else {
                (&mut s2, &mut c2, &mut d2)
            };
            b.push(value.as_deref());
            c.push(codes[r]);
            d.push(&format!("{r:04}"));
            whole.push(value.as_deref());
            dw.push(&format!("{r:04}"));
        }
        s1.append(s2);
        let (joined, one) = (s1.finish(), whole.finish());
        assert_eq!(joined.codes.to_vec(), one.codes.to_vec(), "split {split}");
        assert_eq!(
            (0..joined.dict.len() as u32)
                .map(|c| joined.dict.get(c))
                .collect::<Vec<_>>(),
            (0..one.dict.len() as u32)
                .map(|c| one.dict.get(c))
                .collect::<Vec<_>>()
        );
        c1.append(&c2, |code| code);
        assert_eq!(c1.to_vec(), codes, "split {split}");
        d1.append(&d2);
        assert_eq!(
            (0..600).map(|r| d1.get(r)).collect::<Vec<_>>(),
            (0..600).map(|r| dw.get(r)).collect::<Vec<_>>()
        );
        for values in &numbers {
            let (mut n1, mut n2) = (NumBuilder::default(), NumBuilder::default());
            for (r, &v) in values.iter().enumerate() {
                if r < split { n1.push(v) } else { n2.push(v) }
            }
            n1.append(n2);
            let (joined, one) = (n1.finish(), NumColumn::new(values.clone()));
            assert_eq!(format!("{:?}", joined.values), format!("{:?}", one.values));
            assert_eq!(joined.order.all().to_vec(), one.order.all().to_vec());
        }
    }
}

/// Text postings keep frequent codes as bit sets too: `add_to` unions them word by word,
/// `first` and `len` answer for both kinds.
#[test]
fn postings_keep_frequent_codes_as_bit_sets() {
    // Code 0 on every third row of 96 (32 rows: a set), code 1 on rows 1 and 50 (a list),
    // code 2 nowhere, the rest missing.
    let codes: Vec<u32> = (0..96)
        .map(|r| match r {
            r if r % 3 == 0 => 0,
            1 | 50 => 1,
            _ => MISSING,
        })
        .collect();
    let codes = Codes::new(codes, 3);
    let postings = Postings::new(&codes, &code_counts(&codes, 3));
    assert!(postings.dense(0).is_some());
    assert!(postings.dense(1).is_none());
    assert_eq!(
        (postings.len(0), postings.len(1), postings.len(2)),
        (32, 2, 0)
    );
    assert_eq!(
        (postings.first(0), postings.first(1), postings.first(2)),
        (Some(0), Some(1), None)
    );
    let mut bits = Bits::new(96);
    postings.add_to(0, &mut bits);
    postings.add_to(1, &mut bits);
    postings.add_to(2, &mut bits);
    let expected: Vec<u32> = (0..96)
        .filter(|r| r % 3 == 0 || *r == 1 || *r == 50)
        .collect();
    assert_eq!(bits.iter().collect::<Vec<_>>(), expected);
}

#[test]
fn a_number_mode_is_the_most_held_value_the_smallest_on_a_tie() {
    let nan = f64::NAN;
    for (values, mode) in [
        (vec![3.0, 1.0, 3.0, nan, 1.0, 2.0], Some((1.0, 2))),
        (vec![5.0, nan, 5.0, 5.0, -1.0], Some((5.0, 3))),
        (vec![nan, nan], None),
        (vec![], None),
        (
            (0..1000).map(|i| f64::from(i % 7)).collect(),
            Some((0.0, 143)),
        ),
        ((0..5000).map(f64::from).collect(), Some((0.0, 1))),
    ] {
        assert_eq!(NumColumn::new(values.clone()).mode(), mode, "{values:?}");
    }
}
