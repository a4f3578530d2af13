//! The next trial's worker, started while the current one reads ([`crate::launch::Held`]), so
//! that its start-up hides behind the current trial's I/O; or, where that could disturb what the
//! current trial measures, as the current one answers, so that its start-up hides the current
//! worker's exit. And the trials' times as windows that follow one another: a trial's time begins
//! when its worker starts, or when the trial before answered if the worker started earlier, and
//! that trial's time ends there.

use std::sync::MutexGuard;
use std::time::Instant;

use super::{Executor, unavailable};
use crate::launch::{Held, Moment};
use gds_model::scenario::TrialSpec;

/// The worker started ahead for the job at `job`, and where that job's time begins: set once the
/// job before it answered (or ended without an answer).
pub(super) struct Ahead {
    job: usize,
    held: Held,
    begins: Option<Instant>,
}

impl Executor {
    /// Called as the worker of the job at `current` (whose pass moves `current_bytes`) runs and
    /// as it answers ([`Moment`]); says when the next job's worker was started, if it was.
    ///
    /// It starts, held, the worker of the next job that starts one, when it can start now: a
    /// GPU trial of one worker (not `gpus:`), on GPUs that let two processes hold a context at
    /// once, whose buffers and the current worker's fit a quarter of the smallest GPU's memory.
    /// Its buffers are allocated before its hold, beside those of the current worker; a `posix`
    /// worker sizes its buffer and window by the host memory available as it starts, and its
    /// start-up is milliseconds: nothing to hide. While the current worker runs it starts only
    /// where that takes nothing the current trial measures with ([`Executor::may_start_beside`]).
    pub(super) fn start_next_after(
        &self,
        current: usize,
        current_bytes: u64,
        moment: Moment,
    ) -> Option<u64> {
        if moment == Moment::Answered
            && let Some(ahead) = self.ahead().as_mut()
            && ahead.job > current
        {
            // Started beside the current trial's I/O: its own time begins now.
            ahead.begins.get_or_insert_with(Instant::now);
            return Some(ahead.held.since_unix_ns);
        }
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
        if moment == Moment::Running && !self.may_start_beside(&now, &next, at) {
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
        let begins = (moment == Moment::Answered).then_some(held.since);
        if let Some(stale) = self.ahead().replace(Ahead {
            job: at,
            held,
            begins,
        }) {
            stale.held.stop();
        }
        Some(since)
    }

    /// Whether the worker of `next` (the job at `at`) may start while `current`'s worker reads.
    /// A start-up takes a CPU, and the first of its reader in a run loads its libraries from
    /// the disk (PyTorch's are gigabytes), maybe the disk under test: it waits for the answer.
    /// Otherwise it needs two CPUs beyond the current trial's threads, for itself and the rest
    /// of the host.
    fn may_start_beside(&self, current: &TrialSpec, next: &TrialSpec, at: usize) -> bool {
        let schedule = &self.schedule;
        let loaded = schedule.jobs[..at]
            .iter()
            .any(|&job| schedule.spec(job).reader == next.reader);
        loaded && self.host.cpus > current.nthreads as usize + 1
    }

    /// The worker started ahead for the job at `at`, with where that job's time begins; one held
    /// for another job is stopped.
    pub(super) fn take_held(&self, at: usize) -> Option<(Held, Instant)> {
        let ahead = self.ahead().take()?;
        if ahead.job == at {
            let begins = ahead.begins.unwrap_or_else(Instant::now);
            return Some((ahead.held, begins));
        }
        ahead.held.stop();
        None
    }

    /// Stops a worker started ahead, if there is one: what runs now (a confirmation run, a trial
    /// over several GPUs) must have the machine to itself.
    pub(super) fn stop_held(&self) -> bool {
        let ahead = self.ahead().take();
        ahead.map(|ahead| ahead.held.stop()).is_some()
    }

    /// Where the time of the job at `at` begins: when its worker was started ahead, or when the
    /// job before it answered if that was later; else now.
    pub(super) fn window_start(&self, at: usize) -> Instant {
        match self.ahead().as_mut() {
            Some(ahead) if ahead.job == at => *ahead.begins.get_or_insert_with(Instant::now),
            _ => Instant::now(),
        }
    }

    /// Where the time of the job that began at `start` ends: where the next job's begins, when
    /// its worker was started during this one, else now.
    pub(super) fn window_end(&self, start: Instant) -> Instant {
        let now = Instant::now();
        match self.ahead().as_mut() {
            Some(ahead) => match *ahead.begins.get_or_insert(now) {
                begins if begins > start => begins,
                _ => now,
            },
            None => now,
        }
    }

    fn ahead(&self) -> MutexGuard<'_, Option<Ahead>> {
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
    /// the worker before it, answers after 1 s with a failure of its own (the verdict is not
    /// what is under test), and takes 0.3 s to exit. Held, it checks at its release that the one
    /// before is gone.
    const STAND_IN: &str = r#"#!/bin/sh
d=$(dirname "$5"); before=$(cat "$ROOT/last.pid" 2>/dev/null); echo $$ > "$ROOT/last.pid"
if grep -q '"hold_for_release": "' "$3"; then
  while [ ! -f "$d/released" ]; do sleep 0.01; done
  [ -n "$before" ] && kill -0 "$before" 2>/dev/null && echo "$before" > "$ROOT/released-early"
fi
sleep 1
echo '{"protocol":PROTOCOL,"measurement":null,"raw_cufile":null,"failure":{"reason":"stand-in","next":"none"}}' > "$5.part"
mv "$5.part" "$5"; sleep 0.3
"#;

    /// Three trials of `readers` (one each, in order) on a host taken to have a GPU and `cpus`,
    /// and an executor that runs them with the stand-in; `room`: the GPU memory for two workers,
    /// `None` for one at a time.
    fn stand_in_run(
        root: &Path,
        readers: [&str; 3],
        room: Option<u64>,
        cpus: usize,
    ) -> (Executor, Vec<TrialSpec>) {
        let scenarios: String = readers
            .iter()
            .enumerate()
            .map(|(i, reader)| format!("  - {{ name: t{i}, reader: {reader} }}\n"))
            .collect();
        let suite = gds_model::scenario::parse(
            Path::new("s.yaml"),
            &format!("defaults: {{ files: {{ size: 1MiB, seed: 9 }}, warmup: 0, repetitions: 1 }}\nscenarios:\n{scenarios}"),
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
            cpus,
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

    /// How long each worker but the last ran beside the next one's: from its start (1.3 s)
    /// where the next started as it ran, from its answer (0.3 s) where it started then.
    fn beside_next(runs: &[(TrialRecord, Instant, Instant)]) -> Vec<f64> {
        runs[..runs.len() - 1]
            .iter()
            .map(|(record, _, _)| {
                let worker = record.worker.as_ref().unwrap();
                worker.exit_beside_next_seconds.unwrap_or(0.0)
            })
            .collect()
    }

    /// Every worker but the first was started ahead and released only once the one before was
    /// gone, and the trials' windows meet.
    fn assert_handed_over(root: &Path, runs: &[(TrialRecord, Instant, Instant)]) {
        for (before, after) in runs.iter().zip(&runs[1..]) {
            assert_eq!(before.2, after.1, "the windows of two trials must meet");
            let dir = &after.0.worker.as_ref().unwrap().dir;
            assert!(
                dir.join("released").exists(),
                "{} was not started ahead",
                after.0.name
            );
        }
        let early = root.join("released-early");
        assert!(!early.exists(), "released while the worker before ran");
    }

    #[test]
    fn a_worker_starts_beside_the_reads_before_it_once_its_reader_has_started_in_the_run() {
        let root = tempfile::tempdir().unwrap();
        let readers = ["h2d", "cufile", "cufile"];
        let (executor, specs) = stand_in_run(root.path(), readers, Some(80 << 30), 64);
        let runs = run(&executor, &specs);
        assert_handed_over(root.path(), &runs);
        let beside = beside_next(&runs);
        assert!(
            (0.2..1.0).contains(&beside[0]),
            "the first cufile worker starts as the h2d one answers: {beside:?}"
        );
        assert!(
            beside[1] > 1.2,
            "the second cufile worker starts as the first one runs: {beside:?}"
        );
    }

    #[test]
    fn a_worker_starts_as_the_last_answers_where_its_threads_leave_no_cpu_free() {
        let root = tempfile::tempdir().unwrap();
        let readers = ["cufile", "cufile", "cufile"];
        let (executor, specs) = stand_in_run(root.path(), readers, Some(80 << 30), 2);
        let runs = run(&executor, &specs);
        assert_handed_over(root.path(), &runs);
        for beside in beside_next(&runs) {
            assert!((0.2..1.0).contains(&beside), "{beside}");
        }
    }

    #[test]
    fn no_worker_starts_ahead_without_room_for_two() {
        let root = tempfile::tempdir().unwrap();
        let readers = ["cufile", "cufile", "cufile"];
        let (executor, specs) = stand_in_run(root.path(), readers, None, 64);
        for (record, _, _) in run(&executor, &specs) {
            let worker = record.worker.unwrap();
            assert_eq!(worker.exit_beside_next_seconds, None);
            assert!(!worker.dir.join("released").exists());
        }
        // Room, but not for two of these passes in a quarter of it.
        let root = tempfile::tempdir().unwrap();
        let (executor, specs) = stand_in_run(root.path(), readers, Some(4 << 20), 64);
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
