//! cuFile's batch API (`cuFileBatchIOSetUp`, `Submit`, `GetStatus`, `Cancel`, `Destroy`),
//! optional: a libcufile without it is told apart from a failing one, so that its trials are
//! ignored with the reason instead of failing. Every wait for a batch is bounded: a batch whose
//! entries stop coming back is cancelled and reported with what was outstanding.

use std::ffi::{c_uint, c_void};
use std::time::{Duration, Instant};

use super::{Cufile, CufileError, Handle, Status, check};
use gds_model::cufile_abi::batch::{IoEvent, IoParams};

type GetStatusFn = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    *mut c_uint,
    *mut IoEvent,
    *mut libc::timespec,
) -> Status;

/// The batch entry points, resolved together: all or none (`cancel` aside, used only to end a
/// stalled batch).
pub(super) struct BatchApi {
    pub(super) setup: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> Status,
    pub(super) submit: unsafe extern "C" fn(*mut c_void, c_uint, *mut IoParams, c_uint) -> Status,
    pub(super) get_status: GetStatusFn,
    pub(super) cancel: Option<unsafe extern "C" fn(*mut c_void) -> Status>,
    pub(super) destroy: unsafe extern "C" fn(*mut c_void),
}

/// How long one `cuFileBatchIOGetStatus` may wait for an event before the loop looks at its
/// clock again.
const POLL: Duration = Duration::from_millis(100);
/// A batch call that has not returned after this is stuck inside libcufile (one runner's did not
/// return at all): the watchdog names it ([`crate::watch`]).
const STUCK: Duration = Duration::from_secs(10);
/// A poll that came back empty faster than this did not wait (a library that ignores the
/// timeout): the loop sleeps [`IDLE`] instead of spinning.
const NO_WAIT: Duration = Duration::from_millis(1);
const IDLE: Duration = Duration::from_millis(1);

/// Why a batch did not come back whole.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Cufile(#[from] CufileError),
    /// No event for `waited`: the entries without one in `events` never finished. The batch was
    /// cancelled (when the library has `cuFileBatchIOCancel`) and abandoned, never destroyed,
    /// with its parameters, since cuFile may still hold them.
    #[error(
        "cuFileBatchIOGetStatus returned no event for {waited:.1?} with {} of {submitted} entries outstanding{}",
        submitted - events.len(),
        if *cancelled { "; the batch was cancelled (cuFileBatchIOCancel) and abandoned" } else { "; the batch was abandoned (this libcufile has no cuFileBatchIOCancel)" }
    )]
    Stalled {
        events: Vec<IoEvent>,
        submitted: usize,
        waited: Duration,
        cancelled: bool,
    },
}

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
        Ok(Batch {
            api,
            raw,
            entries,
            abandoned: Vec::new(),
        })
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
    /// The parameters of a batch that stalled: cuFile may still read them, so they are never
    /// freed, and the handle is never destroyed.
    abandoned: Vec<Vec<IoParams>>,
}

// SAFETY: a batch handle is used by one thread at a time (`&mut self` in `run`); cuFile does not
// tie it to the thread that set it up.
unsafe impl Send for Batch<'_> {}

impl Batch<'_> {
    /// Submits `params` (at most `entries`) and waits until cuFile has returned an event for
    /// every one of them; returns the events in the order they came. `params` are kept until
    /// then, so cuFile never reads an entry that is gone. When no event comes for `stall`, the
    /// batch is cancelled and the error carries the events that did come.
    pub fn run(
        &mut self,
        params: Vec<IoParams>,
        stall: Duration,
    ) -> Result<Vec<IoEvent>, BatchError> {
        let mut params = params;
        let count = params.len() as c_uint;
        if params.len() > self.entries as usize {
            return Err(CufileError::Call {
                call: "cuFileBatchIOSubmit",
                code: 5022, // CU_FILE_INVALID_VALUE: more entries than the batch was set up for
            }
            .into());
        }
        // SAFETY: `params` holds `count` entries that live until every event is back (below), or
        // for ever when the batch stalls.
        let submitted = crate::watch::bounded(
            "cuFileBatchIOSubmit",
            format!("a batch of {count} entries"),
            STUCK,
            || unsafe { (self.api.submit)(self.raw, count, params.as_mut_ptr(), 0) },
        );
        check("cuFileBatchIOSubmit", submitted)?;
        let (get_status, raw) = (self.api.get_status, self.raw);
        let waited = collect(params.len(), stall, |room| {
            let mut returned = room.len() as c_uint;
            let mut timeout = libc::timespec {
                tv_sec: 0,
                tv_nsec: POLL.as_nanos() as libc::c_long,
            };
            // min_nr 1: whatever has finished comes back at once, and the call waits at most
            // POLL for a first event (a larger min_nr left nothing to count on when it timed out).
            let detail = format!(
                "a batch of {count} entries, {} not back, asked to wait at most {} ms",
                room.len(),
                POLL.as_millis()
            );
            // SAFETY: room for `returned` events; valid out-pointers.
            let status =
                crate::watch::bounded("cuFileBatchIOGetStatus", detail, STUCK, || unsafe {
                    get_status(raw, 1, &mut returned, room.as_mut_ptr(), &mut timeout)
                });
            check("cuFileBatchIOGetStatus", status)?;
            Ok(returned as usize)
        })?;
        match waited {
            Collected::All(events) => Ok(events),
            Collected::Stalled { events, waited } => {
                // SAFETY: a batch set up by this library; cancelling asks cuFile to stop its
                // entries, which it may still be working on.
                let cancelled = self
                    .api
                    .cancel
                    .is_some_and(|cancel| unsafe { cancel(self.raw) }.err == 0);
                self.abandoned.push(params);
                Err(BatchError::Stalled {
                    events,
                    submitted: count as usize,
                    waited,
                    cancelled,
                })
            }
        }
    }
}

/// The events of one batch, or those that came before it stalled.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Collected {
    All(Vec<IoEvent>),
    Stalled {
        events: Vec<IoEvent>,
        waited: Duration,
    },
}

/// Gathers `expected` events with `poll`, which fills the front of the room it is given with
/// the events that finished since its last call and returns how many (it may wait a little
/// for the first). Ends when every event is in, or with `Stalled` once `stall` has passed
/// without a new one: no wait is unbounded, and a poll that never waits does not spin.
pub(crate) fn collect(
    expected: usize,
    stall: Duration,
    mut poll: impl FnMut(&mut [IoEvent]) -> Result<usize, CufileError>,
) -> Result<Collected, CufileError> {
    let mut events = vec![IoEvent::default(); expected];
    let mut done = 0usize;
    let mut last_event = Instant::now();
    while done < expected {
        let asked = Instant::now();
        let returned = poll(&mut events[done..])?.min(expected - done);
        if returned > 0 {
            done += returned;
            last_event = Instant::now();
            continue;
        }
        let waited = last_event.elapsed();
        if waited >= stall {
            events.truncate(done);
            return Ok(Collected::Stalled { events, waited });
        }
        if asked.elapsed() < NO_WAIT {
            std::thread::sleep(IDLE);
        }
    }
    Ok(Collected::All(events))
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if !self.abandoned.is_empty() {
            // cuFile may still be working on a stalled batch: destroying it, or freeing its
            // parameters, could hang or let it write into freed memory. Both are left alone for
            // the life of the process (the worker ends with the failure).
            std::mem::forget(std::mem::take(&mut self.abandoned));
            return;
        }
        // SAFETY: a batch set up by this library, destroyed once, with no I/O in flight (`run`
        // returns only when every entry has finished, or abandons the batch).
        unsafe { (self.api.destroy)(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(cookie: u64) -> IoEvent {
        IoEvent {
            cookie,
            status: gds_model::cufile_abi::batch::STATUS_COMPLETE,
            ret: 4096,
        }
    }

    /// A stand-in for cuFileBatchIOGetStatus (test fixture): hands back the finished events of
    /// `script` one poll at a time, each poll's at most as many as there is room for.
    fn scripted(script: Vec<Vec<u64>>) -> impl FnMut(&mut [IoEvent]) -> Result<usize, CufileError> {
        let mut polls = script.into_iter();
        let mut held: Vec<u64> = Vec::new();
        move |room: &mut [IoEvent]| {
            held.extend(polls.next().unwrap_or_default());
            let n = held.len().min(room.len());
            for (slot, cookie) in room.iter_mut().zip(held.drain(..n)) {
                *slot = event(cookie);
            }
            Ok(n)
        }
    }

    #[test]
    fn events_are_gathered_poll_by_poll_until_every_entry_is_back() {
        let got = collect(
            4,
            Duration::from_secs(5),
            scripted(vec![vec![2], vec![], vec![0, 3], vec![1]]),
        )
        .unwrap();
        let cookies: Vec<u64> = match got {
            Collected::All(events) => events.iter().map(|e| e.cookie).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(cookies, [2, 0, 3, 1]);
    }

    /// batch-deep (32 entries, four batches in flight) hung for the whole trial timeout on a
    /// runner: the wait must end by itself and say what was outstanding.
    #[test]
    fn a_batch_whose_events_stop_coming_ends_with_those_that_came() {
        let stall = Duration::from_millis(50);
        let start = Instant::now();
        let got = collect(3, stall, scripted(vec![vec![1]])).unwrap();
        let Collected::Stalled { events, waited } = got else {
            panic!("{got:?}")
        };
        assert_eq!(events, [event(1)]);
        assert!(waited >= stall);
        // A poll that never waits is slept between, not spun on, and the end comes soon after
        // the limit.
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_failing_poll_ends_the_wait_with_its_error() {
        let failed = collect(2, Duration::from_secs(5), |_: &mut [IoEvent]| {
            Err(CufileError::Call {
                call: "cuFileBatchIOGetStatus",
                code: 5030,
            })
        });
        assert!(failed.is_err());
    }

    /// Counted per poll, a library that returned more than there was room for must not push the
    /// count past the batch (it would end the wait with entries unseen).
    #[test]
    fn a_poll_cannot_count_more_events_than_were_outstanding() {
        let mut polls = 0;
        let got = collect(2, Duration::from_secs(5), |room: &mut [IoEvent]| {
            polls += 1;
            for (i, slot) in room.iter_mut().enumerate() {
                *slot = event(i as u64);
            }
            Ok(room.len() + 5)
        })
        .unwrap();
        assert!(matches!(got, Collected::All(ref e) if e.len() == 2));
        assert_eq!(polls, 1);
    }
}
