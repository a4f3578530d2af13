//! `gds_pass`: the Python worker's native half. The KvikIO and PyTorch readers
//! (harness/worker/kvikio_worker.py, torch_reader.py) run in Python because their libraries are
//! Python's; what the Rust worker already does around their read calls they call here, so that it
//! exists once: a trial's read and write loops ([`passes`], which also write the progress file
//! the gate's live view polls), and the watchdog that names a section stuck inside the library.
//!
//! Built as an abi3 extension module with the gate (the gate's binary depends on this crate) and
//! copied into each Python trial's folder by the gate's launcher.

mod passes;

use std::time::Duration;

use gds_model::plan::{ReadPlan, Segment};
use gds_model::protocol::WorkerSpec;
use gds_model::window::ALIGN;
use gds_worker::watch::{TICK, Watched, section_bound};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyBytes, PyDict, PyList};

#[pymodule]
fn gds_pass(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(window, module)?)?;
    module.add_function(wrap_pyfunction!(read_passes, module)?)?;
    module.add_function(wrap_pyfunction!(write_passes, module)?)?;
    module.add_function(wrap_pyfunction!(sections, module)?)?;
    module.add_function(wrap_pyfunction!(tasks, module)?)?;
    module.add_function(wrap_pyfunction!(finish_wind_down, module)?)?;
    module.add_function(wrap_pyfunction!(reference_exact, module)?)?;
    module.add_function(wrap_pyfunction!(reference_checksum, module)?)?;
    module.add_function(wrap_pyfunction!(reference_bytes, module)?)?;
    module.add_class::<Section>()?;
    Ok(())
}

fn spec_of(text: &str) -> PyResult<WorkerSpec> {
    serde_json::from_str(text)
        .map_err(|error| PyValueError::new_err(format!("the trial's spec does not parse: {error}")))
}

/// The window a reading trial streams through, for a GPU of `gpu_memory` bytes (the Rust
/// worker's rule); `None` for one buffer of the whole pass.
#[pyfunction]
fn window(spec: &str, gpu_memory: u64) -> PyResult<Option<u64>> {
    Ok(gds_worker::trial::window_for(
        &spec_of(spec)?,
        Some(gpu_memory),
    ))
}

/// A window the Python worker passes back: one [`window`] gave (at least [`ALIGN`]).
fn checked(window: Option<u64>) -> PyResult<Option<u64>> {
    match window {
        Some(size) if size < ALIGN => Err(PyValueError::new_err(format!(
            "a window of {size} bytes is below {ALIGN}: take it from `gds_pass.window`"
        ))),
        window => Ok(window),
    }
}

/// A reading trial's passes through `landing` (`passes.Landing`) with the window [`window`]
/// gave: the measurement's pass figures (JSON, as the Rust worker's), its failure
/// (`{"reason", "next", "missing"}`, JSON) or `None`, and the exception the library raised or
/// `None` (for the caller to raise once it has kept the figures).
#[pyfunction]
#[pyo3(signature = (spec, landing, window))]
fn read_passes(spec: &str, landing: Bound<'_, PyAny>, window: Option<u64>) -> PyResult<Answer> {
    let (spec, window) = (spec_of(spec)?, checked(window)?);
    answer(landing.py(), || passes::run(&spec, landing.clone(), window))
}

/// A writing trial's passes through `writer` (`passes.Writer`), a `roundtrip` read back through
/// `read_back` (a `passes.Landing` over the check buffer); answered as [`read_passes`].
#[pyfunction]
#[pyo3(signature = (spec, writer, read_back))]
fn write_passes(
    spec: &str,
    writer: Bound<'_, PyAny>,
    read_back: Option<Bound<'_, PyAny>>,
) -> PyResult<Answer> {
    let spec = spec_of(spec)?;
    answer(writer.py(), || {
        passes::run_writes(&spec, writer.clone(), read_back.clone())
    })
}

type Answer = (String, Option<String>, Option<Py<PyAny>>);

/// The passes' end as Python takes it. A panic becomes a RuntimeError: PyO3's PanicException
/// derives from BaseException, which the worker's `except Exception` would let through, and the
/// worker would then end without a result.
fn answer(py: Python<'_>, run: impl FnOnce() -> PyResult<passes::Ended>) -> PyResult<Answer> {
    let ended =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).map_err(|panic| {
            let mut what = gds_model::panic_message(panic.as_ref());
            if what.is_empty() {
                what = "no message".into();
            }
            PyRuntimeError::new_err(format!("gds-gate's pass loop panicked (a bug): {what}"))
        })??;
    Ok((
        json(&ended.measurement)?,
        ended.failure.as_ref().map(json).transpose()?,
        ended.raised.map(|error| error.into_value(py).into_any()),
    ))
}

/// The reads of each section of a pass, as `read_passes` hands them to `Landing.read`: one list
/// per window, or one of the whole plan.
#[pyfunction]
#[pyo3(signature = (spec, window))]
fn sections<'py>(
    py: Python<'py>,
    spec: &str,
    window: Option<u64>,
) -> PyResult<Vec<Bound<'py, PyList>>> {
    let plan = spec_of(spec)?.plan;
    let plans = match checked(window)? {
        Some(size) => plan.windows(size).into_iter().map(|w| w.plan).collect(),
        None => vec![plan],
    };
    plans
        .iter()
        .map(|plan| passes::segment_dicts(py, plan))
        .collect()
}

/// `segments` (dicts of `file`, `offset`, `len`, `buffer_offset`) cut into `task_size` tasks as
/// the Rust readers and KvikIO cut them: `(file, offset, buffer_offset, len)` each.
#[pyfunction]
fn tasks(
    segments: Vec<Bound<'_, PyDict>>,
    task_size: u64,
) -> PyResult<Vec<(usize, u64, u64, u64)>> {
    let field = |segment: &Bound<'_, PyDict>, key: &str| -> PyResult<u64> {
        match segment.get_item(key)? {
            Some(value) => value.extract(),
            None => Err(PyValueError::new_err(format!("a segment without `{key}`"))),
        }
    };
    let segments = segments
        .iter()
        .map(|s| {
            Ok(Segment {
                file: field(s, "file")? as usize,
                offset: field(s, "offset")?,
                len: field(s, "len")?,
                buffer_offset: field(s, "buffer_offset")?,
            })
        })
        .collect::<PyResult<Vec<Segment>>>()?;
    let plan = ReadPlan {
        files: Vec::new(),
        segments,
        covers_files: false,
    };
    let tasks = plan.tasks(task_size).into_iter();
    Ok(tasks
        .map(|t| (t.file, t.offset, t.buffer_offset, t.len))
        .collect())
}

/// Waits for the last pass's page cache drop, which runs on past the answer (call it after the
/// result is written).
#[pyfunction]
fn finish_wind_down(py: Python<'_>) {
    py.detach(gds_worker::trial::finish_wind_down);
}

/// The CPU reference of the `exact_compare` kernel over `data` (gds_model::verify): (bad
/// words, the first wrong byte's file offset or None). For the tests' stand-ins of the GPU.
#[pyfunction]
fn reference_exact(seed: u64, file_offset: u64, data: &[u8]) -> (u64, Option<u64>) {
    let mismatch = gds_model::verify::exact_compare(seed, file_offset, data);
    (mismatch.bad_words, mismatch.first_bad_offset)
}

/// The CPU reference of the `checksum` kernel's raw range sum over `data`. For the tests'
/// stand-ins of the GPU.
#[pyfunction]
fn reference_checksum(file_offset: u64, data: &[u8]) -> u64 {
    gds_model::verify::checksum_range_parallel(data, file_offset)
}

/// `length` bytes of the generated file with `seed` from `file_offset`, as `gds-gate gen` writes
/// them. For the tests' data and stand-ins of the fill kernel.
#[pyfunction]
fn reference_bytes(
    py: Python<'_>,
    seed: u64,
    file_offset: u64,
    length: usize,
) -> Bound<'_, PyBytes> {
    let mut bytes = vec![0; length];
    gds_model::verify::fill(seed, file_offset, &mut bytes);
    PyBytes::new(py, &bytes)
}

fn json(value: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|error| PyValueError::new_err(format!("cannot write the answer: {error}")))
}

/// A read or write section through the library under test, watched while inside its `with`
/// block: past its bound the Rust worker's watchdog names it on stderr
/// (`gds-gate worker: KvikIO read (1073741824 bytes) has not returned after …`), from a thread
/// of its own, so even a call that holds the GIL is named. The caller dumps Python's stacks
/// `stacks_after` seconds in (faulthandler), which only Python can do.
#[pyclass(module = "gds_pass")]
struct Section {
    what: String,
    nbytes: u64,
    bound: Duration,
    watched: Option<Watched>,
}

#[pymethods]
impl Section {
    /// `what` moving `nbytes`; `bound` (seconds) replaces the bound the bytes give, for tests.
    #[new]
    #[pyo3(signature = (what, nbytes, bound = None))]
    fn new(what: String, nbytes: u64, bound: Option<f64>) -> PyResult<Section> {
        let bound = match bound {
            None => section_bound(nbytes),
            Some(seconds) => Duration::try_from_secs_f64(seconds).map_err(|error| {
                pyo3::exceptions::PyValueError::new_err(format!("bound {seconds}: {error}"))
            })?,
        };
        Ok(Section {
            what,
            nbytes,
            bound,
            watched: None,
        })
    }

    /// Seconds after which the section is stuck.
    #[getter]
    fn bound(&self) -> f64 {
        self.bound.as_secs_f64()
    }

    /// Seconds after which Python should dump its stacks: one watchdog tick before the bound, so
    /// that the stuck line comes after the stacks, among the last lines the gate shows.
    #[getter]
    fn stacks_after(&self) -> f64 {
        self.bound.saturating_sub(TICK).as_secs_f64()
    }

    fn __enter__(mut slf: PyRefMut<'_, Self>) -> PyRefMut<'_, Self> {
        let detail = format!("{} bytes", slf.nbytes);
        slf.watched = Some(Watched::start(slf.what.clone(), detail, slf.bound));
        slf
    }

    /// Ends the watch; an exception inside the block goes on.
    fn __exit__(
        &mut self,
        _kind: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> bool {
        self.watched = None;
        false
    }
}
