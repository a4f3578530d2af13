//! One module per subcommand: each takes its parsed arguments, does the work through the
//! library, prints what people read and returns the exit status from [`crate::exit`]. The
//! worker subcommand is not here: it runs in the worker crate (`gds_worker::serve`), which only
//! the binary links.

pub mod bench;
pub mod bless;
pub mod doctor;
pub mod explain;
pub mod generate;
pub mod report;
pub mod run;
pub mod validate;

use crate::cli::{Cli, Command};
use crate::exit;

/// Runs the subcommand `cli` names (the trials when it names none); `argv` is recorded in the
/// reports as the command that ran.
pub fn dispatch(cli: Cli, argv: Vec<String>) -> u8 {
    match cli.command {
        None => run::run_gate(cli.run, argv),
        Some(Command::Validate { paths }) => validate::run(&paths),
        Some(Command::Gen { inputs }) => generate::run(&inputs),
        Some(Command::Bless {
            from,
            accept_fingerprint,
            remove_missing,
            refresh,
            run,
        }) => bless::run(
            bless::BlessRequest {
                from,
                accept_fingerprint,
                remove_missing,
                refresh,
                run,
            },
            argv,
        ),
        Some(Command::Report {
            merge,
            out,
            baselines,
        }) => report::run(&merge, &out, &baselines),
        Some(Command::Doctor {
            inputs,
            json,
            require_gpu,
            collect,
            facts,
        }) => doctor::run(
            &inputs,
            json,
            require_gpu,
            collect.as_deref(),
            facts.as_deref(),
        ),
        Some(Command::Explain {
            gds_stats,
            nvfs_stats,
            cufile_log,
        }) => explain::run(
            gds_stats.as_deref(),
            nvfs_stats.as_deref(),
            cufile_log.as_deref(),
        ),
        Some(Command::Bench {
            size,
            runs,
            dir,
            gpu,
            stats,
            history,
        }) => bench::run(size, runs, &dir, gpu, stats.then_some(history.as_path())),
        Some(Command::Worker { .. }) => {
            eprintln!("error: `worker` runs in the gds-gate binary, not in the gate library");
            exit::USAGE
        }
    }
}
