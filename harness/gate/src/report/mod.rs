//! Reports of a run under the output directory: `report.json` (the record, versioned),
//! `junit.xml` (for CI test views) and `summary.md` (for people; also appended to
//! `$GITHUB_STEP_SUMMARY`). Every file is written atomically.

pub mod annotations;
mod junit;
mod markdown;
pub mod merge;
pub mod saved;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::baseline::{Comparison, Severity};
use crate::host::HostFacts;
use crate::prepare::PreparedFile;
use gds_model::fsutil::write_atomically;
use gds_model::record::{Status, TrialRecord};

/// Bump when a field changes meaning or disappears; readers refuse newer versions.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub gate_version: String,
    pub started_at: String,
    pub duration_seconds: f64,
    pub command: Vec<String>,
    pub host: HostFacts,
    pub data_dir: PathBuf,
    pub suites: Vec<SuiteRef>,
    #[serde(default)]
    pub data: Vec<PreparedFileRecord>,
    pub trials: Vec<TrialRecord>,
    pub totals: Totals,
    /// Plain statements about what did not run and why.
    pub notes: Vec<String>,
    /// The doctor's short form, taken before the trials: what on this host stands in the way.
    #[serde(default)]
    pub doctor: Vec<String>,
    /// The runner profile the run was judged as (its baseline file's name).
    #[serde(default)]
    pub runner: Option<String>,
    /// What the runner is: GPU, driver, CUDA, libcufile, KvikIO, nvidia-fs, kernel, data dir.
    #[serde(default)]
    pub fingerprint: Option<crate::baseline::Fingerprint>,
    /// The comparison with the runner's baseline.
    #[serde(default)]
    pub baseline: Option<crate::baseline::Comparison>,
    /// The runner's control read at the start of the run (see `control`); a bless records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<crate::control::ControlReading>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteRef {
    pub name: String,
    pub path: PathBuf,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PreparedFileRecord {
    pub path: PathBuf,
    pub size: u64,
    pub action: String,
    pub seconds: f64,
}

impl From<&PreparedFile> for PreparedFileRecord {
    fn from(file: &PreparedFile) -> Self {
        PreparedFileRecord {
            path: file.path.clone(),
            size: file.size,
            action: file.action.clone(),
            seconds: file.seconds,
        }
    }
}

/// Trial counts. `passed`, `failed` and `ignored` are each trial's own outcome; `slower` and
/// `changed` count the trials (and missing baseline trials) that fail against the baseline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
    pub filtered_out: usize,
    /// Slower than the baseline, confirmed: exit 3.
    #[serde(default)]
    pub slower: usize,
    /// Another path or checksum than the baseline's, or in the baseline but not measured: exit 1.
    #[serde(default)]
    pub changed: usize,
}

impl Totals {
    pub fn of(trials: &[TrialRecord], filtered_out: usize) -> Totals {
        let count = |status| trials.iter().filter(|trial| trial.status == status).count();
        Totals {
            passed: count(Status::Passed),
            failed: count(Status::Failed),
            ignored: count(Status::Ignored),
            filtered_out,
            slower: 0,
            changed: 0,
        }
    }

    /// Counts the failures against the baseline.
    pub fn count_baseline(&mut self, comparison: &Comparison) {
        let count = |severity| {
            comparison
                .trials
                .iter()
                .filter(|t| t.judgement.severity() == severity)
                .count()
        };
        self.slower = count(Severity::Regression);
        self.changed = count(Severity::Failure);
    }

    /// The run's one-word outcome, as summary.md's first line says it.
    pub fn outcome(&self) -> &'static str {
        if self.failed > 0 || self.changed > 0 {
            "FAILED"
        } else if self.slower > 0 {
            "SLOWER than the baseline"
        } else if self.passed == 0 {
            "NOTHING RAN"
        } else {
            "passed"
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write report `{}`; check that --out (GDS_GATE_OUT) names a writable directory", path.display())]
pub struct ReportError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes the three reports into `out` and returns their paths; `extra` is appended to the
/// Markdown summary (the baseline comparison and plot links).
pub fn write_all(out: &Path, report: &Report, extra: &str) -> Result<Vec<PathBuf>, ReportError> {
    let summary = markdown::render(report) + extra;
    let json = serde_json::to_string_pretty(report).map_err(|error| ReportError {
        path: out.join("report.json"),
        source: error.into(),
    })?;
    let files = [
        ("report.json", json + "\n"),
        ("junit.xml", junit::render(report)),
        ("summary.md", summary.clone()),
    ];
    write_report_files(out, files, &summary)
}

/// Writes each `(name, contents)` into `out` atomically and appends `summary` to
/// `$GITHUB_STEP_SUMMARY` when that is set.
pub(crate) fn write_report_files(
    out: &Path,
    files: [(&str, String); 3],
    summary: &str,
) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    for (name, contents) in files {
        let path = out.join(name);
        write_atomically(&path, contents.as_bytes()).map_err(|source| ReportError {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    if let Some(step_summary) =
        std::env::var_os("GITHUB_STEP_SUMMARY").filter(|value| !value.is_empty())
    {
        let path = PathBuf::from(step_summary);
        append(&path, summary.as_bytes()).map_err(|source| ReportError { path, source })?;
    }
    Ok(written)
}

fn append(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(contents)
}
