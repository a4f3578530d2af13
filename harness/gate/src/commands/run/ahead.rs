//! The next trial's worker, started as the current one answers ([`crate::launch::Held`]), so
//! that its start-up hides the current worker's exit; and the trials' times as windows that
//! follow one another: a trial's time begins when its worker starts, even during the trial
//! before, and that trial's time ends there.

use std::sync::MutexGuard;
use std::time::Instant;

use super::{Executor, unavailable};
use crate::launch::Held;
use gds_model::scenario::TrialSpec;

impl Executor {
    /// Starts, held, the worker of the next job after the one at `current` (whose pass moves
    /// `current_bytes`) that starts one, when it can start now: a GPU trial of one worker (not
    /// `gpus:`), on GPUs that let two processes hold a context at once, whose buffers and the
    /// current worker's fit a quarter of the smallest GPU's memory. Its buffers are allocated
    /// before its hold, beside those of the current worker, which is still exiting; a `posix`
    /// worker sizes its buffer and window by the host memory available as it starts, and its
    /// start-up is milliseconds: nothing to hide. Says when it started.
    pub(super) fn start_next_after(&self, current: usize, current_bytes: u64) -> Option<u64> {
        if crate::interrupt::received().is_some() {
            return None;
        }
        let room = self.ahead_room?;
        let schedule = &self.schedule;
        let now = schedule.spec(schedule.jobs[current]);
        let at = (current + 1..schedule.jobs.len()).find(|&at| {
            unavailable(&schedule.trials[schedule.jobs[at].trial], &self.host).is_none()
        })?;
        let job = schedule.jobs[at];
        let next = schedule.spec(job);
        if next.gpus.is_some() || !next.ranks.is_empty() || !next.reader.uses_gpu() {
            return None;
        }
        let files = self.data.files_for(&next).ok()?;
        let plan = super::checked_plan(&next, files).ok()?;
        let together = device_footprint(&now, current_bytes)
            .saturating_add(device_footprint(&next, plan.total_bytes()));
        if together > room / 4 {
            return None;
        }
        let held = self.launcher_for(job).start_ahead(next, plan)?;
        let since = held.since_unix_ns;
        if let Some((_, stale)) = self.ahead().replace((at, held)) {
            stale.stop();
        }
        Some(since)
    }

    /// The worker started ahead for the job at `at`; one held for another job is stopped.
    pub(super) fn take_held(&self, at: usize) -> Option<Held> {
        let (job, held) = self.ahead().take()?;
        if job == at {
            return Some(held);
        }
        held.stop();
        None
    }

    /// Stops a worker started ahead, if there is one: what runs now (a confirmation run, a trial
    /// over several GPUs) must have the machine to itself.
    pub(super) fn stop_held(&self) -> bool {
        let held = self.ahead().take();
        held.map(|(_, held)| held.stop()).is_some()
    }

    /// Where the time of the job at `at` begins: when its worker was started ahead, else now.
    pub(super) fn window_start(&self, at: usize) -> Instant {
        match &*self.ahead() {
            Some((job, held)) if *job == at => held.since,
            _ => Instant::now(),
        }
    }

    /// Where the time of the job that began at `start` ends: where the next job's began, when
    /// its worker was started during this one, else now.
    pub(super) fn window_end(&self, start: Instant) -> Instant {
        match &*self.ahead() {
            Some((_, held)) if held.since > start => held.since,
            _ => Instant::now(),
        }
    }

    fn ahead(&self) -> MutexGuard<'_, Option<(usize, Held)>> {
        self.ahead
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What a trial's worker may hold in GPU memory, at most: its pass (a window's worth when it
/// streams, but counted whole), twice for a writing trial (the source and its read back).
fn device_footprint(spec: &TrialSpec, pass_bytes: u64) -> u64 {
    match spec.reader.uses_gpu() {
        false => 0,
        true if spec.op.writes() => pass_bytes.saturating_mul(2),
        true => pass_bytes,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::host::HostFacts;
    use crate::launch::Launcher;
    use crate::prepare::DataSet;
    use gds_model::record::TrialRecord;
    use gds_model::scenario::{Op, Reader};

    #[test]
    fn a_writing_gpu_trial_may_hold_twice_its_pass_and_a_posix_one_none() {
        let mut spec = crate::baseline::fixtures::spec("s::t");
        spec.reader = Reader::Cufile;
        assert_eq!(device_footprint(&spec, 4 << 30), 4 << 30);
        spec.op = Op::Write;
        assert_eq!(device_footprint(&spec, 4 << 30), 8 << 30);
        spec.reader = Reader::Posix;
        assert_eq!(device_footprint(&spec, 4 << 30), 0);
    }

    /// A **stand-in** worker (a shell script in place of the gate binary): it notes the pid of
    /// the worker before it, answers with a failure of its own (the verdict is not what is under
    /// test), and takes 0.3 s to exit. Held, it checks at its release that the one before is gone.
    const STAND_IN: &str = r#"#!/bin/sh
d=$(dirname "$5"); before=$(cat "$ROOT/last.pid" 2>/dev/null); echo $$ > "$ROOT/last.pid"
if grep -q '"hold_for_release": "' "$3"; then
  while [ ! -f "$d/released" ]; do sleep 0.01; done
  [ -n "$before" ] && kill -0 "$before" 2>/dev/null && echo "$before" > "$ROOT/released-early"
fi
echo '{"protocol":PROTOCOL,"measurement":null,"raw_cufile":null,"failure":{"reason":"stand-in","next":"none"}}' > "$5.part"
mv "$5.part" "$5"; sleep 0.3
"#;

    /// Two cuFile trials of a host taken to have a GPU, and an executor that runs them with the
    /// stand-in; `room`: the GPU memory for two workers, `None` for one at a time.
    fn stand_in_run(root: &Path, room: Option<u64>) -> (Executor, Vec<TrialSpec>) {
        let suite = gds_model::scenario::parse(
            Path::new("s.yaml"),
            "scenarios:\n  - name: t\n    reader: cufile\n    files: { size: 1MiB, seed: 9 }\n    nthreads: [1, 2, 4]\n    warmup: 0\n    repetitions: 1\n",
        )
        .unwrap();
        let specs = gds_model::scenario::expand(&suite);
        let gate = root.join("stand-in");
        let script = STAND_IN.replace(
            "PROTOCOL",
            &gds_model::protocol::PROTOCOL_VERSION.to_string(),
        );
        std::fs::write(&gate, script).unwrap();
        std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o755)).unwrap();
        let launcher = Launcher {
            gate,
            trials_dir: root.join("trials"),
            strict: false,
            timeout: Some(Duration::from_secs(30)),
            gds_stats: None,
            env: vec![("ROOT".into(), root.display().to_string())],
            progress: None,
        };
        let host = HostFacts {
            gpu_unavailable: None,
            ..HostFacts::probe()
        };
        let console = crate::console::Console::buffer();
        let executor = Executor {
            data: DataSet::prepare(&root.join("data"), &specs, Default::default(), &console),
            console,
            host,
            require_gpu: false,
            launcher,
            against: None,
            confirm: 0,
            confirm_delay: Duration::ZERO,
            settler: None,
            judged: Mutex::default(),
            schedule: super::super::rounds::Schedule::new(specs.clone()),
            ahead_room: room,
            ahead: Mutex::default(),
            pairing: None,
            progress: std::sync::Arc::new(crate::progress::View::begin(
                Vec::new(),
                Default::default(),
            )),
        };
        (executor, specs)
    }

    /// Runs the trials as the run's closures do: each trial's time from `window_start` to
    /// `window_end`. Returns the records and the windows.
    fn run(executor: &Executor, specs: &[TrialSpec]) -> Vec<(TrialRecord, Instant, Instant)> {
        let runs = specs
            .iter()
            .enumerate()
            .map(|(at, spec)| {
                let start = executor.window_start(at);
                let record = executor.execute_and_confirm(spec.clone());
                (record, start, executor.window_end(start))
            })
            .collect();
        assert!(
            !executor.stop_held(),
            "a worker was left held after the last trial"
        );
        runs
    }

    #[test]
    fn each_next_worker_starts_as_the_last_answers_and_is_released_once_it_is_gone() {
        let root = tempfile::tempdir().unwrap();
        let (executor, specs) = stand_in_run(root.path(), Some(80 << 30));
        let runs = run(&executor, &specs);
        for (before, after) in runs.iter().zip(&runs[1..]) {
            let beside = before.0.worker.as_ref().unwrap().exit_beside_next_seconds;
            assert!(beside.is_some_and(|s| s > 0.2), "{:?}", before.0.worker);
            assert_eq!(before.2, after.1, "the windows of two trials must meet");
            let dir = &after.0.worker.as_ref().unwrap().dir;
            assert!(
                dir.join("released").exists(),
                "{} was not started ahead",
                after.0.name
            );
        }
        let early = root.path().join("released-early");
        assert!(!early.exists(), "released while the worker before ran");
    }

    #[test]
    fn no_worker_starts_ahead_without_room_for_two() {
        let root = tempfile::tempdir().unwrap();
        let (executor, specs) = stand_in_run(root.path(), None);
        for (record, _, _) in run(&executor, &specs) {
            let worker = record.worker.unwrap();
            assert_eq!(worker.exit_beside_next_seconds, None);
            assert!(!worker.dir.join("released").exists());
        }
        // Room, but not for two of these passes in a quarter of it.
        let root = tempfile::tempdir().unwrap();
        let (executor, specs) = stand_in_run(root.path(), Some(4 << 20));
        let runs = run(&executor, &specs);
        assert!(runs.iter().all(|(r, _, _)| {
            r.worker
                .as_ref()
                .unwrap()
                .exit_beside_next_seconds
                .is_none()
        }));
    }
}
