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
