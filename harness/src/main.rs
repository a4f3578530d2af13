//! The gate binary: parse, dispatch, exit. The work lives in the library.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use gds_gate::cli::{Cli, Command};
use gds_gate::{commands, gate};

const HELP_TEMPLATE: &str =
    "{before-help}{about-with-newline}\n{usage-heading} {usage}\n\n{all-args}{after-help}";

fn main() -> ExitCode {
    // `gds-gate --list | head` should end quietly, as other command-line tools do.
    // SAFETY: restoring the default disposition of a signal before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // libtest-mimic's arguments bring their own help template; put clap's default back.
    let matches = Cli::command().help_template(HELP_TEMPLATE).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let code = match cli.command {
        None => gate::run_gate(cli.run, std::env::args().collect()),
        Some(Command::Validate { paths }) => commands::validate(&paths),
        Some(Command::Gen { inputs }) => commands::gen_data(&inputs),
        Some(Command::Bless {
            from,
            accept_fingerprint,
            remove_missing,
            refresh,
            runs,
            run,
        }) => gate::bless_command(
            gate::BlessRequest {
                from,
                runs,
                accept_fingerprint,
                remove_missing,
                refresh,
                run,
            },
            std::env::args().collect(),
        ),
        Some(Command::Report { merge, out, .. }) if !merge.is_empty() => {
            gds_gate::report::merge::merge_command(&merge, &out)
        }
        Some(Command::Report { out, baselines, .. }) => gate::report_command(&out, &baselines),
        Some(Command::Doctor {
            inputs,
            json,
            require_gpu,
            collect,
            facts,
        }) => commands::doctor(
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
        }) => commands::explain(
            gds_stats.as_deref(),
            nvfs_stats.as_deref(),
            cufile_log.as_deref(),
        ),
        Some(Command::Worker { spec, result }) => gds_gate::worker::worker_main(&spec, &result),
        Some(Command::Bench {
            size,
            runs,
            dir,
            gpu,
            stats,
            history,
        }) => commands::bench(size, runs, &dir, gpu, stats.then_some(history.as_path())),
    };
    ExitCode::from(code)
}
