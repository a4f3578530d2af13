//! What the gate found out about the runner before (and while) it ran a confirmation run: its
//! control read against the blessed level, and how busy the host was. A judgement's words say
//! "this trial's own" only when all of it was at its level.

use serde::{Deserialize, Serialize};

use crate::busy::HostReading;
use crate::scenario::{Cache, TrialSpec};

/// What the gate's control read (a fixed file on the data dir's disk, read, checked and copied
/// by the gate itself) said before a confirmation run, as ratios to its blessed level (1.0 =
/// usual), and how busy the host was then and during the confirmation run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunnerCheck {
    /// The first control read after the slow run: the disk's and the CPU's condition then, and
    /// the share of a core the gate's check got (below 1: other processes held the CPU).
    pub disk_before: f64,
    pub cpu_before: f64,
    pub cpu_share_before: f64,
    /// The last control read, just before the confirmation run.
    pub disk: f64,
    pub cpu: f64,
    pub cpu_share: f64,
    /// Seconds waited for the runner to come back to its level.
    pub waited_s: f64,
    /// The runner was still below its level, or the host busier, when the confirmation ran (it
    /// did not recover within the wait, or had not earlier in this run): `below` says what.
    pub still_slow: bool,
    /// The control's copy in memory (what a warm read moves at) over its blessed level, at the
    /// first and the last read; absent when the baseline was blessed without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<f64>,
    /// How busy the host was during the last control read; absent where `/proc` could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostReading>,
    /// How busy the host was when the baseline was blessed (each figure the quietest of the
    /// blessed runs'); absent when the baseline was blessed without it, and then the host was
    /// not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_blessed: Option<HostReading>,
    /// How busy the host was while the confirmation run ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<HostReading>,
    /// What the trial's rate depends on: which of the control's readings count for it.
    #[serde(default)]
    pub needs: Needs,
    /// What the last control read found below its blessed level (or busier than at bless), of
    /// what the trial depends on. Empty: at its level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<Shortfall>,
    /// What was busier than at bless while the confirmation run ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_during: Vec<Shortfall>,
}

impl RunnerCheck {
    /// Every reading that counts for the trial was at its level before the confirmation run and
    /// the host no busier while it ran: only then is a slowdown the trial's own.
    pub fn at_level_throughout(&self) -> bool {
        !self.still_slow && self.busy_during.is_empty()
    }

    /// What the check could not compare, though the trial depends on it (a baseline blessed
    /// by an older gate, an unreadable `/proc`): a slowdown is then not called the trial's own
    /// either.
    pub fn not_compared(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.needs.memory && self.memory.is_none() {
            missing.push("the control's copy in memory");
        }
        // Either end missing: a baseline blessed without it, or a host whose /proc was unreadable.
        if self.host_blessed.is_none() || self.host.is_none() {
            missing.push("how busy the host was");
        }
        missing
    }
}

/// A reading that was off its blessed level.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Shortfall {
    /// The control's read from the disk was slower.
    Disk,
    /// Checking the control's bytes took more CPU time per GiB.
    Cpu,
    /// The check got less of a core than a quiet runner gives it.
    CoreShare,
    /// Copying the control's bytes in memory was slower.
    Memory,
    /// Processes outside the gate used more of the host's CPU time.
    OtherProcesses,
    /// The hypervisor gave more of this VM's CPU time to other guests.
    Steal,
    /// Tasks waited for a CPU more of the time (PSI).
    CpuPressure,
    /// Tasks waited for memory (reclaim, swap) more of the time (PSI).
    MemoryPressure,
    /// Processes outside the gate read or wrote more on the data dir's disk.
    DiskTraffic,
}

impl Shortfall {
    /// A sign of a busy host (other processes, steal, pressure, a check that did not get its
    /// core) rather than of a slower disk, CPU or memory.
    pub fn of_host(self) -> bool {
        matches!(
            self,
            Shortfall::CoreShare
                | Shortfall::OtherProcesses
                | Shortfall::Steal
                | Shortfall::CpuPressure
                | Shortfall::MemoryPressure
                | Shortfall::DiskTraffic
        )
    }
}

/// What a trial's rate depends on besides the stack under test, so which of the control's
/// readings say something about it. The CPU and the host count for every trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Needs {
    /// It moves bytes to or from the disk: a cold read, a write.
    pub disk: bool,
    /// It reads from the page cache: a warm read moves at the memory's pace.
    pub memory: bool,
}

impl Default for Needs {
    /// What the checks of older gates assumed: the disk counts, memory was not measured.
    fn default() -> Self {
        Needs {
            disk: true,
            memory: false,
        }
    }
}

impl Needs {
    /// Every reading counts: for the runner as a whole, at the start of a run.
    pub const ALL: Needs = Needs {
        disk: true,
        memory: true,
    };

    pub fn of(spec: &TrialSpec) -> Needs {
        Needs {
            disk: spec.cache == Cache::Cold || spec.op.writes(),
            memory: spec.cache == Cache::Warm,
        }
    }
}
