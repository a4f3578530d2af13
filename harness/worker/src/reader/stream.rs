//! One pass of a plan through a reader: into one buffer of the whole pass, or window by window
//! (streaming, [`gds_model::window`]), each window cleared, read (timed) and verified where it
//! landed before the next reuses the buffer.

use std::time::Duration;

use super::{Pass, PlanReader, ReaderError, recording};
use crate::cpu;
use gds_model::cost::{CpuTime, Histogram};
use gds_model::integrity::{IntegrityResult, Streamed};
use gds_model::plan::ReadPlan;
use gds_model::scenario::Integrity;
use gds_model::window::Window;

/// What one pass gives the trial.
#[derive(Debug)]
pub struct PassOutcome {
    /// The read sections only: a streamed pass's windows' read times added up.
    pub read: Pass,
    /// CPU time of the read sections, when recording is on.
    pub cpu: Option<CpuTime>,
    /// The pass's verification (composed from the windows' when streaming).
    pub integrity: IntegrityResult,
    /// The most GPU memory in use after any read and verification of the pass (GPU readers).
    pub device_peak: Option<u64>,
}

/// How a pass reads and checks.
pub struct PassSettings {
    pub nthreads: u32,
    pub task_size: u64,
    pub method: Integrity,
    pub expected: u64,
}

/// One pass; the destination was cleared by the caller (its first window's, when streaming).
/// `windows`: `None` reads the whole plan into one buffer.
pub fn run_pass(
    reader: &mut dyn PlanReader,
    plan: &ReadPlan,
    windows: Option<&[Window]>,
    settings: &PassSettings,
) -> Result<PassOutcome, ReaderError> {
    let Some(windows) = windows else {
        let (read, cpu) = timed_read(reader, plan, settings)?;
        let integrity = reader.verify(plan, settings.method, settings.expected)?;
        return Ok(PassOutcome {
            read,
            cpu,
            integrity,
            device_peak: reader.device_memory_used(),
        });
    };
    let mut total = Pass {
        elapsed: Duration::ZERO,
        calls: 0,
        latency: recording().then(Histogram::default),
    };
    let mut cpu_total: Option<CpuTime> = None;
    let mut composed = Streamed::default();
    let mut device_peak = None;
    for (index, window) in windows.iter().enumerate() {
        if index > 0 {
            reader.prepare()?;
        }
        let (read, cpu) = timed_read(reader, &window.plan, settings)?;
        total.elapsed += read.elapsed;
        total.calls += read.calls;
        if let (Some(all), Some(this)) = (total.latency.as_mut(), read.latency.as_ref()) {
            all.merge(this);
        }
        cpu_total = add_cpu(cpu_total, cpu);
        // A window's expected sum is not known alone; the pass's is compared after the last.
        composed.add(window, reader.verify(&window.plan, settings.method, 0)?);
        device_peak = device_peak.max(reader.device_memory_used());
    }
    Ok(PassOutcome {
        read: total,
        cpu: cpu_total,
        integrity: composed.finish(plan, settings.method, settings.expected),
        device_peak,
    })
}

fn timed_read(
    reader: &mut dyn PlanReader,
    plan: &ReadPlan,
    settings: &PassSettings,
) -> Result<(Pass, Option<CpuTime>), ReaderError> {
    let before = recording().then(cpu::process_time).flatten();
    let read = reader.read(plan, settings.nthreads, settings.task_size)?;
    let cpu = before.and_then(|before| Some(cpu::process_time()?.since(&before)));
    Ok((read, cpu))
}

/// The sum of the windows' CPU times; a window without the figure leaves the pass without it.
fn add_cpu(total: Option<CpuTime>, window: Option<CpuTime>) -> Option<CpuTime> {
    let window = window?;
    let total = total.unwrap_or(CpuTime {
        user_seconds: 0.0,
        system_seconds: 0.0,
    });
    Some(CpuTime {
        user_seconds: total.user_seconds + window.user_seconds,
        system_seconds: total.system_seconds + window.system_seconds,
    })
}
