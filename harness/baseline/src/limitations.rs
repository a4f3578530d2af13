//! A runner's known limitations, `baselines/limitations/<runner>.yaml`: trials that cannot pass
//! on that runner, each with the doctor's reason (e.g. `strict-gds` where nvidia-fs is not
//! loaded). Recorded and reviewed as a baseline is (`limitation record`, a diff, refused in CI).
//!
//! A run counts such a trial `limited` only while it fails *for the recorded reason*: its own
//! checks failed, not by a crash, a timeout, an interrupt or wrong bytes, and the doctor, asked
//! again in this run, gives the very reason recorded. A crash, a timeout, wrong
//! bytes or another reason fail as usual; a trial that passes says its record can go. Only a
//! trial's own failure is excused: a trial that passed and now takes another path than its
//! baseline is `path-changed`, as ever.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::BaselineError;
use gds_model::outcome::Outcome;
use gds_model::record::{Ending, Status, TrialRecord};
use gds_model::yaml;

pub const SCHEMA_VERSION: u32 = 1;

const HEADER: &str = "# gds-gate runner limitations. Written by `cargo xtask gds-gate limitation`; review changes as a diff.\n# A trial listed here that fails for this reason counts as `limited`, not as a failure.\n";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limitations {
    pub schema_version: u32,
    pub runner: String,
    /// By trial name.
    pub trials: BTreeMap<String, Limitation>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limitation {
    /// The doctor's reason the trial cannot pass on this runner, as it said it.
    pub reason: String,
    /// RFC 3339, UTC, seconds.
    pub recorded_at: String,
    pub host: String,
}

/// What a run's record says about a recorded limitation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Failed for the recorded reason: `limited`.
    Holds,
    /// Failed, but not for the recorded reason: it fails as usual, and this says why it is not
    /// excused.
    Other(String),
    /// Its own checks passed: the limitation is gone and its record can be dropped.
    Gone,
}

/// Whether `record` failed for `recorded`'s reason, with `doctor` the doctor's reason in this
/// run why the trial cannot pass (`None` where it expects it to pass or cannot tell). `None` for
/// a trial that did not run.
pub fn check(recorded: &Limitation, record: &TrialRecord, doctor: Option<&str>) -> Option<Finding> {
    match record.checks {
        Status::Ignored => return None,
        Status::Passed => return Some(Finding::Gone),
        Status::Failed => {}
    }
    if let Some(other) = failed_another_way(record) {
        return Some(Finding::Other(other));
    }
    Some(match doctor {
        Some(now) if now == recorded.reason => Finding::Holds,
        Some(now) => Finding::Other(format!(
            "the doctor now gives another reason: {now} (recorded: {})",
            recorded.reason
        )),
        None => Finding::Other(format!(
            "the doctor no longer finds the recorded reason ({})",
            recorded.reason
        )),
    })
}

/// Settles `record` (its outcome already decided) against its runner's `recorded` limitation:
/// `limited` while it holds; a failure for another reason says why it is not excused. Returns
/// what was found, for the run's notes.
pub fn apply(
    record: &mut TrialRecord,
    recorded: &Limitation,
    doctor: Option<&str>,
) -> Option<Finding> {
    let finding = check(recorded, record, doctor)?;
    match &finding {
        Finding::Holds if record.status == Outcome::Failed => {
            record.status = Outcome::Limited;
            record.limitation = Some(recorded.reason.clone());
        }
        Finding::Other(why) => {
            let details = record.details.get_or_insert_with(String::new);
            details.push_str(&format!("\n  not the runner's recorded limitation: {why}"));
        }
        Finding::Holds | Finding::Gone => {}
    }
    Some(finding)
}

/// A failure no missing path explains: the worker killed, timed out or stopped, or wrong bytes.
fn failed_another_way(record: &TrialRecord) -> Option<String> {
    if let Some(ending) = record.worker.as_ref().map(|w| &w.ending)
        && matches!(
            ending,
            Ending::Signalled { .. } | Ending::TimedOut { .. } | Ending::Interrupted { .. }
        )
    {
        return Some(format!("its worker {ending}"));
    }
    let bad = record
        .measurement
        .iter()
        .chain(&record.confirmations)
        .map(|m| m.integrity.bad_words)
        .sum::<u64>();
    (bad > 0).then(|| format!("it read wrong bytes ({bad} bad 8-byte word(s))"))
}

/// `DIR/limitations/<runner>.yaml`, with the runner name checked as for its baseline.
pub fn path_for(dir: &Path, runner: &str) -> Result<PathBuf, BaselineError> {
    let baseline = super::file::path_for(dir, runner)?;
    Ok(dir
        .join("limitations")
        .join(baseline.file_name().unwrap_or_default()))
}

/// The runner's limitations; an absent file is none. A damaged or newer file is an error.
pub fn read(path: &Path) -> Result<Option<Limitations>, BaselineError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(BaselineError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let corrupt = |error: yaml_serde::Error| {
        let (line, column) = yaml::position(&error, &text);
        BaselineError::Corrupt {
            path: path.to_path_buf(),
            line,
            column,
            message: yaml::message(&error),
        }
    };
    let value: yaml_serde::Value = yaml_serde::from_str(&text).map_err(corrupt)?;
    if let Some(found) = value
        .get("schema_version")
        .and_then(yaml_serde::Value::as_u64)
        && found > u64::from(SCHEMA_VERSION)
    {
        return Err(BaselineError::NewerSchema {
            path: path.to_path_buf(),
            line: super::file::line_of(&text, "schema_version:").unwrap_or(1),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    yaml_serde::from_str(&text).map(Some).map_err(corrupt)
}

pub fn render(limitations: &Limitations) -> String {
    // Plain data with string keys: serialising cannot fail.
    format!(
        "{HEADER}{}",
        yaml_serde::to_string(limitations).unwrap_or_default()
    )
}

/// Writes atomically, creating the `limitations` folder; a runner left with none loses its file.
pub fn write(path: &Path, limitations: &Limitations) -> Result<(), BaselineError> {
    let failed = |source| BaselineError::Write {
        path: path.to_path_buf(),
        source,
    };
    if limitations.trials.is_empty() {
        return match std::fs::remove_file(path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(failed(error)),
            _ => Ok(()),
        };
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    gds_model::fsutil::write_atomically_with(path, render(limitations).as_bytes(), || Ok(()))
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use gds_model::record::WorkerRun;

    const NO_NVFS: &str = "expects path gds, but its reads would take cufile-posix here: cuFile's compat mode: nvidia-fs is not loaded";

    fn recorded() -> Limitation {
        Limitation {
            reason: NO_NVFS.into(),
            recorded_at: "2026-12-06T15:00:00Z".into(),
            host: "gpu-runner-1".into(),
        }
    }

    /// Fixture: a trial whose own path check failed, its worker exiting cleanly.
    fn failed_path() -> TrialRecord {
        fixtures::failed("default::strict-gds", &[1.0, 1.0, 1.0])
    }

    #[test]
    fn a_path_failure_for_the_recorded_reason_is_limited_and_any_other_reason_fails() {
        let record = failed_path();
        assert_eq!(
            check(&recorded(), &record, Some(NO_NVFS)),
            Some(Finding::Holds)
        );
        let udev = "cuFileHandleRegister will fail: no udev record";
        assert!(matches!(
            check(&recorded(), &record, Some(udev)),
            Some(Finding::Other(why)) if why.contains(udev)
        ));
        assert!(matches!(
            check(&recorded(), &record, None),
            Some(Finding::Other(why)) if why.contains("no longer")
        ));
    }

    #[test]
    fn a_crash_a_hang_or_wrong_bytes_is_never_excused() {
        let mut crashed = failed_path();
        crashed.worker = Some(WorkerRun {
            dir: "t".into(),
            ending: Ending::Signalled {
                signal: 11,
                name: "SIGSEGV".into(),
                core_dumped: false,
            },
            seconds: 1.0,
            after_answer_seconds: None,
            exit_beside_next_seconds: None,
        });
        assert!(matches!(
            check(&recorded(), &crashed, Some(NO_NVFS)),
            Some(Finding::Other(why)) if why.contains("SIGSEGV")
        ));
        let mut corrupt = failed_path();
        if let Some(m) = corrupt.measurement.as_mut() {
            m.integrity.bad_words = 3;
        }
        assert!(matches!(
            check(&recorded(), &corrupt, Some(NO_NVFS)),
            Some(Finding::Other(why)) if why.contains("wrong bytes")
        ));
    }

    #[test]
    fn a_trial_that_passes_says_its_limitation_is_gone() {
        let passed = fixtures::passed("default::strict-gds", &[1.0], "nvfs", fixtures::CHECKSUM);
        assert_eq!(
            check(&recorded(), &passed, Some(NO_NVFS)),
            Some(Finding::Gone)
        );
    }

    #[test]
    fn the_file_round_trips_and_an_empty_one_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "gpu-runner-1").unwrap();
        assert!(path.ends_with("limitations/gpu-runner-1.yaml"));
        assert_eq!(read(&path).unwrap(), None);
        let mut limitations = Limitations {
            schema_version: SCHEMA_VERSION,
            runner: "gpu-runner-1".into(),
            trials: BTreeMap::from([("default::strict-gds".to_string(), recorded())]),
        };
        write(&path, &limitations).unwrap();
        assert_eq!(read(&path).unwrap().as_ref(), Some(&limitations));
        limitations.trials.clear();
        write(&path, &limitations).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_damaged_or_newer_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.yaml");
        std::fs::write(
            &path,
            "schema_version: 1\nrunner: r\ntrials: {}\nextra: 1\n",
        )
        .unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(
            error.contains("r.yaml:") && error.contains("extra"),
            "{error}"
        );
        std::fs::write(&path, "schema_version: 9\nrunner: r\ntrials: {}\n").unwrap();
        assert!(matches!(
            read(&path),
            Err(BaselineError::NewerSchema { found: 9, .. })
        ));
    }
}
