//! `gds-gate rehearse --stacks FILE`: the selected trials on two stacks of one runner, in
//! alternating rounds, and each trial's B judged against its A ([`crate::report::rehearsal`]).
//! Nothing is compared with a baseline and nothing enters the run history: a rehearsal answers
//! "what would this upgrade change here?" before it is rolled out.

use std::path::Path;

use super::run::{self, baseline::exit_code, rehearsal::Plan};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::exit;

/// Rounds when neither `--rounds` nor `--budget` says, and the most a budget may fit.
pub const DEFAULT_ROUNDS: u32 = 6;
pub const MOST_ROUNDS: u32 = 100;

pub fn run(
    stacks: &Path,
    rounds: Option<u32>,
    args: RunArgs,
    command: Vec<String>,
) -> Result<u8, Error> {
    crate::interrupt::install();
    let stacks = gds_model::stack::load(stacks)
        .map_err(|error| Error::Usage(gds_model::error_chain(&error)))?;
    let _out = run::claim_out(&args)?;
    // With a budget and no --rounds, the schedule stops starting rounds when the budget is spent.
    let budget = args.budget.filter(|_| rounds.is_none()).map(|b| b.0);
    let plan = Plan {
        stacks,
        rounds: rounds.unwrap_or(if budget.is_some() {
            MOST_ROUNDS
        } else {
            DEFAULT_ROUNDS
        }),
        budget,
    };
    let Some(output) = run::run_trials(&args, command, None, None, Some(&plan))? else {
        return Ok(exit::PASSED);
    };
    let rehearsal = output.report.rehearsal.as_ref();
    if let Some(rehearsal) = rehearsal {
        args.console.say(&rehearsal.console());
    }
    let extra = rehearsal.map(|r| r.markdown(args.rate)).unwrap_or_default();
    let paths = crate::report::write_all(&args.out, &output.report, &extra)?;
    args.console.reports(&paths);
    exit_code(&args.console, &output)
}
