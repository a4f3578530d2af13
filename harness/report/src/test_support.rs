//! Test fixtures of this crate: a report around fixture records.

use gds_model::record::TrialRecord;

/// A report of `trials` on a made-up host, with no baseline: the renderers' input.
pub fn report(trials: Vec<TrialRecord>) -> crate::Report {
    let totals = gds_baseline::outcome::Totals::of(&trials, 0, 0);
    crate::Report {
        schema_version: crate::SCHEMA_VERSION,
        gate_version: "0.0.0".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        duration_seconds: 1.0,
        time: None,
        command: vec!["gds-gate".into()],
        host: gds_runner::host::HostFacts {
            hostname: "gpu01".into(),
            kernel: "6.8.0".into(),
            cpus: 2,
            memory_bytes: None,
            gpu_unavailable: None,
            nvidia_driver_version: None,
        },
        data_dir: "data".into(),
        suites: Vec::new(),
        data: Vec::new(),
        trials,
        totals,
        notes: Vec::new(),
        doctor: Vec::new(),
        runner: None,
        fingerprint: None,
        baseline: None,
        control: None,
    }
}
