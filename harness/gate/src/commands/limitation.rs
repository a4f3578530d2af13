//! `gds-gate limitation record|drop`: writes the runner's known limitations
//! ([`gds_baseline::limitations`]) for the selected trials, as the doctor finds them on this host,
//! and prints what changed. Refuses in CI: like a baseline, a limitation changes only through an
//! explicit, reviewed step on the runner.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::run::baseline::runner_and_path;
use super::run::limits::doctor_reasons;
use super::run::{listed, load_suites};
use crate::baseline::limitations::{self, Limitation, Limitations};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::exit;
use gds_model::scenario::{self, TrialSpec};

/// `recording` the selected trials' limitations, or dropping them; `args` select the trials.
pub fn run(recording: bool, args: RunArgs) -> Result<u8, Error> {
    let verb = if recording { "record" } else { "drop" };
    if crate::baseline::in_ci() {
        return Err(Error::Usage(format!(
            "refusing to {verb} runner limitations in CI (the `CI` environment variable is set): they change only through an explicit, reviewed step\n  help: on the runner, run `cargo xtask gds-gate limitation {verb}{}` and open a pull request with the diff",
            filter_args(&args)
        )));
    }
    let hostname = crate::host::hostname();
    let (runner, baseline_path) = runner_and_path(&args.baselines, &hostname)?;
    let path = limitations::path_for(&args.baselines.baselines, &runner)?;
    let mut file = limitations::read(&path)?.unwrap_or_else(|| Limitations {
        schema_version: limitations::SCHEMA_VERSION,
        runner: runner.clone(),
        trials: Default::default(),
    });
    let selected = selected(&args)?;
    let (changes, notes) = if recording {
        let preflight =
            crate::doctor::preflight(&args.inputs.data_dir, &selected, args.require_gpu);
        let blessed = crate::baseline::file::read(&baseline_path)?;
        let recorded = Limitation {
            reason: String::new(),
            recorded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
            host: hostname,
        };
        record(
            &mut file,
            &selected,
            &doctor_reasons(&preflight),
            blessed.present(),
            &recorded,
        )
    } else {
        (drop(&mut file, &selected), String::new())
    };
    if changes.is_empty() {
        args.console.write(&format!(
            "up to date: {} (nothing changed)\n{notes}",
            path.display()
        ));
        return Ok(exit::PASSED);
    }
    limitations::write(&path, &file)?;
    args.console
        .write(&format!("updating: {}\n{changes}{notes}", path.display()));
    Ok(exit::PASSED)
}

/// Records the doctor's `reasons` for the `selected` trials that have one (`stamp`: when and on
/// which host); returns the changes and the notes, one line each.
fn record(
    file: &mut Limitations,
    selected: &[TrialSpec],
    reasons: &BTreeMap<String, String>,
    blessed: Option<&crate::baseline::Baseline>,
    stamp: &Limitation,
) -> (String, String) {
    let (mut changes, mut notes) = (String::new(), String::new());
    for spec in selected {
        let name = &spec.name;
        let Some(reason) = reasons.get(name) else {
            let _ = writeln!(
                notes,
                "  not recorded: {name}: the doctor does not expect it to fail here"
            );
            continue;
        };
        if let Some(entry) = blessed.and_then(|b| b.trials.get(name)) {
            let _ = writeln!(
                notes,
                "  note: {name} passed here when blessed (path {}): the runner lost what it had, and the trials that took that path will fail",
                entry.path
            );
        }
        match file.trials.get(name).map(|old| old.reason.as_str()) {
            Some(old) if old == reason => continue,
            Some(old) => {
                let _ = writeln!(changes, "  ~ {name}: {reason} (was: {old})");
            }
            None => {
                let _ = writeln!(changes, "  + {name}: {reason}");
            }
        }
        let new = Limitation {
            reason: reason.clone(),
            ..stamp.clone()
        };
        file.trials.insert(name.clone(), new);
    }
    (changes, notes)
}

/// Drops the `selected` trials' records; returns the changes, one line each.
fn drop(file: &mut Limitations, selected: &[TrialSpec]) -> String {
    let mut changes = String::new();
    for spec in selected {
        if let Some(old) = file.trials.remove(&spec.name) {
            let _ = writeln!(changes, "  - {}: {}", spec.name, old.reason);
        }
    }
    changes
}

/// The trials the suites define that the filter selects, as a run selects them.
fn selected(args: &RunArgs) -> Result<Vec<TrialSpec>, Error> {
    let suites = load_suites(&args.inputs.suite_paths())?;
    let specs: Vec<TrialSpec> = suites
        .iter()
        .flat_map(scenario::expand)
        .filter(|spec| !args.libtest.is_filtered_out(&listed(spec)))
        .collect();
    if specs.is_empty() {
        return Err(Error::NothingSelected(format!(
            "no trial matches{}; `cargo xtask gds-gate --list` shows their names",
            filter_args(args)
        )));
    }
    Ok(specs)
}

fn filter_args(args: &RunArgs) -> String {
    crate::baseline::Filter {
        patterns: args.libtest.filter.iter().cloned().collect(),
        exact: args.libtest.exact,
    }
    .to_args()
}
