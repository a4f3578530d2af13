//! `gds-gate limitation record|drop`: writes the runner's known limitations
//! ([`gds_baseline::limitations`]) for the selected trials, as the doctor finds them on this host,
//! and prints what changed. Refuses in CI: like a baseline, a limitation changes only through an
//! explicit, reviewed step on the runner.

use std::fmt::Write;

use super::run::baseline::runner_and_path;
use super::run::limits::doctor_reasons;
use super::run::{listed, load_suites};
use crate::baseline::limitations::{self, Limitation, Limitations};
use crate::cli::{LimitationAction, RunArgs};
use crate::error::Error;
use crate::exit;
use gds_model::scenario::{self, TrialSpec};

pub fn run(action: LimitationAction) -> Result<u8, Error> {
    let (recording, args) = match action {
        LimitationAction::Record { run } => (true, *run),
        LimitationAction::Drop { run } => (false, *run),
    };
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
    let mut changes = String::new();
    let mut passed_over = String::new();
    if recording {
        let preflight =
            crate::doctor::preflight(&args.inputs.data_dir, &selected, args.require_gpu);
        let reasons = doctor_reasons(&preflight);
        let blessed = crate::baseline::file::read(&baseline_path)?;
        let blessed = blessed.present();
        let recorded_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        for spec in &selected {
            let Some(reason) = reasons.get(&spec.name) else {
                let _ = writeln!(
                    passed_over,
                    "  not recorded: {}: the doctor does not expect it to fail here",
                    spec.name
                );
                continue;
            };
            let new = Limitation {
                reason: reason.clone(),
                recorded_at: recorded_at.to_string(),
                host: hostname.clone(),
            };
            if let Some(blessed) = blessed.as_ref().and_then(|b| b.trials.get(&spec.name)) {
                let _ = writeln!(
                    passed_over,
                    "  note: {} passed here when blessed (path {}): the runner lost what it had, and the trials that took that path will fail",
                    spec.name, blessed.path
                );
            }
            match file.trials.insert(spec.name.clone(), new) {
                Some(old) if old.reason == *reason => {
                    file.trials.insert(spec.name.clone(), old);
                }
                Some(old) => {
                    let _ = writeln!(changes, "  ~ {}: {reason} (was: {})", spec.name, old.reason);
                }
                None => {
                    let _ = writeln!(changes, "  + {}: {reason}", spec.name);
                }
            }
        }
    } else {
        for spec in &selected {
            if let Some(old) = file.trials.remove(&spec.name) {
                let _ = writeln!(changes, "  - {}: {}", spec.name, old.reason);
            }
        }
    }
    if changes.is_empty() {
        print!(
            "up to date: {} (nothing changed)\n{passed_over}",
            path.display()
        );
        return Ok(exit::PASSED);
    }
    limitations::write(&path, &file)?;
    print!("updating: {}\n{changes}{passed_over}", path.display());
    Ok(exit::PASSED)
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
