//! Walls inside the `odqs` crate that Cargo cannot keep: which modules may read the store's
//! tables. (The resolver's walls are its crate's `Cargo.toml`: it depends on no HTTP, GraphQL
//! or MCP crate.)

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every read of datasets and records goes through the resolver layer (issue 14): the site
/// (pages, guides) never touches the store's tables itself, and the store module only
/// connects, migrates, locks, removes and collects garbage.
#[test]
fn the_site_and_the_store_read_no_records() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut site = Vec::new();
    sources(&root.join("src/site"), &mut site);
    for file in site {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in [
            "sea_orm",
            "Entity::find",
            "records_table",
            "text_table",
            "store::catalog",
        ] {
            assert!(!text.contains(name), "{}: {name}", file.display());
        }
    }
    let mut store = Vec::new();
    sources(&root.join("src/store"), &mut store);
    for file in store {
        let text = std::fs::read_to_string(&file).unwrap();
        let collects = file.ends_with("gc.rs");
        for name in ["records_table", "text_table", "doc_select", "dataset_field"] {
            assert!(
                collects || !text.contains(name),
                "{}: {name}",
                file.display()
            );
        }
    }
}
