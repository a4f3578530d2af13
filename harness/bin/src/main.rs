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
            let code = gds_worker::serve(job, &spec, &result);
            // The answer is on disk (written atomically) and every handle, buffer and context
            // is released, so the worker leaves without the exit handlers: libcufile 1.15 often
            // dies of SIGSEGV in its own teardown while its statistics run (2 to 5 of 8
            // processes on the H200, counted by `harness/drills/cufile_teardown.py` in this
            // repository's history), which the gate can only report as a crash after a
            // complete result.
            use std::io::Write as _;
            let _ = (std::io::stdout().flush(), std::io::stderr().flush());
            // SAFETY: ends the process; nothing after this point relies on destructors.
            unsafe { libc::_exit(code.into()) }
        }
        _ => {
            // Workers, probes and benches run in this binary.
            if let Ok(exe) = std::env::current_exe() {
                gds_gate::process::set_guard_program(exe.clone());
                gds_gate::job::set_worker_program(exe);
            }
            // Errors are printed here, once, and end in their exit code.
            gds_gate::commands::dispatch(cli, std::env::args().collect()).unwrap_or_else(|error| {
                eprintln!("{}", gds_gate::error::report(&error));
                error.exit_code()
            })
        }
    };
    ExitCode::from(code)
}
