//! The doctor's real collection on whatever host runs the tests, with its probes answered by
//! workers of the gds-gate binary (the parsers and checks are tested in the gate crate).

use std::path::PathBuf;

use gds_gate::doctor::{self, CufileProbe, DoctorOptions};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Collects this host's facts (no GPU needed) and checks they make valid JSON that replays.
/// For captures on another machine: `GDS_GATE_DOCTOR_CAPTURE=FILE` writes the facts (and the
/// table beside them), `GDS_GATE_DOCTOR_SUITE` and `GDS_GATE_DATA_DIR` choose what is judged.
#[test]
fn collects_this_host_without_panicking() {
    let scratch = tempfile::tempdir().unwrap();
    let suite = std::env::var("GDS_GATE_DOCTOR_SUITE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("scenarios/smoke.yaml"));
    let data_dir = std::env::var("GDS_GATE_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| scratch.path().join("data"));
    // The probes run in workers of the binary under test.
    gds_gate::job::set_worker_program(env!("CARGO_BIN_EXE_gds-gate").into());
    let mut opts = DoctorOptions::new(vec![suite], data_dir);
    opts.cufile_probe = CufileProbe::OpenDriver;
    let facts = doctor::collect(&opts);
    let json = doctor::facts_json(&facts);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["schema_version"], 1);
    let (report, code) = doctor::replay(&json, &opts).unwrap();
    assert_eq!(report.facts, facts);
    assert!(code <= 1);
    if let Ok(path) = std::env::var("GDS_GATE_DOCTOR_CAPTURE") {
        std::fs::write(&path, &json).unwrap();
        std::fs::write(format!("{path}.table.txt"), doctor::table(&report)).unwrap();
        std::fs::write(format!("{path}.report.json"), doctor::json(&report)).unwrap();
    }
    println!("{}", doctor::table(&report));
}
