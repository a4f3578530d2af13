//! Reader parity and the cost of recording, on real workers started the way the gate starts
//! them, all on one cold file and interleaved run by run, so that a disk's drift between runs
//! (10–20% on shared virtual disks) hits every row alike and each run's ratios are fair:
//!
//! - **parity**: `dd iflag=direct`, the cufile reader with the libcufile the gate finds, KvikIO
//!   with compat mode `OFF` at the same threads and task size, and the cufile reader again with
//!   KvikIO's own libcufile (`GDS_GATE_LIBCUFILE` set to the file KvikIO's worker reported having
//!   loaded), so that a gap between the readers can be told from a gap between libraries. Each
//!   row names the libcufile it loaded.
//! - **recording**: the cufile, KvikIO and posix readers with latency and CPU recording on and off
//!   (`GDS_GATE_RECORD_COST=0`), as the ratio of their GB/s in the same run.
//! - **write parity**: `dd oflag=direct`, KvikIO's `pwrite` (compat mode `OFF`) and the cufile
//!   writer at the same threads and task size, writing the file a writing trial writes (`op:
//!   write`, verified on the disk as in the gate), each run's cufile writer over its KvikIO row.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod progress;

use progress::{BoundedError, Progress, progress_line, row_limit, run_bounded};

use super::BenchError;
use crate::launch::Launcher;
use crate::prepare::DataSet;
use gds_model::cost::RECORD_ENV;
use gds_model::numbers::{median, median_interval_95};
use gds_model::plan::{PlannedFile, ReadPlan};
use gds_model::record::{LoadedCufile, Status, TrialRecord};
use gds_model::units::Rate;

/// What the parity bench reads, and how.
#[derive(Clone, Debug)]
pub struct Setting {
    pub size: u64,
    pub threads: u32,
    pub task_size: u64,
    /// The wait before each row (`--rest`).
    pub rest: Duration,
    /// The rows to run (`--rows`); all when empty.
    pub rows: Vec<Row>,
    /// The unit its tables and progress lines show rates in (`--units`).
    pub rate: Rate,
    /// Where its progress lines go.
    pub console: crate::console::Console,
}

impl Setting {
    fn runs(&self, row: Row) -> bool {
        self.rows.is_empty() || self.rows.contains(&row)
    }
}

/// The rows, in the order each run takes them; `--rows` names them in kebab case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Row {
    Dd,
    Cufile,
    CufileNoRecording,
    Kvikio,
    KvikioNoRecording,
    /// The cufile reader with the libcufile KvikIO loaded.
    CufileKvikioLibrary,
    /// cuFile's batch API with as many entries per batch as the cufile reader has threads.
    Batch,
    /// cuFile's stream API on as many streams as the cufile reader has threads.
    Async,
    Posix,
    PosixNoRecording,
    DdWrite,
    KvikioWrite,
    CufileWrite,
}

const ROWS: [Row; 13] = [
    Row::Dd,
    Row::Cufile,
    Row::CufileNoRecording,
    Row::Kvikio,
    Row::KvikioNoRecording,
    Row::CufileKvikioLibrary,
    Row::Batch,
    Row::Async,
    Row::Posix,
    Row::PosixNoRecording,
    Row::DdWrite,
    Row::KvikioWrite,
    Row::CufileWrite,
];

/// The rows whose per-run ratio the bench states, run by run: each cufile row over KvikIO in the
/// same direction, and cuFile's batch and stream APIs over the synchronous cufile reader at the
/// same I/Os in flight.
const PAIRS: [(Row, Row); 5] = [
    (Row::Cufile, Row::Kvikio),
    (Row::CufileKvikioLibrary, Row::Kvikio),
    (Row::CufileWrite, Row::KvikioWrite),
    (Row::Batch, Row::Cufile),
    (Row::Async, Row::Cufile),
];

impl Row {
    /// The row's place in [`ROWS`], which lists the rows in their declared order.
    fn position(self) -> usize {
        self as usize
    }

    fn label(self, setting: &Setting) -> String {
        let at = format!(
            "{} thread(s), {} tasks",
            setting.threads,
            gds_model::units::format_bytes(setting.task_size, 0)
        );
        match self {
            Row::Dd => "dd iflag=direct bs=16M".into(),
            Row::Cufile => format!("cufile reader, {at}"),
            Row::CufileNoRecording => format!("cufile reader, {at}, recording off"),
            Row::Kvikio => format!("KvikIO compat OFF, {at}"),
            Row::KvikioNoRecording => format!("KvikIO compat OFF, {at}, recording off"),
            Row::CufileKvikioLibrary => format!("cufile reader with KvikIO's libcufile, {at}"),
            Row::Batch => format!(
                "cufile-batch reader, one batch of {} entries in flight, {} tasks",
                setting.threads,
                gds_model::units::format_bytes(setting.task_size, 0)
            ),
            Row::Async => format!(
                "cufile-async reader, {} stream(s), {} tasks",
                setting.threads,
                gds_model::units::format_bytes(setting.task_size, 0)
            ),
            Row::Posix => format!("posix reader, {at}"),
            Row::PosixNoRecording => format!("posix reader, {at}, recording off"),
            Row::DdWrite => "dd oflag=direct bs=16M (write)".into(),
            Row::KvikioWrite => format!("KvikIO pwrite compat OFF, {at}"),
            Row::CufileWrite => format!("cufile writer, {at}"),
        }
    }

    /// Whether the row writes its file (its reference is then dd's write, not dd's read).
    fn writes(self) -> bool {
        matches!(self, Row::DdWrite | Row::KvikioWrite | Row::CufileWrite)
    }

    /// Whether the row is dd, the reference of the rows after it in its direction.
    fn is_dd(self) -> bool {
        matches!(self, Row::Dd | Row::DdWrite)
    }

    /// The scenario of the embedded suite this row runs, if it runs a worker.
    fn scenario(self) -> Option<&'static str> {
        match self {
            Row::Dd | Row::DdWrite => None,
            Row::Cufile | Row::CufileNoRecording | Row::CufileKvikioLibrary => Some("cufile"),
            Row::KvikioWrite => Some("kvikio-write"),
            Row::Batch => Some("cufile-batch"),
            Row::Async => Some("cufile-async"),
            Row::CufileWrite => Some("cufile-write"),
            Row::Kvikio | Row::KvikioNoRecording => Some("kvikio"),
            Row::Posix | Row::PosixNoRecording => Some("posix"),
        }
    }

    fn recording(self) -> bool {
        !matches!(
            self,
            Row::CufileNoRecording | Row::KvikioNoRecording | Row::PosixNoRecording
        )
    }
}

fn suite(setting: &Setting) -> String {
    let at = format!(
        "nthreads: {}, task_size: {}",
        setting.threads, setting.task_size
    );
    format!(
        "suite: parity\ndefaults: {{ files: {{ size: {}, seed: 77 }}, cache: cold, warmup: 0, repetitions: 1 }}\nscenarios:\n  - {{ name: cufile, reader: cufile, {at} }}\n  - {{ name: kvikio, reader: kvikio, compat_mode: OFF, {at} }}\n  - {{ name: posix, reader: posix, {at} }}\n  - {{ name: kvikio-write, reader: kvikio, op: write, compat_mode: OFF, {at} }}\n  - {{ name: cufile-write, reader: cufile, op: write, {at} }}\n  - {{ name: cufile-batch, reader: cufile-batch, batch_size: {threads}, queue_depth: 1, task_size: {task} }}\n  - {{ name: cufile-async, reader: cufile-async, queue_depth: {threads}, task_size: {task} }}\n",
        setting.size,
        threads = setting.threads,
        task = setting.task_size
    )
}

/// One run's figure of a row: GB/s and the libcufile the worker loaded, or why there is none.
#[derive(Clone, Debug, Default)]
struct Samples {
    gbps: Vec<f64>,
    /// GB/s over the same run's reference (dd, or the row with recording on).
    ratios: Vec<f64>,
    cpu_per_gib: Vec<f64>,
    /// Mean read-call latency in µs, where the worker recorded it.
    mean_call_us: Vec<f64>,
    libraries: Vec<String>,
    failure: Option<String>,
}

pub fn run(setting: &Setting, runs: usize, dir: &Path, out: &mut String) -> Result<(), BenchError> {
    let suite = gds_model::scenario::parse(Path::new("<parity bench>"), &suite(setting))?;
    let trials = gds_model::scenario::expand(&suite);
    let data = DataSet::prepare(dir, &trials, setting.rate, &setting.console);
    let file = data
        .files_for(&trials[0])?
        .pop()
        .ok_or(BenchError::NoParityFile)?;
    let write_trial = trials
        .iter()
        .find(|t| t.op.writes())
        .ok_or(BenchError::NoWritingTrial)?;
    // The file the writing trials write (and dd writes before them), beside the generated one.
    let written = data
        .files_for(write_trial)?
        .pop()
        .ok_or(BenchError::NoFileToWrite)?;
    let scratch = tempfile::tempdir().map_err(BenchError::TempDir)?;
    let launcher = Launcher {
        gate: crate::job::worker_program()?,
        trials_dir: scratch.path().to_path_buf(),
        strict: false,
        timeout: None,
        gds_stats: None,
        env: Vec::new(),
        progress: None,
    };
    let mut samples: Vec<Samples> = vec![Samples::default(); ROWS.len()];
    let mut pair_ratios: Vec<Vec<f64>> = vec![Vec::new(); PAIRS.len()];
    // The path of KvikIO's libcufile, learnt from its first run.
    let mut kvikio_library: Option<PathBuf> = None;
    // Rows that ran past their time once: not started again (a stuck row fails its row, and the
    // bench goes on with the others).
    let mut stuck = [false; ROWS.len()];
    for run in 0..runs {
        // Every other run takes the rows in reverse: on a virtual disk a file read again comes
        // back faster as the host's cache warms, so a fixed order would favour the later rows.
        let mut order: Vec<usize> = (0..ROWS.len())
            .filter(|&index| setting.runs(ROWS[index]))
            .collect();
        let in_run = order.len();
        if run % 2 == 1 {
            order.reverse();
        }
        let mut rates = [None; ROWS.len()];
        for (position, index) in order.into_iter().enumerate() {
            let row = &ROWS[index];
            let limit = row_limit(setting.size, row.writes());
            let label = row.label(setting);
            if stuck[index] {
                setting.console.say(&progress_line(
                    setting.rate,
                    run,
                    runs,
                    (position, in_run),
                    &label,
                    Progress::Skipped,
                ));
                continue;
            }
            std::thread::sleep(setting.rest);
            setting.console.say(&progress_line(
                setting.rate,
                run,
                runs,
                (position, in_run),
                &label,
                Progress::Started,
            ));
            let started = Instant::now();
            let outcome = match row.scenario() {
                None => if row.writes() {
                    dd_write_rate(&written, limit)
                } else {
                    dd_rate(&file, limit)
                }
                .map(|gbps| Measured {
                    gbps,
                    ..Measured::default()
                }),
                Some(scenario) => {
                    let Some(spec) = trials.iter().find(|t| t.scenario == scenario) else {
                        continue;
                    };
                    let plan_file = if row.writes() { &written } else { &file };
                    let mut env = Vec::new();
                    if !row.recording() {
                        env.push((RECORD_ENV.to_string(), "0".to_string()));
                    }
                    if *row == Row::CufileKvikioLibrary {
                        let Some(library) = &kvikio_library else {
                            samples[index].failure = Some(
                                "KvikIO reported no libcufile (this row needs the kvikio row)"
                                    .into(),
                            );
                            continue;
                        };
                        env.push((
                            "GDS_GATE_LIBCUFILE".to_string(),
                            library.display().to_string(),
                        ));
                    }
                    let launcher = Launcher {
                        env,
                        timeout: Some(limit),
                        ..launcher.clone()
                    };
                    measured(launcher.run_trial(
                        spec.clone(),
                        ReadPlan::new(vec![plan_file.clone()], &spec.pattern),
                    ))
                }
            };
            let elapsed = started.elapsed();
            setting.console.say(&progress_line(
                setting.rate,
                run,
                runs,
                (position, in_run),
                &label,
                Progress::Done(
                    outcome
                        .as_ref()
                        .map(|m| m.gbps)
                        .map_err(|why| why as &dyn std::error::Error),
                    elapsed,
                ),
            ));
            // A worker killed at its limit, or a dd stopped at it.
            if outcome.is_err() && elapsed >= limit {
                stuck[index] = true;
            }
            let sample = &mut samples[index];
            match outcome {
                Ok(Measured {
                    gbps: rate,
                    library,
                    cpu_per_gib,
                    mean_call_us,
                }) => {
                    if *row == Row::Kvikio && kvikio_library.is_none() {
                        kvikio_library = library.as_ref().map(|l| l.path.clone());
                    }
                    rates[index] = Some(rate);
                    sample.gbps.push(rate);
                    sample.cpu_per_gib.extend(cpu_per_gib);
                    sample.mean_call_us.extend(mean_call_us);
                    if let Some(library) =
                        library.map(|l| format!("{} {}", l.version, l.path.display()))
                        && !sample.libraries.contains(&library)
                    {
                        sample.libraries.push(library);
                    }
                }
                Err(reason) if stuck[index] => {
                    sample.failure = Some(format!(
                        "{} (in run {} of {runs}; not started again)",
                        gds_model::error_line(&reason),
                        run + 1
                    ))
                }
                Err(reason) => sample.failure = Some(gds_model::error_line(&reason)),
            }
        }
        for (sample, ratio) in samples.iter_mut().zip(run_ratios(&rates)) {
            sample.ratios.extend(ratio);
        }
        for (ratios, ratio) in pair_ratios.iter_mut().zip(pair_ratios_of_run(&rates)) {
            ratios.extend(ratio);
        }
    }
    render(setting, runs, &file, &samples, &pair_ratios, out);
    Ok(())
}

/// Each row's GB/s over its reference in one run, once every row of the run is done (the order
/// of the rows changes from run to run): a recording-off row over the same reader with recording
/// on, any other row over dd in its direction (dd's read, or dd's write for a writing row).
fn run_ratios(rates: &[Option<f64>; ROWS.len()]) -> [Option<f64>; ROWS.len()] {
    let mut ratios = [None; ROWS.len()];
    for (index, row) in ROWS.iter().enumerate() {
        let reference = if row.recording() {
            ROWS.iter()
                .position(|r| r.is_dd() && r.writes() == row.writes())
                .and_then(|dd| rates[dd])
        } else {
            rates[index - 1]
        };
        if let (Some(rate), Some(reference)) = (rates[index], reference) {
            ratios[index] = Some(rate / reference);
        }
    }
    ratios
}

/// Why a row has no figure in one run; the row's cell and its progress line give it on one line.
#[derive(Debug, thiserror::Error)]
enum RowError {
    #[error("cannot drop `{}` from the page cache", path.display())]
    DropCache {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// `dd` could not run, failed, or ran past the row's limit.
    #[error(transparent)]
    Dd(#[from] BoundedError),
    /// The worker's trial did not pass with a measurement: its reason.
    #[error("{}", .0.reason.as_deref().unwrap_or("no measurement"))]
    Trial(Box<TrialRecord>),
}

/// One row's figures of one run.
#[derive(Default)]
struct Measured {
    gbps: f64,
    library: Option<LoadedCufile>,
    cpu_per_gib: Option<f64>,
    mean_call_us: Option<f64>,
}

/// GB/s of a trial's one pass, the libcufile it loaded, its CPU s/GiB and mean call latency.
fn measured(record: TrialRecord) -> Result<Measured, RowError> {
    let m = match (&record.checks, &record.measurement) {
        (Status::Passed, Some(m)) if !m.gbps.is_empty() => m,
        _ => return Err(RowError::Trial(Box::new(record))),
    };
    let cpu = m.cpu_per_gib();
    Ok(Measured {
        gbps: m.gbps[0],
        library: m.libcufile.clone(),
        cpu_per_gib: (!cpu.is_empty()).then(|| median(&cpu)),
        mean_call_us: m.latency.as_ref().map(|latency| latency.mean_us),
    })
}

/// `dd oflag=direct bs=16M` writing `file`'s size (rounded up to 16 MiB) of zeros to its path,
/// which the writing rows then write: the disk's own write speed in this run. The file is removed
/// after, as the writing trials remove theirs.
fn dd_write_rate(file: &PlannedFile, limit: Duration) -> Result<f64, RowError> {
    const BLOCK: u64 = 16 << 20;
    let blocks = file.size.div_ceil(BLOCK).max(1);
    let start = Instant::now();
    let ran = run_bounded(
        Command::new("dd").args(dd_write_args(&file.path, blocks)),
        limit,
    );
    let elapsed = start.elapsed();
    let _ = std::fs::remove_file(&file.path);
    ran?;
    Ok((blocks * BLOCK) as f64 / elapsed.max(Duration::from_nanos(1)).as_secs_f64() / 1e9)
}

fn dd_write_args(path: &Path, blocks: u64) -> Vec<String> {
    vec![
        "if=/dev/zero".into(),
        format!("of={}", path.display()),
        "bs=16M".into(),
        format!("count={blocks}"),
        "oflag=direct".into(),
        "status=none".into(),
    ]
}

/// `dd iflag=direct bs=16M` over the cold file: the disk's own speed in this run.
fn dd_rate(file: &PlannedFile, limit: Duration) -> Result<f64, RowError> {
    gds_model::cache::drop_path(&file.path).map_err(|source| RowError::DropCache {
        path: file.path.clone(),
        source,
    })?;
    let start = Instant::now();
    run_bounded(
        Command::new("dd")
            .arg(format!("if={}", file.path.display()))
            .args(["of=/dev/null", "bs=16M", "iflag=direct", "status=none"]),
        limit,
    )?;
    Ok(file.size as f64 / start.elapsed().max(Duration::from_nanos(1)).as_secs_f64() / 1e9)
}

fn render(
    setting: &Setting,
    runs: usize,
    file: &PlannedFile,
    samples: &[Samples],
    pair_ratios: &[Vec<f64>],
    out: &mut String,
) {
    let recording_ns = super::recording::cost_per_call_ns(5, 1_000_000);
    let _ = writeln!(
        out,
        "| cold read of {} ({}; the writing rows write a file of its size beside it), {runs} interleaved runs | {} (median) | of the reference (median of per-run ratios) | per-run ratios | CPU s/GiB | mean call | recording's share of a call | libcufile |\n|---|---:|---:|---:|---:|---:|---:|---|",
        file.path.display(),
        gds_model::units::format_bytes(file.size, 2),
        setting.rate.label()
    );
    for (row, sample) in ROWS.iter().zip(samples) {
        if !setting.runs(*row) {
            continue;
        }
        let label = row.label(setting);
        if sample.gbps.is_empty() {
            let why = sample.failure.as_deref().unwrap_or("not run");
            let _ = writeln!(out, "| {label} | not measured: {why} | | | | | | |");
            continue;
        }
        let of = if sample.ratios.is_empty() {
            "–".to_string()
        } else {
            format!("{:.1}%", median(&sample.ratios) * 100.0)
        };
        let range = sample
            .ratios
            .iter()
            .map(|r| format!("{:.0}", r * 100.0))
            .collect::<Vec<_>>()
            .join(" ");
        let cpu = if sample.cpu_per_gib.is_empty() {
            String::new()
        } else {
            format!("{:.3}", median(&sample.cpu_per_gib))
        };
        let (call, share) = if sample.mean_call_us.is_empty() {
            (String::new(), String::new())
        } else {
            let mean = median(&sample.mean_call_us);
            // KvikIO's worker times no call of its own (its figures are KvikIO's statistics);
            // it only reads the CPU clock around the pass.
            let share = if row.scenario() == Some("kvikio") {
                "none per call".to_string()
            } else {
                format!(
                    "{:.3}%",
                    super::recording::share_percent(recording_ns, mean)
                )
            };
            (gds_model::cost::format_micros(mean), share)
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {of} | {range} | {cpu} | {call} | {share} | {} |",
            setting.rate.number(median(&sample.gbps), 2),
            sample.libraries.join("; ")
        );
    }
    let _ = writeln!(
        out,
        "\nRecording one call (two clock reads and a histogram increment) costs {recording_ns:.1} ns on this host (median of 5 rounds of 1 000 000 calls); its share of a call is that over the row's mean call latency, a bound the on/off ratios cannot resolve below the disk's noise."
    );
    let _ = writeln!(
        out,
        "\nThe reference of a row with recording on is dd in the same run (for a writing row, dd's write); of a row with recording off, the same reader with recording on beside it (so its percentage is off/on: above 100% is what recording costs). One worker per row and run, one cold pass each, started {} s after the row before it ended (`--rest`); every other run takes the rows in reverse order.",
        setting.rest.as_secs()
    );
    let _ = writeln!(
        out,
        "Parity: `cufile reader` over `KvikIO compat OFF` and `cufile writer` over `KvikIO pwrite` run by run; `cufile reader with KvikIO's libcufile` takes the library out of the comparison; `cufile-batch` and `cufile-async` over the `cufile reader` at the same I/Os in flight. A writing row's GB/s times its writes only (fsync apart, as in the gate)."
    );
    for ((row, over), ratios) in PAIRS.into_iter().zip(pair_ratios) {
        let over = if over == Row::Cufile {
            "cufile reader"
        } else {
            "KvikIO"
        };
        if let Some(line) = ratio_line(&row.label(setting), over, ratios) {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// `- cufile writer, … / KvikIO: median 1.03 (runs: 1.10 0.98 1.03)`, from 6 runs on with the
/// median's 95% confidence interval (a run-to-run spread of ±20% leaves a median of a few runs
/// uncertain by more than the 5% a parity target asks); none without ratios.
fn ratio_line(label: &str, over: &str, ratios: &[f64]) -> Option<String> {
    if ratios.is_empty() {
        return None;
    }
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    let interval = median_interval_95(ratios)
        .map(|(low, high)| format!(", 95% confidence {low:.2}–{high:.2}"))
        .unwrap_or_default();
    Some(format!(
        "- {label} / {over}: median {:.2}{interval} (runs: {})",
        median(ratios),
        each.join(" ")
    ))
}

/// Each parity pair's ratio in one run, where both of its rows measured that run: a row that
/// failed one run leaves out only that run's ratio.
fn pair_ratios_of_run(rates: &[Option<f64>; ROWS.len()]) -> [Option<f64>; PAIRS.len()] {
    PAIRS.map(|(row, over)| Some(rates[row.position()]? / rates[over.position()]?))
}

#[cfg(test)]
mod tests;
