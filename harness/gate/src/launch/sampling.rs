//! `gds_stats -p PID -l 3` reads a live process's cuFile counters from shared memory, so it must
//! run while the worker is still alive and after its reads. The hand-shake is two files in the
//! trial's folder: the worker writes `io-done` after its last pass and waits (a bounded time) for
//! `sampled`, which the orchestrator writes once it has saved `gds_stats.txt`.

use std::path::{Path, PathBuf};
use std::process::Command;

use gds_model::protocol::{GDS_STATS_TEXT, IO_DONE, SAMPLED};

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

    pub fn poll(&mut self, pid: u32) {
        if self.done || !self.dir.join(IO_DONE).exists() {
            return;
        }
        self.done = true;
        let text = match Command::new(&self.tool)
            .args(["-p", &pid.to_string(), "-l", "3"])
            .output()
        {
            Ok(output) => {
                String::from_utf8_lossy(&output.stdout).into_owned()
                    + &String::from_utf8_lossy(&output.stderr)
            }
            Err(error) => format!("gds-gate: cannot run `{}`: {error}\n", self.tool.display()),
        };
        let _ = std::fs::write(self.dir.join(GDS_STATS_TEXT), text);
        let _ = std::fs::write(self.dir.join(SAMPLED), b"");
    }
}
