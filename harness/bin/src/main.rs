//! The gds-gate binary: parse, dispatch, exit. `worker` (a trial, probe or GPU bench in this
//! process, started by the gate) goes to the worker crate; everything else to the gate library,
//! which does not link the worker crate and so cannot call CUDA or cuFile itself.

use std::process::ExitCode;

use clap::FromArgMatches;
use gds_gate::cli::{Cli, Command, WorkerJob};

fn main() -> ExitCode {
    // `gds-gate --list | head` should end quietly, as other command-line tools do.
    // SAFETY: restoring the default disposition of a signal before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let matches = gds_gate::cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    let code = match cli.command {
        Some(Command::Worker { job, spec, result }) => {
            let job = match job {
                WorkerJob::Trial => gds_worker::Job::Trial,
                WorkerJob::Probe => gds_worker::Job::Probe,
                WorkerJob::GpuBench => gds_worker::Job::GpuBench,
            };
            gds_worker::serve(job, &spec, &result)
        }
        _ => {
            // Workers, probes and benches run in this binary.
            if let Ok(exe) = std::env::current_exe() {
                gds_gate::job::set_worker_program(exe);
            }
            gds_gate::commands::dispatch(cli, std::env::args().collect())
        }
    };
    ExitCode::from(code)
}
