//! Walls inside a crate, which Cargo cannot keep (ARCHITECTURE.md, "The map"): the front ends
//! of `odqs` import no other front end, the state no front end, the resolver's floors nothing
//! above them, and only the resolver and the importer read the store's tables. (Between crates
//! the walls are the `Cargo.toml` files: the resolver depends on no HTTP, GraphQL or MCP crate.)

use std::path::Path;

use crate::helpers::sources::files;

/// Every read of datasets and records goes through the resolver layer: the site
/// (pages, guides) never touches the store's tables itself, and the store module only
/// connects, migrates, locks, removes and collects garbage.
#[test]
fn the_site_and_the_store_read_no_records() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in files(&root.join("src/site"), ".rs") {
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
    for file in files(&root.join("src/store"), ".rs") {
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

/// The code of a file without its comments and its test module: what it imports at run time.
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file under `dir` (relative to the workspace), with its code.
fn codes(dir: &str) -> Vec<(std::path::PathBuf, String)> {
    let files = files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), ".rs");
    assert!(!files.is_empty(), "{dir} has no sources");
    files.into_iter().map(|f| (f.clone(), code(&f))).collect()
}

/// REST, the GraphQL endpoint, MCP and the OpenAPI document stand side by side: what two of
/// them share lives on a floor below (HTTP, auth, guides, templates), and only the route table
/// mounts them all. Neither the site nor auth imports a front end.
#[test]
fn no_front_end_imports_another() {
    let fronts = ["rest", "graphql", "mcp", "openapi"];
    for front in fronts {
        for (file, code) in codes(&format!("src/api/{front}")) {
            for other in fronts.iter().filter(|o| **o != front) {
                let path = format!("crate::api::{other}");
                assert!(!code.contains(&path), "{}: {path}", file.display());
            }
        }
    }
    for dir in [
        "src/site",
        "src/auth",
        "src/guides",
        "src/http",
        "src/templates",
    ] {
        for (file, code) in codes(dir) {
            assert!(!code.contains("crate::api::"), "{}", file.display());
            assert!(!code.contains("crate::routes"), "{}", file.display());
        }
    }
}

/// The application state is a leaf: it holds the domain's services, and imports no front end,
/// no handler and no router.
#[test]
fn the_state_imports_no_front_end() {
    let code = code(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/state.rs"));
    for name in [
        "crate::api",
        "crate::site",
        "crate::routes",
        "crate::app",
        "crate::auth::http",
    ] {
        assert!(!code.contains(name), "src/state.rs imports {name}");
    }
}

/// The resolver's floors, lowest first: a module imports only its own floor and those below,
/// by the floor's path or by a short path `lib.rs` re-exports from it.
#[test]
fn the_resolvers_floors_import_nothing_above_them() {
    let floors: [(&str, &[&str]); 5] = [
        (
            "dataset",
            &["dataset", "Dataset", "DatasetSchema", "packed", "schema"],
        ),
        (
            "request",
            &[
                "request",
                "params",
                "AggParams",
                "ExportFormat",
                "ExportParams",
                "FilterParams",
                "Paging",
                "RecordParams",
                "SortParam",
                "AggQuery",
                "ExportQuery",
                "RecordQuery",
            ],
        ),
        ("answer", &["answer", "views"]),
        ("engine", &["engine", "memory"]),
        (
            "resolver",
            &[
                "resolver", "Resolver", "cache", "catalog", "export", "facts", "hex",
            ],
        ),
    ];
    let imports = |code: &str, name: &str| {
        let path = format!("crate::{name}");
        code.match_indices(&path).any(|(at, _)| {
            let next = code[at + path.len()..].chars().next();
            !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let roots = ["error", "cost", "log_text", "operators", "dates"];
    let mut levels: Vec<(String, usize)> = roots.iter().map(|r| (r.to_string(), 0)).collect();
    levels.extend(
        floors
            .iter()
            .enumerate()
            .map(|(i, (f, _))| (f.to_string(), i + 1)),
    );
    for (dir, level) in levels {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("query/src/{dir}"));
        let files = if path.is_dir() {
            codes(&format!("query/src/{dir}"))
        } else {
            let file = path.with_extension("rs");
            vec![(file.clone(), code(&file))]
        };
        for (file, code) in files {
            for (above, names) in floors.iter().skip(level) {
                if *above == dir {
                    continue;
                }
                for name in *names {
                    assert!(
                        !imports(&code, name),
                        "{}: crate::{name} ({above})",
                        file.display()
                    );
                }
            }
        }
    }
}

/// One concept per file, and a file a reader can hold: no source file outside the tests is
/// over 600 lines.
#[test]
fn no_source_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    for dir in [
        "src",
        "query/src",
        "graphql/src",
        "entity/src",
        "migration/src",
        "benches",
    ] {
        for file in files(&root.join(dir), ".rs") {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > 600 {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(long.is_empty(), "over 600 lines: {long:?}");
}

/// SQL lives under `query/src/engine/store` (the engine seam): the resolver decides what to
/// read and the store's modules build and run the statements, so a change to how records are
/// stored touches `engine/store` alone. The resolver may hold a connection to hand down, and
/// nothing that writes or runs a statement.
#[test]
fn the_resolver_builds_no_sql() {
    const STATEMENT_WORDS: &[&str] = &[
        "SELECT ",
        "INSERT ",
        "UPDATE ",
        "DELETE ",
        "sqlx::",
        "Statement",
        "Sql::new",
        "query_all",
        "query_one",
        "execute",
        "Entity::find",
        "ActiveModel",
        "DatabaseBackend",
    ];
    for (file, code) in codes("query/src/resolver") {
        let found: Vec<&&str> = STATEMENT_WORDS
            .iter()
            .filter(|word| code.contains(*word))
            .collect();
        assert!(
            found.is_empty(),
            "{}: {found:?} belongs in engine/store",
            file.display()
        );
    }
}
