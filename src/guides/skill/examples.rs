//! The worked examples of `skill.md`: which fields make good examples (a described number
//! with a wide range, the keyword whose common value covers most records, a searchable word of
//! a text field) and the example requests built from their real values, each of which works as
//! written.

mod groups;
mod records;

use entity::FieldType;
use query::views::json_number;

use super::{FieldFacts, Guide, Range};
use crate::http::url::encode;

fn spread(range: &Range) -> f64 {
    match (range.min.as_f64(), range.max.as_f64()) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    }
}

/// The number field the examples sort and aggregate on: one the schema describes (a
/// measurement someone cared to explain) before one it does not, then the widest range; a
/// constant field makes a dull example.
pub(super) fn number_example_index(fields: &[FieldFacts]) -> Option<usize> {
    fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.field.field_type == FieldType::Number)
        .filter_map(|(i, f)| {
            let described = f
                .field
                .description
                .as_deref()
                .is_some_and(|d| !d.trim().is_empty());
            f.range.as_ref().map(|r| (i, (described, spread(r))))
        })
        .filter(|(_, (_, s))| *s > 0.0)
        .fold(
            None,
            |best: Option<(usize, (bool, f64))>, (i, rank)| match best {
                Some((_, b)) if (b.0, b.1) >= (rank.0, rank.1) => best,
                _ => Some((i, rank)),
            },
        )
        .map(|(i, _)| i)
}

/// The keyword field whose most common value covers the most records.
pub(super) fn keyword_example(guide: &Guide) -> Option<&FieldFacts> {
    guide
        .fields
        .iter()
        .filter(|f| f.field.field_type == FieldType::Keyword && !f.top.is_empty())
        .fold(None, |best: Option<&FieldFacts>, f| match best {
            Some(b) if b.top[0].count >= f.top[0].count => best,
            _ => Some(f),
        })
}

/// A search term from a text value: a whole word of three or more letters, or the first three
/// characters of a run of Chinese (or other unspaced) script, where terms match as substrings.
pub fn search_term(text: &str) -> Option<String> {
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = word.chars().collect();
        if chars.is_empty() {
            continue;
        }
        if chars.iter().any(|c| is_unspaced_script(*c)) {
            let run: String = chars
                .iter()
                .skip_while(|c| !is_unspaced_script(**c))
                .take_while(|c| is_unspaced_script(**c))
                .take(3)
                .collect();
            if run.chars().count() >= 2 {
                return Some(run);
            }
        } else if chars.len() >= 3 && !chars.iter().all(|c| c.is_ascii_digit()) {
            return Some(word.to_string());
        }
    }
    None
}

fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// The text fields' search examples: (field, term, records holding the value it came from).
fn text_examples(guide: &Guide) -> Vec<(&FieldFacts, String, u64)> {
    let mut found: Vec<(&FieldFacts, String, u64)> = guide
        .fields
        .iter()
        .filter(|f| f.field.field_type == FieldType::Text)
        .filter_map(|f| {
            f.top.iter().find_map(|v| {
                let term = search_term(v.value.as_str()?)?;
                Some((f, term, v.count))
            })
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.2));
    found
}

/// One worked example: a heading, what it shows, and the URL.
pub(super) struct Example {
    pub title: String,
    pub note: String,
    pub url: String,
}

impl Example {
    fn new(title: &str, note: impl Into<String>, url: String) -> Self {
        Example {
            title: title.to_string(),
            note: note.into(),
            url,
        }
    }
}

/// What the examples are built from: the dataset's URLs and the fields picked to show off.
struct Picks<'a> {
    guide: &'a Guide,
    base_url: &'a str,
    /// The dataset's records URL.
    records: String,
    /// The dataset's aggregation URL.
    agg: String,
    keyword: Option<&'a FieldFacts>,
    number: Option<&'a FieldFacts>,
}

/// One group of examples: adds the examples it can build from the picks, none when the
/// dataset lacks the fields they need.
type Step = fn(&Picks, &mut Vec<Example>);

/// The examples in the order `skill.md` shows them: from reading records to aggregating,
/// each step building on what the earlier ones showed.
const STEPS: &[Step] = &[
    records::metadata,
    records::first_records,
    records::near_a_place,
    records::keyword_matches,
    records::number_match,
    records::full_text,
    records::sorted,
    records::paging,
    records::some_fields,
    records::by_identifier,
    groups::grouped_statistics,
    records::lower_range,
    groups::facets_and_two_fields,
    groups::per_month,
    groups::top_groups,
    records::exclusions,
    groups::groups_by_size,
    records::upper_range,
    records::export,
];

pub(super) fn examples(guide: &Guide, base_url: &str) -> Vec<Example> {
    let slug = encode(&guide.dataset.slug);
    let picks = Picks {
        guide,
        base_url,
        records: format!("{base_url}/datasets/{slug}/records"),
        agg: format!("{base_url}/datasets/{slug}/agg"),
        keyword: keyword_example(guide),
        number: number_example_index(&guide.fields).map(|i| &guide.fields[i]),
    };
    let mut out = Vec::new();
    for step in STEPS {
        step(&picks, &mut out);
    }
    out
}

/// A number field's name and its range cut in two, as query values: (name, lowest, middle,
/// highest), the middle rounded down; `None` when the field has a single value.
fn split_range(n: &FieldFacts) -> Option<(String, String, String, String)> {
    let range = n.range.as_ref()?;
    let (lo, hi) = (range.min.as_f64()?, range.max.as_f64()?);
    (hi > lo).then(|| {
        (
            n.field.name.clone(),
            json_number(lo).to_string(),
            json_number(((lo + hi) / 2.0).floor().max(lo)).to_string(),
            json_number(hi).to_string(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::search_term;

    #[test]
    fn search_terms() {
        assert_eq!(
            search_term("united air lines inc.").as_deref(),
            Some("united")
        );
        assert_eq!(search_term("臺東縣臺東市").as_deref(), Some("臺東縣"));
        assert_eq!(search_term("a 12 日月潭").as_deref(), Some("日月潭"));
        assert_eq!(search_term("12 ab"), None);
    }
}
