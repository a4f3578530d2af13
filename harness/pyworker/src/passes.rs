//! A reading trial's passes for the Python worker: the Rust worker's own pass loop
//! ([`gds_worker::trial::passes`]: the page cache dropped off the critical path, windows, the
//! buffer cleared, reads timed, verification composed, a load's opening, progress, the hand-over
//! to the gate) over a [`PlanReader`] whose reads and GPU kernels are calls into the Python
//! object the worker hands in (`passes.Landing`).

use std::time::{Duration, Instant};

use gds_model::cost::Histogram;
use gds_model::integrity::{IntegrityResult, RangeVerifier, check};
use gds_model::path::Path;
use gds_model::plan::ReadPlan;
use gds_model::protocol::{WorkerFailure, WorkerSpec};
use gds_model::record::Measurement;
use gds_model::scenario::{Integrity, Reader};
use gds_model::verify::Mismatch;
use gds_worker::reader::{Opened, Pass, PlanReader, ReaderError, recording};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The Python worker's landing: its library's reads into its GPU buffer, and the verification
/// kernels over that buffer.
pub struct PyReader<'py> {
    landing: Bound<'py, PyAny>,
    library: String,
    path: Path,
    /// The first exception Python raised: the trial's finding, raised again once the loop ends.
    raised: Option<PyErr>,
}

impl<'py> PyReader<'py> {
    pub fn new(spec: &WorkerSpec, landing: Bound<'py, PyAny>) -> PyResult<PyReader<'py>> {
        let library = landing.getattr("library")?.extract()?;
        let path = Path::Other(match spec.trial.reader {
            Reader::Torch => "torch".into(),
            _ => "kvikio".into(),
        });
        Ok(PyReader {
            landing,
            library,
            path,
            raised: None,
        })
    }

    /// `Ok(value)`, or the exception kept as the trial's finding.
    fn kept<T>(&mut self, result: PyResult<T>) -> Result<T, ReaderError> {
        result.map_err(|error| {
            self.raised.get_or_insert(error);
            ReaderError::Raised {
                library: self.library.clone(),
            }
        })
    }
}

/// The plan's reads as the Python worker's readers take them: a list of dicts of `file`,
/// `offset`, `len` and `buffer_offset`.
pub fn segment_dicts<'py>(py: Python<'py>, plan: &ReadPlan) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for s in &plan.segments {
        let segment = PyDict::new(py);
        segment.set_item("file", s.file)?;
        segment.set_item("offset", s.offset)?;
        segment.set_item("len", s.len)?;
        segment.set_item("buffer_offset", s.buffer_offset)?;
        list.append(segment)?;
    }
    Ok(list)
}

impl PlanReader for PyReader<'_> {
    fn path(&self) -> Path {
        self.path.clone()
    }

    fn prepare(&mut self) -> Result<(), ReaderError> {
        let cleared = self.landing.call_method0("clear").map(drop);
        self.kept(cleared)
    }

    fn device_memory_used(&mut self) -> Option<u64> {
        let used = self.landing.call_method0("device_used");
        self.kept(used.and_then(|used| used.extract())).ok()
    }

    /// One section through the library, timed here around `Landing.read(segments)` (which
    /// reads and synchronises under `passes.watched`, and answers the bytes read);
    /// `before_read` and `after_read` (read calls, the first call's end in seconds or
    /// None, the library's own (calls, summed ns) or None) stay outside the time.
    fn read(&mut self, plan: &ReadPlan, _: u32, _: u64) -> Result<Pass, ReaderError> {
        let expected = plan.total_bytes();
        let segments = segment_dicts(self.landing.py(), plan);
        let segments = self.kept(segments)?;
        let before = self.landing.call_method0("before_read").map(drop);
        self.kept(before)?;
        let started = Instant::now();
        let read = self.landing.call_method1("read", (&segments,));
        let elapsed = started.elapsed();
        let read: u64 = self.kept(read.and_then(|read| read.extract()))?;
        let after = self.landing.call_method1("after_read", (&segments,));
        type After = (u64, Option<f64>, Option<(u64, u128)>);
        let (calls, first, totals) = self.kept(after.and_then(|after| after.extract::<After>()))?;
        if read != expected {
            return Err(ReaderError::ShortRead {
                library: self.library.clone(),
                read,
                expected,
            });
        }
        let latency = totals.filter(|_| recording()).map(|(calls, sum_ns)| {
            let mut histogram = Histogram::default();
            histogram.add_totals(calls, sum_ns);
            histogram
        });
        Ok(Pass {
            elapsed,
            calls,
            latency,
            first_call: first.and_then(|seconds| Duration::try_from_secs_f64(seconds).ok()),
        })
    }

    fn verify(
        &mut self,
        plan: &ReadPlan,
        method: Integrity,
        expected: u64,
    ) -> Result<IntegrityResult, ReaderError> {
        let checked = check(plan, &mut Kernels(&self.landing), method, expected);
        self.kept(checked)
    }

    fn reopen(&mut self, plan: &ReadPlan) -> Result<Opened, ReaderError> {
        let paths: Vec<String> = plan
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let opened = self.landing.call_method1("reopen", (paths,));
        let (open, register): (f64, Option<f64>) = self.kept(opened.and_then(|o| o.extract()))?;
        Ok(Opened {
            open: Duration::from_secs_f64(open.max(0.0)),
            register: register.map(|seconds| Duration::from_secs_f64(seconds.max(0.0))),
        })
    }
}

/// The verification kernels the Python worker launches over its buffer (the Rust worker's
/// kernels.cu), one range at a time; [`check`] composes them as for every other reader.
pub struct Kernels<'a, 'py>(pub &'a Bound<'py, PyAny>);

impl RangeVerifier for Kernels<'_, '_> {
    type Error = PyErr;

    fn exact(
        &mut self,
        seed: u64,
        file_offset: u64,
        buffer_offset: u64,
        len: u64,
    ) -> Result<Mismatch, PyErr> {
        let (bad_words, first_bad_offset) = self
            .0
            .call_method1("exact_range", (seed, file_offset, buffer_offset, len))?
            .extract()?;
        Ok(Mismatch {
            bad_words,
            first_bad_offset,
        })
    }

    fn checksum(&mut self, file_offset: u64, buffer_offset: u64, len: u64) -> Result<u64, PyErr> {
        self.0
            .call_method1("checksum_range", (file_offset, buffer_offset, len))?
            .extract()
    }
}

/// Runs the passes; the measurement's pass figures, or the failure the loop ended with. An
/// exception Python raised inside is raised again here.
pub fn run(
    spec: &WorkerSpec,
    landing: Bound<'_, PyAny>,
    window: Option<u64>,
) -> PyResult<(Measurement, Option<WorkerFailure>)> {
    let mut m = Measurement::unmeasured(spec.plan.files.clone(), spec.plan.total_bytes());
    let mut reader = PyReader::new(spec, landing.clone())?;
    let mut measured_from_error = None;
    let result = {
        let mut measured_from = || {
            if let Err(error) = landing.call_method0("measured_from") {
                measured_from_error.get_or_insert(error);
            }
        };
        gds_worker::trial::passes(spec, &mut reader, &mut m, window, &mut measured_from)
    };
    if let Some(error) = reader.raised.take().or(measured_from_error) {
        return Err(error);
    }
    Ok((m, result.err()))
}
