//! Errors of the baseline files, the history and the plots: each names the file, the line or key,
//! what was expected and the fix.

use std::io;
use std::path::PathBuf;

use plotters::drawing::DrawingAreaErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("cannot read baseline `{}`; check its permissions, or point --baselines at the folder that holds it", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{}:{line}:{column}: corrupt baseline: {message}\n  help: a corrupt baseline is never treated as missing; restore it with `git checkout -- {}`, or re-create it on the runner with `cargo xtask gds-gate bless`",
        path.display(),
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{}:{line}: baseline has schema_version {found}, but this gds-gate ({}) reads schema_version {supported} at most\n  help: update gds-gate to the revision that wrote the file (`git pull`); a newer baseline is never treated as missing, nor rewritten",
        path.display(),
        env!("CARGO_PKG_VERSION")
    )]
    NewerSchema {
        path: PathBuf,
        line: usize,
        found: u64,
        supported: u32,
    },
    #[error("cannot write baseline `{}`; check that its folder is writable (--baselines DIR); the previous file, if any, is unchanged", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "runner name `{name}` cannot name a baseline file: expected letters, digits, `.`, `_` or `-` (not starting with `.`)\n  help: pick another with --runner NAME or GDS_GATE_RUNNER"
    )]
    RunnerName { name: String },
    #[error("cannot read report `{}`; pass the report.json that a gate run wrote into its --out folder", path.display())]
    ReportRead {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{}:{line}:{column}: not a usable gds-gate report: {message}\n  help: pass the report.json that a gate run wrote into its --out folder (default target/gds-gate/report.json)",
        path.display()
    )]
    ReportCorrupt {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{}: report has schema_version {found}, but this gds-gate reads schema_version {supported} at most\n  help: bless with the gds-gate revision that wrote the report",
        path.display()
    )]
    ReportNewerSchema {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    #[error("cannot write the run history `{}`; check that --history (GDS_GATE_HISTORY) names a writable place", path.display())]
    History {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read the run history `{}`", path.display())]
    HistoryRead {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write plot `{}`", path.display())]
    Plot {
        path: PathBuf,
        #[source]
        source: PlotError,
    },
}

/// Why plotters could not draw a plot. It draws into a string, so this is a bug (ours or its).
pub type DrawError = DrawingAreaErrorKind<io::Error>;

/// Why one plot was not written: drawing it, or saving the file.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error(transparent)]
    Draw(DrawError),
    #[error(transparent)]
    Write(io::Error),
}
