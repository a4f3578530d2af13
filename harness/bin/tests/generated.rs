//! The generated documents are current: `docs/report.schema.json` from report.json's types.
//! `cargo xtask docs` rewrites them (`GDS_GATE_UPDATE_DOCS=1` here); without it, a stale one
//! fails with the command to run.

pub mod support;

use support::repo;

/// Compares `path` (relative to the repository root) with what it should hold; rewrites it when
/// `GDS_GATE_UPDATE_DOCS` is set.
fn check(path: &str, expected: &str) {
    let file = repo().join(path);
    let found = std::fs::read_to_string(&file).unwrap_or_default();
    if found == expected {
        return;
    }
    if std::env::var_os("GDS_GATE_UPDATE_DOCS").is_some_and(|value| value != "0") {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, expected).unwrap();
        eprintln!("updating: {path}");
        return;
    }
    let first = found
        .lines()
        .zip(expected.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(found.lines().count().min(expected.lines().count()));
    panic!(
        "{path} is stale (first difference at line {}): run `cargo xtask docs` and commit it\n\
         --- in the file\n{}\n--- generated\n{}",
        first + 1,
        found.lines().nth(first).unwrap_or("(end of file)"),
        expected.lines().nth(first).unwrap_or("(end of file)"),
    );
}

#[test]
fn report_schema_is_current() {
    check(
        gds_gate::report::schema::PATH,
        &gds_gate::report::schema::report_schema_text(),
    );
}
