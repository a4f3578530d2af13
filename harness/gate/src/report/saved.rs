//! `bless --from report.json`: a saved run (e.g. the artifact of a CI run) read back, so that the
//! figures people reviewed are the figures that get blessed.

use std::path::Path;

use serde::Deserialize;

use crate::baseline::bless::{BlessError, BlessOptions, BlessOutcome, bless};
use crate::baseline::compare::RunResults;
use crate::baseline::error::BaselineError;
use crate::baseline::fingerprint::Fingerprint;
use crate::report::{self, Report};

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
    if let Some(found) = version.filter(|&v| v > u64::from(report::SCHEMA_VERSION)) {
        return Err(BaselineError::ReportNewerSchema {
            path: path.to_path_buf(),
            found,
            supported: report::SCHEMA_VERSION,
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
    value["totals"] = serde_json::json!(crate::outcome::Totals::default());
    value
}

/// Blesses from a saved report. The suites that defined its trials are unknown, so trials whose
/// scenario is gone are not removed here (run the gate to do that).
pub fn bless_from_report(
    path: &Path,
    options: &BlessOptions<'_>,
) -> Result<BlessOutcome, BlessError> {
    let saved = load_report(path)?;
    let run = RunResults {
        judged: None,
        records: &saved.report.trials,
        defined: None,
        fingerprint: &saved.fingerprint,
        control: saved.report.control.as_ref(),
    };
    bless(std::slice::from_ref(&run), options)
}
