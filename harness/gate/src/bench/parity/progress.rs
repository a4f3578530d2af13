//! The parity bench's rows on the clock: each row's time limit, a command run no longer than
//! it, and the progress line each row prints on stderr as it starts and ends, so that a long
//! or stuck bench shows where it stands.

use std::io;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use gds_model::units::Rate;

/// The longest a row may take: half a minute to start, plus its pass at 50 MB/s (a writing row
/// moves its bytes twice: written, then read back to verify). A row past it is stopped and fails.
pub(super) fn row_limit(size: u64, writes: bool) -> Duration {
    let moves = if writes { 2 } else { 1 };
    Duration::from_secs(30 + size.saturating_mul(moves) / 50_000_000)
}

/// Where one row of one run stands, for the progress lines on stderr.
pub(super) enum Progress<'a> {
    Started,
    Done(Result<f64, &'a dyn std::error::Error>, Duration),
    /// Stuck in an earlier run: not started again.
    Skipped,
}

/// `parity run 2/8, row 3/13: KvikIO compat OFF, …: 1.52 GB/s in 2.1 s`: one line per row
/// started and finished, so that a long or stuck bench shows where it is.
pub(super) fn progress_line(
    rate: Rate,
    run: usize,
    runs: usize,
    (position, rows): (usize, usize),
    label: &str,
    progress: Progress<'_>,
) -> String {
    let at = format!(
        "parity run {}/{runs}, row {}/{}: {label}",
        run + 1,
        position + 1,
        rows
    );
    match progress {
        Progress::Started => format!("{at} ..."),
        Progress::Done(Ok(gbps), took) => {
            format!("{at}: {} in {:.1} s", rate.rate(gbps), took.as_secs_f64())
        }
        Progress::Done(Err(reason), took) => format!(
            "{at}: failed after {:.1} s: {}",
            took.as_secs_f64(),
            gds_model::error_line(reason)
        ),
        Progress::Skipped => format!("{at}: skipped, it ran past its time in an earlier run"),
    }
}

/// Why a command run by [`run_bounded`] did not succeed; `name` is its program.
#[derive(Debug, thiserror::Error)]
pub(super) enum BoundedError {
    #[error("cannot run {name}")]
    Start {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error("{name} failed: {status}")]
    Failed { name: String, status: ExitStatus },
    #[error("{name} did not finish within {} s and was killed", limit.as_secs())]
    TimedOut { name: String, limit: Duration },
    #[error("cannot wait for {name}")]
    Wait {
        name: String,
        #[source]
        source: io::Error,
    },
}

/// Runs `command` to its end or until `limit`, when it is killed: no row waits for ever.
pub(super) fn run_bounded(command: &mut Command, limit: Duration) -> Result<(), BoundedError> {
    let name = command.get_program().to_string_lossy().into_owned();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(source) => return Err(BoundedError::Start { name, source }),
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(BoundedError::Failed { name, status }),
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BoundedError::TimedOut { name, limit });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(source) => return Err(BoundedError::Wait { name, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_says_on_stderr_where_the_bench_stands() {
        let label = "cufile-async reader, 8 stream(s), 4 MiB tasks";
        assert_eq!(
            progress_line(Rate::Gb, 1, 8, (6, 13), label, Progress::Started),
            format!("parity run 2/8, row 7/13: {label} ...")
        );
        let done = progress_line(
            Rate::Gb,
            1,
            8,
            (6, 13),
            label,
            Progress::Done(Ok(1.5), Duration::from_millis(2100)),
        );
        assert!(
            done.ends_with(&format!("{label}: 1.50 GB/s in 2.1 s")),
            "{done}"
        );
        let why = io::Error::other("the worker did not finish");
        let failed = progress_line(
            Rate::Gb,
            0,
            8,
            (0, 3),
            label,
            Progress::Done(Err(&why), Duration::from_secs(51)),
        );
        assert!(
            failed.ends_with("failed after 51.0 s: the worker did not finish"),
            "{failed}"
        );
        assert!(
            progress_line(Rate::Gb, 2, 8, (0, 3), label, Progress::Skipped).contains("skipped")
        );
    }

    #[test]
    fn a_row_is_bounded_by_its_bytes_at_50_mb_per_second() {
        assert_eq!(row_limit(1 << 30, false), Duration::from_secs(51));
        // Written, then read back.
        assert_eq!(row_limit(1 << 30, true), Duration::from_secs(72));
    }

    /// A command that would outlive its row is killed at the limit and fails the row.
    #[test]
    fn a_command_past_its_limit_is_killed() {
        let start = Instant::now();
        let failed = run_bounded(Command::new("sleep").arg("30"), Duration::from_millis(200));
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(
            matches!(&failed, Err(BoundedError::TimedOut { name, .. }) if name == "sleep"),
            "{failed:?}"
        );
        assert_eq!(
            failed.err().map(|error| error.to_string()).as_deref(),
            Some("sleep did not finish within 0 s and was killed")
        );
        assert!(run_bounded(&mut Command::new("true"), Duration::from_secs(10)).is_ok());
        assert!(matches!(
            run_bounded(&mut Command::new("false"), Duration::from_secs(10)),
            Err(BoundedError::Failed { .. })
        ));
        let missing = run_bounded(
            &mut Command::new("gds-gate-no-such-program"),
            Duration::from_secs(10),
        )
        .err()
        .map(|error| gds_model::error_line(&error))
        .unwrap_or_default();
        assert!(
            missing.starts_with("cannot run gds-gate-no-such-program: "),
            "{missing}"
        );
    }
}
