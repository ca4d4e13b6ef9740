//! The words of a catalog search (`GET /datasets?q=`, contract §13.4), by the records search's
//! rules, so that a word finds a dataset as it finds a record.

use crate::error::ApiError;

/// The longest catalog search (`GET /datasets?q=`), in characters.
pub const MAX_CATALOG_QUERY_CHARS: usize = 500;

/// The words of a catalog search (`GET /datasets?q=`), by the records search's rules
/// ([`super::filter::terms`]: lower-cased, split on white space), each once, at most
/// [`super::filter::MAX_SEARCH_TERMS`] of them. No words (an absent or blank `q`) lists every
/// dataset.
pub fn catalog_words(q: Option<&str>) -> Result<Vec<String>, ApiError> {
    let Some(q) = q else {
        return Ok(Vec::new());
    };
    if q.chars().count() > MAX_CATALOG_QUERY_CHARS {
        return Err(ApiError::invalid(
            "q",
            format!(
                "q is longer than {MAX_CATALOG_QUERY_CHARS} characters: search with fewer words."
            ),
        ));
    }
    if q.contains('\0') {
        return Err(ApiError::invalid(
            "q",
            "q cannot contain a NUL character (\\0); no dataset's text holds one.",
        ));
    }
    let words = super::filter::sorted_unique(super::filter::terms(q));
    let most = super::filter::MAX_SEARCH_TERMS;
    if words.len() > most {
        return Err(ApiError::invalid(
            "q",
            format!("q has more than {most} different words: search with fewer words."),
        ));
    }
    Ok(words)
}
