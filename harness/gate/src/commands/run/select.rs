//! A run's first stage: the trials its suites define, and those its command line selects.

use libtest_mimic::Arguments;

use super::{listed, load_suites, rehearsal};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::escape::terminal;
use gds_model::scenario::{self, Suite, TrialSpec};

pub(super) struct Selection {
    pub suites: Vec<Suite>,
    /// Every trial the suites define; in a rehearsal, each on both stacks.
    pub specs: Vec<TrialSpec>,
    /// The trials libtest's filter keeps, in suite order; never empty.
    pub selected: Vec<TrialSpec>,
    /// A rehearsal's stacks, which judge each trial's B side against its A side.
    pub pairing: Option<rehearsal::Pairing>,
}

/// The selection; `None` when the command line only lists the trials, which this does.
pub(super) fn select(
    args: &RunArgs,
    libtest: &Arguments,
    rehearsal: Option<&rehearsal::Plan>,
) -> Result<Option<Selection>, Error> {
    let suites = load_suites(&args.inputs.suite_paths())?;
    let specs: Vec<TrialSpec> = suites.iter().flat_map(scenario::expand).collect();
    let pairing = rehearsal.map(|plan| rehearsal::Pairing::new(plan, &specs));
    let specs = match rehearsal {
        Some(plan) => plan.sides(specs),
        None => specs,
    };
    if let Some(duplicate) = first_duplicate_name(&specs) {
        return Err(Error::Usage(format!(
            "trial `{duplicate}` is defined twice; give the suites different `suite:` names"
        )));
    }
    if libtest.list {
        let _ = libtest_mimic::run(libtest, specs.iter().map(listed).collect());
        return Ok(None);
    }
    let selected: Vec<TrialSpec> = specs
        .iter()
        .filter(|spec| !libtest.is_filtered_out(&listed(spec)))
        .cloned()
        .collect();
    // Before anything is prepared or written: a run of nothing must not replace the reports of
    // the last real one.
    if selected.is_empty() {
        return Err(nothing_selected(args, specs.len()));
    }
    Ok(Some(Selection {
        suites,
        specs,
        selected,
        pairing,
    }))
}

/// A filter that selects nothing is most often a typo, of a trial or of a subcommand
/// (`gds-gate valdate` is the filter `valdate`): the error says which, and the run ends before it
/// writes anything. A word near a subcommand is a usage error; otherwise nothing ran.
fn nothing_selected(args: &RunArgs, trials: usize) -> Error {
    let Some(filter) = args.libtest.filter.as_deref().map(terminal) else {
        return Error::NothingSelected(format!(
            "none of the {trials} trials is selected (--skip, --exact or --ignored left none); `--list` shows their names; the reports of the last run are left as they were"
        ));
    };
    let subcommands = crate::cli::subcommand_names();
    let names: Vec<&str> = subcommands.iter().map(String::as_str).collect();
    if let Some(command) = gds_model::suggest::nearest(&filter, &names) {
        return Error::Usage(format!(
            "`{filter}` is not a subcommand, and as a trial filter it matches none of the {trials} trials\n  help: did you mean `gds-gate {command}`?"
        ));
    }
    Error::NothingSelected(format!(
        "the filter `{filter}` matches none of the {trials} trials; `--list` shows their names; the reports of the last run are left as they were"
    ))
}

fn first_duplicate_name(specs: &[TrialSpec]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    specs
        .iter()
        .map(|spec| spec.name.as_str())
        .find(|name| !seen.insert(*name))
}
