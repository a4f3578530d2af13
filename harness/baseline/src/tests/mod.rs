//! Comparison and bless on synthetic sample sets: shared helpers.

mod bless;
mod busy_host;
mod compare;
mod from_history;
mod latency;
mod load;
mod rebless;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::bless::{BlessOptions, Filter, bless};
use super::compare::{Comparison, RunResults, compare};
use super::file::{self, Provenance};
use super::fingerprint::Fingerprint;
use super::fixtures::{self, BASE, CHECKSUM, SLOW};
use super::judgement::Judgement;
use super::message::{Explainer, Words};
use gds_model::record::{RunnerCheck, TrialRecord};

struct Scratch {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let path = file::path_for(&dir.path().join("baselines"), "r1").unwrap();
    Scratch { _dir: dir, path }
}

fn provenance() -> Provenance {
    Provenance {
        blessed_at: "2026-03-01T12:00:00Z".into(),
        gate_version: "0.1.0".into(),
        host: "gpu01".into(),
        revision: Some("abc1234".into()),
    }
}

/// A run with no selection flags: its bless commands name only the runner.
static NO_SCOPE: crate::message::Scope = crate::message::Scope {
    suites: Vec::new(),
    data_dir: None,
    out: None,
    history: None,
    source: crate::message::Source::Run,
};

fn options<'a>(path: &'a Path, filter: &'a Filter) -> BlessOptions<'a> {
    BlessOptions {
        runner: "r1",
        baseline_path: path,
        scope: &NO_SCOPE,
        rate: gds_model::units::Rate::Gb,
        filter,
        accept_fingerprint: false,
        remove_missing: false,
        refresh: false,
        ci: false,
        provenance: provenance(),
    }
}

fn run<'a>(records: &'a [TrialRecord], fingerprint: &'a Fingerprint) -> RunResults<'a> {
    RunResults {
        judged: None,
        records,
        defined: None,
        fingerprint,
        control: None,
    }
}

/// Run levels of the five blessed runs: about 2% apart, a quiet runner.
const LEVELS: [f64; 5] = [1.0, 1.03, 0.97, 1.01, 0.99];

/// A baseline at `path` for `s::a` and `s::b` (both BASE, path nvfs) and `s::gpu`, blessed from
/// five runs at [`LEVELS`].
fn blessed(path: &Path) {
    let rounds: Vec<Vec<TrialRecord>> = LEVELS
        .iter()
        .map(|level| {
            let passes = BASE.map(|g| g * level);
            ["s::a", "s::b", "s::gpu"]
                .map(|name| fixtures::passed(name, &passes, "nvfs", CHECKSUM))
                .to_vec()
        })
        .collect();
    let fp = fixtures::fingerprint();
    let runs: Vec<RunResults> = rounds.iter().map(|records| run(records, &fp)).collect();
    let outcome = bless(&runs, &options(path, &Filter::default())).unwrap();
    assert!(outcome.written);
}

/// A comparison with the run it judged, so that tests read each judgement with its words as a
/// report renders them.
struct Judged {
    comparison: Comparison,
    records: Vec<TrialRecord>,
    fingerprint: Fingerprint,
}

/// One trial's judgement and its words.
#[derive(Debug)]
struct Shown {
    judgement: Judgement,
    headline: String,
    message: String,
}

impl Judged {
    fn new(comparison: Comparison, run: &RunResults<'_>) -> Judged {
        Judged {
            comparison,
            records: run.records.to_vec(),
            fingerprint: run.fingerprint.clone(),
        }
    }

    fn explainer(&self) -> Explainer<'_> {
        Explainer {
            comparison: &self.comparison,
            records: &self.records,
            fingerprint: Some(&self.fingerprint),
            scope: &NO_SCOPE,
            rate: gds_model::units::Rate::Gb,
        }
    }

    fn get(&self, trial: &str) -> Option<Shown> {
        let judged = self.comparison.get(trial)?;
        let Words { headline, message } = self.explainer().words(judged);
        Some(Shown {
            judgement: judged.judgement.clone(),
            headline,
            message,
        })
    }
}

impl std::ops::Deref for Judged {
    type Target = Comparison;
    fn deref(&self) -> &Comparison {
        &self.comparison
    }
}

/// Compares the run with the baseline at `path`, as runner `r1`.
fn judge(path: &Path, run: &RunResults<'_>) -> Judged {
    Judged::new(compare(&file::read(path).unwrap(), path, "r1", run), run)
}

/// Compares one record; the baseline's other trials count as filtered out.
fn judge_one(path: &Path, record: TrialRecord, fingerprint: &Fingerprint) -> Judged {
    let defined: BTreeSet<String> = ["s::a", "s::b", "s::gpu", "s::new"]
        .map(String::from)
        .into();
    let records = [record];
    let results = RunResults {
        judged: None,
        records: &records,
        defined: Some(&defined),
        fingerprint,
        control: None,
    };
    judge(path, &results)
}

/// Trial `s::a` judged against a fresh baseline: a first run at `SLOW`, a confirmation run at
/// `confirmation`, and what the runner's control said before it, if anything.
fn slow_then(confirmation: &[f64], runner: Option<RunnerCheck>) -> Judged {
    let s = scratch();
    blessed(&s.path);
    let mut record = fixtures::passed("s::a", &SLOW, "nvfs", CHECKSUM);
    record.runner_checks.extend(runner);
    let repeat = fixtures::passed("s::a", confirmation, "nvfs", CHECKSUM);
    record.confirmations.push(repeat.measurement.unwrap());
    judge_one(&s.path, record, &fixtures::fingerprint())
}
