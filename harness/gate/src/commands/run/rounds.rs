//! The run's schedule of workers: a trial of `rounds: R` takes its measured passes in R fresh
//! workers, and the run takes round 1 of every trial, then round 2 of those that have one, and so
//! on (A B C A B C…). A runner whose level drifts in time (a slow stretch of seconds, a slow
//! spell of a minute) then weighs on every trial alike, and no trial's passes sit in one moment
//! of it (`bench --stats`, schedules).
//!
//! libtest calls the trials' closures in order, one at a time. A closure works through the
//! schedule from where the last one stopped until its own trial's rounds are done, keeping the
//! other trials' rounds for their closures; the first closure runs most of the run. Each round
//! is a job as a trial of one round is: its worker may be started ahead as the one before
//! answers ([`super::ahead`]), and its window of time is the trial's.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Executor, unavailable};
use crate::launch::Launcher;
use gds_model::record::{Status, TrialRecord};
use gds_model::scenario::TrialSpec;

/// One worker of the schedule: round `round` (from 0) of trial `trial` (an index into
/// [`Schedule::trials`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Job {
    pub trial: usize,
    pub round: u32,
}

/// The trials libtest runs, in its order, and their rounds in the order they run.
pub(super) struct Schedule {
    pub trials: Vec<TrialSpec>,
    pub jobs: Vec<Job>,
    /// A rehearsal's time for its rounds: a round starts only while the rounds so far say it
    /// ends within it (two rounds run whatever it says).
    budget: Option<Duration>,
    done: Mutex<Done>,
}

/// What the closures have run of the schedule so far.
#[derive(Default)]
struct Done {
    /// The next job to run.
    next: usize,
    /// Each trial's rounds so far, and the time their windows took.
    records: BTreeMap<usize, (Vec<TrialRecord>, Duration)>,
    /// When the first job started, the latest round whose start was weighed against the
    /// budget, and the rounds the budget cut every trial to.
    started: Option<Instant>,
    weighed: u32,
    cut: Option<u32>,
}

impl Schedule {
    /// The schedule of a run's `trials`.
    pub fn new(trials: Vec<TrialSpec>) -> Schedule {
        Schedule::build(trials, false, None)
    }

    /// The schedule of a rehearsal's sides, A and B of each trial next to each other: each
    /// pair's order turns round by round, A B then B A, so that a drift that moves steadily over
    /// a pair's rounds favours neither side; with a `budget`, as many rounds as fit it.
    pub fn rehearsal(sides: Vec<TrialSpec>, budget: Option<Duration>) -> Schedule {
        Schedule::build(sides, true, budget)
    }

    fn build(trials: Vec<TrialSpec>, paired: bool, budget: Option<Duration>) -> Schedule {
        let most = trials.iter().map(TrialSpec::round_count).max().unwrap_or(1);
        let count = trials.len();
        let mut jobs = Vec::new();
        for round in 0..most {
            let swap = paired && round % 2 == 1;
            for at in 0..count {
                let trial = if swap && (at ^ 1) < count { at ^ 1 } else { at };
                if round < trials[trial].round_count() {
                    jobs.push(Job { trial, round });
                }
            }
        }
        Schedule {
            trials,
            jobs,
            budget,
            done: Mutex::default(),
        }
    }

    /// The worker's trial: `job`'s round of its trial.
    pub fn spec(&self, job: Job) -> TrialSpec {
        let trial = &self.trials[job.trial];
        trial.round(job.round).unwrap_or_else(|| trial.clone())
    }

    fn done(&self) -> MutexGuard<'_, Done> {
        self.done
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether trial `trial` needs no more rounds: all ran (or all the budget left), or one did
    /// not pass.
    fn finished(&self, done: &Done, trial: usize) -> bool {
        let count = self.trials[trial]
            .round_count()
            .min(done.cut.unwrap_or(u32::MAX));
        done.records.get(&trial).is_some_and(|(rounds, _)| {
            rounds.len() as u32 >= count
                || rounds.iter().any(|round| round.checks != Status::Passed)
        })
    }

    /// Whether the job at `at` may start: with a budget, the first job of each round from the
    /// third on starts only when the rounds so far, at their mean time, leave room for it; if
    /// not, every trial ends with the rounds it has.
    fn fits(&self, done: &mut Done, at: usize, now: Instant) -> bool {
        let Some(budget) = self.budget else {
            return true;
        };
        let started = *done.started.get_or_insert(now);
        let round = self.jobs[at].round;
        if round < 2 || round <= done.weighed {
            return true;
        }
        done.weighed = round;
        let spent = now.duration_since(started);
        if spent + spent / round <= budget {
            return true;
        }
        done.cut = Some(round);
        false
    }
}

impl Executor {
    /// Runs the schedule until `spec`'s rounds are done; returns them, in order, and the time
    /// their windows took. `None` for a trial the schedule does not hold.
    pub(super) fn run_rounds(&self, spec: &TrialSpec) -> Option<(Vec<TrialRecord>, Duration)> {
        let schedule = &self.schedule;
        let trial = schedule.trials.iter().position(|t| t.name == spec.name)?;
        loop {
            let job = {
                let mut done = schedule.done();
                if schedule.finished(&done, trial) {
                    return done.records.remove(&trial);
                }
                let Some(at) = (done.next..schedule.jobs.len())
                    .find(|&at| !schedule.finished(&done, schedule.jobs[at].trial))
                else {
                    return done.records.remove(&trial);
                };
                if !schedule.fits(&mut done, at, Instant::now()) {
                    return done.records.remove(&trial);
                }
                done.next = at + 1;
                at
            };
            let (record, time) = self.run_job(job);
            let trial_of_job = schedule.jobs[job].trial;
            let mut done = schedule.done();
            let entry = done.records.entry(trial_of_job).or_default();
            entry.0.push(record);
            entry.1 += time;
        }
    }

    /// Runs the job at `at` of the schedule; returns its record and the time of its window.
    fn run_job(&self, at: usize) -> (TrialRecord, Duration) {
        let job = self.schedule.jobs[at];
        let spec = self.schedule.spec(job);
        let runs = unavailable(&spec, &self.host).is_none();
        if runs {
            self.progress.trial_started();
        }
        let start = self.window_start(at);
        let record = self.execute_catching_panics(spec, &self.launcher_for(job), Some(at));
        let time = self.window_end(start).duration_since(start);
        if runs {
            self.progress.trial_finished();
        }
        (record, time)
    }

    /// Where `job`'s worker keeps its folder: the trial's own for its last round, as for a trial
    /// of one round, and `round-N/` under the trials' folder for the others.
    /// A rehearsal's side adds its stack's environment.
    pub(super) fn launcher_for(&self, job: Job) -> Launcher {
        let trial = &self.schedule.trials[job.trial];
        let mut launcher = round_launcher(&self.launcher, job.round, trial.round_count());
        if let Some(pairing) = &self.pairing {
            launcher.env.extend(pairing.env_of(&trial.name));
        }
        launcher
    }

    /// A confirmation run of `spec`, placed as its run is: its rounds in fresh workers, each
    /// after the confirmation's pause (the first waited already), so that the repeat samples the
    /// runner's drift over time as the run did, not one moment of it.
    pub(super) fn confirmation_run(&self, spec: &TrialSpec, launcher: &Launcher) -> TrialRecord {
        let count = spec.round_count();
        let mut rounds = Vec::new();
        for round in 0..count {
            if round > 0 {
                crate::interrupt::sleep(self.confirm_delay);
            }
            let Some(round_spec) = spec.round(round) else {
                break;
            };
            let record = self.execute_catching_panics(
                round_spec,
                &round_launcher(launcher, round, count),
                None,
            );
            let passed = record.checks == Status::Passed;
            rounds.push(record);
            if !passed {
                break;
            }
        }
        crate::launch::rounds::join(spec, rounds)
    }
}

/// `launcher` for round `round` of `count`: the same for the last, `round-N/` for the others.
fn round_launcher(launcher: &Launcher, round: u32, count: u32) -> Launcher {
    match round + 1 < count {
        true => Launcher {
            trials_dir: launcher.trials_dir.join(format!("round-{}", round + 1)),
            ..launcher.clone()
        },
        false => launcher.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trials(rounds: &[u32]) -> Vec<TrialSpec> {
        rounds
            .iter()
            .enumerate()
            .map(|(i, &rounds)| {
                let mut spec = crate::baseline::fixtures::spec(&format!("s::t{i}"));
                (spec.repetitions, spec.rounds) = (3, rounds);
                spec
            })
            .collect()
    }

    #[test]
    fn rounds_interleave_the_trials_and_a_trial_of_fewer_rounds_drops_out() {
        let schedule = Schedule::new(trials(&[3, 1, 2]));
        let order: Vec<(usize, u32)> = schedule.jobs.iter().map(|j| (j.trial, j.round)).collect();
        assert_eq!(
            order,
            [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1), (0, 2)],
            "round 1 of every trial, then round 2 of those with one, …"
        );
        assert_eq!(Schedule::new(trials(&[1, 1])).jobs.len(), 2);
    }

    #[test]
    fn a_rehearsals_pairs_turn_their_order_round_by_round() {
        let schedule = Schedule::rehearsal(trials(&[3, 3, 3, 3]), None);
        let order: Vec<usize> = schedule.jobs.iter().map(|j| j.trial).collect();
        assert_eq!(order, [0, 1, 2, 3, 1, 0, 3, 2, 0, 1, 2, 3], "A B, then B A");
    }

    #[test]
    fn a_budget_cuts_every_trial_at_the_first_round_that_would_not_end_within_it() {
        let schedule = Schedule::rehearsal(trials(&[3, 3]), Some(Duration::from_secs(30)));
        let start = Instant::now();
        let mut done = schedule.done();
        let at = |round: u32| schedule.jobs.iter().position(|j| j.round == round).unwrap();
        assert!(schedule.fits(&mut done, at(0), start));
        assert!(
            schedule.fits(&mut done, at(1), start + Duration::from_secs(25)),
            "two rounds whatever it costs"
        );
        // Two rounds took 18 s: a third would end at 27 s.
        let mut roomy = Done {
            started: Some(start),
            ..Done::default()
        };
        assert!(schedule.fits(&mut roomy, at(2), start + Duration::from_secs(18)));
        // Two rounds took 22 s: a third would end at 33 s.
        assert!(!schedule.fits(&mut done, at(2), start + Duration::from_secs(22)));
        assert_eq!(done.cut, Some(2));
        done.records.insert(
            0,
            (
                vec![crate::baseline::fixtures::passed("s::t0", &[1.0], "host", 0); 2],
                Duration::ZERO,
            ),
        );
        assert!(schedule.finished(&done, 0), "cut at two rounds");
        assert!(!schedule.finished(&done, 1), "no round of its own yet");
    }

    #[test]
    fn each_round_gets_its_share_of_the_passes_and_its_own_warmup() {
        let mut spec = trials(&[3])[0].clone();
        (spec.warmup, spec.repetitions) = (1, 5);
        let shares: Vec<(u32, u32)> = (0..4)
            .filter_map(|k| spec.round(k))
            .map(|round| (round.warmup, round.repetitions))
            .collect();
        assert_eq!(shares, [(1, 2), (1, 2), (1, 1)]);
        // More rounds than passes: one pass a round.
        spec.rounds = 9;
        assert_eq!(spec.round_count(), 5);
    }
}
