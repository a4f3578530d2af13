//! One module per subcommand: each takes its parsed arguments, does the work through the
//! library, prints what people read and returns the exit status of what it found (from
//! [`crate::exit`]) or the [`Error`] that stopped it, which `main` prints. The
//! worker subcommand is not here: it runs in the worker crate (`gds_worker::serve`), which only
//! the binary links.

pub mod bench;
pub mod bless;
pub mod doctor;
pub mod explain;
pub mod generate;
pub mod limitation;
pub mod rehearse;
pub mod report;
pub mod run;
pub mod validate;

use crate::cli::{Cli, Command, LimitationAction, RunArgs};
use crate::error::Error;

/// Runs the subcommand `cli` names (the trials when it names none); `argv` is recorded in the
/// reports as the command that ran.
pub fn dispatch(cli: Cli, argv: Vec<String>) -> Result<u8, Error> {
    let rate: gds_model::units::Rate = cli.units.into();
    let console = crate::console::Console::default();
    // A run's arguments with what dispatch hands down: the unit and the console.
    let handed = |run: RunArgs| RunArgs {
        rate,
        console: console.clone(),
        ..run
    };
    match cli.command {
        None => run::run_gate(handed(cli.run), argv),
        Some(Command::Validate { paths }) => validate::run(&paths, &console),
        Some(Command::Gen { inputs }) => generate::run(&inputs, rate, &console),
        Some(Command::Bless {
            from,
            from_history,
            history_runs,
            min_span,
            accept_fingerprint,
            remove_missing,
            refresh,
            runs,
            interval,
            run,
        }) => bless::run(
            bless::BlessRequest {
                from,
                from_history: from_history.then_some(crate::baseline::bless::history::Selection {
                    runs: usize::from(history_runs),
                    min_span,
                }),
                runs,
                interval: std::time::Duration::from_secs(interval),
                accept_fingerprint,
                remove_missing,
                refresh,
                run: handed(*run),
            },
            argv,
        ),
        Some(Command::Limitation { action }) => match action {
            LimitationAction::Record { run } => limitation::run(true, handed(*run)),
            LimitationAction::Drop { run } => limitation::run(false, handed(*run)),
        },
        Some(Command::Rehearse {
            stacks,
            rounds,
            run,
        }) => rehearse::run(&stacks, rounds, handed(*run), argv),
        Some(Command::Report {
            merge,
            out,
            baselines,
        }) => report::run(&merge, &out, &baselines, rate, &console),
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
            &console,
        ),
        Some(Command::Explain {
            gds_stats,
            nvfs_stats,
            cufile_log,
            expect,
        }) => explain::run(
            gds_stats.as_deref(),
            nvfs_stats.as_deref(),
            cufile_log.as_deref(),
            expect,
            &console,
        ),
        Some(Command::Bench {
            size,
            runs,
            dir,
            gpu,
            parity,
            threads,
            task_size,
            rest,
            rows,
            stats,
            quick,
            history,
        }) => {
            let setting = crate::bench::parity::Setting {
                size,
                threads,
                task_size,
                rest: std::time::Duration::from_secs(rest),
                rows,
                rate,
                console: console.clone(),
            };
            let mode = match (stats, gpu, parity) {
                (true, _, _) => bench::Mode::Stats(
                    &history,
                    if quick {
                        crate::baseline::simulate::Scale::QUICK
                    } else {
                        crate::baseline::simulate::Scale::FULL
                    },
                ),
                (_, true, _) => bench::Mode::Gpu(setting),
                (_, _, true) => bench::Mode::Parity(setting),
                _ => bench::Mode::Cpu,
            };
            bench::run(size, usize::from(runs), &dir, mode, rate, &console)
        }
        Some(Command::Worker { .. }) => Err(Error::Usage(
            "`worker` runs in the gds-gate binary, not in the gate library".into(),
        )),
        Some(Command::Guard { lineage }) => Ok(crate::process::serve_guard(&lineage)),
    }
}
