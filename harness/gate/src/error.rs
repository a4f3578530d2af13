//! The errors the commands return to `main`, which prints each once (`error: …` with its causes,
//! escaped for the terminal) and exits with its code: which error ends in which code is decided
//! here, in [`Error::exit_code`], and nowhere else.

use std::path::PathBuf;

use crate::baseline::{BaselineError, BlessError};
use crate::bench::BenchError;
use crate::doctor::DoctorError;
use crate::exit;
use crate::out_lock::OutLockError;
use crate::report::ReportError;
use crate::report::merge::MergeError;
use gds_model::scenario::ScenarioError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Every suite file that did not load, so that one run shows them all.
    #[error("{}", suites_text(.0))]
    Suites(Vec<ScenarioError>),
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    #[error(transparent)]
    Bless(#[from] BlessError),
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error(transparent)]
    Doctor(#[from] DoctorError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    OutLock(#[from] OutLockError),
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// A file the user named that cannot be read (a usage error) or written (a setup error).
    #[error("cannot {} `{}`", if *.writing { "write" } else { "read" }, path.display())]
    File {
        path: PathBuf,
        writing: bool,
        #[source]
        source: std::io::Error,
    },
    /// The command line, or what it names, is the user's to fix; the message says how.
    #[error("{0}")]
    Usage(String),
    /// The filter or the flags selected no trial: nothing ran, and no report was replaced.
    #[error("{0}")]
    NothingSelected(String),
    /// The gate could not do its own job; the message says what and what to do.
    #[error("{0}")]
    Setup(String),
    #[error(
        "the gate was interrupted by {name}: its workers were stopped and the trials after that were not run; the reports hold what ran"
    )]
    Interrupted { signal: i32, name: &'static str },
}

impl Error {
    pub fn interrupted(signal: i32) -> Error {
        Error::Interrupted {
            signal,
            name: crate::interrupt::signal_name(signal),
        }
    }

    /// The exit code of a command that ended with this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Suites(_) | Error::Usage(_) => exit::USAGE,
            Error::File { writing, .. } => {
                if *writing {
                    exit::SETUP
                } else {
                    exit::USAGE
                }
            }
            Error::NothingSelected(_) => exit::NOTHING_RAN,
            // Failed trials are not blessed; a refusal (in CI, a changed fingerprint, nothing
            // selected) is the user's to resolve; a baseline that cannot be read or written is
            // a setup error.
            Error::Bless(BlessError::FailedTrials { .. }) => exit::TRIAL_FAILED,
            Error::Bless(BlessError::Baseline(_)) => exit::SETUP,
            Error::Bless(_) => exit::USAGE,
            Error::Merge(MergeError::NoInputs | MergeError::Duplicate { .. }) => exit::USAGE,
            Error::Doctor(DoctorError::Suite(_)) => exit::USAGE,
            Error::Interrupted { signal, .. } => exit::interrupted(*signal),
            Error::Baseline(_)
            | Error::Merge(_)
            | Error::Doctor(_)
            | Error::Report(_)
            | Error::OutLock(_)
            | Error::Bench(_)
            | Error::Setup(_) => exit::SETUP,
        }
    }
}

/// Each suite's error with its causes, the later ones on `error:` lines of their own.
fn suites_text(errors: &[ScenarioError]) -> String {
    errors
        .iter()
        .map(|error| gds_model::error_chain(error))
        .collect::<Vec<_>>()
        .join("\nerror: ")
}

/// `error: …` and its causes, as `main` prints an error: once, escaped for a terminal.
pub fn report(error: &Error) -> String {
    let text = match error {
        // Each suite's causes are already in its own text.
        Error::Suites(_) => error.to_string(),
        _ => gds_model::error_chain(error),
    };
    format!("error: {}", crate::escape::terminal(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_kind_has_its_exit_code() {
        assert_eq!(Error::Usage("u".into()).exit_code(), exit::USAGE);
        assert_eq!(Error::Setup("s".into()).exit_code(), exit::SETUP);
        assert_eq!(
            Error::NothingSelected("n".into()).exit_code(),
            exit::NOTHING_RAN
        );
        assert_eq!(Error::interrupted(libc::SIGINT).exit_code(), 130);
        let failed = Error::Bless(BlessError::FailedTrials {
            trials: vec!["t".into()],
            details: String::new(),
        });
        assert_eq!(failed.exit_code(), exit::TRIAL_FAILED);
        let unwritable = Error::File {
            path: "x".into(),
            writing: true,
            source: std::io::Error::other("read-only"),
        };
        assert_eq!(unwritable.exit_code(), exit::SETUP);
        assert_eq!(
            report(&unwritable),
            "error: cannot write `x`\n  caused by: read-only"
        );
    }
}
