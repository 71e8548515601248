//! `results.schema.json` (at the crate's root) is the JSON Schema of
//! `results.json`, generated from the types that write it: this test
//! regenerates it and fails when the committed file differs, so it cannot go
//! stale. After changing the types, run it with `EVD_WRITE_SCHEMA=1` to
//! rewrite the file, and commit it.

use std::path::Path;

#[test]
fn the_committed_schema_is_the_one_the_types_give() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("results.schema.json");
    let now = serde_json::to_string_pretty(&evdispatch_study::results::schema()).unwrap() + "\n";
    if std::env::var_os("EVD_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "{} is not the schema of the results types: run `EVD_WRITE_SCHEMA=1 cargo test --release -p evdispatch-study --test schema` and commit the file",
        path.display()
    );
}
