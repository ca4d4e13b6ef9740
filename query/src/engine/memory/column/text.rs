//! Text columns: each row's terms as codes of the text dictionary, for `q`.

use super::*;

/// A text field: codes into the version's text dictionary, with rows per code (frequent codes
/// as bit sets, like a keyword's values).
#[derive(Debug, Default)]
pub struct TextColumn {
    pub codes: Codes,
    pub postings: Postings,
}

impl TextColumn {
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.codes.bytes() + self.postings.bytes()
    }
}
