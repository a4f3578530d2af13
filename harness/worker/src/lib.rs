//! gds-worker: the process side of gds-gate, and the only crate that links CUDA (cudarc) and
//! loads libcufile. The gate starts `gds-gate worker --job …` as a fresh process for each trial,
//! probe and GPU bench; the binary hands it to [`serve`], which reads the spec, does the job and
//! writes the result, so that a crash in the stack under test ends this process, not the gate.
//!
//! Every `unsafe` call into CUDA or cuFile is in [`gpu`], [`libcufile`] and [`reader`]; [`cpu`]
//! asks the kernel for the process's CPU time.

pub mod cpu;
pub mod gpu;
pub mod gpu_bench;
pub mod libcuda;
pub mod libcufile;
pub mod probe;
pub mod reader;
pub mod trial;
pub mod watch;
pub mod writer;

use std::path::Path;

use gds_model::protocol::{GpuBenchResult, ProbeResult, WorkerResult};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What a worker process is started to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// One trial (`WorkerSpec` → `WorkerResult`).
    Trial,
    /// What this host's CUDA and cuFile say (`ProbeSpec` → `ProbeResult`).
    Probe,
    /// `bench --gpu`'s GPU measurements (`GpuBenchSpec` → `GpuBenchResult`).
    GpuBench,
}

/// The worker's `main`: read the spec, do the job, write the result atomically. The exit status
/// only says whether a result was written. A panic (a library under test that cudarc finds
/// lacking, a bug) is answered as the job's failure, with its message, not left without an answer.
pub fn serve(job: Job, spec: &Path, result: &Path) -> u8 {
    let next = "a bug in gds-gate or a library it loads broken; the worker's output above has the place: report it with the trial's folder";
    match job {
        Job::Trial => {
            let code = answer(spec, result, trial::run, |_, why| {
                WorkerResult::failed(format!("the worker panicked: {why}"), next.into())
            });
            // The last pass's page cache drop ends after the answer, within the process's exit:
            // a worker started ahead may still be starting up, and is released only once this
            // process is gone, so its first drop and timed byte still find the cache cold.
            trial::finish_wind_down();
            code
        }
        Job::Probe => answer(spec, result, probe::run, |spec, why| {
            ProbeResult::failed(spec, &format!("the probe panicked: {why}"))
        }),
        Job::GpuBench => answer(spec, result, gpu_bench::run, |_, why| {
            GpuBenchResult::failed(format!("the GPU bench panicked: {why}"))
        }),
    }
}

fn answer<S: DeserializeOwned + Clone, R: Serialize>(
    spec_path: &Path,
    result_path: &Path,
    job: impl FnOnce(S) -> R,
    panicked: impl FnOnce(&S, &str) -> R,
) -> u8 {
    let spec = match std::fs::read_to_string(spec_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<S>(&text).map_err(|e| e.to_string()))
    {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!(
                "error: cannot read the worker spec `{}`: {error}",
                spec_path.display()
            );
            return 2;
        }
    };
    let copy = spec.clone();
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(spec)))
        .unwrap_or_else(|payload| panicked(&copy, &gds_model::panic_message(payload.as_ref())));
    let text = serde_json::to_string_pretty(&answer).unwrap_or_default();
    match gds_model::fsutil::write_atomically(result_path, text.as_bytes()) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!(
                "error: cannot write the worker result `{}`: {error}",
                result_path.display()
            );
            2
        }
    }
}
