//! Pages by relevance on an in-memory index (`sort=_score<`): each matching row scored by
//! [`crate::answer::relevance`] from the text dictionary, the rows first put in the order of
//! the sort's other keys (then file order), then ordered by score, ties keeping that order.

use super::column::{Dict, MISSING};
use super::rows::Bits;
use super::{FieldIndex, MemIndex};
use crate::answer::relevance::{self, Bm25, Scorer};
use crate::dataset::schema::Column;
use crate::request::Filter;

/// Per field, the characters of a text field's values over every row (0 for other fields).
pub(super) fn text_lengths(fields: &[FieldIndex], texts: &Dict) -> Vec<u64> {
    let mut lengths: Vec<Option<u64>> = vec![None; texts.len()];
    fields
        .iter()
        .map(|field| match field {
            FieldIndex::Text(column) => (0..column.codes.len())
                .map(|row| column.codes.get(row))
                .filter(|&code| code != MISSING)
                .map(|code| {
                    *lengths[code as usize]
                        .get_or_insert_with(|| relevance::length(texts.get(code)))
                })
                .sum(),
            _ => 0,
        })
        .collect()
}

impl MemIndex {
    /// Every row of `matches` (`None`: every row) with its score, best first unless
    /// `descending` is false, ties by `rest` (the sort's other keys) and then file order.
    pub(crate) fn scored_order(
        &self,
        filter: &Filter,
        matches: Option<&Bits>,
        descending: bool,
        rest: &[(Column, bool)],
    ) -> Vec<(u32, f64)> {
        let total = self.total(matches);
        let text_fields: Vec<usize> = (0..self.fields.len())
            .filter(|&i| matches!(self.fields[i], FieldIndex::Text(_)))
            .collect();
        let terms = relevance::query_terms(&filter.terms, &filter.field_terms, &text_fields);
        let searched = relevance::searched_fields(&terms);
        let frequency: Vec<u64> = terms
            .iter()
            .map(|(term, fields)| {
                let codes = self.texts.containing(term);
                self.text_rows(fields, &codes).count()
            })
            .collect();
        let length = searched.iter().map(|&f| self.text_lengths[f]).sum();
        let bm25 = Bm25::new(u64::from(self.rows), length, &frequency);
        let ordered = self.page(matches, rest, 0, total);
        let mut scorer = Scorer::new(&bm25, &terms);
        let mut texts = Vec::with_capacity(searched.len());
        let mut scored: Vec<(u32, f64)> = ordered
            .into_iter()
            .map(|row| {
                texts.clear();
                for &field in &searched {
                    if let FieldIndex::Text(column) = &self.fields[field] {
                        let code = column.codes.get(row as usize);
                        if code != MISSING {
                            texts.push((field, self.texts.get(code)));
                        }
                    }
                }
                (row, scorer.score(&texts))
            })
            .collect();
        relevance::order_stably(&mut scored, descending);
        scored
    }
}
