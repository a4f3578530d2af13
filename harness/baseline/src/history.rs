//! `.gds-gate/history.jsonl`: one JSON line per gate run with every trial's samples, path and
//! checksum, appended, so that throughput can be plotted over runs and the runner's noise fitted.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::BaselineError;
use super::figures::RunFigures;
use super::fingerprint::Fingerprint;
use crate::control::ControlReading;
use gds_model::numbers::median;
use gds_model::record::{Outcome, Status, TrialRecord};

/// Bump when a field changes meaning; readers skip lines of newer versions.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the history lives unless `--history` says otherwise: at the repository's root but
/// outside `target/`, which `cargo clean` deletes with the past runs the plots and the noise
/// model need (the folder is in .gitignore).
pub const DEFAULT: &str = ".gds-gate/history.jsonl";

/// `OUT/history.jsonl`, where earlier gates kept the history, next to report.json.
pub fn path_in(out: &Path) -> PathBuf {
    out.join("history.jsonl")
}

/// Moves a history that an earlier gate kept in `out` to `history`, once: only while `history`
/// does not exist yet, so that nobody loses the runs behind their plots. Returns the one-line
/// notice to print when it moved one.
pub fn adopt_from_out(history: &Path, out: &Path) -> Result<Option<String>, BaselineError> {
    let old = path_in(out);
    if history.exists() || !old.is_file() || same_file(&old, history) {
        return Ok(None);
    }
    let failed = |source| BaselineError::History {
        path: history.to_path_buf(),
        source,
    };
    if let Some(dir) = history.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    // A rename keeps the file whole; across file systems, a copy then the removal.
    if std::fs::rename(&old, history).is_err() {
        std::fs::copy(&old, history).map_err(failed)?;
        let _ = std::fs::remove_file(&old);
    }
    Ok(Some(format!(
        "note: moved the run history `{}` to `{}`, where `cargo clean` leaves it (--history, GDS_GATE_HISTORY)",
        old.display(),
        history.display()
    )))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryLine {
    pub schema_version: u32,
    /// RFC 3339, when the run started.
    pub time: String,
    pub runner: String,
    pub host: String,
    pub gate_version: String,
    pub fingerprint: Fingerprint,
    pub trials: BTreeMap<String, HistoryTrial>,
    /// The runner's control read at the start of the run, when it had one: what a bless from
    /// history records as the control's blessed level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlReading>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryTrial {
    pub status: Status,
    pub median_gbps: Option<f64>,
    pub gbps: Vec<f64>,
    pub path: Option<gds_model::path::Path>,
    #[serde(with = "gds_model::hex::option")]
    pub checksum: Option<u64>,
    /// The tolerance the trial was judged with: the plot's baseline band.
    pub tolerance: f64,
    /// The gate's wall clock around the trial, confirmations included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// Of it, the trial's own run without confirmations: what `--budget` plans the next run with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_seconds: Option<f64>,
    /// What a bless from history needs beyond the fields above; lines of gates before it have
    /// none, and a bless cannot take their runs (it would not know that they passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bless: Option<BlessFacts>,
}

/// A trial's run as a bless from history takes it: its outcome against the baseline of the day,
/// and the figures beside its passes that a baseline entry records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlessFacts {
    /// Own checks and baseline judgement together: only `passed` runs are blessed from.
    pub outcome: Outcome,
    /// The trial's reader, e.g. `posix`: bless's filter matches `[reader] name` as a run's does.
    pub reader: String,
    /// The allowed rise of CPU seconds per GiB the trial was judged with.
    pub cpu_tolerance: f64,
    /// CPU seconds per GiB of each measured pass; empty when the run recorded no CPU time.
    pub cpu_per_gib: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p99_us: Option<f64>,
    /// A load's set-up steps per measured pass, and the allowed rise it was judged with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<gds_model::record::LoadFigures>,
    #[serde(default = "default_load_tolerance")]
    pub load_tolerance: f64,
    /// The reading rank's latency percentiles per measured pass beside writing ranks, and the
    /// allowed rise they were judged with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_latency: Option<gds_model::cost::PassLatencies>,
    #[serde(default = "default_latency_tolerance")]
    pub latency_tolerance: f64,
}

fn default_latency_tolerance() -> f64 {
    gds_model::scenario::defaults::LATENCY_TOLERANCE
}

fn default_load_tolerance() -> f64 {
    gds_model::scenario::defaults::LOAD_TOLERANCE
}

impl HistoryTrial {
    /// The run's figures as a baseline records them, when the line holds them all: a run that
    /// passed its own checks with measured passes, written by a gate that records [`BlessFacts`].
    pub fn figures(&self) -> Option<RunFigures> {
        let facts = self.bless.as_ref()?;
        let path = self.path.clone()?;
        (self.status == Status::Passed && !self.gbps.is_empty()).then(|| RunFigures {
            gbps: self.gbps.clone(),
            cpu_per_gib: facts.cpu_per_gib.clone(),
            iops: facts.iops,
            latency_p50_us: facts.latency_p50_us,
            latency_p99_us: facts.latency_p99_us,
            path,
            checksum: self.checksum,
            load: facts.load.clone(),
            read_latency: facts.read_latency.clone(),
        })
    }
}

impl HistoryLine {
    pub fn new(
        time: String,
        runner: &str,
        host: &str,
        fingerprint: &Fingerprint,
        records: &[TrialRecord],
    ) -> HistoryLine {
        let trials = records
            .iter()
            .map(|record| {
                let m = record.measurement.as_ref();
                let figures = m.map(RunFigures::of);
                let gbps = m.map(|m| m.gbps.clone()).unwrap_or_default();
                let trial = HistoryTrial {
                    status: record.checks,
                    median_gbps: (!gbps.is_empty()).then(|| median(&gbps)),
                    gbps,
                    path: m.map(|m| m.path.clone()),
                    checksum: m.and_then(|m| m.integrity.checksum),
                    tolerance: record.spec.expect.tolerance,
                    wall_seconds: record.wall_seconds,
                    measured_seconds: record.measured_seconds,
                    bless: Some(BlessFacts {
                        outcome: record.status,
                        reader: record.spec.reader.name().to_string(),
                        cpu_tolerance: record.spec.expect.cpu_tolerance,
                        cpu_per_gib: figures
                            .as_ref()
                            .map(|f| f.cpu_per_gib.clone())
                            .unwrap_or_default(),
                        iops: figures.as_ref().and_then(|f| f.iops),
                        latency_p50_us: figures.as_ref().and_then(|f| f.latency_p50_us),
                        latency_p99_us: figures.as_ref().and_then(|f| f.latency_p99_us),
                        load: figures.as_ref().and_then(|f| f.load.clone()),
                        load_tolerance: record.spec.expect.load_tolerance,
                        read_latency: figures.as_ref().and_then(|f| f.read_latency.clone()),
                        latency_tolerance: record.spec.expect.latency_tolerance,
                    }),
                };
                (record.name.clone(), trial)
            })
            .collect();
        HistoryLine {
            schema_version: SCHEMA_VERSION,
            time,
            runner: runner.to_string(),
            host: host.to_string(),
            gate_version: env!("CARGO_PKG_VERSION").to_string(),
            fingerprint: fingerprint.clone(),
            trials,
            control: None,
        }
    }
}

/// Appends one line. One `write` of the whole line with `O_APPEND`; if an earlier run died
/// mid-line, a newline first, so that its fragment does not swallow this line.
pub fn append(path: &Path, line: &HistoryLine) -> Result<(), BaselineError> {
    let failed = |source| BaselineError::History {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(failed)?;
    let mut text = serde_json::to_string(line).map_err(|error| failed(error.into()))?;
    text.push('\n');
    if ends_mid_line(&mut file).map_err(failed)? {
        text.insert(0, '\n');
    }
    file.write_all(text.as_bytes()).map_err(failed)
}

fn ends_mid_line(file: &mut std::fs::File) -> std::io::Result<bool> {
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// The lines that parsed, and one note per line that did not (a run killed mid-write, a newer
/// gate): the history is a record for people, so a bad line is reported, not fatal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    pub lines: Vec<HistoryLine>,
    pub skipped: Vec<String>,
}

/// Reads the history; a missing file is an empty history.
pub fn read(path: &Path) -> Result<History, BaselineError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(History::default());
        }
        Err(source) => {
            return Err(BaselineError::HistoryRead {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut history = History::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let number = index + 1;
        match serde_json::from_str::<HistoryLine>(line) {
            Ok(entry) if entry.schema_version <= SCHEMA_VERSION => history.lines.push(entry),
            Ok(entry) => history.skipped.push(format!(
                "{}:{number}: schema_version {} is newer than this gate's {SCHEMA_VERSION}; skipped",
                path.display(),
                entry.schema_version
            )),
            Err(error) => history.skipped.push(format!(
                "{}:{number}: not a history line ({error}); skipped (a run killed mid-write leaves one)",
                path.display()
            )),
        }
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, BASE, CHECKSUM};

    fn line(time: &str) -> HistoryLine {
        let records = [
            fixtures::passed("s::a", &BASE, "nvfs", CHECKSUM),
            fixtures::ignored("s::gpu"),
        ];
        HistoryLine::new(
            time.into(),
            "r1",
            "host1",
            &fixtures::fingerprint(),
            &records,
        )
    }

    #[test]
    fn appends_lines_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir.path().join("out"));
        assert_eq!(read(&path).unwrap(), History::default());
        append(&path, &line("2026-03-01T00:00:00Z")).unwrap();
        append(&path, &line("2026-03-02T00:00:00Z")).unwrap();
        let history = read(&path).unwrap();
        assert_eq!(history.lines.len(), 2);
        assert!(history.skipped.is_empty());
        let a = &history.lines[1].trials["s::a"];
        assert_eq!(
            (a.median_gbps, a.path.as_ref()),
            (Some(2.0), Some(&gds_model::path::Path::Nvfs))
        );
        assert_eq!(history.lines[1].trials["s::gpu"].status, Status::Ignored);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.contains("\"checksum\":\"0x0123456789abcdef\""),
            "{text}"
        );
    }

    #[test]
    fn a_fragment_from_a_killed_run_is_skipped_and_does_not_eat_the_next_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        append(&path, &line("2026-03-01T00:00:00Z")).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"schema_version\":1,\"time\":\"2026-03-0")
            .unwrap();
        append(&path, &line("2026-03-03T00:00:00Z")).unwrap();
        let history = read(&path).unwrap();
        assert_eq!(history.lines.len(), 2);
        assert_eq!(history.skipped.len(), 1);
        assert!(
            history.skipped[0].contains(":2: not a history line"),
            "{:?}",
            history.skipped
        );
    }

    /// JSON has no NaN or infinity and serde_json refuses a number past f64, so a line whose
    /// figure would not be finite is skipped with a note like any other unreadable line, and the
    /// plots and the noise model only see finite figures.
    #[test]
    fn a_line_with_a_figure_past_f64_is_skipped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        append(&path, &line("2026-03-01T00:00:00Z")).unwrap();
        let good = serde_json::to_string(&line("2026-03-02T00:00:00Z")).unwrap();
        for (from, to) in [
            ("\"gbps\":[2.0", "\"gbps\":[2e999"),
            ("\"median_gbps\":2.0", "\"median_gbps\":-1e400"),
            ("\"tolerance\":0.1", "\"tolerance\":NaN"),
        ] {
            assert!(good.contains(from), "{from} not in {good}");
            let bad = good.replacen(from, to, 1) + "\n";
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap()
                .write_all(bad.as_bytes())
                .unwrap();
        }
        let history = read(&path).unwrap();
        assert_eq!(history.lines.len(), 1);
        assert_eq!(history.skipped.len(), 3, "{:?}", history.skipped);
        for (note, number) in history.skipped.iter().zip(2..) {
            assert!(
                note.contains(&format!(":{number}: not a history line")),
                "{note}"
            );
        }
    }

    #[test]
    fn a_history_left_in_out_moves_once_to_the_new_place() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("target/gds-gate");
        let history = dir.path().join(".gds-gate/history.jsonl");
        assert_eq!(adopt_from_out(&history, &out).unwrap(), None);
        append(&path_in(&out), &line("2026-03-01T00:00:00Z")).unwrap();
        let note = adopt_from_out(&history, &out).unwrap().expect("moved");
        assert!(note.starts_with("note: moved the run history"), "{note}");
        assert!(!path_in(&out).exists());
        assert_eq!(read(&history).unwrap().lines.len(), 1);
        // Once the new history exists, a later file in `out` is left alone.
        append(&path_in(&out), &line("2026-03-02T00:00:00Z")).unwrap();
        assert_eq!(adopt_from_out(&history, &out).unwrap(), None);
        assert!(path_in(&out).exists());
        assert_eq!(read(&history).unwrap().lines.len(), 1);
        // `--history` naming the old place itself: nothing to move.
        assert_eq!(adopt_from_out(&path_in(&out), &out).unwrap(), None);
    }
}
