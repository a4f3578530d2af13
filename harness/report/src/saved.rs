//! `bless --from report.json`: a saved run (e.g. the artifact of a CI run) read back, so that the
//! figures people reviewed are the figures that get blessed.

use std::path::Path;

use serde::Deserialize;

use crate::{Report, SCHEMA_VERSION};
use gds_baseline::bless::{BlessError, BlessOptions, BlessOutcome, bless};
use gds_baseline::compare::RunResults;
use gds_baseline::error::BaselineError;
use gds_baseline::fingerprint::Fingerprint;

/// A report and what the baseline needs from it beyond `Report`'s fields.
#[derive(Clone, Debug)]
pub struct SavedRun {
    pub report: Report,
    /// The runner the run was for, when the report records it (`runner`).
    pub runner: Option<String>,
    /// The report's `fingerprint` if it has one; otherwise what `host` tells (driver, kernel),
    /// the rest unknown, which bless treats as "not observed", not as changed.
    pub fingerprint: Fingerprint,
}

/// Optional fields a report may carry; read from the same text so that this works before and
/// after `Report` grows them.
#[derive(Deserialize)]
struct Extras {
    #[serde(default)]
    runner: Option<String>,
    #[serde(default)]
    fingerprint: Option<Fingerprint>,
}

pub fn load_report(path: &Path) -> Result<SavedRun, BaselineError> {
    let text = std::fs::read_to_string(path).map_err(|source| BaselineError::ReportRead {
        path: path.to_path_buf(),
        source,
    })?;
    let corrupt = |error: serde_json::Error| BaselineError::ReportCorrupt {
        path: path.to_path_buf(),
        line: error.line().max(1),
        column: error.column().max(1),
        message: error.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(corrupt)?;
    let version = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64);
    if let Some(found) = version.filter(|&v| v > u64::from(SCHEMA_VERSION)) {
        return Err(BaselineError::ReportNewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    // The text, where it can be, so that an error has its line and column.
    let report: Report = if version == Some(1) {
        serde_json::from_value(upgrade_from_1(value)).map_err(corrupt)?
    } else {
        serde_json::from_str(&text).map_err(corrupt)?
    };
    let extras: Extras = serde_json::from_str(&text).map_err(corrupt)?;
    let fingerprint = extras
        .fingerprint
        .unwrap_or_else(|| Fingerprint::from_host(&report.host));
    Ok(SavedRun {
        report,
        runner: extras.runner,
        fingerprint,
    })
}

/// A report of schema 1 read as schema 2: its trials' `status` was their own checks, and its
/// totals had no per-outcome counts (a bless needs neither).
fn upgrade_from_1(mut value: serde_json::Value) -> serde_json::Value {
    if let Some(trials) = value.get_mut("trials").and_then(|t| t.as_array_mut()) {
        for trial in trials {
            if let Some(status) = trial.get("status").cloned() {
                trial["checks"] = status;
            }
        }
    }
    value["totals"] = serde_json::json!(gds_baseline::outcome::Totals::default());
    value
}

impl SavedRun {
    /// Blesses from this saved run. The suites that defined its trials are unknown, so trials
    /// whose scenario is gone are not removed here (run the gate to do that).
    pub fn bless(&self, options: &BlessOptions<'_>) -> Result<BlessOutcome, BlessError> {
        let run = RunResults {
            judged: None,
            records: &self.report.trials,
            defined: None,
            fingerprint: &self.fingerprint,
            control: self.report.control.as_ref(),
        };
        bless(std::slice::from_ref(&run), options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_baseline::bless::Filter;
    use gds_baseline::file::{self, Loaded, Provenance};
    use gds_baseline::fixtures::{self, BASE, CHECKSUM};

    #[test]
    fn bless_from_a_saved_report() {
        let dir = tempfile::tempdir().unwrap();
        let baseline_path = file::path_for(&dir.path().join("baselines"), "r1").unwrap();
        let records = vec![
            fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
            fixtures::ignored("s::gpu"),
        ];
        let host = gds_runner::host::HostFacts::probe();
        let report = serde_json::json!({
            "schema_version": crate::SCHEMA_VERSION,
            "gate_version": "0.1.0",
            "started_at": "2026-03-01T12:00:00Z",
            "duration_seconds": 12.5,
            "command": ["gds-gate"],
            "host": host,
            "data_dir": "target/gds-gate/data",
            "suites": [],
            "data": [],
            "trials": &records,
            "totals": gds_baseline::outcome::Totals::of(&records, 0, 0),
            "notes": [],
            "runner": "r1",
        });
        let report_path = baseline_path.with_file_name("report.json");
        std::fs::create_dir_all(report_path.parent().unwrap()).unwrap();
        std::fs::write(&report_path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
        let run = load_report(&report_path).unwrap();
        assert_eq!(run.runner.as_deref(), Some("r1"));
        assert_eq!(
            run.fingerprint.kernel.as_deref(),
            Some(host.kernel.as_str())
        );
        let filter = Filter::default();
        let outcome = run
            .bless(&BlessOptions {
                runner: "r1",
                baseline_path: &baseline_path,
                scope: &gds_baseline::message::Scope::default(),
                rate: gds_model::units::Rate::Gb,
                filter: &filter,
                accept_fingerprint: false,
                remove_missing: false,
                refresh: false,
                ci: false,
                provenance: Provenance {
                    blessed_at: "2026-03-01T12:00:00Z".into(),
                    gate_version: "0.1.0".into(),
                    host: "gpu01".into(),
                    revision: Some("abc1234".into()),
                },
            })
            .unwrap();
        assert!(outcome.written, "{outcome}");
        let Loaded::Present(baseline) = file::read(&baseline_path).unwrap() else {
            panic!()
        };
        assert_eq!(baseline.trials.keys().collect::<Vec<_>>(), ["s::a"]);
        assert_eq!(baseline.provenance.revision.as_deref(), Some("abc1234"));
        // A report from a newer gate, and a file that is not a report, are clear errors.
        let newer = report.to_string().replace(
            &format!("\"schema_version\":{}", crate::SCHEMA_VERSION),
            "\"schema_version\":9",
        );
        std::fs::write(&report_path, newer).unwrap();
        let shown = load_report(&report_path).unwrap_err().to_string();
        assert!(shown.contains("report has schema_version 9"), "{shown}");
        // JSON cannot spell NaN or infinity, and a number past f64 is refused where it stands: a
        // saved report's figures are finite by the time a bless uses them.
        let pretty = serde_json::to_string_pretty(&report).unwrap();
        let line = pretty.lines().position(|l| l.contains("2.05")).unwrap() + 1;
        std::fs::write(&report_path, pretty.replacen("2.05", "2.05e999", 1)).unwrap();
        let shown = load_report(&report_path).unwrap_err().to_string();
        assert!(
            shown.contains(&format!("report.json:{line}:"))
                && shown.contains("number out of range"),
            "{shown}"
        );
        std::fs::write(&report_path, "{\"schema_version\": 2,\n \"trials\": 3}").unwrap();
        let shown = load_report(&report_path).unwrap_err().to_string();
        assert!(shown.contains("report.json:"), "{shown}");
        assert!(shown.contains("not a usable gds-gate report"), "{shown}");
    }
}
