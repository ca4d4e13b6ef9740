//! The resolver layer (`graphql/src/query`) is shared by REST, GraphQL and MCP, so it speaks
//! none of their protocols: no HTTP framework, no HTTP types, no GraphQL types. The front ends
//! map its answers and errors onto their own (ARCHITECTURE.md, "The path of a request").

use std::path::Path;

/// Names that would tie the layer to a front end.
const FORBIDDEN: [&str; 5] = ["axum", "async_graphql", "hyper", "http::", "rmcp"];

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

#[test]
fn the_query_layer_knows_no_front_end() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/query"),
        &mut files,
    );
    assert!(files.len() > 10, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in FORBIDDEN {
                assert!(
                    !code.contains(name),
                    "{}:{}: {name} in the query layer: {line}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}

/// Every read of datasets and records goes through the resolver layer (issue 14): the site
/// (pages, guides) never touches the store's tables itself, and the store module only
/// connects, migrates, locks, removes and collects garbage.
#[test]
fn the_site_and_the_store_read_no_records() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
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
