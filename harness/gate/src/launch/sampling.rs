//! `gds_stats -p PID -l 3` reads a live process's cuFile counters from shared memory, so it must
//! run while the worker is still alive and after its reads. The hand-shake is two files in the
//! trial's folder: the worker writes `io-done` after its last pass and waits (a bounded time) for
//! `sampled`, which the orchestrator writes once it has saved `gds_stats.txt`. The sample runs
//! inside the loop that watches the worker, so it is a worker of its own: its own process group
//! and a timeout no longer than what is left of the trial's, so that a hung `gds_stats` can
//! neither hang the gate nor stretch `--timeout`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{self, Job};

use gds_model::protocol::{GDS_STATS_TEXT, IO_DONE, SAMPLED};
use gds_model::record::Ending;

/// The `gds_stats` tool: `GDS_GATE_GDS_STATS`, else on `PATH` or where the GDS packages put it.
pub fn find_tool() -> Option<PathBuf> {
    match std::env::var_os("GDS_GATE_GDS_STATS").filter(|p| !p.is_empty()) {
        Some(path) => Some(PathBuf::from(path)),
        None => crate::tools::find_program("gds_stats", crate::tools::GDS_TOOL_DIRS),
    }
}

/// Once the worker says its I/O is done, sample it once. (The worker's side is
/// `gds_worker::trial::hold_for_sample`.)
pub struct Sampler {
    tool: PathBuf,
    dir: PathBuf,
    done: bool,
}

impl Sampler {
    pub fn new(tool: PathBuf, dir: &Path) -> Sampler {
        Sampler {
            tool,
            dir: dir.to_path_buf(),
            done: false,
        }
    }

    /// Samples worker `pid` once its I/O is done, in at most `time_left` (and [`SAMPLE_TIMEOUT`]).
    pub fn poll(&mut self, pid: u32, time_left: Duration) {
        if self.done || !self.dir.join(IO_DONE).exists() {
            return;
        }
        self.done = true;
        let text = self.sample(pid, time_left.min(SAMPLE_TIMEOUT));
        let _ = std::fs::write(self.dir.join(GDS_STATS_TEXT), text);
        let _ = std::fs::write(self.dir.join(SAMPLED), b"");
    }

    /// What `gds_stats` printed (stdout, then stderr), and a line of ours when it did not end.
    fn sample(&self, pid: u32, timeout: Duration) -> String {
        let job = Job {
            program: self.tool.clone(),
            args: vec!["-p".into(), pid.to_string().into(), "-l".into(), "3".into()],
            env: Vec::new(),
            // Its own folder: the worker's stdout.log and stderr.log are in the trial's.
            dir: self.dir.join("gds_stats"),
            timeout,
        };
        let started = std::fs::create_dir_all(&job.dir).and_then(|()| process::run(&job));
        let finished = match started {
            Ok(finished) => finished,
            Err(error) => {
                return format!("gds-gate: cannot run `{}`: {error}\n", self.tool.display());
            }
        };
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        let mut text = read(&finished.stdout) + &read(&finished.stderr);
        if !matches!(finished.ending, Ending::Exited { .. }) {
            text += &format!("gds-gate: `{}` {}\n", self.tool.display(), finished.ending);
        }
        text
    }
}

/// The longest a `gds_stats` sample may take; it reads shared memory and answers in milliseconds.
pub const SAMPLE_TIMEOUT: Duration = Duration::from_secs(10);
