//! The runner's recorded limitations ([`gds_baseline::limitations`]) in a run: each trial that
//! has one is settled against it as it finishes, with the reason the doctor gave at the start of
//! this run; a trial that passes again leaves a note saying its record can go.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;

use super::baseline::runner_and_path;
use crate::baseline::limitations::{self, Finding, Limitation};
use crate::cli::BaselineArgs;
use crate::doctor::DoctorReport;
use crate::doctor::Outcome as Outlook;
use crate::error::Error;
use gds_model::record::TrialRecord;

pub struct Limits {
    path: PathBuf,
    recorded: BTreeMap<String, Limitation>,
    /// Why the doctor, at the start of this run, says each trial it expects to fail cannot pass.
    doctor: BTreeMap<String, String>,
    /// Trials with a record that passed in this run.
    gone: Mutex<BTreeSet<String>>,
    /// A rehearsal's side (`trial @stack`) → its trial, whose record the side shares.
    trial_of: BTreeMap<String, String>,
}

impl Limits {
    /// Reads the runner's limitations (a damaged file stops the run before its first trial).
    pub fn load(baselines: &BaselineArgs, preflight: &DoctorReport) -> Result<Limits, Error> {
        let (runner, _) = runner_and_path(baselines, &crate::host::hostname())?;
        let path = limitations::path_for(&baselines.baselines, &runner)?;
        let recorded = limitations::read(&path)?.map_or_else(BTreeMap::new, |l| l.trials);
        Ok(Limits {
            path,
            recorded,
            doctor: doctor_reasons(preflight),
            gone: Mutex::default(),
            trial_of: BTreeMap::new(),
        })
    }

    /// The same limits for a rehearsal's sides: each side is held to its trial's record.
    pub fn with_sides<'a>(mut self, sides: impl Iterator<Item = (&'a str, &'a str)>) -> Limits {
        self.trial_of = sides
            .map(|(side, trial)| (side.to_string(), trial.to_string()))
            .collect();
        self
    }

    /// The trial whose record `name` is held to: its own, or a side's trial's.
    fn trial<'a>(&'a self, name: &'a str) -> &'a str {
        self.trial_of.get(name).map_or(name, String::as_str)
    }

    /// Settles `record` against its recorded limitation, if it has one.
    pub fn apply(&self, record: &mut TrialRecord) {
        let trial = self.trial(&record.name).to_string();
        let Some(recorded) = self.recorded.get(&trial) else {
            return;
        };
        let doctor = self.doctor.get(&record.name).map(String::as_str);
        if limitations::apply(record, recorded, doctor) == Some(Finding::Gone) {
            self.gone
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(trial);
        }
    }

    /// One note per trial that passed despite its recorded limitation, with how to drop it.
    pub fn notes(&self) -> Vec<String> {
        let gone = self
            .gone
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        gone.iter()
            .map(|trial| {
                format!(
                    "{trial} passed: its recorded limitation in {} no longer holds; drop it with `cargo xtask gds-gate limitation drop --exact {trial}` and commit the change",
                    self.path.display()
                )
            })
            .collect()
    }

    /// Whether every trial the doctor expects to fail has its reason recorded: then the
    /// doctor's findings are the runner's known limitations, said once.
    pub fn cover_the_doctors_findings(&self) -> bool {
        !self.doctor.is_empty()
            && self.doctor.iter().all(|(trial, reason)| {
                self.recorded
                    .get(self.trial(trial))
                    .is_some_and(|recorded| recorded.reason == *reason)
            })
    }

    /// The doctor's one line when [`Limits::cover_the_doctors_findings`].
    pub fn doctor_line(&self) -> String {
        // Trials failing for one reason (nvidia-fs not loaded) share it: each reason once, sorted.
        let reasons: BTreeSet<&str> = self.doctor.values().map(String::as_str).collect();
        let trials: BTreeSet<&str> = self.doctor.keys().map(|t| self.trial(t)).collect();
        format!(
            "doctor: {} cannot pass here, a recorded limitation of this runner ({}): {}",
            trials.into_iter().collect::<Vec<_>>().join(", "),
            self.path.display(),
            reasons.into_iter().collect::<Vec<_>>().join("; ")
        )
    }
}

/// The doctor's reason for each selected trial it expects to fail.
pub fn doctor_reasons(preflight: &DoctorReport) -> BTreeMap<String, String> {
    preflight
        .trials
        .iter()
        .filter_map(|trial| match &trial.outcome {
            Outlook::Fail { reason } => Some((trial.name.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixture: limits whose records are the doctor's reasons of this run.
    fn limits(doctor: &[(&str, &str)]) -> Limits {
        let doctor: BTreeMap<String, String> = doctor
            .iter()
            .map(|(trial, reason)| (trial.to_string(), reason.to_string()))
            .collect();
        let recorded = doctor
            .iter()
            .map(|(trial, reason)| {
                let limitation = Limitation {
                    reason: reason.clone(),
                    recorded_at: "2026-12-06T15:00:00Z".into(),
                    host: "gpu01".into(),
                };
                (trial.clone(), limitation)
            })
            .collect();
        Limits {
            path: PathBuf::from("baselines/limitations/gpu01.yaml"),
            recorded,
            doctor,
            gone: Mutex::default(),
            trial_of: BTreeMap::new(),
        }
    }

    #[test]
    fn the_doctors_one_line_names_each_reason_once() {
        let limits = limits(&[
            ("s::a", "nvidia-fs is not loaded"),
            ("s::b", "no udev record"),
            ("s::c", "nvidia-fs is not loaded"),
        ]);
        assert!(limits.cover_the_doctors_findings());
        assert_eq!(
            limits.doctor_line(),
            "doctor: s::a, s::b, s::c cannot pass here, a recorded limitation of this runner (baselines/limitations/gpu01.yaml): no udev record; nvidia-fs is not loaded"
        );
    }

    #[test]
    fn a_rehearsals_sides_are_held_to_their_trials_record() {
        let mut limits = limits(&[("s::a", "nvidia-fs is not loaded")]);
        // The doctor of a rehearsal judged the sides.
        limits.doctor = ["s::a @old", "s::a @new"]
            .map(|side| (side.to_string(), "nvidia-fs is not loaded".to_string()))
            .into();
        let limits = limits.with_sides([("s::a @old", "s::a"), ("s::a @new", "s::a")].into_iter());
        assert!(limits.cover_the_doctors_findings());
        assert!(
            limits
                .doctor_line()
                .starts_with("doctor: s::a cannot pass here")
        );
        let mut side = crate::baseline::fixtures::passed("s::a @new", &[1.0], "host", 0);
        side.fail("no GDS path".into(), String::new());
        side.status = gds_model::outcome::Outcome::Failed;
        limits.apply(&mut side);
        assert_eq!(side.status, gds_model::outcome::Outcome::Limited);
        assert_eq!(side.limitation.as_deref(), Some("nvidia-fs is not loaded"));
    }
}
