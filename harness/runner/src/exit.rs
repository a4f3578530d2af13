//! Exit codes: one per outcome, so CI can tell a slow disk from a broken setup.
//! `docs/reference/exit-codes.md` and `--help` say the same. A run's code comes from its totals
//! (`gds_gate::outcome::Totals::exit_code`); which error of a command ends in which code is
//! mapped in one place (`gds_gate::error::Error::exit_code`).

/// Every selected trial passed, or was ignored for an accepted reason.
pub const PASSED: u8 = 0;
/// A trial failed: wrong path, wrong bytes, or it could not run.
pub const TRIAL_FAILED: u8 = 1;
/// Bad command line or suite file.
pub const USAGE: u8 = 2;
/// Slower than the baseline (reserved for the baseline comparison).
pub const REGRESSION: u8 = 3;
/// The gate could not do its own job (write reports, read its inputs).
pub const SETUP: u8 = 4;
/// No trial passed: everything was filtered out, ignored or limited.
pub const NOTHING_RAN: u8 = 5;

/// Interrupted by SIGINT or SIGTERM: what a shell reports for a process that `signal` ended,
/// 130 for Ctrl-C and 143 for SIGTERM. The reports hold the trials that ran.
pub fn interrupted(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// The table `--help` prints.
pub const HELP: &str = "\
Exit status:
  0  every selected trial passed (or was ignored for an accepted reason, e.g. no GPU)
  1  a trial failed
  2  bad command line or suite file
  3  slower than the baseline
  4  setup error (cannot write reports or read inputs)
  5  nothing ran (all trials filtered out, ignored or limited)
  130, 143  interrupted (Ctrl-C, SIGTERM): workers stopped, reports hold what ran";

#[cfg(test)]
mod tests {
    #[test]
    fn an_interrupted_run_exits_as_a_shell_says() {
        assert_eq!(super::interrupted(libc::SIGINT), 130);
        assert_eq!(super::interrupted(libc::SIGTERM), 143);
    }
}
