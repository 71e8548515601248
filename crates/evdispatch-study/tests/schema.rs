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

/// `results.json` files committed before the claims grew new fields (such
/// as `rounds`) still read as [`Results`] with typed claims, and every field
/// the schema requires of a claim is there.
#[test]
fn committed_older_results_still_read_and_validate() {
    use std::io::Read as _;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results");
    let dir = root.join("2026-11-22-study-full");
    let text = match std::fs::read_to_string(dir.join("results.json")) {
        Ok(t) => t,
        Err(_) => {
            let gz = std::fs::File::open(dir.join("results.json.gz"))
                .expect("results/2026-11-22-study-full holds results.json or results.json.gz");
            let mut t = String::new();
            flate2::read::GzDecoder::new(gz)
                .read_to_string(&mut t)
                .unwrap();
            t
        }
    };
    let results: evdispatch_study::results::Results = serde_json::from_str(&text).unwrap();
    assert!(!results.claims.is_empty());
    let schema = evdispatch_study::results::schema();
    let required: Vec<&str> = schema["$defs"]["ClaimEntry"]["required"]
        .as_array()
        .expect("the schema lists a claim's required fields")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(required.contains(&"verdict"));
    for c in &results.claims {
        let entry: evdispatch_study::results::ClaimEntry =
            serde_json::from_value(c.clone()).unwrap_or_else(|e| panic!("claim {}: {e}", c["id"]));
        for k in &required {
            assert!(c.get(k).is_some(), "claim {} lacks {k}", entry.id);
        }
    }
}
