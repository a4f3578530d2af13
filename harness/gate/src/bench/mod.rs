//! The measurement behind `cargo xtask bench`: data generation (in memory and to disk, next to
//! `dd` on the same disk) and CPU verification throughput, as a Markdown table.

pub mod gpu;
pub mod parity;
mod recording;
mod startup;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::data::{self, DataError, GeneratedFile, NoProgress};
use crate::job::JobError;
use crate::prepare::PrepareError;
use gds_model::numbers::median;
use gds_model::protocol::Unavailable;
use gds_model::scenario::ScenarioError;
use gds_model::units::format_bytes;
use gds_model::verify;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchOptions {
    /// Bytes per measurement (buffer size and file size).
    pub size: u64,
    /// Repetitions of each measurement; the table shows their median and range.
    pub runs: usize,
    /// Directory on the disk under test; the bench writes and removes its files there.
    pub dir: PathBuf,
    /// The unit the table shows rates in (`--units`).
    pub rate: gds_model::units::Rate,
}

/// Fewest runs whose median means something.
pub const MIN_RUNS: usize = 5;

/// Bench failures, each with the fix where there is one; the benches on workers (`--gpu`,
/// `--parity`) keep the worker's or the data's error as the cause.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(
        "bench needs at least {MIN_RUNS} runs for a median and a range, got {0}; pass --runs {MIN_RUNS} or more"
    )]
    TooFewRuns(usize),
    #[error("bench size must be at least 1 byte and fit in memory, got {0}; pass a size like 4GiB")]
    BadSize(u64),
    #[error("failed to prepare bench directory `{}`; point the bench at a writable directory", dir.display())]
    Dir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("generating the bench file failed")]
    Data(#[from] DataError),
    #[error(
        "the {what} over freshly generated data found {bad} bad words; the generator and the verifier disagree, which is a bug in gds-gate"
    )]
    SelfCheck { what: &'static str, bad: u64 },
    /// A bench's own suite (the start-up or parity bench's) did not parse.
    #[error(transparent)]
    Suite(#[from] ScenarioError),
    /// A bench's trial has no data file.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error("cannot create a temporary folder for the bench's workers")]
    TempDir(#[source] io::Error),
    /// The worker could not be found or started, or gave no readable answer.
    #[error(transparent)]
    Job(#[from] JobError),
    /// What the GPU bench needs and the host or its worker could not give, in the worker's
    /// words: libcuda, the GPU, a measurement.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("the parity bench has no file")]
    NoParityFile,
    #[error("the parity bench has no writing trial")]
    NoWritingTrial,
    #[error("the parity bench has no file to write")]
    NoFileToWrite,
}

/// Why the `dd` reference row of the CPU bench has no figure; the table says it in its place.
#[derive(Debug, thiserror::Error)]
pub enum DdError {
    #[error("`dd` not found on PATH")]
    NotFound,
    #[error("`dd` could not start")]
    Start(#[source] io::Error),
    #[error("`dd` failed ({status}): {said}")]
    Failed {
        status: ExitStatus,
        /// Its stderr, trimmed.
        said: String,
    },
}

/// One measured operation.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    pub name: String,
    /// Bytes processed per run.
    pub bytes: u64,
    /// Wall time of each run, in run order.
    pub times: Vec<Duration>,
    /// Whether the work spreads over all cores (then a per-core rate is shown).
    pub cpu_bound: bool,
}

impl BenchRow {
    fn rates(&self) -> Vec<f64> {
        let mut rates: Vec<f64> = self
            .times
            .iter()
            .map(|t| self.bytes as f64 / t.as_secs_f64().max(1e-9) / 1e9)
            .collect();
        rates.sort_by(f64::total_cmp);
        rates
    }

    /// Median throughput in GB/s (10^9 bytes per second).
    pub fn median_gbps(&self) -> f64 {
        median(&self.rates())
    }
}

/// Result of [`run`]; its `Display` is the Markdown report.
#[derive(Debug)]
pub struct BenchReport {
    pub options: BenchOptions,
    /// Rayon threads used by the CPU rows.
    pub cores: usize,
    pub rows: Vec<BenchRow>,
    /// `dd` writing the same size with `O_DIRECT`, or why it could not run.
    pub dd: Result<BenchRow, DdError>,
}

impl BenchReport {
    /// Generation to disk relative to `dd` (median over median); the target is ≥ 0.8.
    pub fn disk_ratio(&self) -> Option<f64> {
        let dd = self.dd.as_ref().ok()?;
        let generated = self.rows.iter().find(|r| r.name.starts_with(DISK_ROW))?;
        Some(generated.median_gbps() / dd.median_gbps())
    }
}

const DISK_ROW: &str = "generate to disk";

/// Runs every measurement `opts.runs` times; generation to disk and `dd` alternate so that
/// drift in the disk affects both alike.
pub fn run(opts: &BenchOptions) -> Result<BenchReport, BenchError> {
    if opts.runs < MIN_RUNS {
        return Err(BenchError::TooFewRuns(opts.runs));
    }
    let len = usize::try_from(opts.size)
        .ok()
        .filter(|n| *n > 0)
        .ok_or(BenchError::BadSize(opts.size))?;
    let dir_err = |source| BenchError::Dir {
        dir: opts.dir.clone(),
        source,
    };
    fs::create_dir_all(&opts.dir).map_err(dir_err)?;
    let cores = rayon::current_num_threads();
    let seed = 0x6764_732d_6761_7465; // "gds-gate"
    let mut buf = vec![0u8; len];
    // Untimed first pass: the allocation is only mapped on first touch, and page faults are
    // not what this row measures.
    gds_model::verify::fill_parallel(seed, 0, &mut buf);
    let row = |name: &str, cpu_bound| BenchRow {
        name: name.to_owned(),
        bytes: opts.size,
        times: Vec::with_capacity(opts.runs),
        cpu_bound,
    };
    let mut fill = row("generate in memory (`fill_parallel`)", true);
    let mut compare = row("exact compare (`exact_compare`)", true);
    let mut checksum = row("checksum (`checksum_range_parallel`)", true);
    let mut expected = row("expected checksum (`expected_checksum_range`)", true);
    let mut disk = row(&format!("{DISK_ROW} (`ensure_generated`, fsync)"), false);
    let mut dd = Ok(row(
        "`dd if=/dev/zero bs=16M oflag=direct conv=fsync`",
        false,
    ));

    for run in 0..opts.runs {
        fill.times.push(timed(|| {
            gds_model::verify::fill_parallel(seed, 0, &mut buf)
        }));
        let mut mismatch = verify::Mismatch::default();
        compare
            .times
            .push(timed(|| mismatch = verify::exact_compare(seed, 0, &buf)));
        if !mismatch.is_clean() {
            return Err(BenchError::SelfCheck {
                what: "exact compare",
                bad: mismatch.bad_words,
            });
        }
        let mut sum = 0;
        checksum
            .times
            .push(timed(|| sum = verify::checksum_range_parallel(&buf, 0)));
        let mut want = 0;
        expected.times.push(timed(|| {
            want = verify::expected_checksum_range(seed, 0, opts.size);
        }));
        if sum != want {
            return Err(BenchError::SelfCheck {
                what: "checksum",
                bad: 1,
            });
        }

        // A fresh seed per run, so nothing can be reused and every run writes the whole file.
        let spec = GeneratedFile {
            seed: seed + run as u64,
            size: opts.size,
        };
        let started = Instant::now();
        let prepared = data::ensure_generated(&opts.dir, spec, &mut NoProgress)?;
        disk.times.push(started.elapsed());
        remove_generated(&opts.dir, spec);
        debug_assert!(matches!(prepared.action, data::Action::Generated { .. }));

        if let Ok(dd_row) = &mut dd {
            match run_dd(&opts.dir, opts.size) {
                Ok(time) => dd_row.times.push(time),
                Err(why) => dd = Err(why),
            }
        }
    }
    // The data directory's lock file stays: a gate may be waiting on it, and one that then got
    // the lock of an unlinked file would share the directory with the next gate to create it.

    Ok(BenchReport {
        options: opts.clone(),
        cores,
        rows: vec![fill, disk, compare, checksum, expected],
        dd,
    })
}

fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

fn remove_generated(dir: &Path, spec: GeneratedFile) {
    let _ = fs::remove_file(dir.join(spec.file_name()));
    let _ = fs::remove_file(dir.join(spec.sidecar_name()));
}

/// Times `dd` writing `size` bytes (rounded up to 16 MiB blocks) the way the reference
/// command does; an error says why it could not run, for the table.
fn run_dd(dir: &Path, size: u64) -> Result<Duration, DdError> {
    const BS: u64 = 16 << 20;
    let target = dir.join("dd.bin");
    let started = Instant::now();
    let output = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", target.display()))
        .arg("bs=16M")
        .arg(format!("count={}", size.div_ceil(BS)))
        .arg("oflag=direct")
        .arg("conv=fsync")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let elapsed = started.elapsed();
    let _ = fs::remove_file(&target);
    match output {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Err(DdError::NotFound),
        Err(err) => Err(DdError::Start(err)),
        Ok(out) if !out.status.success() => Err(DdError::Failed {
            status: out.status,
            said: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
        // dd wrote whole blocks; rate it on what it wrote.
        Ok(_) => Ok(elapsed.mul_f64(size as f64 / (size.div_ceil(BS) * BS) as f64)),
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        writeln!(
            f,
            "size {} ({} bytes), {} runs, {} cores (rayon threads), directory `{}`\n",
            format_bytes(o.size, 2),
            o.size,
            o.runs,
            self.cores,
            o.dir.display()
        )?;
        let rate = o.rate;
        let unit = rate.label();
        writeln!(
            f,
            "| measurement | median {unit} | min–max {unit} | median {unit} per core | median time |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|")?;
        for row in self.rows.iter().chain(self.dd.as_ref().ok()) {
            let rates = row.rates();
            let (lo, hi) = (rates.first().copied(), rates.last().copied());
            let per_core = if row.cpu_bound {
                rate.number(row.median_gbps() / self.cores.max(1) as f64, 2)
            } else {
                "— (disk)".to_owned()
            };
            let mut times: Vec<Duration> = row.times.clone();
            times.sort();
            let median_time = times.get(times.len() / 2).copied().unwrap_or_default();
            writeln!(
                f,
                "| {} | {} | {}–{} | {per_core} | {:.3} s |",
                row.name,
                rate.number(row.median_gbps(), 2),
                rate.number(lo.unwrap_or(0.0), 2),
                rate.number(hi.unwrap_or(0.0), 2),
                median_time.as_secs_f64()
            )?;
        }
        if let Err(why) = &self.dd {
            let why = gds_model::error_line(why);
            writeln!(f, "| `dd` reference | {why} | | | |")?;
        }
        writeln!(f)?;
        // The target is 3 GB/s; in GiB/s it needs its decimals.
        let target = match rate {
            gds_model::units::Rate::Gb => rate.format(3.0, 0),
            gds_model::units::Rate::Gib => rate.format(3.0, 2),
        };
        match self.disk_ratio() {
            Some(ratio) => writeln!(
                f,
                "generate to disk / dd: {ratio:.2}× (target ≥ 0.80×); CPU target ≥ {target} per core"
            ),
            None => writeln!(
                f,
                "generate to disk / dd: not measured (no dd); CPU target ≥ {target} per core"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_bench_runs_renders_and_cleans_up_all_but_the_lock_file() -> Result<(), BenchError> {
        let dir = tempfile::tempdir().map_err(|source| BenchError::Dir {
            dir: "tempdir".into(),
            source,
        })?;
        let opts = BenchOptions {
            size: (4 << 20) + 3,
            runs: MIN_RUNS,
            dir: dir.path().join("bench"),
            rate: Default::default(),
        };
        let report = run(&opts)?;
        let table = report.to_string();
        assert!(table.contains("| generate in memory"), "{table}");
        assert!(table.contains("generate to disk / dd"), "{table}");
        assert!(report.rows.iter().all(|r| r.times.len() == MIN_RUNS));
        let left: Vec<_> = fs::read_dir(&opts.dir)
            .map_err(|source| BenchError::Dir {
                dir: opts.dir.clone(),
                source,
            })?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            left,
            [data::LOCK_FILE_NAME],
            "bench must leave the lock file, and nothing else"
        );
        Ok(())
    }

    #[test]
    fn a_dd_that_could_not_run_says_why_in_its_row() {
        let report = BenchReport {
            options: BenchOptions {
                size: 1,
                runs: MIN_RUNS,
                dir: PathBuf::from("unused"),
                rate: Default::default(),
            },
            cores: 1,
            rows: Vec::new(),
            dd: Err(DdError::Start(io::Error::other("permission denied"))),
        };
        let table = report.to_string();
        assert!(
            table.contains("| `dd` reference | `dd` could not start: permission denied | | | |"),
            "{table}"
        );
        assert!(table.contains("not measured (no dd)"), "{table}");
    }

    #[test]
    fn a_worker_bench_error_prints_its_cause_once() {
        let error = crate::error::Error::from(BenchError::TempDir(io::Error::other("read-only")));
        assert_eq!(
            crate::error::report(&error),
            "error: cannot create a temporary folder for the bench's workers\n  caused by: read-only"
        );
    }

    #[test]
    fn too_few_runs_is_refused_with_the_fix() {
        let opts = BenchOptions {
            size: 1,
            runs: 2,
            dir: PathBuf::from("unused"),
            rate: Default::default(),
        };
        let err = run(&opts).map(|_| ()).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "bench needs at least 5 runs for a median and a range, got 2; pass --runs 5 or more"
            )
        );
    }
}
