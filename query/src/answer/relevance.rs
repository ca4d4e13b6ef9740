//! Relevance (`sort=_score<`): BM25 with k1 1.2 and b 0.75, one function for the index and the
//! store, so both give the same score to the last bit.
//!
//! What a term and a document are, for text that is searched by substrings (scripts without
//! spaces have no words): a query term is one lower-cased term of `q` (searched in every text
//! field) or of `q[name]` (searched in that field); its frequency in a record is how often it
//! occurs, as a substring without overlaps, in the lower-cased text of the fields it searches;
//! its document frequency is the number of the version's records it occurs in; a record's
//! length is the number of characters of the lower-cased text of every field the query
//! searches, and the average length is over every record of the version. A term is scored as
//! often as the query names it.

use std::collections::HashMap;

/// BM25's term-frequency saturation.
pub(crate) const K1: f64 = 1.2;
/// BM25's length normalization.
pub(crate) const B: f64 = 0.75;

/// The query's term statistics over one version.
#[derive(Clone, Debug)]
pub(crate) struct Bm25 {
    /// Each query term's inverse document frequency, in the query's term order.
    idf: Vec<f64>,
    /// The average record length (characters); at least 1.
    average_length: f64,
}

impl Bm25 {
    /// Statistics for a version of `records` records whose searched fields hold
    /// `total_length` characters in all; `document_frequency` per query term, in order.
    pub(crate) fn new(records: u64, total_length: u64, document_frequency: &[u64]) -> Self {
        let n = records as f64;
        let idf = document_frequency
            .iter()
            .map(|&df| {
                let df = df as f64;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        let average_length = if records == 0 {
            1.0
        } else {
            (total_length as f64 / n).max(1.0)
        };
        Bm25 {
            idf,
            average_length,
        }
    }

    /// The score of a record of `length` characters in which each query term occurs
    /// `frequency[i]` times, summed in the query's term order.
    pub(crate) fn score(&self, frequency: &[u32], length: u64) -> f64 {
        let norm = K1 * (1.0 - B + B * length as f64 / self.average_length);
        self.idf
            .iter()
            .zip(frequency)
            .map(|(idf, &tf)| {
                let tf = f64::from(tf);
                idf * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum()
    }
}

/// How often `term` occurs in `text`, as a substring without overlaps.
pub(crate) fn occurrences(text: &str, term: &str) -> u32 {
    if term.is_empty() {
        return 0;
    }
    text.matches(term).count() as u32
}

/// A text's length as BM25 counts it: characters.
pub(crate) fn length(text: &str) -> u64 {
    text.chars().count() as u64
}

/// The query's terms, each with the fields it searches: `q`'s terms in every text field of
/// `text_fields`, then `q[name]`'s terms in their field.
pub(crate) fn query_terms(
    terms: &[String],
    field_terms: &[(usize, Vec<String>)],
    text_fields: &[usize],
) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = terms
        .iter()
        .map(|t| (t.clone(), text_fields.to_vec()))
        .collect();
    for (field, terms) in field_terms {
        out.extend(terms.iter().map(|t| (t.clone(), vec![*field])));
    }
    out
}

/// The fields a query searches: every field of any of its terms, ascending.
pub(crate) fn searched_fields(terms: &[(String, Vec<usize>)]) -> Vec<usize> {
    let mut fields: Vec<usize> = terms.iter().flat_map(|(_, f)| f.iter().copied()).collect();
    fields.sort_unstable();
    fields.dedup();
    fields
}

/// Scores records from their searched fields' texts, remembering what each distinct text
/// contributes (the same value is often held by many records).
pub(crate) struct Scorer<'a> {
    bm25: &'a Bm25,
    terms: &'a [(String, Vec<usize>)],
    /// Per (field, text): its term frequencies and its length.
    seen: HashMap<(usize, &'a str), (Vec<u32>, u64)>,
}

impl<'a> Scorer<'a> {
    pub(crate) fn new(bm25: &'a Bm25, terms: &'a [(String, Vec<usize>)]) -> Self {
        Scorer {
            bm25,
            terms,
            seen: HashMap::new(),
        }
    }

    /// The score of a record whose searched fields hold `texts` (field, lower-cased text; a
    /// field without a value is left out).
    pub(crate) fn score(&mut self, texts: &[(usize, &'a str)]) -> f64 {
        let mut frequency = vec![0u32; self.terms.len()];
        let mut record_length = 0;
        for &(field, text) in texts {
            let terms = self.terms;
            let (counts, length) = self.seen.entry((field, text)).or_insert_with(|| {
                let counts = terms
                    .iter()
                    .map(|(term, fields)| {
                        if fields.contains(&field) {
                            occurrences(text, term)
                        } else {
                            0
                        }
                    })
                    .collect();
                (counts, length(text))
            });
            for (f, c) in frequency.iter_mut().zip(counts.iter()) {
                *f += c;
            }
            record_length += *length;
        }
        self.bm25.score(&frequency, record_length)
    }
}

/// Orders rows (already in the order of the sort keys after `_score` or `_distance`, then
/// file order) by score or distance, keeping that order among equal ones.
pub(crate) fn order_stably<T>(rows: &mut [(T, f64)], descending: bool) {
    if descending {
        rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    } else {
        rows.sort_by(|a, b| a.1.total_cmp(&b.1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_are_counted_without_overlap() {
        assert_eq!(occurrences("夜市夜市小吃", "夜市"), 2);
        assert_eq!(occurrences("aaaa", "aa"), 2);
        assert_eq!(occurrences("abc", ""), 0);
        assert_eq!(length("夜市 ab"), 5);
    }

    #[test]
    fn a_rarer_term_and_a_shorter_record_score_higher() {
        let bm25 = Bm25::new(100, 1000, &[10, 50]);
        assert!(bm25.score(&[1, 0], 10) > bm25.score(&[0, 1], 10));
        assert!(bm25.score(&[1, 0], 5) > bm25.score(&[1, 0], 20));
        assert_eq!(bm25.score(&[0, 0], 10), 0.0);
        // idf of a term in 10 of 100 records: ln(1 + 90.5 / 10.5).
        let one = Bm25::new(100, 1000, &[10]);
        let idf = (1.0f64 + 90.5 / 10.5).ln();
        let want = idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * 10.0 / 10.0));
        assert!((one.score(&[1], 10) - want).abs() < 1e-12);
    }
}
