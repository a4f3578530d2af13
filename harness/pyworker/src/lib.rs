//! `gds_pass`: the Python worker's native half. The KvikIO and PyTorch readers
//! (harness/worker/kvikio_worker.py, torch_reader.py) run in Python because their libraries are
//! Python's; what the Rust worker already does around their read calls they call here, so that it
//! exists once: the progress file the gate's live view polls, and the watchdog that names a
//! section stuck inside the library.
//!
//! Built as an abi3 extension module with the gate (the gate's binary depends on this crate) and
//! copied into each Python trial's folder by the gate's launcher.

use std::time::Duration;

use gds_worker::watch::{TICK, Watched, section_bound};
use pyo3::prelude::*;
use pyo3::types::PyAny;

#[pymodule]
fn gds_pass(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(report_progress, module)?)?;
    module.add_class::<Section>()?;
    Ok(())
}

/// Tells the gate's live view that pass `done` of `total` ended, `seconds` long for `nbytes`
/// (the Rust worker's own report).
#[pyfunction]
fn report_progress(done: u64, total: u64, seconds: f64, nbytes: u64) {
    gds_worker::trial::report_progress(done, total, seconds, nbytes);
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
