//! The next trial's worker, started as the current one answers ([`crate::launch::Held`]), so
//! that its start-up hides the current worker's exit; and the trials' times as windows that
//! follow one another: a trial's time begins when its worker starts, even during the trial
//! before, and that trial's time ends there.

use std::sync::MutexGuard;
use std::time::Instant;

use super::{Executor, unavailable};
use crate::launch::Held;
use gds_model::scenario::window_mode::WindowMode;
use gds_model::scenario::{Reader, TrialSpec};

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
        if next.gpus.is_some()
            || (next.reader.uses_gpu() && !self.contexts_overlap)
            || sizes_by_free_memory(next)
        {
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

/// A `posix` read with `window: auto` sizes its window by the host memory available as it
/// starts, which a worker still exiting holds part of: it must start alone, or its window would
/// depend on when. (Its start-up is milliseconds; there is nothing to hide.)
fn sizes_by_free_memory(spec: &TrialSpec) -> bool {
    spec.reader == Reader::Posix && spec.window == WindowMode::Auto && !spec.op.writes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_posix_read_with_an_auto_window_must_start_alone() {
        let mut spec = crate::baseline::fixtures::spec("s::t");
        (spec.reader, spec.window) = (Reader::Posix, WindowMode::Auto);
        assert!(sizes_by_free_memory(&spec));
        spec.window = WindowMode::Whole;
        assert!(!sizes_by_free_memory(&spec));
        (spec.reader, spec.window) = (Reader::H2d, WindowMode::Auto);
        assert!(!sizes_by_free_memory(&spec));
    }
}
