//! A rehearsal inside a run (`gds-gate rehearse`): each selected trial becomes two, `trial @a`
//! and `trial @b`, whose workers get their stack's environment; both take the asked rounds, run
//! in turn (A B, then B A, so that a steady drift weighs on both alike), and B is judged against
//! A as its closure ends, so that its outcome is settled before libtest, the reports and the exit
//! code see it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::report::rehearsal::{self, Pair, Rehearsal};
use gds_model::record::TrialRecord;
use gds_model::scenario::TrialSpec;
use gds_model::stack::Stacks;

/// What `rehearse` asks of a run: the stacks, the rounds each side of each trial runs, and the
/// time the rounds may take (fewer rounds then run when it is spent).
#[derive(Clone, Debug)]
pub struct Plan {
    pub stacks: Stacks,
    pub rounds: u32,
    pub budget: Option<std::time::Duration>,
}

impl Plan {
    /// Each trial as its A side and its B side, next to each other: the same reads, `rounds`
    /// rounds of the trial's own passes per round.
    pub fn sides(&self, specs: Vec<TrialSpec>) -> Vec<TrialSpec> {
        specs
            .into_iter()
            .flat_map(|spec| {
                let per_round = (spec.repetitions / spec.round_count()).max(1);
                [&self.stacks.a, &self.stacks.b].map(|stack| TrialSpec {
                    name: rehearsal::side_name(&spec.name, &stack.name),
                    rounds: self.rounds,
                    repetitions: per_round * self.rounds,
                    ..spec.clone()
                })
            })
            .collect()
    }
}

/// The run's side of a rehearsal: each side's environment, A's records as they end, and the
/// pairs judged so far.
pub(super) struct Pairing {
    plan: Plan,
    /// Side trial name → (the trial's own name, whether it is B).
    sides: BTreeMap<String, (String, bool)>,
    a_records: Mutex<BTreeMap<String, TrialRecord>>,
    pairs: Mutex<Vec<Pair>>,
}

impl Pairing {
    pub fn new(plan: &Plan, specs: &[TrialSpec]) -> Pairing {
        let sides = specs
            .iter()
            .flat_map(|spec| {
                [(&plan.stacks.a, false), (&plan.stacks.b, true)].map(|(stack, is_b)| {
                    (
                        rehearsal::side_name(&spec.name, &stack.name),
                        (spec.name.clone(), is_b),
                    )
                })
            })
            .collect();
        Pairing {
            plan: plan.clone(),
            sides,
            a_records: Mutex::default(),
            pairs: Mutex::default(),
        }
    }

    /// Each side's name and its trial's.
    pub fn sides(&self) -> impl Iterator<Item = (&str, &str)> {
        self.sides
            .iter()
            .map(|(side, (trial, _))| (side.as_str(), trial.as_str()))
    }

    /// The environment of `trial`'s stack (none for a trial of neither side).
    pub fn env_of(&self, trial: &str) -> Vec<(String, String)> {
        match self.sides.get(trial) {
            Some((_, false)) => self.plan.stacks.a.env_pairs(),
            Some((_, true)) => self.plan.stacks.b.env_pairs(),
            None => Vec::new(),
        }
    }

    /// Keeps an A side's record; judges a B side against its A and settles B's outcome, with
    /// the reason and details that libtest and every report say it in.
    pub fn judge(&self, record: &mut TrialRecord) {
        let Some((trial, is_b)) = self.sides.get(&record.name) else {
            return;
        };
        if !is_b {
            lock(&self.a_records).insert(trial.clone(), record.clone());
            return;
        }
        if let Some(a) = lock(&self.a_records).remove(trial) {
            let pair = rehearsal::judge(trial, &a, record, &self.plan.stacks);
            lock(&self.pairs).push(pair);
        }
    }

    /// The rehearsal as report.json keeps it, the pairs in the order they were judged, and the
    /// rounds they ran (fewer than asked where a budget was spent).
    pub fn finish(&self) -> Rehearsal {
        let pairs = std::mem::take(&mut *lock(&self.pairs));
        let ran = pairs
            .iter()
            .map(|pair| pair.round_ratios.len() as u32)
            .max();
        Rehearsal {
            stacks: self.plan.stacks.clone(),
            rounds: ran.unwrap_or(self.plan.rounds),
            pairs,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_model::stack::Stack;

    fn plan() -> Plan {
        let stack = |name: &str, env: &[(&str, &str)]| Stack {
            name: name.into(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        Plan {
            stacks: Stacks {
                a: stack("old", &[]),
                b: stack("new", &[("LD_LIBRARY_PATH", "/opt/new")]),
                tolerance: 0.05,
            },
            rounds: 4,
            budget: None,
        }
    }

    #[test]
    fn each_trial_becomes_an_a_and_a_b_side_with_the_rounds_and_its_own_passes_per_round() {
        let mut spec = crate::baseline::fixtures::spec("s::t");
        (spec.repetitions, spec.rounds) = (3, 3);
        let sides = plan().sides(vec![spec]);
        let names: Vec<&str> = sides.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["s::t @old", "s::t @new"]);
        assert!(sides.iter().all(|s| (s.rounds, s.repetitions) == (4, 4)));
        let pairing = Pairing::new(&plan(), &[crate::baseline::fixtures::spec("s::t")]);
        assert_eq!(
            pairing.env_of("s::t @new"),
            [("LD_LIBRARY_PATH".to_string(), "/opt/new".to_string())]
        );
        assert!(pairing.env_of("s::t @old").is_empty());
        assert!(pairing.env_of("s::t").is_empty());
    }
}
