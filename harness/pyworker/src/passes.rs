//! A trial's passes for the Python worker: the Rust worker's own pass loops
//! ([`gds_worker::trial::passes`]: the page cache dropped off the critical path, windows, the
//! buffer cleared, reads timed, verification composed, a load's opening, progress, the hand-over
//! to the gate; [`gds_worker::trial::write::passes`] for writes: files blanked, writes timed,
//! fsync timed apart, drops, the check on the disk or the read back) over a [`PlanReader`] and a
//! [`PlanWriter`] whose library calls and GPU kernels are calls into the Python objects the worker
//! hands in (`passes.Landing`, `passes.Writer`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use gds_model::cost::{CpuTime, Histogram};
use gds_model::integrity::{IntegrityResult, RangeVerifier, check};
use gds_model::path::Path;
use gds_model::plan::ReadPlan;
use gds_model::protocol::{WorkerFailure, WorkerSpec};
use gds_model::record::Measurement;
use gds_model::scenario::{Integrity, Reader};
use gds_model::verify::Mismatch;
use gds_worker::reader::{Opened, Pass, PlanReader, ReaderError, recording};
use gds_worker::writer::PlanWriter;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The library under test as the Python worker calls it: a `passes.Landing` (its reads into a
/// GPU buffer and the verification kernels over that buffer) as a [`PlanReader`], a
/// `passes.Writer` (its writes from the buffer) as a [`PlanWriter`].
pub struct PyLibrary<'py> {
    landing: Bound<'py, PyAny>,
    library: String,
    path: Path,
    /// The first exception Python raised, in a call of this object or in the loop's
    /// `measured_from` (which shares it): the trial's finding, raised again once the loop ends.
    /// The loop ends at the next preparation.
    raised: Rc<RefCell<Option<PyErr>>>,
}

impl<'py> PyLibrary<'py> {
    pub fn new(spec: &WorkerSpec, landing: Bound<'py, PyAny>) -> PyResult<PyLibrary<'py>> {
        Ok(PyLibrary {
            library: landing.getattr("library")?.extract()?,
            landing,
            path: path_of(spec),
            raised: Rc::default(),
        })
    }

    /// `Ok(value)`, or the exception kept (the first) as the trial's finding.
    fn kept<T>(&mut self, result: PyResult<T>) -> Result<T, ReaderError> {
        result.map_err(|error| {
            self.raised.borrow_mut().get_or_insert(error);
            self.raised_error()
        })
    }

    fn raised_error(&self) -> ReaderError {
        ReaderError::Raised {
            library: self.library.clone(),
        }
    }

    /// Err once an exception is kept: where a preparation ends the loop on one raised outside a
    /// read (the GPU memory query's, `measured_from`'s).
    fn still_going(&self) -> Result<(), ReaderError> {
        if self.raised.borrow().is_some() {
            return Err(self.raised_error());
        }
        Ok(())
    }

    /// The exception kept, taken for the caller to raise.
    fn take_raised(&self) -> Option<PyErr> {
        self.raised.borrow_mut().take()
    }

    /// The loop's `measured_from` callback: `measured_from()` on the Python object (where
    /// KvikIO's counters start for the trial's own figures), its exception kept as this object's.
    fn measured_from(&self) -> impl FnMut() + use<'py> {
        let (target, raised) = (self.landing.clone(), self.raised.clone());
        move || {
            if let Err(error) = target.call_method0("measured_from") {
                raised.borrow_mut().get_or_insert(error);
            }
        }
    }
}

/// The path the gate's verdict replaces with what the evidence says: the library's name.
fn path_of(spec: &WorkerSpec) -> Path {
    Path::Other(match spec.trial.reader {
        Reader::Torch => "torch".into(),
        _ => "kvikio".into(),
    })
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

impl PlanReader for PyLibrary<'_> {
    fn path(&self) -> Path {
        self.path.clone()
    }

    fn prepare(&mut self) -> Result<(), ReaderError> {
        self.still_going()?;
        let cleared = self.landing.call_method0("clear").map(drop);
        self.kept(cleared)
    }

    fn device_memory_used(&mut self) -> Option<u64> {
        let used = self.landing.call_method0("device_used");
        self.kept(used.and_then(|used| used.extract())).ok()
    }

    /// One section through the library: `Landing.read(segments, bytes)` reads and synchronises
    /// under `passes.watched` and answers the bytes read with the time of the library's call
    /// alone (see [`Timed`]); `before_read` and `after_read` (read calls, the first call's end
    /// in seconds or None, the library's own (calls, summed ns) or None) stay outside it.
    fn read(&mut self, plan: &ReadPlan, _: u32, _: u64) -> Result<Pass, ReaderError> {
        let expected = plan.total_bytes();
        let segments = segment_dicts(self.landing.py(), plan);
        let segments = self.kept(segments)?;
        let before = self.landing.call_method0("before_read").map(drop);
        self.kept(before)?;
        let read = self.landing.call_method1("read", (&segments, expected));
        let Timed(read, elapsed, cpu) = self.kept(read.and_then(|read| read.extract()))?;
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
            cpu,
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
        let opened = self.landing.call_method1("reopen", (paths(plan),));
        let (open, register): (f64, Option<f64>) = self.kept(opened.and_then(|o| o.extract()))?;
        Ok(Opened {
            open: duration(open),
            register: register.map(duration),
        })
    }
}

/// A section's bytes as `Landing.read` and `Writer.write` answer them, with the wall and CPU time
/// (user, system) of the library's call alone, which Python measures around it: measured here,
/// the time would also hold the watchdog's arming (a thread started and joined, about 0.1 ms a
/// section, a tenth of a small window's read) and the calls across the extension. The CPU time
/// is None when cost recording is off.
struct Timed(u64, Duration, Option<CpuTime>);

impl<'py> FromPyObject<'_, 'py> for Timed {
    type Error = PyErr;

    fn extract(answer: Borrowed<'_, 'py, PyAny>) -> PyResult<Timed> {
        let (bytes, seconds, cpu): (u64, f64, Option<(f64, f64)>) = answer.extract()?;
        Ok(Timed(
            bytes,
            duration(seconds),
            cpu.map(|(user_seconds, system_seconds)| CpuTime {
                user_seconds,
                system_seconds,
            }),
        ))
    }
}

/// Seconds Python measured (perf_counter differences), with no panic on a value out of range.
fn duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or_default()
}

fn paths(plan: &ReadPlan) -> Vec<String> {
    let paths = plan.files.iter().map(|f| f.path.display().to_string());
    paths.collect()
}

impl PlanWriter for PyLibrary<'_> {
    fn path(&self) -> Path {
        self.path.clone()
    }

    /// The files blanked as the Rust writers blank them, then opened by the library.
    fn prepare(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        self.still_going()?;
        drop(gds_worker::writer::create_all(plan)?);
        let opened = self.landing.call_method1("open_for_write", (paths(plan),));
        self.kept(opened.map(drop))
    }

    /// `Writer.write(segments, bytes)`: the bytes written, timed as reads are ([`Timed`]); the
    /// files closed after.
    fn write(&mut self, plan: &ReadPlan, _: u32, _: u64) -> Result<Pass, ReaderError> {
        let expected = plan.total_bytes();
        let segments = segment_dicts(self.landing.py(), plan);
        let segments = self.kept(segments)?;
        let written = self.landing.call_method1("write", (&segments, expected));
        let Timed(written, elapsed, cpu) = self.kept(written.and_then(|w| w.extract()))?;
        let closed = self.landing.call_method0("close_written");
        self.kept(closed)?;
        if written != expected {
            return Err(ReaderError::ShortWrite {
                library: self.library.clone(),
                written,
                expected,
            });
        }
        let calls = self.landing.getattr("write_calls");
        Ok(Pass {
            elapsed,
            calls: self.kept(calls.and_then(|calls| calls.extract()))?,
            latency: None,
            first_call: None,
            cpu,
        })
    }

    fn sync(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        for file in &plan.files {
            let synced = std::fs::File::open(&file.path).and_then(|f| f.sync_all());
            synced.map_err(|source| ReaderError::Sync {
                path: file.path.display().to_string(),
                source,
            })?;
        }
        Ok(())
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

/// How a trial's passes ended: the figures measured up to the end, and the failure the loop ended
/// with, or the exception Python raised inside it (the trial's finding, raised again by the
/// worker once it has kept the figures).
pub struct Ended {
    pub measurement: Measurement,
    pub failure: Option<WorkerFailure>,
    pub raised: Option<PyErr>,
}

/// Runs the passes of a reading trial.
pub fn run(spec: &WorkerSpec, landing: Bound<'_, PyAny>, window: Option<u64>) -> PyResult<Ended> {
    let mut m = Measurement::unmeasured(spec.plan.files.clone(), spec.plan.total_bytes());
    let mut reader = PyLibrary::new(spec, landing)?;
    let mut measured_from = reader.measured_from();
    let result = gds_worker::trial::passes(spec, &mut reader, &mut m, window, &mut measured_from);
    Ok(ended(m, result, reader.take_raised()))
}

fn ended(
    measurement: Measurement,
    result: Result<(), WorkerFailure>,
    raised: Option<PyErr>,
) -> Ended {
    Ended {
        measurement,
        // An exception is the finding; the failure it caused only says that Python raised.
        failure: result.err().filter(|_| raised.is_none()),
        raised,
    }
}

/// Runs a writing trial's passes through `writer`, `read_back` reading a `roundtrip` back (a
/// `write` is checked on the disk).
pub fn run_writes(
    spec: &WorkerSpec,
    writer: Bound<'_, PyAny>,
    read_back: Option<Bound<'_, PyAny>>,
) -> PyResult<Ended> {
    let mut m = Measurement::unmeasured(spec.plan.files.clone(), spec.plan.total_bytes());
    // The loop opens the files for its drops before the first pass: they exist from here on, as a
    // Rust writer's do once it is open (blanked by each pass's preparation).
    if let Err(error) = gds_worker::writer::open_all(&spec.plan) {
        return Ok(ended(m, Err(gds_worker::trial::fail(error)), None));
    }
    let mut py_writer = PyLibrary::new(spec, writer)?;
    let mut reader = read_back
        .map(|landing| PyLibrary::new(spec, landing))
        .transpose()?;
    let mut measured_from = py_writer.measured_from();
    let result = gds_worker::trial::write::passes(
        spec,
        &mut py_writer,
        reader.as_mut().map(|r| r as &mut dyn PlanReader),
        &mut m,
        &mut measured_from,
    );
    let raised = py_writer.take_raised();
    Ok(ended(m, result, raised.or_else(|| reader?.take_raised())))
}
