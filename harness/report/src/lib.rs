//! gds-report: what a run tells. Its reports under the output directory: `report.json` (the
//! record, versioned), `junit.xml` (for CI test views) and `summary.md` (for people; also
//! appended to `$GITHUB_STEP_SUMMARY`), each written atomically; GitHub annotations; the merge
//! of many runs' reports into one; a saved report read back for bless. Every sink tells each
//! trial's outcome as `gds-baseline` decided it.

pub mod annotations;
pub mod buffers;
pub mod direct;
mod junit;
pub mod libtest;
mod loads;
mod markdown;
pub mod merge;
pub mod rehearsal;
pub mod saved;
pub mod schema;

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use gds_baseline::compare::TrialJudgement;
use gds_baseline::message::{Explainer, Scope, Words};
pub use gds_baseline::outcome::Totals;
use gds_model::fsutil::write_atomically;
use gds_model::record::TrialRecord;
use gds_model::timing::RunTime;
use gds_model::units::Rate;
use gds_runner::host::HostFacts;
use gds_runner::prepare::PreparedFile;

/// Bump when a field changes meaning or disappears; readers refuse other versions.
/// 2: a trial's `status` is its outcome (`passed`, `failed`, `slower`, `costlier`,
/// `path-changed`, `checksum-changed`, `missing`, `ignored`), its own checks' result moved to
/// `checks`; `totals` counts each outcome once (`changed` became `path_changed`,
/// `checksum_changed` and `missing`).
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    pub schema_version: u32,
    pub gate_version: String,
    pub started_at: String,
    pub duration_seconds: f64,
    /// Where the wall time went, trial by trial, and the gate's share of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<RunTime>,
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
    pub fingerprint: Option<gds_baseline::Fingerprint>,
    /// The comparison with the runner's baseline.
    #[serde(default)]
    pub baseline: Option<gds_baseline::Comparison>,
    /// The runner's control read at the start of the run (see `control`); a bless records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<gds_baseline::control::ControlReading>,
    /// Each GPU reader's trial beside the `posix` trial of this run over the same file and
    /// reads: their ratio, paths, and whether the GPU reader is slower than POSIX by more than
    /// the tolerance (a warning on its trial). See [`direct`].
    #[serde(default)]
    pub direct_vs_posix: Vec<direct::DirectVsPosix>,
    /// Each trial reading into a registered device buffer beside the one of the same reads into
    /// an unregistered buffer, and their ratio. See [`buffers`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registered_vs_unregistered: Vec<buffers::RegisteredVsUnregistered>,
    /// A rehearsal's comparison of two stacks (`gds-gate rehearse`); absent from a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rehearsal: Option<rehearsal::Rehearsal>,
    /// The run's selection flags, which the bless commands in its words carry. Not stored: the
    /// words in report.json already hold them, and a report read back prints commands without.
    #[serde(skip)]
    #[schemars(skip)]
    pub scope: Scope,
    /// The unit its sinks show rates in (`--units`); report.json keeps GB/s. Not stored: a
    /// report read back is shown in the unit of the command that reads it.
    #[serde(skip)]
    #[schemars(skip)]
    pub rate: Rate,
}

impl Report {
    /// The run's trials side by side, once they ran and before any sink: GDS against POSIX
    /// ([`direct::pairs`] into `direct_vs_posix`, each warning on its GPU trial by
    /// [`direct::warn`]), and registered against unregistered buffers ([`buffers::pairs`]).
    pub fn compare_within_run(
        &mut self,
        topology: &gds_model::topology::HostTopology,
        tolerance: f64,
    ) {
        self.direct_vs_posix = direct::pairs(&self.trials, topology, tolerance);
        direct::warn(&mut self.trials, &self.direct_vs_posix, self.rate);
        self.registered_vs_unregistered = buffers::pairs(&self.trials);
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SuiteRef {
    pub name: String,
    pub path: PathBuf,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
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

impl Report {
    /// The words of this run's baseline judgements, when it was compared with a baseline.
    pub fn explainer(&self) -> Option<Explainer<'_>> {
        Some(Explainer {
            comparison: self.baseline.as_ref()?,
            records: &self.trials,
            fingerprint: self.fingerprint.as_ref(),
            scope: &self.scope,
            rate: self.rate,
        })
    }

    /// A baseline trial's judgement in words.
    pub fn words(&self, judged: &TrialJudgement) -> Option<Words> {
        Some(self.explainer()?.words(judged))
    }

    /// Why a trial's outcome fails the run, in words: its own reason and details when its own
    /// checks failed, else its baseline judgement's; `None` for a trial that does not fail.
    /// Every sink words a failure with this.
    pub fn failure_of(&self, trial: &TrialRecord) -> Option<Words> {
        if !trial.status.is_failure() {
            return None;
        }
        let judged = self.baseline.as_ref().and_then(|c| c.get(&trial.name));
        match judged.and_then(|judged| self.words(judged)) {
            Some(words) if trial.status != gds_baseline::outcome::Outcome::Failed => Some(words),
            _ => {
                let reason = trial.reason.clone().unwrap_or_else(|| "failed".into());
                let message = match trial.details.as_deref().filter(|d| !d.trim().is_empty()) {
                    Some(details) => format!("{reason}\n{details}"),
                    None => reason.clone(),
                };
                Some(Words {
                    headline: reason,
                    message,
                })
            }
        }
    }

    /// Baseline trials that no record of this run has and that fail it (no suite defines them
    /// any more): counted as `missing`, shown under the baseline.
    pub fn missing_without_record(&self) -> impl Iterator<Item = &TrialJudgement> {
        self.baseline
            .iter()
            .flat_map(|c| &c.trials)
            .filter(|judged| {
                matches!(
                    judged.judgement,
                    gds_baseline::Judgement::MissingTrial { .. }
                ) && !self.trials.iter().any(|t| t.name == judged.trial)
            })
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
    let json = with_words(report)
        .and_then(|value| to_json(&value))
        .map_err(|error| ReportError {
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

/// The report as JSON, each baseline judgement with its `headline` and `message` for readers
/// of the file (reading it back ignores them: they are rendered from the judgement).
fn with_words(report: &Report) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(report)?;
    let judged = value
        .pointer_mut("/baseline/trials")
        .and_then(serde_json::Value::as_array_mut);
    if let (Some(judged), Some(comparison)) = (judged, &report.baseline) {
        for (value, trial) in judged.iter_mut().zip(&comparison.trials) {
            if let (Some(object), Some(words)) = (value.as_object_mut(), report.words(trial)) {
                object.insert("headline".into(), words.headline.into());
                object.insert("message".into(), words.message.into());
            }
        }
    }
    Ok(value)
}

/// A report as its JSON file holds it: pretty, with no raw control character (see
/// [`gds_runner::escape::json`]).
pub(crate) fn to_json(value: &impl Serialize) -> serde_json::Result<String> {
    serde_json::to_string_pretty(value).map(|text| gds_runner::escape::json(&text))
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
