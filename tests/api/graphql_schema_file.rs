//! `graphql/schema.graphql` is the schema the server serves, checked in so clients and reviews
//! can read it. This test fails when the two differ; regenerate the file with
//! `ODQS_UPDATE_SCHEMA=1 cargo test --test api graphql_schema_file`.

use std::path::Path;

#[test]
fn exported_schema_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("graphql/schema.graphql");
    let sdl = graphql::sdl();
    if std::env::var_os("ODQS_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &sdl).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == sdl,
        "graphql/schema.graphql differs from the schema the code builds; regenerate it with \
         `ODQS_UPDATE_SCHEMA=1 cargo test --test api graphql_schema_file` and commit it.\n\
         --- the code's schema:\n{sdl}"
    );
}
