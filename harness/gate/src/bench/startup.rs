//! Worker start to first byte, measured on real worker processes started the way the gate starts
//! them, and split into the CUDA context, cuFile's driver open, and the rest (process start,
//! spec, files, buffer allocation and registration, statistics on, cache drop, clear).
//!
//! The file is small so that nothing proportional to the data (dropping its cache, clearing the
//! destination) hides the fixed cost. The cufile trials log at INFO, so that cuFile's own log
//! times the steps of `cuFileDriverOpen`, the longest part of their start. The last row is not a
//! setting the gate would use: `force_compat_mode` skips cuFile's PCI P2PDMA probe (and with it
//! any GPUDirect path), which shows what that probe costs on the host.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::BenchError;
use crate::launch::{Launcher, slug};
use crate::prepare::DataSet;
use gds_model::evidence::cufile_log;
use gds_model::numbers::median;
use gds_model::plan::ReadPlan;
use gds_model::protocol::{CUFILE_DRIVER_OPEN, GPU_CONTEXT};
use gds_model::record::TrialRecord;

const SUITE: &str = "\
suite: startup
defaults: { files: { size: 64MiB, seed: 5 }, warmup: 0, repetitions: 1 }
scenarios:
  - { name: posix, reader: posix }
  - { name: h2d, reader: h2d }
  - { name: cufile, reader: cufile, cufile: { logging.level: INFO } }
  - name: cufile-force-compat-mode
    reader: cufile
    cufile: { logging.level: INFO, properties.force_compat_mode: true }
";

pub fn run(
    runs: usize,
    dir: &Path,
    setting: &super::parity::Setting,
    out: &mut String,
) -> Result<(), BenchError> {
    let rate = setting.rate;
    let suite = gds_model::scenario::parse(Path::new("<start-up bench>"), SUITE)?;
    let trials = gds_model::scenario::expand(&suite);
    let data = DataSet::prepare(dir, &trials, rate, &setting.console);
    let scratch = tempfile::tempdir().map_err(BenchError::TempDir)?;
    let launcher = Launcher {
        gate: crate::job::worker_program()?,
        trials_dir: scratch.path().to_path_buf(),
        strict: false,
        timeout: Some(Duration::from_secs(120)),
        gds_stats: None,
        env: Vec::new(),
        progress: None,
    };
    let mut records: Vec<Vec<TrialRecord>> = vec![Vec::new(); trials.len()];
    let mut driver_steps: Vec<DriverSteps> = vec![Vec::new(); trials.len()];
    // Round-robin, so that a slow moment of the host is shared by every reader.
    for _ in 0..runs {
        for ((spec, records), steps) in trials.iter().zip(&mut records).zip(&mut driver_steps) {
            let files = data.files_for(spec)?;
            let plan = ReadPlan::new(files, &spec.pattern);
            records.push(launcher.run_trial(spec.clone(), plan));
            let log = cufile_log::read_logs(&launcher.trials_dir.join(slug(&spec.name)));
            add_steps(
                steps,
                log.and_then(|log| cufile_log::driver_open_steps(&log)),
            );
        }
    }
    let _ = writeln!(
        out,
        "| worker start-up, 64 MiB file, median of {runs} | start → first byte | CUDA context | libcufile load and cuFileDriverOpen | the rest |\n|---|---:|---:|---:|---:|"
    );
    for (spec, records) in trials.iter().zip(&records) {
        let _ = match Startup::of(records) {
            Ok(row) => writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                spec.scenario,
                ms(Some(row.total)),
                ms(row.context),
                ms(row.driver),
                ms(Some(row.rest)),
            ),
            Err(reason) => writeln!(out, "| {} | failed: {reason} | | | |", spec.scenario),
        };
    }
    for (spec, steps) in trials.iter().zip(&driver_steps) {
        if !steps.is_empty() {
            let steps: Vec<String> = steps
                .iter()
                .map(|(step, seconds)| format!("{step} {}", ms(Some(median(seconds)))))
                .collect();
            let _ = writeln!(
                out,
                "\n{}: cuFileDriverOpen by cuFile's own log (medians): {}; the time before its first line is not in the log.",
                spec.scenario,
                steps.join(", ")
            );
        }
    }
    out.push('\n');
    Ok(())
}

/// Each step of a driver open with its samples, in the order cuFile takes them.
type DriverSteps = Vec<(String, Vec<f64>)>;

fn add_steps(steps: &mut DriverSteps, run: Option<Vec<(String, f64)>>) {
    for (step, seconds) in run.unwrap_or_default() {
        match steps.iter_mut().find(|(known, _)| *known == step) {
            Some((_, samples)) => samples.push(seconds),
            None => steps.push((step, vec![seconds])),
        }
    }
}

/// A run that measured no start-up, which fails its row: its words are the trial's reason.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.reason.as_deref().unwrap_or("no start-up"))]
struct NoStartup<'a>(&'a TrialRecord);

/// Medians over runs, in seconds. The worker opens the CUDA context and then the cuFile driver,
/// so the rest is the total less both.
struct Startup {
    total: f64,
    context: Option<f64>,
    driver: Option<f64>,
    rest: f64,
}

impl Startup {
    fn of(records: &[TrialRecord]) -> Result<Startup, NoStartup<'_>> {
        let mut totals = Vec::new();
        let (mut contexts, mut drivers, mut rests) = (Vec::new(), Vec::new(), Vec::new());
        for record in records {
            let measured = record.measurement.as_ref();
            let Some(total) = measured.and_then(|m| m.startup_seconds) else {
                return Err(NoStartup(record));
            };
            let phase = |prefix: &str| {
                measured?
                    .setup
                    .iter()
                    .find(|(name, _)| name.starts_with(prefix))
                    .map(|&(_, seconds)| seconds)
            };
            let (context, driver) = (phase(GPU_CONTEXT), phase(CUFILE_DRIVER_OPEN));
            contexts.extend(context);
            drivers.extend(driver);
            totals.push(total);
            rests.push(total - context.unwrap_or(0.0) - driver.unwrap_or(0.0));
        }
        let optional = |values: &[f64]| (!values.is_empty()).then(|| median(values));
        Ok(Startup {
            total: median(&totals),
            context: optional(&contexts),
            driver: optional(&drivers),
            rest: median(&rests),
        })
    }
}

fn ms(seconds: Option<f64>) -> String {
    seconds.map_or("–".into(), |s| format!("{:.0} ms", s * 1e3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::fixtures;

    /// Constructed records (our arithmetic, not a measurement): setup phases as a cufile worker
    /// reports them.
    fn cufile_run(total: f64, context: f64, driver: f64) -> TrialRecord {
        let mut record = fixtures::passed("startup::cufile", &[1.0], "cufile-posix", 1);
        let measurement = record.measurement.as_mut().unwrap();
        measurement.startup_seconds = Some(total);
        measurement.setup = vec![
            ("gpu context".into(), context),
            ("libcufile load and cuFileDriverOpen".into(), driver),
            ("cuFile statistics on".into(), 0.003),
        ];
        record
    }

    #[test]
    fn the_rest_is_the_start_up_less_context_and_driver() {
        let runs = [
            cufile_run(0.950, 0.200, 0.600),
            cufile_run(1.010, 0.310, 0.620),
            cufile_run(1.200, 0.500, 0.450),
        ];
        let row = Startup::of(&runs).unwrap();
        assert_eq!(row.total, 1.010);
        assert_eq!(row.context, Some(0.310));
        assert_eq!(row.driver, Some(0.600));
        // Rests 0.150, 0.080, 0.250: their median, not the difference of the medians (0.100).
        assert!((row.rest - 0.150).abs() < 1e-9, "{}", row.rest);
    }

    #[test]
    fn a_run_without_start_up_makes_the_row_a_failure_with_its_reason() {
        let runs = [
            cufile_run(0.65, 0.3, 0.6),
            fixtures::ignored("startup::cufile"),
        ];
        let reason = Startup::of(&runs).err().unwrap().to_string();
        assert!(reason.contains("libcuda.so.1"), "{reason}");
    }

    #[test]
    fn the_embedded_suite_is_valid() {
        let suite = gds_model::scenario::parse(Path::new("<start-up bench>"), SUITE).unwrap();
        assert_eq!(gds_model::scenario::expand(&suite).len(), 4);
    }
}
