//! The docs and the code's comments name files that exist: a path like `src/api/rest/records.rs`
//! or `query/src/engine/` in README.md, ARCHITECTURE.md, docs/ or a source comment must be in
//! the repository, so a move that forgets its docs fails here.

use std::path::Path;

use crate::helpers::sources::files;

/// Where repository paths start.
const ROOTS: [&str; 9] = [
    "src/",
    "query/",
    "graphql/",
    "tests/",
    "benches/",
    "entity/",
    "migration/",
    "docs/",
    "testdata/",
];

/// Paths that name another project's file, not ours.
const FOREIGN: [&str; 1] = [
    // the `http` crate's query table, cited where raw `<` is let through
    "src/uri/path.rs",
];

/// The repository paths named in `text`.
fn named_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    for root in ROOTS {
        for (at, _) in text.match_indices(root) {
            let before = at.checked_sub(1).map(|i| bytes[i] as char);
            if before.is_some_and(|c| c.is_alphanumeric() || "./-_".contains(c)) {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || "./-_".contains(*c))
                .collect();
            let path = path.trim_end_matches('.').to_string();
            if path.len() > root.len() {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn docs_and_comments_name_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    pages.extend(files(&root.join("docs"), ".md"));
    for dir in ["src", "query/src", "graphql/src"] {
        pages.extend(files(&root.join(dir), ".rs"));
    }
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for path in named_paths(&text) {
            if !FOREIGN.contains(&path.as_str()) && !root.join(&path).exists() {
                missing.push(format!(
                    "{}: {path}",
                    page.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(pages.len() > 100, "{} pages", pages.len());
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_moved_file_would_be_noticed() {
    let found = named_paths("see `src/api/rest/records.rs`, not xsrc/no.rs or a/src/x.rs.");
    assert_eq!(found, ["src/api/rest/records.rs"]);
    assert!(
        !Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/rest/records.rs")
            .exists()
    );
}
