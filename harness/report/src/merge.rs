//! `report --merge DIR...`: one report over many runs (a CI matrix, a Slurm job array), written
//! as `merged.json`, `merged-junit.xml` and `merged-summary.md`.
//!
//! Each run's trials keep their names behind the run's label (`h200-nvme/smoke::cold-read[...]`),
//! the label being the run's runner profile, else its host name. The merged report is a `Report`
//! plus `runs`, one entry per merged run with its own host, totals, notes and baseline comparison,
//! so that the same renderers draw it and tools that read `report.json` read it too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Report, ReportError, SCHEMA_VERSION, Totals, junit, markdown};
use gds_baseline::{self as baseline, Comparison, Fingerprint};
use gds_model::timing::RunTime;
use gds_model::units::Rate;
use gds_runner::host::HostFacts;

pub const MERGED_JSON: &str = "merged.json";
pub const MERGED_JUNIT: &str = "merged-junit.xml";
pub const MERGED_SUMMARY: &str = "merged-summary.md";

/// The merged runs as one report (`report`, flattened into the same JSON object) and each run's
/// own facts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedReport {
    #[serde(flatten)]
    pub report: Report,
    /// In the order given on the command line.
    pub runs: Vec<MergedRun>,
}

/// One merged run: what its trials are prefixed with and what its report said about itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedRun {
    /// The prefix of its trials' names: the runner profile, else the host name (with the report's
    /// directory added when two runs would otherwise share it).
    pub label: String,
    /// The `report.json` it was read from.
    pub source: PathBuf,
    pub runner: Option<String>,
    pub host: HostFacts,
    pub gate_version: String,
    pub started_at: String,
    pub duration_seconds: f64,
    pub command: Vec<String>,
    pub totals: Totals,
    pub notes: Vec<String>,
    pub fingerprint: Option<Fingerprint>,
    pub baseline: Option<Comparison>,
    /// The exit status this run's gate chose (or would have): see `gds-gate --help`.
    pub exit_code: u8,
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(
        "no reports to merge; give the directories that hold each run's report.json, e.g. `cargo xtask gds-gate report --merge results/*`"
    )]
    NoInputs,
    #[error(
        "cannot read `{}`; each path given to --merge must be a gate's --out directory (holding report.json) or a report.json; a run that left none did not finish, so look at its log",
        path.display()
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{}` is not a gds-gate report.json; pass the --out directory of a gate run",
        path.display()
    )]
    NotAReport {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "`{}` has report schema version {found}, and this gate (version {this_gate}) reads version {expected}; merge it with the gate version that wrote it ({written_by}), or re-run that runner with this one",
        path.display()
    )]
    SchemaVersion {
        path: PathBuf,
        found: u64,
        expected: u32,
        written_by: String,
        this_gate: &'static str,
    },
    #[error("`{}` is given twice; pass each run's directory once", path.display())]
    Duplicate { path: PathBuf },
    #[error(transparent)]
    Write(#[from] ReportError),
}

/// What [`merge_dirs`] made and where it wrote it.
#[derive(Clone, Debug)]
pub struct Merged {
    pub report: MergedReport,
    pub written: Vec<PathBuf>,
}

/// Reads each input's report, merges them and writes the three merged reports into `out`; the
/// Markdown is also appended to `$GITHUB_STEP_SUMMARY` when that is set.
/// The merged summary shows rates in `rate`.
pub fn merge_dirs(inputs: &[PathBuf], out: &Path, rate: Rate) -> Result<Merged, MergeError> {
    let reports = read_reports(inputs)?;
    let mut report = merge(&reports)?;
    report.report.rate = rate;
    let written = write_merged(out, &report)?;
    Ok(Merged { report, written })
}

/// `DIR/report.json` for a directory, the path itself for a file.
pub fn report_path(input: &Path) -> PathBuf {
    if input.is_dir() {
        input.join("report.json")
    } else {
        input.to_path_buf()
    }
}

/// Reads every input's report, refusing any of another schema version.
pub fn read_reports(inputs: &[PathBuf]) -> Result<Vec<(PathBuf, Report)>, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::NoInputs);
    }
    inputs.iter().map(|input| read_report(input)).collect()
}

fn read_report(input: &Path) -> Result<(PathBuf, Report), MergeError> {
    let path = report_path(input);
    let text = std::fs::read_to_string(&path).map_err(|source| MergeError::Read {
        path: path.clone(),
        source,
    })?;
    let not_a_report = |source| MergeError::NotAReport {
        path: path.clone(),
        source,
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(not_a_report)?;
    // The version first: a report of another version may not even deserialise, and "field X
    // missing" would hide the real problem.
    let found = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| {
            not_a_report(<serde_json::Error as serde::de::Error>::missing_field(
                "schema_version",
            ))
        })?;
    if found != u64::from(SCHEMA_VERSION) {
        let written_by = value
            .get("gate_version")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("unknown");
        return Err(schema_error(&path, found, written_by));
    }
    let report: Report = serde_json::from_value(value).map_err(not_a_report)?;
    Ok((path, report))
}

fn schema_error(path: &Path, found: u64, written_by: &str) -> MergeError {
    MergeError::SchemaVersion {
        path: path.to_path_buf(),
        found,
        expected: SCHEMA_VERSION,
        written_by: written_by.to_string(),
        this_gate: env!("CARGO_PKG_VERSION"),
    }
}

/// Merges reports read from the paths given with them (used in labels and errors). Totals are
/// summed; the duration is the wall-clock span from the first start to the last end.
pub fn merge(reports: &[(PathBuf, Report)]) -> Result<MergedReport, MergeError> {
    let Some((_, first)) = reports.first() else {
        return Err(MergeError::NoInputs);
    };
    let mut seen = BTreeSet::new();
    for (path, report) in reports {
        if !seen.insert(path.canonicalize().unwrap_or_else(|_| path.clone())) {
            return Err(MergeError::Duplicate { path: path.clone() });
        }
        if report.schema_version != SCHEMA_VERSION {
            return Err(schema_error(
                path,
                report.schema_version.into(),
                &report.gate_version,
            ));
        }
    }
    let labels = labels(reports);

    let mut trials = Vec::new();
    let mut notes = Vec::new();
    let mut direct_vs_posix = Vec::new();
    let mut suites = Vec::new();
    let mut data = Vec::new();
    let mut runs = Vec::new();
    for ((path, report), label) in reports.iter().zip(&labels) {
        for trial in &report.trials {
            let mut trial = trial.clone();
            trial.name = format!("{label}/{}", trial.name);
            trial.spec.name.clone_from(&trial.name);
            // JUnit groups by suite: one test suite per run and suite.
            trial.spec.suite = format!("{label}/{}", trial.spec.suite);
            trials.push(trial);
        }
        notes.extend(report.notes.iter().map(|note| format!("{label}: {note}")));
        direct_vs_posix.extend(report.direct_vs_posix.iter().map(|pair| {
            let mut pair = pair.clone();
            pair.gpu_trial = format!("{label}/{}", pair.gpu_trial);
            pair.posix_trial = format!("{label}/{}", pair.posix_trial);
            pair
        }));
        for suite in &report.suites {
            if !suites
                .iter()
                .any(|known: &super::SuiteRef| known.name == suite.name && known.path == suite.path)
            {
                suites.push(suite.clone());
            }
        }
        data.extend(report.data.iter().cloned());
        runs.push(MergedRun {
            label: label.clone(),
            source: path.clone(),
            runner: report.runner.clone(),
            host: report.host.clone(),
            gate_version: report.gate_version.clone(),
            started_at: report.started_at.clone(),
            duration_seconds: report.duration_seconds,
            command: report.command.clone(),
            totals: report.totals,
            notes: report.notes.clone(),
            fingerprint: report.fingerprint.clone(),
            baseline: report.baseline.clone(),
            exit_code: report.totals.exit_code(),
        });
    }
    let versions: BTreeSet<&str> = reports
        .iter()
        .map(|(_, report)| report.gate_version.as_str())
        .collect();
    if versions.len() > 1 {
        let versions: Vec<&str> = versions.into_iter().collect();
        notes.push(format!(
            "the runs used different gate versions ({}): their figures may not be comparable",
            versions.join(", ")
        ));
    }
    let (started_at, duration_seconds) = span(reports);
    // Each run's totals count its own trials and its baseline's missing ones: their sum.
    let mut totals = Totals::default();
    for (_, report) in reports {
        totals.add(&report.totals);
    }
    let mut command: Vec<String> = ["gds-gate", "report", "--merge"].map(String::from).into();
    command.extend(reports.iter().map(|(path, _)| path.display().to_string()));
    let report = Report {
        schema_version: SCHEMA_VERSION,
        gate_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at,
        duration_seconds,
        // The fleet's runner time: each run's, summed (runs overlap, the span does not tell it).
        time: Some(RunTime::of(
            &trials,
            reports.iter().map(|(_, r)| r.duration_seconds).sum(),
        )),
        command,
        host: merged_host(reports),
        suites,
        data,
        trials,
        totals,
        notes,
        direct_vs_posix,
        // Per run, in `runs`: one runner, fingerprint or comparison cannot stand for many.
        runner: None,
        fingerprint: None,
        baseline: None,
        ..first.clone()
    };
    Ok(MergedReport { report, runs })
}

impl MergedReport {
    /// The gate's exit status for the merged runs, from their summed totals as a run's is.
    pub fn exit_code(&self) -> u8 {
        self.report.totals.exit_code()
    }

    /// `merged-summary.md`: the runs, the combined trial table, then each run's baseline.
    pub fn markdown(&self, out: &Path) -> String {
        use gds_runner::escape::{markdown as text, markdown_code as code};
        let mut summary = String::new();
        let _ = writeln!(summary, "## gds-gate: {} runs merged\n", self.runs.len());
        let _ = writeln!(
            summary,
            "| run | host | result | trials | gate | started | report |"
        );
        let _ = writeln!(summary, "|---|---|---|---|---|---|---|");
        for run in &self.runs {
            let _ = writeln!(
                summary,
                "| {} | {} | {} | {} | {} | {} | {} |",
                code(&run.label),
                code(&run.host.hostname),
                run.totals.verdict(),
                run.totals.counts(),
                text(&run.gate_version),
                text(&run.started_at),
                code(&run.source.display().to_string())
            );
        }
        summary.push('\n');
        summary.push_str(&markdown::render(&self.report));
        // Read back, the runs' reports no longer know their selection flags.
        let scope = baseline::message::Scope::default();
        for run in &self.runs {
            if let Some(comparison) = &run.baseline {
                let explainer = baseline::message::Explainer {
                    comparison,
                    records: &[],
                    fingerprint: run.fingerprint.as_ref(),
                    scope: &scope,
                    rate: self.report.rate,
                };
                summary.push_str(&baseline::render::markdown(&explainer, &[], out));
                summary.push('\n');
            }
        }
        summary
    }
}

/// Writes `merged.json`, `merged-junit.xml` and `merged-summary.md` into `out`.
pub fn write_merged(out: &Path, merged: &MergedReport) -> Result<Vec<PathBuf>, MergeError> {
    let json = super::to_json(merged).map_err(|error| ReportError {
        path: out.join(MERGED_JSON),
        source: error.into(),
    })?;
    let summary = merged.markdown(out);
    let files = [
        (MERGED_JSON, json + "\n"),
        (MERGED_JUNIT, junit::render(&merged.report)),
        (MERGED_SUMMARY, summary.clone()),
    ];
    Ok(super::write_report_files(out, files, &summary)?)
}

/// The runner profile, else the host name; where two runs share one, the report's directory is
/// added so that every trial name stays unique.
fn labels(reports: &[(PathBuf, Report)]) -> Vec<String> {
    let base: Vec<String> = reports
        .iter()
        .map(|(_, report)| {
            report
                .runner
                .clone()
                .filter(|runner| !runner.is_empty())
                .unwrap_or_else(|| report.host.hostname.clone())
        })
        .collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for label in &base {
        *counts.entry(label).or_default() += 1;
    }
    base.iter()
        .zip(reports)
        .map(|(label, (path, _))| {
            if counts[label.as_str()] > 1 {
                let dir = path.parent().unwrap_or(path);
                format!("{label}@{}", dir.display())
            } else {
                label.clone()
            }
        })
        .collect()
}

/// The first start and the span to the last end; the longest run when a start cannot be read.
fn span(reports: &[(PathBuf, Report)]) -> (String, f64) {
    let parsed: Option<Vec<(std::time::SystemTime, f64)>> = reports
        .iter()
        .map(|(_, report)| {
            humantime::parse_rfc3339_weak(&report.started_at)
                .ok()
                .map(|start| (start, report.duration_seconds.max(0.0)))
        })
        .collect();
    let longest = || {
        reports
            .iter()
            .map(|(_, report)| report.duration_seconds)
            .fold(0.0, f64::max)
    };
    let first_start = || {
        reports
            .iter()
            .map(|(_, report)| report.started_at.clone())
            .min()
            .unwrap_or_default()
    };
    let Some(parsed) = parsed else {
        return (first_start(), longest());
    };
    let Some(start) = parsed.iter().map(|(start, _)| *start).min() else {
        return (first_start(), longest());
    };
    let end = parsed
        .iter()
        .map(|(start, seconds)| *start + std::time::Duration::from_secs_f64(*seconds))
        .max()
        .unwrap_or(start);
    let seconds = end
        .duration_since(start)
        .map_or_else(|_| longest(), |span| span.as_secs_f64());
    (
        humantime::format_rfc3339_seconds(start).to_string(),
        seconds,
    )
}

/// The first run's facts, with every distinct host name, kernel and driver listed.
fn merged_host(reports: &[(PathBuf, Report)]) -> HostFacts {
    let distinct = |field: fn(&HostFacts) -> Option<&str>| -> Option<String> {
        let mut values: Vec<&str> = Vec::new();
        for value in reports.iter().filter_map(|(_, report)| field(&report.host)) {
            if !values.contains(&value) {
                values.push(value);
            }
        }
        (!values.is_empty()).then(|| values.join(", "))
    };
    let mut host = reports[0].1.host.clone();
    host.hostname = distinct(|h| Some(h.hostname.as_str())).unwrap_or_default();
    host.kernel = distinct(|h| Some(h.kernel.as_str())).unwrap_or_default();
    host.nvidia_driver_version = distinct(|h| h.nvidia_driver_version.as_deref());
    host.gpu_unavailable = distinct(|h| h.gpu_unavailable.as_deref());
    host
}
