//! A run's third stage: every selected trial through libtest, each judged as soon as it ran, and
//! the baseline's trials that no suite defines any more failed on lines of their own.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, Mutex};

use libtest_mimic::{Arguments, Failed, Trial};

use super::baseline;
use super::select::Selection;
use super::setup::Setup;
use crate::baseline::Judgement;
use crate::escape::terminal;
use gds_model::record::{Status, TrialRecord};
use gds_model::scenario::TrialSpec;
use gds_model::units::Rate;

pub(super) struct Ran {
    /// Each trial's record with its outcome settled, in the order they ran.
    pub records: Vec<TrialRecord>,
    /// Each trial's judgement against the baseline, made once as it ran.
    pub judged: BTreeMap<String, Judgement>,
    /// Every trial name the suites define, and the baseline's trials no suite defines that the
    /// selection left out.
    pub defined: BTreeSet<String>,
    /// The baseline's trials no suite defines that were selected, each a failed libtest trial.
    pub undefined: usize,
    /// libtest's count of failed trials.
    pub libtest_failed: usize,
}

/// Runs the trials; with `summaries`, each trial's one-line summary is printed before libtest's
/// `ok`, its rates in that unit.
pub(super) fn run(
    libtest: &Arguments,
    selection: &Selection,
    setup: &Setup,
    against: Option<&baseline::Against>,
    summaries: Option<Rate>,
) -> Ran {
    let executor = &setup.executor;
    let records: Arc<Mutex<Vec<TrialRecord>>> = Arc::default();
    let left_out = |spec: &TrialSpec| {
        setup
            .plan
            .as_ref()
            .is_some_and(|plan| plan.left_out.iter().any(|(name, _)| *name == spec.name))
    };
    let mut trials: Vec<Trial> = selection
        .specs
        .iter()
        .filter(|spec| !left_out(spec))
        .map(|spec| {
            let (spec, executor, records, limits) = (
                spec.clone(),
                Arc::clone(executor),
                Arc::clone(&records),
                Arc::clone(&setup.limits),
            );
            let (kind, name) = (spec.reader.name(), spec.name.clone());
            Trial::ignorable_test(name, move || {
                let mut record = executor.execute_and_confirm(spec);
                let failure = executor.judge(&mut record);
                limits.apply(&mut record);
                if let Some(rate) = summaries
                    && record.checks != Status::Ignored
                {
                    print!("{} ", terminal(&record.summary(rate)));
                    let _ = std::io::stdout().flush();
                }
                let outcome = crate::report::libtest::result(&record, failure);
                lock(&records).push(record);
                outcome
            })
            .with_kind(kind)
        })
        .collect();
    // Baseline trials no suite defines any more fail on lines of their own, as trials do; those
    // the selection leaves out are not part of the run.
    let mut defined: BTreeSet<String> = selection.specs.iter().map(|s| s.name.clone()).collect();
    let mut undefined = 0;
    for (name, message) in against.map_or_else(Vec::new, |a| a.undefined(&defined)) {
        let trial = Trial::test(name.clone(), move || Err(Failed::from(terminal(&message))))
            .with_kind("missing");
        if libtest.is_filtered_out(&trial) {
            defined.insert(name);
        } else {
            trials.push(trial);
            undefined += 1;
        }
    }
    let libtest_failed = match crate::interrupt::received() {
        // Stopped before the first trial (during the doctor's probe or the data): no libtest
        // run, whose summary would read "ok. 0 passed"; every scheduled trial is not run.
        Some(signal) => {
            let mut records = lock(&records);
            for spec in &executor.schedule.trials {
                let mut record = crate::interrupt::not_run(spec.clone(), signal);
                executor.judge(&mut record);
                records.push(record);
            }
            0
        }
        None => libtest_mimic::run(libtest, trials).num_failed as usize,
    };
    // Started for a trial that did not run after all (an interrupt, a panic).
    executor.stop_held();
    Ran {
        records: std::mem::take(&mut *lock(&records)),
        judged: std::mem::take(&mut *lock(&executor.judged)),
        defined,
        undefined,
        libtest_failed,
    }
}

/// A trial that panicked while holding the lock has still pushed whole records.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
