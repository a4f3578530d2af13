//! Where a run's wall time went, trial by trial: the libraries' start-up (CUDA, libcufile,
//! KvikIO, PyTorch), the passes' preparation (dropping the page cache, clearing the destination,
//! blanking a written file), the timed I/O, verification, waits for the runner before a
//! confirmation, the workers' exits, and the rest, which is the gate's: starting and reading back
//! workers, judging, and what it does before and after the trials (doctor, data checks, the
//! runner control, reports). A GPU runner is the dearest machine of a CI fleet; this is what a run costs it and
//! what of that the gate adds.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::{Measurement, TrialRecord};

/// One trial's wall time, split. Every part is measured; `gate` is the wall time less the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialTime {
    pub wall: f64,
    /// Worker start to the first byte, less the first pass's preparation; all of a worker's
    /// time when it ended before measuring (a library that failed to start, a stack refused).
    pub startup: f64,
    /// Every pass's untimed preparation: the page cache dropped, the destination cleared, a
    /// written file blanked and its pages dropped after `fsync`.
    pub preparation: f64,
    /// The read or write sections of every pass (warm-up included), a write's fsync and a
    /// roundtrip's read back.
    pub io: f64,
    /// Checking the bytes: on the GPU, and a write's read back with O_DIRECT.
    pub verification: f64,
    /// Waiting for the runner to come back to its level before a confirmation run.
    pub runner_wait: f64,
    /// Workers' exits (a cold trial's last page cache drop ending, and the kernel tearing down a
    /// CUDA context and pinned memory): this trial's worker's time after its answer was
    /// complete, less what ran beside the next trial's start-up (that trial's time), and this
    /// trial's wait, ready, for the previous trial's worker to be gone and judged. The first run's worker only: a confirmation's exit
    /// is in `gate`.
    #[serde(default)]
    pub exit: f64,
    /// The rest: the gate's own cost.
    pub gate: f64,
}

impl TrialTime {
    /// `None` for a trial the gate did not time (an older report) or that started no worker.
    pub fn of(record: &TrialRecord) -> Option<TrialTime> {
        let wall = record.wall_seconds?;
        let measurements = record.measurement.iter().chain(&record.confirmations);
        let mut time = TrialTime {
            wall,
            ..TrialTime::default()
        };
        for m in measurements {
            let (startup, preparation) = m.startup_split().unwrap_or_default();
            time.startup += startup;
            time.preparation += preparation + m.preparation_seconds.unwrap_or(0.0);
            time.io += io(m);
            time.verification += verification(m);
        }
        let held = record
            .measurement
            .as_ref()
            .map_or(0.0, Measurement::held_seconds);
        let (own_exit, beside_next) = record.worker.as_ref().map_or((0.0, 0.0), |worker| {
            (
                worker.after_answer_seconds.unwrap_or(0.0),
                worker.exit_beside_next_seconds.unwrap_or(0.0),
            )
        });
        time.exit = held + (own_exit - beside_next).max(0.0);
        let started = record
            .measurement
            .iter()
            .any(|m| m.startup_seconds.is_some());
        if !started && let Some(worker) = &record.worker {
            // Less the exit, and whatever ran beside the next trial's start-up even when the
            // worker said nothing of its exit (a failure without a measurement).
            time.startup += (worker.seconds - own_exit.max(beside_next)).max(0.0);
        }
        // Folded from +0.0: an empty `sum` of f64 is -0.0, which would print as such.
        time.runner_wait = record
            .runner_checks
            .iter()
            .fold(0.0, |sum, c| sum + c.waited_s);
        time.gate = (wall
            - time.startup
            - time.preparation
            - time.io
            - time.verification
            - time.runner_wait
            - time.exit)
            .max(0.0);
        Some(time)
    }

    fn add(self, other: TrialTime) -> TrialTime {
        TrialTime {
            wall: self.wall + other.wall,
            startup: self.startup + other.startup,
            preparation: self.preparation + other.preparation,
            io: self.io + other.io,
            verification: self.verification + other.verification,
            runner_wait: self.runner_wait + other.runner_wait,
            exit: self.exit + other.exit,
            gate: self.gate + other.gate,
        }
    }
}

fn io(m: &Measurement) -> f64 {
    let passes: f64 = m.seconds.iter().chain(&m.warmup_seconds).sum();
    let write = m.write.as_ref().map_or(0.0, |w| {
        w.fsync_seconds.iter().chain(&w.read_back_seconds).sum()
    });
    passes + write
}

fn verification(m: &Measurement) -> f64 {
    let read = m
        .write
        .as_ref()
        .map_or(0.0, |w| w.verify_read_seconds.iter().sum());
    m.verify_seconds + read
}

/// The whole run's wall time, split: the trials' parts summed, and the gate's time outside any
/// trial counted as the gate's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunTime {
    /// The run's wall time: what it held the runner for.
    pub wall: f64,
    /// The timed trials' parts, summed.
    pub trials: TrialTime,
    /// Before, between and after the trials: the doctor, the data, the runner control, reports.
    pub outside_trials: f64,
    /// Trials without a time (they started no worker), left out of `trials`.
    pub untimed: usize,
    /// Each timed trial's split, by name.
    pub by_trial: BTreeMap<String, TrialTime>,
}

impl RunTime {
    pub fn of(records: &[TrialRecord], wall: f64) -> RunTime {
        let by_trial: BTreeMap<String, TrialTime> = records
            .iter()
            .filter_map(|r| Some((r.name.clone(), TrialTime::of(r)?)))
            .collect();
        let trials = by_trial
            .values()
            .fold(TrialTime::default(), |sum, t| sum.add(*t));
        RunTime {
            wall,
            trials,
            outside_trials: (wall - trials.wall).max(0.0),
            untimed: records.len() - by_trial.len(),
            by_trial,
        }
    }

    /// The gate's share of the wall time: its part of the trials and all outside them.
    pub fn gate(&self) -> f64 {
        self.trials.gate + self.outside_trials
    }

    /// `gate` as a fraction of `wall` (0 for an empty run).
    pub fn gate_share(&self) -> f64 {
        if self.wall > 0.0 {
            self.gate() / self.wall
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RunnerCheck;

    /// Fixture: a record made of a real suite's trial, with chosen figures.
    fn record(name: &str, wall: Option<f64>) -> TrialRecord {
        let suite = crate::scenario::parse(
            std::path::Path::new("s.yaml"),
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n",
        )
        .unwrap();
        let spec = crate::scenario::expand(&suite).remove(0);
        let m: Measurement = serde_json::from_value(serde_json::json!({
            "files": [], "bytes_per_repetition": 1u64 << 30, "warmup_seconds": [],
            "seconds": [2.0, 2.0, 2.0], "gbps": [0.5, 0.5, 0.5], "median_gbps": 0.5,
            "path": "host",
            "integrity": { "method": "exact", "checksum": null, "expected_checksum": null,
                           "bad_words": 0, "first_bad": null, "seconds": 0.5 },
            "resident_after_drop": 0.0, "verify_seconds": 0.5, "total_seconds": 7.0,
            "startup_seconds": 1.5, "setup": [["page cache dropped", 0.5]],
        }))
        .unwrap();
        let mut record = TrialRecord::passed(spec, m);
        record.name = name.into();
        record.wall_seconds = wall;
        record
    }

    #[test]
    fn a_trials_parts_add_up_to_its_wall_time_and_the_rest_is_the_gates() {
        let mut r = record("s::a", Some(10.2));
        r.worker = Some(crate::record::WorkerRun {
            dir: "trial".into(),
            ending: crate::record::Ending::Exited { code: 0 },
            seconds: 8.2,
            after_answer_seconds: Some(0.2),
            exit_beside_next_seconds: None,
        });
        r.runner_checks.push(RunnerCheck {
            disk_before: 0.7,
            cpu_before: 1.0,
            cpu_share_before: 1.0,
            disk: 1.0,
            cpu: 1.0,
            cpu_share: 1.0,
            waited_s: 1.0,
            still_slow: false,
            ..RunnerCheck::default()
        });
        let t = TrialTime::of(&r).unwrap();
        // Start-up is 1.5 s less the first pass's 0.5 s preparation.
        assert_eq!(
            (
                t.startup,
                t.preparation,
                t.io,
                t.verification,
                t.runner_wait,
                t.exit
            ),
            (1.0, 0.5, 6.0, 0.5, 1.0, 0.2)
        );
        assert!((t.gate - 1.0).abs() < 1e-9, "{t:?}");
        let run = RunTime::of(&[r, record("s::b", None)], 12.2);
        assert_eq!(run.untimed, 1);
        assert!((run.outside_trials - 2.0).abs() < 1e-9);
        assert!((run.gate() - 3.0).abs() < 1e-9);
        assert!((run.gate_share() - 3.0 / 12.2).abs() < 1e-9);
        assert_eq!(run.by_trial.len(), 1);
    }

    /// A trial whose worker the gate started while the previous one exited: its window starts
    /// at that start, so the previous exit's part beside it is this trial's start-up; what it
    /// waited, ready, for that exit is an exit's time, and its own exit beside the next
    /// trial's start-up is the next trial's.
    #[test]
    fn an_exit_hidden_behind_the_next_start_up_is_counted_once() {
        let mut r = record("s::a", Some(10.0));
        let m = r.measurement.as_mut().unwrap();
        m.setup.push((crate::record::HELD_PHASE.into(), 0.125));
        m.startup_seconds = Some(1.625);
        r.worker = Some(crate::record::WorkerRun {
            dir: "trial".into(),
            ending: crate::record::Ending::Exited { code: 0 },
            seconds: 8.0,
            after_answer_seconds: Some(0.25),
            exit_beside_next_seconds: Some(0.1875),
        });
        let t = TrialTime::of(&r).unwrap();
        assert_eq!(
            (t.startup, t.preparation, t.exit),
            (1.0, 0.5, 0.125 + 0.0625)
        );
        assert!(
            (t.gate - (10.0 - 1.0 - 0.5 - 6.0 - 0.5 - 0.1875)).abs() < 1e-9,
            "{t:?}"
        );
    }

    #[test]
    fn a_worker_that_ended_before_measuring_spent_its_time_starting_up() {
        let spec = record("s::a", None).spec;
        let mut failed =
            TrialRecord::failed(spec, "compat mode OFF refused".into(), String::new(), None);
        failed.wall_seconds = Some(1.6);
        failed.worker = Some(crate::record::WorkerRun {
            dir: "trial".into(),
            ending: crate::record::Ending::Exited { code: 0 },
            seconds: 1.5,
            after_answer_seconds: None,
            exit_beside_next_seconds: None,
        });
        let t = TrialTime::of(&failed).unwrap();
        assert_eq!(t.startup, 1.5);
        assert!((t.gate - 0.1).abs() < 1e-9, "{t:?}");
        // Its exit after its answer is the exit's, not the start-up's as well.
        failed.worker.as_mut().unwrap().after_answer_seconds = Some(0.25);
        let t = TrialTime::of(&failed).unwrap();
        assert_eq!((t.startup, t.exit), (1.25, 0.25));
        assert!((t.gate - 0.1).abs() < 1e-9, "{t:?}");
        failed.worker.as_mut().unwrap().after_answer_seconds = None;
        // As when the worker says what it set up before it failed (KvikIO refusing compat OFF).
        let mut partial = record("s::a", None).measurement.unwrap();
        (partial.startup_seconds, partial.seconds) = (None, Vec::new());
        failed.measurement = Some(partial);
        assert_eq!(TrialTime::of(&failed).unwrap().startup, 1.5);
    }
}
