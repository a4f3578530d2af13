//! One trial's record from its rounds (`rounds:`): each round a fresh worker with its share of
//! the measured passes ([`TrialSpec::round`]), run at its own moment of the run so that the
//! runner's drift in time falls on every trial alike. The passes are the trial's in order of the
//! rounds; each round checked its own path and bytes, and a round that did not pass is the
//! trial's outcome.

use gds_model::cost::Latency;
use gds_model::numbers::median;
use gds_model::record::{Measurement, Status, TrialRecord, WorkerRun};
use gds_model::scenario::TrialSpec;

use crate::assess::where_;

/// The trial `spec` from the records of its rounds, in order (at least one). The last round's
/// worker, folder and evidence stand for the trial; passes, costs and times are every round's.
pub fn join(spec: &TrialSpec, rounds: Vec<TrialRecord>) -> TrialRecord {
    let count = spec.round_count() as usize;
    let mut rounds = rounds.into_iter().enumerate();
    let Some((_, mut trial)) = rounds.next() else {
        unreachable!("a trial runs one round at least")
    };
    if trial.checks != Status::Passed {
        return in_round(trial, 1, count, spec);
    }
    for (k, round) in rounds {
        if round.checks != Status::Passed {
            return in_round(round, k + 1, count, spec);
        }
        if let Some(changed) = path_change(&trial, &round, k + 1) {
            let mut failed = round;
            failed.spec = spec.clone();
            let details = format!(
                "{}\n  each round is a fresh worker reading the same files: the path should not depend on which one\n  next: compare the rounds' cufile.log (trial folders under `trials/round-N/`)",
                where_(spec)
            );
            failed.fail(changed, details);
            return failed;
        }
        trial = add_round(trial, round);
    }
    trial.spec = spec.clone();
    if let Some(m) = trial.measurement.as_mut().filter(|_| count > 1) {
        m.median_gbps = (!m.gbps.is_empty()).then(|| median(&m.gbps));
    }
    trial
}

/// A round that did not pass is the trial's outcome. A failure of the round's worker says which
/// round it was; one before any worker started (the trial's data, its plan) or a trial not run is
/// the trial's, whichever round met it.
fn in_round(mut round: TrialRecord, k: usize, count: usize, spec: &TrialSpec) -> TrialRecord {
    round.spec = spec.clone();
    let workers = round.worker.is_some();
    if let Some(reason) = round.reason.as_mut().filter(|_| count > 1 && workers)
        && round.checks == Status::Failed
    {
        *reason = format!("round {k} of {count}: {reason}");
    }
    round
}

/// `Some(reason)` when round `k` took another path than the rounds before it.
fn path_change(before: &TrialRecord, round: &TrialRecord, k: usize) -> Option<String> {
    let (Some(a), Some(b)) = (&before.measurement, &round.measurement) else {
        return None;
    };
    (a.path != b.path).then(|| {
        format!(
            "the path changed between rounds: {} before round {k}, {} in it",
            a.path, b.path
        )
    })
}

/// `round` appended to the rounds joined so far: it stands for the trial from now on, with the
/// passes and times of those before it.
fn add_round(before: TrialRecord, mut round: TrialRecord) -> TrialRecord {
    round.warnings = [before.warnings, round.warnings].concat();
    round.worker = match (before.worker, round.worker.take()) {
        (Some(a), Some(b)) => Some(add_worker(a, b)),
        (a, b) => b.or(a),
    };
    round.measurement = match (before.measurement, round.measurement.take()) {
        (Some(a), Some(b)) => Some(add_measurement(a, b)),
        (a, b) => b.or(a),
    };
    round
}

/// The rounds' workers as one: the last one's folder and ending, every one's time.
fn add_worker(before: WorkerRun, last: WorkerRun) -> WorkerRun {
    WorkerRun {
        seconds: before.seconds + last.seconds,
        after_answer_seconds: sum(before.after_answer_seconds, last.after_answer_seconds),
        exit_beside_next_seconds: sum(
            before.exit_beside_next_seconds,
            last.exit_beside_next_seconds,
        ),
        ..last
    }
}

/// Two rounds' time of one kind; `None` when neither round had it.
fn sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// Passes, costs and times of both; the last round's evidence (each round's path agreed).
fn add_measurement(before: Measurement, last: Measurement) -> Measurement {
    let cat = |a: Vec<f64>, b: Vec<f64>| [a, b].concat();
    let rounds = match before.rounds.is_empty() {
        true => vec![before.seconds.len() as u32],
        false => before.rounds.clone(),
    };
    Measurement {
        warmup_seconds: cat(before.warmup_seconds, last.warmup_seconds),
        seconds: cat(before.seconds, last.seconds.clone()),
        gbps: cat(before.gbps, last.gbps),
        costs: [before.costs, last.costs].concat(),
        latency: add_latency(before.latency.as_ref(), last.latency.as_ref()),
        verify_seconds: before.verify_seconds + last.verify_seconds,
        total_seconds: before.total_seconds + last.total_seconds,
        startup_seconds: sum(before.startup_seconds, last.startup_seconds),
        preparation_seconds: sum(before.preparation_seconds, last.preparation_seconds),
        setup: [before.setup, last.setup].concat(),
        resident_after_drop: [before.resident_after_drop, last.resident_after_drop]
            .into_iter()
            .flatten()
            .reduce(f64::max),
        memory: match (before.memory, last.memory) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => b.or(a),
        },
        write: match (before.write, last.write) {
            (Some(a), Some(b)) => Some(gds_model::record::WriteFigures {
                fsync_seconds: cat(a.fsync_seconds, b.fsync_seconds),
                verify_read_seconds: cat(a.verify_read_seconds, b.verify_read_seconds),
                read_back_seconds: cat(a.read_back_seconds, b.read_back_seconds),
                read_back_gbps: cat(a.read_back_gbps, b.read_back_gbps),
            }),
            (a, b) => b.or(a),
        },
        rounds: [rounds, vec![last.seconds.len() as u32]].concat(),
        ..last
    }
}

/// Calls, mean and maximum over both rounds. Percentiles of two workers' calls do not combine
/// from their percentiles, so the joined latency has none; each pass's are in `costs`.
fn add_latency(a: Option<&Latency>, b: Option<&Latency>) -> Option<Latency> {
    let (a, b) = (a?, b?);
    let calls = a.calls + b.calls;
    Some(Latency {
        calls,
        mean_us: (a.mean_us * a.calls as f64 + b.mean_us * b.calls as f64) / calls.max(1) as f64,
        p50_us: None,
        p90_us: None,
        p95_us: None,
        p99_us: None,
        p999_us: None,
        max_us: a.max_us.zip(b.max_us).map(|(x, y)| x.max(y)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::fixtures::{self, CHECKSUM};

    fn spec() -> TrialSpec {
        let mut spec = fixtures::spec("s::t");
        (spec.repetitions, spec.rounds) = (3, 3);
        spec
    }

    fn round(gbps: f64, path: &str) -> TrialRecord {
        let mut record = fixtures::passed("s::t", &[gbps], path, CHECKSUM);
        record.spec = spec().round(0).unwrap();
        record
    }

    #[test]
    fn the_rounds_passes_join_in_order_with_their_median_and_the_full_spec() {
        let joined = join(
            &spec(),
            vec![round(1.0, "host"), round(3.0, "host"), round(2.0, "host")],
        );
        assert_eq!(joined.checks, Status::Passed);
        assert_eq!(joined.spec, spec(), "the trial's own spec, not a round's");
        let m = joined.measurement.unwrap();
        assert_eq!(m.gbps, [1.0, 3.0, 2.0]);
        assert_eq!((m.median_gbps, m.rounds), (Some(2.0), vec![1, 1, 1]));
        assert_eq!(m.warmup_seconds.len(), 3, "every round's warm-up");
        assert!((m.total_seconds - 9.0).abs() < 1e-9, "{}", m.total_seconds);
    }

    #[test]
    fn a_failed_round_is_the_trials_outcome_naming_its_round() {
        let mut bad = fixtures::failed("s::t", &[1.0]);
        bad.spec = spec().round(1).unwrap();
        bad.worker = Some(WorkerRun {
            dir: "trials/s__t".into(),
            ending: gds_model::record::Ending::Exited { code: 0 },
            seconds: 1.0,
            after_answer_seconds: None,
            exit_beside_next_seconds: None,
        });
        // Before any worker (the data missing): the trial's failure, in no round of its own.
        let mut no_data = fixtures::failed("s::t", &[1.0]);
        no_data.measurement = None;
        let unrounded = join(&spec(), vec![no_data.clone()]);
        assert_eq!(unrounded.reason, no_data.reason);
        let joined = join(&spec(), vec![round(1.0, "cufile-posix"), bad]);
        assert_eq!(joined.checks, Status::Failed);
        assert_eq!(joined.spec, spec());
        let reason = joined.reason.unwrap();
        assert!(reason.starts_with("round 2 of 3: wrong path"), "{reason}");
        let ignored = join(&spec(), vec![fixtures::ignored("s::t")]);
        assert_eq!(
            ignored.reason,
            fixtures::ignored("s::t").reason,
            "not run is not a round's"
        );
    }

    #[test]
    fn a_path_that_changes_between_rounds_fails_the_trial() {
        let joined = join(
            &spec(),
            vec![
                round(1.0, "nvfs"),
                round(1.0, "nvfs"),
                round(1.0, "cufile-posix"),
            ],
        );
        assert_eq!(joined.checks, Status::Failed);
        assert_eq!(
            joined.reason.as_deref(),
            Some("the path changed between rounds: nvfs before round 3, cufile-posix in it")
        );
    }

    #[test]
    fn joined_latency_keeps_calls_mean_and_max_but_no_percentile() {
        let latency = |calls, mean_us, max_us| Latency {
            calls,
            mean_us,
            p50_us: Some(mean_us),
            p90_us: Some(max_us),
            p95_us: Some(max_us),
            p99_us: Some(max_us),
            p999_us: Some(max_us),
            max_us: Some(max_us),
        };
        let joined = add_latency(Some(&latency(1, 10.0, 20.0)), Some(&latency(3, 30.0, 90.0)));
        assert_eq!(
            joined,
            Some(Latency {
                calls: 4,
                mean_us: 25.0,
                p50_us: None,
                p90_us: None,
                p95_us: None,
                p99_us: None,
                p999_us: None,
                max_us: Some(90.0),
            })
        );
    }
}
