//! cuFile's batch API (`cuFileBatchIOSetUp`, `Submit`, `GetStatus`, `Destroy`), optional: a
//! libcufile without it is told apart from a failing one, so that its trials are ignored with
//! the reason instead of failing.

use std::ffi::{c_uint, c_void};
use std::time::Duration;

use super::{Cufile, CufileError, Handle, Status, check};
use gds_model::cufile_abi::batch::{IoEvent, IoParams};

/// The batch entry points, resolved together: all or none.
pub(super) struct BatchApi {
    pub(super) setup: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> Status,
    pub(super) submit: unsafe extern "C" fn(*mut c_void, c_uint, *mut IoParams, c_uint) -> Status,
    pub(super) get_status: unsafe extern "C" fn(
        *mut c_void,
        c_uint,
        *mut c_uint,
        *mut IoEvent,
        *mut libc::timespec,
    ) -> Status,
    pub(super) destroy: unsafe extern "C" fn(*mut c_void),
}

/// How long one `cuFileBatchIOGetStatus` waits before asking again. A batch that never completes
/// is ended by the gate's trial timeout, which kills the worker.
const POLL: Duration = Duration::from_millis(100);

impl Cufile {
    /// Whether this libcufile exports the batch API.
    pub fn has_batch_api(&self) -> bool {
        self.batch.is_some()
    }

    /// `cuFileBatchIOSetUp` of a batch of up to `entries` I/Os, destroyed on drop.
    pub fn batch(&self, entries: u32) -> Result<Batch<'_>, CufileError> {
        let api = self
            .batch
            .as_ref()
            .ok_or_else(|| CufileError::MissingEntryPoint {
                path: self.path.display().to_string(),
                version: self.version.to_string(),
                symbol: "cuFileBatchIOSetUp",
            })?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the driver is open (the caller's contract).
        check("cuFileBatchIOSetUp", unsafe {
            (api.setup)(&mut raw, entries)
        })?;
        Ok(Batch { api, raw, entries })
    }
}

impl Handle<'_> {
    /// The registered handle as a batch entry names it (`CUfileIOParams_t.fh`).
    pub fn raw(&self) -> u64 {
        self.raw as u64
    }
}

/// A batch handle of `entries` I/Os, reused batch after batch.
pub struct Batch<'a> {
    api: &'a BatchApi,
    raw: *mut c_void,
    entries: u32,
}

// SAFETY: a batch handle is used by one thread at a time (`&mut self` in `run`); cuFile does not
// tie it to the thread that set it up.
unsafe impl Send for Batch<'_> {}

impl Batch<'_> {
    /// Submits `params` (at most `entries`) and waits until cuFile has finished every one of
    /// them; returns their events in the order they finished. `params` stays borrowed until
    /// then, so cuFile never reads an entry that is gone.
    pub fn run(&mut self, params: &mut [IoParams]) -> Result<Vec<IoEvent>, CufileError> {
        let count = params.len() as c_uint;
        if params.len() > self.entries as usize {
            return Err(CufileError::Call {
                call: "cuFileBatchIOSubmit",
                code: 5022, // CU_FILE_INVALID_VALUE: more entries than the batch was set up for
            });
        }
        // SAFETY: `params` holds `count` entries that live until every event is back (below).
        check("cuFileBatchIOSubmit", unsafe {
            (self.api.submit)(self.raw, count, params.as_mut_ptr(), 0)
        })?;
        let mut events = vec![IoEvent::default(); params.len()];
        let mut done = 0usize;
        while done < params.len() {
            let mut returned = (params.len() - done) as c_uint;
            let mut timeout = libc::timespec {
                tv_sec: 0,
                tv_nsec: POLL.as_nanos() as libc::c_long,
            };
            // SAFETY: room for `returned` events from `done` on; valid out-pointers.
            check("cuFileBatchIOGetStatus", unsafe {
                (self.api.get_status)(
                    self.raw,
                    returned,
                    &mut returned,
                    events.as_mut_ptr().add(done),
                    &mut timeout,
                )
            })?;
            done += (returned as usize).min(params.len() - done);
        }
        Ok(events)
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        // SAFETY: a batch set up by this library, destroyed once, with no I/O in flight (`run`
        // returns only when every entry has finished).
        unsafe { (self.api.destroy)(self.raw) }
    }
}
