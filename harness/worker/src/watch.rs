//! A watchdog for library calls that should come back quickly and may not: on one runner
//! libcufile's batch calls never returned, past every bound the reader sets around them, until
//! the gate's trial timeout killed the worker. A call made through [`bounded`] that outlives its
//! bound is named on stderr, once, while it is still stuck; the gate shows the worker's output with
//! a trial it had to stop, so the failure says which call of which batch held the worker.
//!
//! Used around cuFile's batch calls and the stream-ordered passes' stream synchronisation, and
//! (through the `gds_pass` extension) around the Python worker's read and write sections. One
//! thread watches every call in flight (started with the first); a call costs a lock, a push and
//! a removal, which is nothing beside a batch of I/O or a pass.

use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the watchdog looks at the calls in flight.
pub const TICK: Duration = Duration::from_millis(500);

/// A call in flight.
struct InFlight {
    id: u64,
    call: Cow<'static, str>,
    detail: String,
    started: Instant,
    bound: Duration,
    reported: bool,
}

#[derive(Default)]
struct Calls {
    next_id: u64,
    in_flight: Vec<InFlight>,
}

fn calls() -> &'static Mutex<Calls> {
    static CALLS: OnceLock<Mutex<Calls>> = OnceLock::new();
    CALLS.get_or_init(|| {
        // The watchdog: best effort, a host that refuses the thread only loses the messages.
        let _ = std::thread::Builder::new()
            .name("call-watchdog".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(TICK);
                    // Its own statement: the lock is released before the lines are written, so
                    // a slow stderr never holds up the calls being watched.
                    let lines = overdue(&mut lock(calls()), Instant::now());
                    for line in lines {
                        eprintln!("{line}");
                    }
                }
            });
        Mutex::new(Calls::default())
    })
}

fn lock(calls: &Mutex<Calls>) -> std::sync::MutexGuard<'_, Calls> {
    calls
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `f`, the library call `call` (`detail` says on what), watched: if it has not returned
/// after `bound`, stderr says so while it is still stuck.
pub fn bounded<T>(call: &'static str, detail: String, bound: Duration, f: impl FnOnce() -> T) -> T {
    let _watched = Watched::start(call, detail, bound);
    f()
}

/// The least rate a read or write section is waited for at: below it, a section that has not
/// returned is taken for stuck. The gate's trial timeout allows 50 MB/s for a whole pass; a
/// stalled section must be reported well before the worker is killed.
const SLOWEST_BYTES_PER_SECOND: u64 = 50_000_000;
/// The least wait for a section, whatever its size.
const SECTION_BASE: Duration = Duration::from_secs(15);

/// How long a section moving `bytes` may take before it is stuck: 15 s, plus the bytes at 50 MB/s.
pub fn section_bound(bytes: u64) -> Duration {
    SECTION_BASE + Duration::from_secs_f64(bytes as f64 / SLOWEST_BYTES_PER_SECOND as f64)
}

/// A call in flight, watched until this is dropped: for a caller that cannot hand the call over
/// as a closure (the Python worker's `with` block).
#[must_use = "the call is watched only while this lives"]
pub struct Watched {
    id: u64,
}

impl Watched {
    pub fn start(call: impl Into<Cow<'static, str>>, detail: String, bound: Duration) -> Watched {
        let mut calls = lock(calls());
        calls.next_id += 1;
        let id = calls.next_id;
        calls.in_flight.push(InFlight {
            id,
            call: call.into(),
            detail,
            started: Instant::now(),
            bound,
            reported: false,
        });
        Watched { id }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        lock(calls()).in_flight.retain(|c| c.id != self.id);
    }
}

/// The lines for calls past their bound not reported yet, each marked reported.
fn overdue(calls: &mut Calls, now: Instant) -> Vec<String> {
    calls
        .in_flight
        .iter_mut()
        .filter(|c| !c.reported && now.duration_since(c.started) > c.bound)
        .map(|c| {
            c.reported = true;
            gds_model::stuck::line(&c.call, &c.detail, now.duration_since(c.started), c.bound)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_past_its_bound_is_named_once_and_a_returned_one_is_forgotten() {
        let start = Instant::now();
        let mut calls = Calls::default();
        for (id, bound) in [(1, 10), (2, 60)] {
            calls.in_flight.push(InFlight {
                id,
                call: "cuFileBatchIOGetStatus".into(),
                detail: format!("batch {id}"),
                started: start,
                bound: Duration::from_secs(bound),
                reported: false,
            });
        }
        assert!(overdue(&mut calls, start + Duration::from_secs(5)).is_empty());
        let lines = overdue(&mut calls, start + Duration::from_secs(20));
        assert_eq!(
            lines,
            [
                "gds-gate worker: cuFileBatchIOGetStatus (batch 1) has not returned after 20 s (it should within 10.0 s): the worker is stuck inside the library"
            ]
        );
        assert!(overdue(&mut calls, start + Duration::from_secs(30)).is_empty());
        assert_eq!(
            overdue(&mut calls, start + Duration::from_secs(61)).len(),
            1
        );
    }

    /// The watchdog thread itself: a call held past its bound is found (and named on stderr)
    /// while it is still in flight.
    #[test]
    fn the_watchdog_finds_a_call_stuck_past_its_bound() {
        let found = bounded(
            "slow test call",
            "held".into(),
            Duration::from_millis(200),
            || {
                std::thread::sleep(TICK * 3);
                lock(calls())
                    .in_flight
                    .iter()
                    .any(|c| c.call == "slow test call" && c.reported)
            },
        );
        assert!(
            found,
            "the watchdog did not report a call 1.3 s past its bound"
        );
    }

    #[test]
    fn a_watched_call_returns_its_value_and_leaves_nothing_in_flight() {
        let value = bounded("test call", "nothing".into(), Duration::from_secs(60), || 7);
        assert_eq!(value, 7);
        assert!(
            !lock(calls())
                .in_flight
                .iter()
                .any(|c| c.call == "test call")
        );
    }
}
