//! The repository's own files, walked for the tests that read the source and the docs
//! (`layering`, `docs_paths`): build output, installed packages and the vendored specification
//! are not ours and are skipped.

use std::path::{Path, PathBuf};

/// Folders that hold no file of the project's own.
const NOT_OURS: [&str; 4] = ["target", "node_modules", "spec", ".git"];

/// Every file under `dir` whose name ends with `ending` (`.rs`, `.md`), depth first.
pub fn files(dir: &Path, ending: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, ending, &mut out);
    out
}

fn walk(dir: &Path, ending: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !NOT_OURS.contains(&name.as_str()) {
                walk(&path, ending, out);
            }
        } else if name.ends_with(ending) {
            out.push(path);
        }
    }
}
