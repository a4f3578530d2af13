//! The next trial's worker, started as the current one answers ([`crate::launch::Held`]), so
//! that its start-up hides the current worker's exit; and the trials' times as windows that
//! follow one another: a trial's time begins when its worker starts, even during the trial
//! before, and that trial's time ends there.

use std::sync::MutexGuard;
use std::time::Instant;

use super::{Executor, unavailable};
use crate::launch::Held;

impl Executor {
    /// Starts, held, the worker of the next trial after `current` that starts one, when it can
    /// start now: one worker (not `gpus:`), and for a GPU trial GPUs that let two processes hold
    /// a context at once. Says when it started.
    pub(super) fn start_next_after(&self, current: &str) -> Option<u64> {
        if !self.start_ahead || crate::interrupt::received().is_some() {
            return None;
        }
        let at = self.order.iter().position(|spec| spec.name == current)?;
        let next = self.order[at + 1..]
            .iter()
            .find(|spec| unavailable(spec, &self.host).is_none())?;
        if next.gpus.is_some() || (next.reader.uses_gpu() && !self.contexts_overlap) {
            return None;
        }
        let files = self.data.files_for(next).ok()?;
        let plan = super::checked_plan(next, files).ok()?;
        let held = self.launcher.start_ahead(next.clone(), plan)?;
        let since = held.since_unix_ns;
        if let Some(stale) = self.ahead().replace(held) {
            stale.stop();
        }
        Some(since)
    }

    /// The worker started ahead for `name`'s trial; one held for another trial is stopped.
    pub(super) fn take_held(&self, name: &str) -> Option<Held> {
        let held = self.ahead().take()?;
        if held.name() == name {
            return Some(held);
        }
        held.stop();
        None
    }

    /// Stops a worker started ahead: what runs now (a confirmation run, a trial over several
    /// GPUs) must have the machine to itself.
    pub(super) fn stop_held(&self) {
        if let Some(held) = self.ahead().take() {
            held.stop();
        }
    }

    /// Where the time of `name`'s trial begins: when its worker was started ahead, else now.
    pub(super) fn window_start(&self, name: &str) -> Instant {
        match &*self.ahead() {
            Some(held) if held.name() == name => held.since,
            _ => Instant::now(),
        }
    }

    /// Where the time of the trial that began at `start` ends: where the next trial's began,
    /// when its worker was started during this one, else now.
    pub(super) fn window_end(&self, start: Instant) -> Instant {
        match &*self.ahead() {
            Some(held) if held.since > start => held.since,
            _ => Instant::now(),
        }
    }

    fn ahead(&self) -> MutexGuard<'_, Option<Held>> {
        self.ahead
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
