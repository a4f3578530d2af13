//! `baselines/<runner>.yaml`: the schema, strict reading (a damaged or newer file is an error,
//! never "no baseline") and atomic writing (a bless killed half-way leaves the old file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::BaselineError;
use super::figures::RunFigures;
use super::fingerprint::Fingerprint;
use super::judgement::Expected;
use super::stats::{Summary, median};
use crate::control::ControlBaseline;
use gds_model::cost::{PassLatencies, Percentile};
use gds_model::numbers::{positive_rates, round_rate};
use gds_model::record::{LoadFigures, LoadStep};
use gds_model::yaml;

/// Bump when a field changes meaning or disappears; older gates refuse newer files. Version 1
/// held one run's passes (`gbps`); it is read as a baseline of one run.
/// Version 2 had no `control`; it is read as a baseline without one. Version 3's `control` had no
/// `memory_runs` and `host_runs`; it is read as a control without them (gates of version 3 would
/// refuse those fields as unknown, so a file that has them says 4, and they ask to be updated).
/// Version 4 had no `load_runs`; gates of version 4 would refuse them as unknown.
/// Version 5 had no `latency_runs`; gates of version 5 would refuse them as unknown.
pub const SCHEMA_VERSION: u32 = 6;

const HEADER: &str = "# gds-gate baseline. Written by `cargo xtask gds-gate bless`; review changes as a diff,\n# do not edit by hand (the statistics use `runs`, the other figures are for people).\n";

/// One runner's baseline. Field order is file order; trials are sorted by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub schema_version: u32,
    pub runner: String,
    pub fingerprint: Fingerprint,
    /// The last bless that changed this file.
    pub provenance: Provenance,
    /// The runner's control read in every blessed run (see `control`); absent when the bless had
    /// none, and then confirmations do not wait for the runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlBaseline>,
    pub trials: BTreeMap<String, TrialBaseline>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// RFC 3339, UTC, seconds.
    pub blessed_at: String,
    pub gate_version: String,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// One trial's expectation. GB/s are 10^9 bytes per second, rounded to 0.1 MB/s so that a
/// re-bless of unchanged figures writes unchanged text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialBaseline {
    /// Median of the blessed runs' medians.
    pub median_gbps: f64,
    /// Each blessed run's median, in the order the runs ran.
    pub run_medians_gbps: Vec<f64>,
    pub min_gbps: f64,
    pub max_gbps: f64,
    /// Passes over all blessed runs.
    pub samples: usize,
    /// Every blessed run's measured passes: what the comparison uses (see `decision`).
    pub runs: Vec<Vec<f64>>,
    /// The path verdict, e.g. `nvfs`, `cufile-posix`, `host`.
    pub path: gds_model::path::Path,
    /// The checksum of what was read, `0x…`; absent when the trial does not verify.
    #[serde(with = "gds_model::hex::option")]
    pub checksum: Option<u64>,
    pub blessed_at: String,
    pub gate_version: String,
    /// CPU seconds per GiB of every blessed run's passes, compared like `runs` (see `cpu`);
    /// absent in baselines blessed before the gate recorded CPU time, and then not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_runs: Option<Vec<Vec<f64>>>,
    /// For people: the median over the blessed runs of their median CPU s/GiB, IOPS and read-call
    /// latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds_per_gib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p99_us: Option<f64>,
    /// A load's set-up steps (`op: load`): every blessed run's seconds per pass to the first
    /// byte, to open and to register the buffer, compared like `cpu_runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_runs: Option<Vec<LoadFigures>>,
    /// A trial with writing ranks (`writers:`): every blessed run's read-latency percentiles
    /// per pass, in µs, compared like `cpu_runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_runs: Option<Vec<PassLatencies>>,
}

impl Baseline {
    /// The run-to-run spread of `trial`'s runner pooled over the trials of its scenario (the
    /// name before `[`) that took the same path, each weighted by its blessed runs less one:
    /// what [`crate::decision::Throughput::with_spread_floor`] floors the trial's own spread
    /// with. `None` when no other such trial has a spread.
    pub fn spread_floor(&self, trial: &str) -> Option<f64> {
        let scenario = |name: &str| name.split('[').next().unwrap_or(name).to_string();
        let own = self.trials.get(trial)?;
        let peers: Vec<(f64, f64)> = self
            .trials
            .iter()
            .filter(|(name, entry)| scenario(name) == scenario(trial) && entry.path == own.path)
            .filter_map(|(_, entry)| {
                let spread = crate::decision::spread_of(&entry.runs)?;
                Some((spread, (entry.runs.len() - 1) as f64))
            })
            .collect();
        if peers.len() < 2 {
            return None;
        }
        let weight: f64 = peers.iter().map(|(_, df)| df).sum();
        Some((peers.iter().map(|(s, df)| s * s * df).sum::<f64>() / weight).sqrt())
    }
}

impl TrialBaseline {
    /// What a judgement against this entry quotes of it.
    pub fn expected(&self) -> Expected {
        Expected {
            median_gbps: self.median_gbps,
            run_medians_gbps: self.run_medians_gbps.clone(),
            path: self.path.clone(),
            blessed_at: self.blessed_at.clone(),
        }
    }

    /// From the figures of the blessed runs, in the order they ran: at least one, all with
    /// passes, path and checksum as the first's (bless checks that).
    pub fn from_runs(runs: &[&RunFigures], provenance: &Provenance) -> TrialBaseline {
        let first = runs[0];
        let rates: Vec<Vec<f64>> = runs
            .iter()
            .map(|run| run.gbps.iter().copied().map(round_rate).collect())
            .collect();
        let passes = Summary::of(&rates.concat());
        let run_medians: Vec<f64> = rates.iter().map(|run| round_rate(median(run))).collect();
        let cpu_runs: Vec<Vec<f64>> = runs
            .iter()
            .map(|run| run.cpu_per_gib.iter().copied().map(round_rate).collect())
            .collect();
        let cpu_complete = cpu_runs.iter().all(|run: &Vec<f64>| !run.is_empty());
        // The median over runs of each run's figure, when every run has it.
        let over_runs = |figure: &dyn Fn(&RunFigures) -> Option<f64>, precision: f64| {
            let values: Option<Vec<f64>> = runs.iter().map(|run| figure(run)).collect();
            values.map(|values| (median(&values) * precision).round() / precision)
        };
        TrialBaseline {
            median_gbps: round_rate(median(&run_medians)),
            run_medians_gbps: run_medians,
            min_gbps: passes.min,
            max_gbps: passes.max,
            samples: passes.count,
            runs: rates,
            path: first.path.clone(),
            checksum: first.checksum,
            blessed_at: provenance.blessed_at.clone(),
            gate_version: provenance.gate_version.clone(),
            cpu_seconds_per_gib: cpu_complete.then(|| {
                round_rate(median(
                    &cpu_runs.iter().map(|r| median(r)).collect::<Vec<_>>(),
                ))
            }),
            cpu_runs: cpu_complete.then_some(cpu_runs),
            iops: over_runs(&|run| run.iops, 10.0),
            latency_p50_us: over_runs(&|run| run.latency_p50_us, 10.0),
            latency_p99_us: over_runs(&|run| run.latency_p99_us, 10.0),
            load_runs: runs
                .iter()
                .map(|run| run.load.as_ref().map(rounded_load))
                .collect(),
            latency_runs: runs
                .iter()
                .map(|run| run.read_latency.as_ref().map(rounded_latencies))
                .collect(),
        }
    }

    /// Every figure of the trial but its passes (checked as rates), by key.
    fn figures(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        let one = [
            ("median_gbps", Some(self.median_gbps)),
            ("min_gbps", Some(self.min_gbps)),
            ("max_gbps", Some(self.max_gbps)),
            ("cpu_seconds_per_gib", self.cpu_seconds_per_gib),
            ("iops", self.iops),
            ("latency_p50_us", self.latency_p50_us),
            ("latency_p99_us", self.latency_p99_us),
        ];
        let medians = self
            .run_medians_gbps
            .iter()
            .map(|&median| ("run_medians_gbps", median));
        one.into_iter()
            .filter_map(|(key, value)| Some((key, value?)))
            .chain(medians)
    }

    /// Equal in everything a comparison looks at (not when or by which gate it was blessed).
    pub fn same_figures(&self, other: &TrialBaseline) -> bool {
        self.runs == other.runs
            && self.path == other.path
            && self.checksum == other.checksum
            && self.cpu_runs == other.cpu_runs
            && self.load_runs == other.load_runs
            && self.latency_runs == other.latency_runs
    }

    /// Every blessed run's read latency at `percentile`, when the baseline has them all.
    pub fn latency_runs(&self, percentile: Percentile) -> Option<Vec<Vec<f64>>> {
        every_run(self.latency_runs.as_deref()?, |run| run.of(percentile))
    }

    /// Every blessed run's seconds of a load's `step`, when the baseline has them all.
    pub fn load_step_runs(&self, step: LoadStep) -> Option<Vec<Vec<f64>>> {
        every_run(self.load_runs.as_deref()?, |run| run.of(step))
    }
}

/// One figure of every blessed run (`figure` picks it from a run's per-pass figures), when every
/// run has it.
fn every_run<T>(runs: &[T], figure: impl Fn(&T) -> &[f64]) -> Option<Vec<Vec<f64>>> {
    let runs: Vec<Vec<f64>> = runs.iter().map(|run| figure(run).to_vec()).collect();
    runs.iter().all(|run| !run.is_empty()).then_some(runs)
}

/// Whether per-pass figures kept beside `runs` hold one entry per blessed run, each of their
/// lists empty (a figure the reader has not) or positive.
fn one_per_run<'a>(
    entries: usize,
    blessed: usize,
    mut lists: impl Iterator<Item = &'a [f64]>,
) -> bool {
    entries == blessed && lists.all(|values| values.is_empty() || positive_rates(values))
}

/// Per-pass figures rounded to `1 / scale` (a re-bless of unchanged figures writes unchanged
/// text), and never to zero: the comparison takes reciprocals.
fn rounded_to(scale: f64) -> impl Fn(&[f64]) -> Vec<f64> {
    move |values| {
        values
            .iter()
            .map(|v| ((v * scale).round() / scale).max(1.0 / scale))
            .collect()
    }
}

/// A load's seconds rounded to 0.1 µs.
fn rounded_load(load: &LoadFigures) -> LoadFigures {
    let round = rounded_to(1e7);
    LoadFigures {
        open_seconds: round(&load.open_seconds),
        register_seconds: round(&load.register_seconds),
        first_byte_seconds: round(&load.first_byte_seconds),
    }
}

/// Latencies rounded to 0.01 µs.
fn rounded_latencies(latencies: &PassLatencies) -> PassLatencies {
    let round = rounded_to(1e2);
    PassLatencies {
        p50_us: round(&latencies.p50_us),
        p95_us: round(&latencies.p95_us),
        p99_us: round(&latencies.p99_us),
    }
}

/// A baseline file that exists and is valid, or none at all. Anything else is an error.
#[derive(Clone, Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "read once per run; a box would only make matching clumsier"
)]
pub enum Loaded {
    Present(Baseline),
    /// No file: the runner has no baseline yet.
    Absent,
}

impl Loaded {
    pub fn present(&self) -> Option<&Baseline> {
        match self {
            Loaded::Present(baseline) => Some(baseline),
            Loaded::Absent => None,
        }
    }
}

/// `DIR/<runner>.yaml`, after checking that the runner name is a plain file name.
pub fn path_for(dir: &Path, runner: &str) -> Result<PathBuf, BaselineError> {
    let valid = !runner.is_empty()
        && !runner.starts_with('.')
        && runner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !valid {
        return Err(BaselineError::RunnerName {
            name: runner.to_string(),
        });
    }
    Ok(dir.join(format!("{runner}.yaml")))
}

pub fn read(path: &Path) -> Result<Loaded, BaselineError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = gds_model::fsutil::utf8(bytes).map_err(|bad| BaselineError::Corrupt {
                path: path.to_path_buf(),
                line: bad.line,
                column: bad.column,
                message: bad.to_string(),
            })?;
            parse(path, &text).map(Loaded::Present)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Loaded::Absent),
        Err(source) => Err(BaselineError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Parses `text`, naming `path` in errors. The schema version is checked before the fields, so a
/// newer file is reported as newer rather than as full of unknown keys.
pub fn parse(path: &Path, text: &str) -> Result<Baseline, BaselineError> {
    let corrupt = |(line, column): (usize, usize), message: String| BaselineError::Corrupt {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    let value: yaml_serde::Value = yaml_serde::from_str(text)
        .map_err(|error| corrupt(yaml::position(&error, text), yaml::message(&error)))?;
    let version = match &value {
        yaml_serde::Value::Mapping(map) => map.get("schema_version"),
        yaml_serde::Value::Null => return Err(corrupt((1, 1), "the file is empty".into())),
        _ => None,
    };
    let version_line = line_of(text, "schema_version:").unwrap_or(1);
    match version.map(yaml_serde::Value::as_u64) {
        None => {
            return Err(corrupt(
                (1, 1),
                format!(
                    "expected a mapping that starts with `schema_version: {SCHEMA_VERSION}`, found no `schema_version`"
                ),
            ));
        }
        Some(None) => {
            return Err(corrupt(
                (version_line, 1),
                format!("expected `schema_version` to be a whole number such as {SCHEMA_VERSION}"),
            ));
        }
        Some(Some(found)) if found > u64::from(SCHEMA_VERSION) => {
            return Err(BaselineError::NewerSchema {
                path: path.to_path_buf(),
                line: version_line,
                found,
                supported: SCHEMA_VERSION,
            });
        }
        Some(Some(1)) => {
            let old: v1::Baseline = yaml_serde::from_str(text)
                .map_err(|error| corrupt(yaml::position(&error, text), yaml::message(&error)))?;
            let baseline = old.upgrade();
            validate(path, text, &baseline)?;
            return Ok(baseline);
        }
        Some(Some(_)) => {}
    }
    let baseline: Baseline = yaml_serde::from_str(text)
        .map_err(|error| corrupt(yaml::position(&error, text), yaml::message(&error)))?;
    validate(path, text, &baseline)?;
    Ok(baseline)
}

/// What serde cannot check: the file belongs to its runner and every trial has usable samples.
fn validate(path: &Path, text: &str, baseline: &Baseline) -> Result<(), BaselineError> {
    let corrupt = |line: usize, message: String| BaselineError::Corrupt {
        path: path.to_path_buf(),
        line,
        column: 1,
        message,
    };
    if let Some(stem) = path.file_stem().and_then(|stem| stem.to_str())
        && stem != baseline.runner
    {
        return Err(corrupt(
            line_of(text, "runner:").unwrap_or(1),
            format!(
                "`runner: {}` does not match the file name `{stem}.yaml`; each runner's baseline is `baselines/<runner>.yaml`, so rename the file or fix `runner:`",
                baseline.runner
            ),
        ));
    }
    if baseline.trials.is_empty() {
        return Err(corrupt(
            line_of(text, "trials:").unwrap_or(1),
            "expected `trials` to hold at least one trial; the file is cut short or was edited by hand (bless again to rewrite it)".into(),
        ));
    }
    if baseline.control.as_ref().is_some_and(|c| !c.is_valid()) {
        return Err(corrupt(
            line_of(text, "control:").unwrap_or(1),
            "expected `control` to hold `disk_runs` and `cpu_runs` (and, where present, `memory_runs` and `host_runs`), one list of positive rates or one reading per blessed run; the file was edited by hand (bless again to rewrite it)".into(),
        ));
    }
    for (name, trial) in &baseline.trials {
        let line = line_of(text, name).unwrap_or(1);
        if let Some((key, value)) = trial.figures().find(|(_, value)| !value.is_finite()) {
            // NaN compares false with everything, so a NaN median would pass every check below
            // and then judge every run as neither slower nor faster.
            let key_line = line_after(text, line, &format!("{key}:")).unwrap_or(line);
            return Err(corrupt(
                key_line,
                format!(
                    "trial `{name}`: `{key}` is {value}, expected a finite number; the file was edited by hand or damaged (bless again to rewrite it)"
                ),
            ));
        }
        let runs_valid = !trial.runs.is_empty() && trial.runs.iter().all(|run| positive_rates(run));
        if !runs_valid {
            return Err(corrupt(
                line,
                format!(
                    "trial `{name}`: expected `runs` to list the blessed runs, each a list of positive throughputs, one per pass"
                ),
            ));
        }
        let blessed = trial.runs.len();
        let load_valid = trial.load_runs.as_ref().is_none_or(|runs| {
            let lists = runs
                .iter()
                .flat_map(|run| LoadStep::ALL.map(|step| run.of(step)));
            one_per_run(runs.len(), blessed, lists)
        });
        let latency_valid = trial.latency_runs.as_ref().is_none_or(|runs| {
            let lists = runs
                .iter()
                .flat_map(|run| Percentile::ALL.map(|p| run.of(p)));
            one_per_run(runs.len(), blessed, lists)
        });
        if !latency_valid {
            return Err(corrupt(
                line_after(text, line, "latency_runs:").unwrap_or(line),
                format!(
                    "trial `{name}`: expected `latency_runs` to hold one entry per blessed run, each with lists of positive microseconds per pass (`p50_us`, `p95_us`, `p99_us`); the file was edited by hand (bless again to rewrite it)"
                ),
            ));
        }
        if !load_valid {
            return Err(corrupt(
                line_after(text, line, "load_runs:").unwrap_or(line),
                format!(
                    "trial `{name}`: expected `load_runs` to hold one entry per blessed run, each with lists of positive seconds per pass (`first_byte_seconds`, `open_seconds`, `register_seconds`); the file was edited by hand (bless again to rewrite it)"
                ),
            ));
        }
        let cpu_valid = trial
            .cpu_runs
            .as_ref()
            .is_none_or(|runs| !runs.is_empty() && runs.iter().all(|run| positive_rates(run)));
        if !cpu_valid {
            return Err(corrupt(
                line,
                format!(
                    "trial `{name}`: expected `cpu_runs` to list the blessed runs, each a list of positive CPU seconds per GiB, one per pass"
                ),
            ));
        }
        // The creep over the history searches the runs since this time, so it must be one.
        if humantime::parse_rfc3339_weak(&trial.blessed_at).is_err() {
            return Err(corrupt(
                line_after(text, line, "blessed_at:").unwrap_or(line),
                format!(
                    "trial `{name}`: `blessed_at: {}` is not an RFC 3339 time such as 2026-03-01T12:00:00Z; the file was edited by hand (bless again to rewrite it)",
                    trial.blessed_at
                ),
            ));
        }
        let passes: usize = trial.runs.iter().map(Vec::len).sum();
        if trial.samples != passes {
            return Err(corrupt(
                line,
                format!(
                    "trial `{name}`: `samples: {}` but `runs` lists {passes} passes",
                    trial.samples,
                ),
            ));
        }
        let medians: Vec<f64> = trial.runs.iter().map(|run| median(run)).collect();
        let medians_agree = medians.len() == trial.run_medians_gbps.len()
            && medians
                .iter()
                .zip(&trial.run_medians_gbps)
                .all(|(a, b)| (a - b).abs() <= 1e-3);
        if !medians_agree || (median(&medians) - trial.median_gbps).abs() > 1e-3 {
            return Err(corrupt(
                line,
                format!(
                    "trial `{name}`: `median_gbps` or `run_medians_gbps` are not the medians of `runs`; the file was edited by hand (bless again to rewrite it)"
                ),
            ));
        }
    }
    Ok(())
}

/// Schema version 1: one run's passes per trial. Read and upgraded, never written.
mod v1 {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::{Fingerprint, Provenance, TrialBaseline, median};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Baseline {
        runner: String,
        fingerprint: Fingerprint,
        provenance: Provenance,
        trials: BTreeMap<String, Trial>,
        #[serde(rename = "schema_version")]
        _schema_version: u32,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Trial {
        median_gbps: f64,
        #[serde(rename = "mad_gbps")]
        _mad_gbps: f64,
        min_gbps: f64,
        max_gbps: f64,
        samples: usize,
        gbps: Vec<f64>,
        path: gds_model::path::Path,
        #[serde(with = "gds_model::hex::option")]
        checksum: Option<u64>,
        blessed_at: String,
        gate_version: String,
    }

    impl Baseline {
        /// A version-1 trial is a baseline of one run; its `median_gbps` stays as written, so
        /// that a hand-edited file is still caught by the validation.
        pub fn upgrade(self) -> super::Baseline {
            let trials = self
                .trials
                .into_iter()
                .map(|(name, t)| {
                    let trial = TrialBaseline {
                        median_gbps: t.median_gbps,
                        run_medians_gbps: vec![median(&t.gbps)],
                        min_gbps: t.min_gbps,
                        max_gbps: t.max_gbps,
                        samples: t.samples,
                        runs: vec![t.gbps],
                        path: t.path,
                        checksum: t.checksum,
                        blessed_at: t.blessed_at,
                        gate_version: t.gate_version,
                        cpu_runs: None,
                        cpu_seconds_per_gib: None,
                        iops: None,
                        latency_p50_us: None,
                        latency_p99_us: None,
                        load_runs: None,
                        latency_runs: None,
                    };
                    (name, trial)
                })
                .collect();
            super::Baseline {
                schema_version: super::SCHEMA_VERSION,
                runner: self.runner,
                fingerprint: self.fingerprint,
                provenance: self.provenance,
                control: None,
                trials,
            }
        }
    }
}

/// 1-based line of the first line after line `after` (1-based) containing `needle`.
fn line_after(text: &str, after: usize, needle: &str) -> Option<usize> {
    text.lines()
        .skip(after)
        .position(|line| line.contains(needle))
        .map(|index| after + index + 1)
}

/// 1-based line of the first line containing `needle`.
pub(crate) fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|line| line.contains(needle))
        .map(|index| index + 1)
}

pub fn render(baseline: &Baseline) -> String {
    // Plain data with string keys: serialising cannot fail.
    let yaml = yaml_serde::to_string(baseline).unwrap_or_default();
    format!("{HEADER}{yaml}")
}

/// Writes `baseline` to `path` atomically: a temporary file in the same folder, synced, renamed
/// over the old file, then the folder synced so that the rename itself survives a crash.
pub fn write(path: &Path, baseline: &Baseline) -> Result<(), BaselineError> {
    write_with(path, render(baseline).as_bytes(), || Ok(()))
}

/// `before_rename` runs when the new contents are on disk but not yet in place: the window the
/// tests kill a process in.
fn write_with(
    path: &Path,
    contents: &[u8],
    before_rename: impl FnOnce() -> std::io::Result<()>,
) -> Result<(), BaselineError> {
    gds_model::fsutil::write_atomically_with(path, contents, before_rename).map_err(|source| {
        BaselineError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::fixtures::{self, BASE, CHECKSUM};

    pub(crate) fn provenance() -> Provenance {
        Provenance {
            blessed_at: "2026-03-01T12:00:00Z".into(),
            gate_version: "0.1.0".into(),
            host: "gpu-runner-1".into(),
            revision: None,
        }
    }

    fn sample(runner: &str) -> Baseline {
        let mut trials = BTreeMap::new();
        for name in ["suite::b[nthreads=8]", "suite::a"] {
            let m = RunFigures::of(&fixtures::measurement(&BASE, "nvfs", CHECKSUM));
            trials.insert(
                name.to_string(),
                TrialBaseline::from_runs(&[&m], &provenance()),
            );
        }
        Baseline {
            schema_version: SCHEMA_VERSION,
            runner: runner.into(),
            fingerprint: fixtures::fingerprint(),
            provenance: provenance(),
            control: None,
            trials,
        }
    }

    /// The CPU drill's case: `whole[nthreads=1]` blessed at 5.3% beside `whole[nthreads=4]` at
    /// 9.3% (same scenario, same path) is floored at their pooled spread; `chunks`, another
    /// scenario, and a trial on another path are not pooled with them.
    #[test]
    fn the_spread_floor_pools_a_scenarios_trials_on_one_path() {
        let entry = |cv: f64, path: &str| {
            // Six runs at 1 ± cv of a level; the test reads back the spread they make.
            let factors = [1.0, 1.0 + cv, 1.0 - cv, 1.0 + cv, 1.0 - cv, 1.0];
            let runs: Vec<RunFigures> = factors
                .iter()
                .map(|&f| RunFigures::of(&fixtures::measurement(&[f, f, f], path, CHECKSUM)))
                .collect();
            let refs: Vec<&RunFigures> = runs.iter().collect();
            TrialBaseline::from_runs(&refs, &provenance())
        };
        let mut baseline = sample("r");
        baseline.trials = BTreeMap::from([
            ("s::whole[nthreads=1]".to_string(), entry(0.05, "host")),
            ("s::whole[nthreads=4]".to_string(), entry(0.10, "host")),
            ("s::whole[nthreads=8]".to_string(), entry(0.30, "nvfs")),
            ("s::chunks".to_string(), entry(0.30, "host")),
        ]);
        let spread = |name: &str| crate::decision::spread_of(&baseline.trials[name].runs).unwrap();
        let (one, four) = (
            spread("s::whole[nthreads=1]"),
            spread("s::whole[nthreads=4]"),
        );
        let pooled = ((one * one + four * four) / 2.0).sqrt();
        let floor = baseline.spread_floor("s::whole[nthreads=1]").unwrap();
        assert!((floor - pooled).abs() < 1e-12, "{floor} vs {pooled}");
        assert_eq!(baseline.spread_floor("s::whole[nthreads=4]"), Some(floor));
        assert_eq!(
            baseline.spread_floor("s::chunks"),
            None,
            "alone in its scenario"
        );
        assert_eq!(
            baseline.spread_floor("s::whole[nthreads=8]"),
            None,
            "alone on its path"
        );
    }

    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "gpu-runner-1").unwrap();
        (dir, path)
    }

    fn expect_corrupt(path: &Path, text: &str, line: usize, needle: &str) {
        std::fs::write(path, text).unwrap();
        match read(path) {
            Err(error @ BaselineError::Corrupt { line: l, .. }) => {
                let shown = error.to_string();
                assert_eq!(l, line, "{shown}");
                assert!(shown.contains(needle), "{shown}");
                assert!(shown.contains(&path.display().to_string()), "{shown}");
                assert!(shown.contains("never treated as missing"), "{shown}");
            }
            other => panic!("expected a corrupt-baseline error, got {other:?}"),
        }
    }

    #[test]
    fn round_trips_with_sorted_keys_and_a_header() {
        let (_dir, path) = scratch();
        let baseline = sample("gpu-runner-1");
        write(&path, &baseline).unwrap();
        assert_eq!(read(&path).unwrap(), Loaded::Present(baseline.clone()));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# gds-gate baseline."), "{text}");
        let a = text.find("suite::a:").unwrap();
        let b = text.find("suite::b[nthreads=8]:").unwrap();
        assert!(a < b, "{text}");
        assert!(text.contains("checksum: '0x0123456789abcdef'"), "{text}");
        // The same baseline renders to the same bytes.
        assert_eq!(render(&baseline), text);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn a_missing_file_is_no_baseline_and_nothing_else_is() {
        let (_dir, path) = scratch();
        assert_eq!(read(&path).unwrap(), Loaded::Absent);
        let dir_as_file = path.with_extension("d");
        std::fs::create_dir(&dir_as_file).unwrap();
        assert!(matches!(
            read(&dir_as_file),
            Err(BaselineError::Read { .. })
        ));
    }

    #[test]
    fn corrupt_files_are_errors_with_file_and_line() {
        let (_dir, path) = scratch();
        let good = render(&sample("gpu-runner-1"));
        expect_corrupt(&path, "", 1, "the file is empty");
        expect_corrupt(
            &path,
            "schema_version: 1\nrunner: [unclosed\n",
            3,
            "corrupt baseline",
        );
        let truncated = &good[..good.len() / 2];
        std::fs::write(&path, truncated).unwrap();
        let read_back = read(&path);
        assert!(
            matches!(read_back, Err(BaselineError::Corrupt { .. })),
            "{read_back:?}\n{truncated}"
        );
        expect_corrupt(&path, "- just\n- a list\n", 1, "schema_version");
        let typo = good.replace("median_gbps:", "median_gbsp:");
        let line = typo
            .lines()
            .position(|l| l.contains("median_gbsp"))
            .unwrap()
            + 1;
        expect_corrupt(&path, &typo, line, "unknown field `median_gbsp`");
        let edited = good.replacen("samples: 5", "samples: 4", 1);
        let line = edited
            .lines()
            .position(|l| l.contains("suite::a:"))
            .unwrap()
            + 1;
        expect_corrupt(
            &path,
            &edited,
            line,
            "`samples: 4` but `runs` lists 5 passes",
        );
        let other_runner = good.replace("runner: gpu-runner-1", "runner: other");
        expect_corrupt(&path, &other_runner, 4, "does not match the file name");
        // The first trial's `blessed_at` (the provenance's comes first in the file).
        let trial = good.find("suite::a:").unwrap();
        let at = trial + good[trial..].find("2026-03-01T12:00:00Z").unwrap();
        let mut undated = good.clone();
        undated.replace_range(at..at + 20, "yesterday");
        let line = undated[..at].lines().count();
        expect_corrupt(
            &path,
            &undated,
            line,
            "trial `suite::a`: `blessed_at: yesterday` is not an RFC 3339 time",
        );
    }

    /// YAML spells NaN and infinity (`.nan`, `.inf`), and a comparison with NaN is always false:
    /// a baseline holding one would pass its own checks and judge nothing. Each non-finite
    /// figure is refused at its line, with the trial, the key and the fix.
    #[test]
    fn a_non_finite_figure_is_refused_with_its_trial_and_key() {
        let (_dir, path) = scratch();
        let mut baseline = sample("gpu-runner-1");
        for trial in baseline.trials.values_mut() {
            trial.iops = Some(1000.0);
            trial.latency_p99_us = Some(900.0);
        }
        let good = render(&baseline);
        // `key`'s line under the second trial, with `value` instead: the text and that line.
        let replace_in_b = |key: &str, value: &str| {
            let trial = good
                .lines()
                .position(|l| l.contains("suite::b[nthreads=8]:"))
                .unwrap();
            let mut lines: Vec<String> = good.lines().map(str::to_owned).collect();
            let index = trial
                + lines[trial..]
                    .iter()
                    .position(|l| l.trim_start().starts_with(&format!("{key}:")))
                    .unwrap();
            let indent = lines[index].len() - lines[index].trim_start().len();
            lines[index] = format!("{}{key}: {value}", " ".repeat(indent));
            (lines.join("\n") + "\n", index + 1)
        };
        for (key, value, shown) in [
            ("median_gbps", ".nan", "NaN"),
            ("min_gbps", ".inf", "inf"),
            ("max_gbps", "-.inf", "-inf"),
            ("iops", ".NaN", "NaN"),
            ("latency_p99_us", ".Inf", "inf"),
        ] {
            let (text, line) = replace_in_b(key, value);
            expect_corrupt(
                &path,
                &text,
                line,
                &format!(
                    "trial `suite::b[nthreads=8]`: `{key}` is {shown}, expected a finite number"
                ),
            );
            let shown = read(&path).unwrap_err().to_string();
            assert!(shown.contains("cargo xtask gds-gate bless"), "{shown}");
        }
        // So is a run's median, under its own key.
        let mut overflowed = baseline.clone();
        if let Some(trial) = overflowed.trials.get_mut("suite::b[nthreads=8]") {
            trial.run_medians_gbps = vec![f64::INFINITY];
        }
        std::fs::write(&path, render(&overflowed)).unwrap();
        let shown = read(&path).unwrap_err().to_string();
        assert!(shown.contains("`run_medians_gbps` is inf"), "{shown}");
    }

    /// A file that is not UTF-8 (a Latin-1 editor, a binary written over it) is named as such
    /// with the first bad byte's offset and line, not as a permission problem.
    #[test]
    fn a_file_that_is_not_utf8_is_named_with_the_first_bad_byte() {
        let (_dir, path) = scratch();
        let good = render(&sample("gpu-runner-1"));
        let at = good.find("host: gpu-runner-1").unwrap() + "host: gpu-r".len();
        let line = good[..at].lines().count();
        let column = at - good[..at].rfind('\n').unwrap();
        let mut bytes = good.into_bytes();
        bytes[at] = 0xe9; // `é` in Latin-1, which UTF-8 cannot start a character with here
        std::fs::write(&path, &bytes).unwrap();
        let error = read(&path).unwrap_err();
        let shown = error.to_string();
        assert!(
            matches!(error, BaselineError::Corrupt { line: l, column: c, .. } if l == line && c == column),
            "{shown}"
        );
        assert!(
            shown.contains(&format!(
                "the file is not UTF-8: byte 0xe9 at offset {at} (line {line}, column {column})"
            )),
            "{shown}"
        );
        assert!(!shown.contains("permissions"), "{shown}");
    }

    /// An alias bomb stops the YAML parser without a position from yaml_serde; the error points
    /// at the first alias.
    #[test]
    fn an_alias_bomb_is_refused_at_its_first_alias() {
        let (_dir, path) = scratch();
        let mut text = String::from("schema_version: 3\nl0: &l0 [x, x, x, x, x, x, x, x, x]\n");
        for level in 1..9 {
            let items = vec![format!("*l{}", level - 1); 9].join(", ");
            text.push_str(&format!("l{level}: &l{level} [{items}]\n"));
        }
        std::fs::write(&path, &text).unwrap();
        match read(&path) {
            Err(error @ BaselineError::Corrupt { line, column, .. }) => {
                assert_eq!((line, column), (3, 10), "{error}");
                assert!(
                    error.to_string().contains("repetition limit exceeded"),
                    "{error}"
                );
            }
            other => panic!("expected a corrupt-baseline error, got {other:?}"),
        }
    }

    #[test]
    fn a_newer_schema_is_an_error_not_a_missing_baseline() {
        let (_dir, path) = scratch();
        let newer = render(&sample("gpu-runner-1"))
            .replace("schema_version: 6", "schema_version: 7")
            .replace("median_gbps:", "p50_gbps:");
        std::fs::write(&path, newer).unwrap();
        let error = read(&path).unwrap_err();
        let shown = error.to_string();
        assert!(
            matches!(
                error,
                BaselineError::NewerSchema {
                    found: 7,
                    line: 3,
                    ..
                }
            ),
            "{shown}"
        );
        assert!(
            shown.contains(":3: baseline has schema_version 7"),
            "{shown}"
        );
        assert!(shown.contains("update gds-gate"), "{shown}");
    }

    #[test]
    fn the_control_round_trips_and_a_version_2_file_reads_without_one() {
        let (_dir, path) = scratch();
        let mut baseline = sample("gpu-runner-1");
        let host = gds_model::busy::HostReading {
            seconds: 1.2,
            cores: 2,
            load: 0.31,
            others_cpu: 0.024,
            steal: 0.0,
            pressure: Some(gds_model::busy::Pressure {
                cpu: 0.01,
                io: 0.62,
                memory: 0.0,
            }),
            others_disk_gbps: Some(0.002),
        };
        let control = ControlBaseline {
            size: 1 << 20,
            disk_runs: vec![vec![1.5, 1.6, 1.4], vec![1.2, 1.3, 1.25]],
            cpu_runs: vec![vec![3.0, 3.1, 2.9], vec![3.0, 3.0, 3.0]],
            memory_runs: vec![vec![6.1, 6.0, 5.9], vec![6.2, 6.0, 6.0]],
            host_runs: vec![host; 2],
        };
        baseline.control = Some(control.clone());
        write(&path, &baseline).unwrap();
        assert_eq!(read(&path).unwrap(), Loaded::Present(baseline.clone()));

        // A version 3 control, blessed before copies and host readings, reads without them.
        baseline.control = Some(ControlBaseline {
            memory_runs: Vec::new(),
            host_runs: Vec::new(),
            ..control
        });
        let text = render(&baseline).replace("schema_version: 6", "schema_version: 3");
        assert!(!text.contains("memory_runs") && !text.contains("host_runs"));
        std::fs::write(&path, &text).unwrap();
        let version_3 = read(&path).unwrap().present().cloned().unwrap();
        assert_eq!(
            (version_3.schema_version, &version_3.control),
            (3, &baseline.control)
        );

        baseline.control = None;
        let version_2 = render(&baseline).replace("schema_version: 6", "schema_version: 2");
        std::fs::write(&path, version_2).unwrap();
        let old = read(&path).unwrap().present().cloned().unwrap();
        assert_eq!((old.control, old.trials), (None, baseline.trials));
    }

    #[test]
    fn a_control_without_rates_is_refused_with_its_line() {
        let (_dir, path) = scratch();
        let mut baseline = sample("gpu-runner-1");
        baseline.control = Some(ControlBaseline {
            size: 1 << 20,
            disk_runs: vec![vec![1.5], vec![]],
            cpu_runs: vec![vec![3.0], vec![3.0]],
            memory_runs: Vec::new(),
            host_runs: Vec::new(),
        });
        let text = render(&baseline);
        let line = text
            .lines()
            .position(|l| l.starts_with("control:"))
            .unwrap()
            + 1;
        expect_corrupt(&path, &text, line, "expected `control` to hold");
    }

    #[test]
    fn runner_names_must_be_plain_file_names() {
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(path_for(Path::new("baselines"), bad).is_err(), "{bad}");
        }
        assert_eq!(
            path_for(Path::new("baselines"), "dgx-01.lab_2").unwrap(),
            Path::new("baselines/dgx-01.lab_2.yaml")
        );
    }

    #[test]
    fn a_failure_before_the_rename_leaves_the_old_file_and_no_litter() {
        let (dir, path) = scratch();
        let old = sample("gpu-runner-1");
        write(&path, &old).unwrap();
        let mut new = old.clone();
        new.trials.clear();
        let result = write_with(&path, render(&new).as_bytes(), || {
            Err(std::io::Error::other("injected"))
        });
        assert!(matches!(result, Err(BaselineError::Write { .. })));
        assert_eq!(read(&path).unwrap(), Loaded::Present(old));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["gpu-runner-1.yaml"]);
    }

    const CHILD: &str = "GDS_GATE_TEST_BLESS_CHILD";

    /// Runs twice: as the test, it starts itself as a child process that writes a new baseline
    /// and pauses between writing the temporary file and renaming it; the test kills the child
    /// there with SIGKILL and checks that the old baseline is intact and still reads.
    #[test]
    fn a_bless_killed_mid_write_leaves_the_old_file_intact() {
        if let Some(path) = std::env::var_os(CHILD) {
            let path = PathBuf::from(path);
            let mut new = sample("gpu-runner-1");
            new.trials.clear();
            let _ = write_with(&path, render(&new).as_bytes(), || {
                std::fs::write(path.with_extension("ready"), b"")?;
                std::thread::sleep(Duration::from_secs(60));
                Ok(())
            });
            std::process::exit(0);
        }
        let (dir, path) = scratch();
        let old = sample("gpu-runner-1");
        write(&path, &old).unwrap();
        // This test's name as libtest knows it: its module path without the crate's name.
        let (_, module) = module_path!().split_once("::").unwrap();
        let name = format!("{module}::a_bless_killed_mid_write_leaves_the_old_file_intact");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--test-threads=1"])
            .env(CHILD, &path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !path.with_extension("ready").exists() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the child exited ({status}) before pausing");
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the child never paused"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // The new contents are on disk under a temporary name; die now, as a killed bless would.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        assert_eq!(read(&path).unwrap(), Loaded::Present(old.clone()));
        let leftovers: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
        assert!(
            leftovers[0].starts_with(".gpu-runner-1.yaml."),
            "{leftovers:?}"
        );
        // The next bless goes through regardless.
        let mut new = old;
        new.provenance.blessed_at = "2026-03-02T08:00:00Z".into();
        write(&path, &new).unwrap();
        assert_eq!(read(&path).unwrap(), Loaded::Present(new));
    }
}
