//! How busy the host is over a window, by the kernel's own counts: the load average against the
//! cores, the CPU time processes outside the gate's own process tree used, the time the
//! hypervisor gave other guests, pressure stall information (PSI) where the kernel has it, and
//! the bytes others moved on the data dir's disk.
//!
//! Why: a trial's rate depends on the CPU and the memory bandwidth it gets, and another job on
//! the runner (a second gate, a build) takes both without moving the disk; a job that reads or
//! writes the same disk takes its bandwidth, with little CPU. The gate's own work is left out,
//! so that the reading says what *others* did while the gate measured.

mod procfs;

pub use procfs::{
    CpuTicks, ProcessTicks, ProcfsError, parse_diskstats, parse_loadavg, parse_pid_io,
    parse_pid_stat, parse_pressure_some, parse_stat,
};

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// How busy the host was over a window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostReading {
    /// Seconds the window lasted.
    pub seconds: f64,
    /// CPUs online.
    pub cores: u32,
    /// The 1-minute load average at the window's end: runnable and uninterruptible tasks, the
    /// gate's own among them, averaged over the last minute.
    pub load: f64,
    /// The share of all cores' time in the window that processes outside the gate's process
    /// tree ran (user and system time), 0–1: 0.5 on 2 cores is one core kept busy by others.
    pub others_cpu: f64,
    /// The share of all cores' time in the window the hypervisor gave other guests (steal), 0–1.
    pub steal: f64,
    /// Pressure stall information over the window, where the kernel has it (`/proc/pressure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<Pressure>,
    /// GB/s read from and written to the data dir's disk by processes outside the gate's tree
    /// (the disk's bytes less the tree's); absent where the data dir is on no block device of
    /// this host (a network or virtual file system) or the counters could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_disk_gbps: Option<f64>,
}

/// The block device a path is on, as `/proc/diskstats` numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disk {
    pub major: u32,
    pub minor: u32,
}

impl Disk {
    /// The device of the file system holding `path`; `None` for an anonymous device (NFS,
    /// tmpfs, overlay, btrfs), which has no counters of its own.
    pub fn of(path: &Path) -> Option<Disk> {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(path).ok()?.dev();
        let disk = Disk {
            major: libc::major(dev),
            minor: libc::minor(dev),
        };
        (disk.major != 0).then_some(disk)
    }
}

/// The share of a window in which some task stalled waiting for a resource (PSI `some`), 0–1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pressure {
    pub cpu: f64,
    pub io: f64,
    pub memory: f64,
}

/// The counters at one instant; two of them make a [`HostReading`].
#[derive(Clone, Debug)]
pub struct Snapshot {
    at: Instant,
    cpu: CpuTicks,
    cores: u32,
    /// Ticks of the gate's process tree (see [`ProcessTicks::ticks`]).
    own: u64,
    /// `some` stall microseconds of cpu, io and memory.
    pressure: Option<[u64; 3]>,
    /// The data dir's disk, whose bytes `disk` counts; a later snapshot reads the same one.
    device: Option<Disk>,
    /// Bytes the data dir's disk moved, and those the gate's tree had moved.
    disk: Option<DiskBytes>,
}

/// Bytes since boot: the disk's, and the gate's tree's share of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskBytes {
    pub disk: u64,
    pub own: u64,
}

impl Snapshot {
    /// Reads the counters from `/proc`, those of `disk` (the data dir's) among them. An error
    /// names the file that could not be read or parsed.
    pub fn take(disk: Option<Disk>) -> io::Result<Snapshot> {
        let (cpu, cores) =
            parse_stat(&read("/proc/stat")?).map_err(|why| bad("/proc/stat", why))?;
        let tree = own_tree(std::process::id());
        Ok(Snapshot {
            at: Instant::now(),
            cpu,
            cores,
            own: tree.iter().map(|p| p.ticks).sum(),
            pressure: pressure_totals(),
            device: disk,
            disk: disk.and_then(|disk| disk_bytes(disk, &tree)),
        })
    }

    /// How busy the host was from this snapshot until now, on the same disk.
    pub fn until_now(&self) -> io::Result<HostReading> {
        let load =
            parse_loadavg(&read("/proc/loadavg")?).map_err(|why| bad("/proc/loadavg", why))?;
        Ok(Snapshot::take(self.device)?.since(self, load))
    }

    /// How busy the host was from `earlier` to this snapshot, with `load` read at its end.
    pub fn since(&self, earlier: &Snapshot, load: f64) -> HostReading {
        let seconds = self.at.duration_since(earlier.at).as_secs_f64();
        let ticks = self.cpu.total().saturating_sub(earlier.cpu.total()).max(1) as f64;
        let processes = self.cpu.processes.saturating_sub(earlier.cpu.processes);
        let own = self.own.saturating_sub(earlier.own);
        let share = |part: u64| (part as f64 / ticks).clamp(0.0, 1.0);
        let pressure = match (earlier.pressure, self.pressure) {
            (Some(from), Some(to)) if seconds > 0.0 => {
                let stalled = |i: usize| {
                    (to[i].saturating_sub(from[i]) as f64 / 1e6 / seconds).clamp(0.0, 1.0)
                };
                Some(Pressure {
                    cpu: stalled(0),
                    io: stalled(1),
                    memory: stalled(2),
                })
            }
            _ => None,
        };
        let others_disk_gbps = match (earlier.disk, self.disk) {
            (Some(from), Some(to)) if seconds > 0.0 => {
                let disk = to.disk.saturating_sub(from.disk);
                let own = to.own.saturating_sub(from.own);
                Some(disk.saturating_sub(own) as f64 / seconds / 1e9)
            }
            _ => None,
        };
        HostReading {
            seconds,
            cores: self.cores,
            load,
            others_cpu: share(processes.saturating_sub(own)),
            steal: share(self.cpu.steal.saturating_sub(earlier.cpu.steal)),
            pressure,
            others_disk_gbps,
        }
    }
}

fn read(path: &str) -> io::Result<String> {
    std::fs::read_to_string(path)
        .map_err(|error| io::Error::new(error.kind(), format!("cannot read {path}: {error}")))
}

fn bad(path: &str, why: ProcfsError) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("cannot parse {path}: {why}"),
    )
}

/// Stall microseconds of `/proc/pressure/{cpu,io,memory}`; `None` on a kernel without PSI (or
/// with it switched off: `psi=0`, where the files exist and cannot be read).
fn pressure_totals() -> Option<[u64; 3]> {
    let some = |name: &str| {
        let text = std::fs::read_to_string(Path::new("/proc/pressure").join(name)).ok()?;
        parse_pressure_some(&text).ok()
    };
    Some([some("cpu")?, some("io")?, some("memory")?])
}

/// `root` and every live process below it. A process that vanishes between the listing and its
/// read is skipped: its time and bytes are in its parent's once reaped.
fn own_tree(root: u32) -> Vec<ProcessTicks> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let processes: Vec<ProcessTicks> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter_map(|text| parse_pid_stat(&text).ok())
        .collect();
    tree(&processes, root).into_iter().copied().collect()
}

/// The bytes `disk` moved and those the processes of `tree` had moved; `None` where either
/// cannot be read (no line for the device, `/proc/PID/io` not readable).
fn disk_bytes(disk: Disk, tree: &[ProcessTicks]) -> Option<DiskBytes> {
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    let disk = parse_diskstats(&text, disk.major, disk.minor).ok()??;
    let mut own = 0u64;
    for process in tree {
        let text = std::fs::read_to_string(format!("/proc/{}/io", process.pid));
        // A worker that ended since the listing: its bytes are in its parent's once reaped.
        if let Ok(text) = text {
            own = own.saturating_add(parse_pid_io(&text).ok()?);
        }
    }
    Some(DiskBytes { disk, own })
}

/// `root` and its descendants among `processes`.
pub fn tree(processes: &[ProcessTicks], root: u32) -> Vec<&ProcessTicks> {
    let mut children: HashMap<u32, Vec<&ProcessTicks>> = HashMap::new();
    for process in processes {
        children.entry(process.parent).or_default().push(process);
    }
    let mut members = Vec::new();
    let mut stack: Vec<&ProcessTicks> = processes.iter().filter(|p| p.pid == root).collect();
    while let Some(process) = stack.pop() {
        members.push(process);
        // A pid is its own parent nowhere but in a damaged listing; never loop on it.
        if let Some(below) = children.get(&process.pid) {
            stack.extend(below.iter().filter(|child| child.pid != process.pid));
        }
    }
    members
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/proc/");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}{name}.txt")).unwrap()
    }

    /// The recorded counters (`stat`, `pressure_*`) of one end of the fixture window.
    fn recorded(end: &str, at: Instant, own: u64) -> Snapshot {
        let (cpu, cores) = parse_stat(&fixture(&format!("stat_{end}"))).unwrap();
        let some = |r: &str| parse_pressure_some(&fixture(&format!("pressure_{r}_{end}"))).unwrap();
        Snapshot {
            at,
            cpu,
            cores,
            own,
            pressure: Some([some("cpu"), some("io"), some("memory")]),
            device: None,
            disk: None,
        }
    }

    /// On the test host, 2 s in which a busy loop and other engineers' builds kept both cores
    /// busy: recorded `/proc` text, the loop's own ticks chosen as the gate's.
    #[test]
    fn a_window_says_what_others_ran_and_what_stalled() {
        let start = Instant::now();
        let before = recorded("before", start, 1_000);
        let after = recorded("after", start + Duration::from_secs(2), 1_200);
        let load = parse_loadavg(&fixture("loadavg_after")).unwrap();
        let reading = after.since(&before, load);
        assert_eq!(
            (reading.cores, reading.load, reading.seconds),
            (2, 2.66, 2.0)
        );
        // 413 ticks in all: 210 user + 175 nice + 28 system, of which 200 were the gate's.
        assert!(
            (reading.others_cpu - 213.0 / 413.0).abs() < 1e-9,
            "{reading:?}"
        );
        assert_eq!(reading.steal, 0.0);
        let pressure = reading.pressure.unwrap();
        // cpu: 1 953 849 µs stalled in 2 s; io: 3 296 µs; memory: none.
        assert!((pressure.cpu - 0.976_924_5).abs() < 1e-6, "{pressure:?}");
        assert!((pressure.io - 0.001_648).abs() < 1e-6, "{pressure:?}");
        assert_eq!(pressure.memory, 0.0);
    }

    #[test]
    fn without_psi_the_reading_has_no_pressure() {
        let start = Instant::now();
        let mut before = recorded("before", start, 0);
        before.pressure = None;
        let after = recorded("after", start + Duration::from_secs(2), 0);
        let reading = after.since(&before, 0.5);
        assert_eq!(reading.pressure, None);
        assert!((reading.others_cpu - 1.0).abs() < 1e-9, "{reading:?}");
    }

    #[test]
    fn the_gates_tree_is_itself_and_everything_below_it() {
        let p = |pid, parent, ticks| ProcessTicks { pid, parent, ticks };
        let processes = [
            p(1, 0, 1000),
            p(10, 1, 5),
            p(11, 10, 7),
            p(12, 11, 3),
            p(20, 1, 50),
            p(30, 30, 9),
        ];
        let tree_ticks = |root| tree(&processes, root).iter().map(|p| p.ticks).sum::<u64>();
        assert_eq!(tree_ticks(10), 15);
        assert_eq!(tree_ticks(20), 50);
        assert_eq!(tree_ticks(30), 9);
        assert_eq!(tree_ticks(99), 0);
    }

    /// This very process, read twice around a busy loop of its own: the loop's CPU time (by the
    /// process's CPU clock) shows up as the gate's tree's ticks, so it is not counted as others'.
    #[test]
    fn the_gates_own_work_is_counted_as_its_own() {
        let ours = || {
            own_tree(std::process::id())
                .iter()
                .map(|p| p.ticks)
                .sum::<u64>()
        };
        let cpu_seconds = || {
            let mut now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes one timespec through a valid pointer.
            let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
            assert_eq!(rc, 0);
            now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
        };
        if !Path::new("/proc/self/stat").exists() {
            return; // no /proc here: nothing to read
        }
        // SAFETY: sysconf only reads a constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let (ticks, cpu) = (ours(), cpu_seconds());
        let mut spin = 0u64;
        while cpu_seconds() - cpu < 0.3 {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        let spent = (ours() - ticks) as f64 / hz;
        // Other test threads of this process may add their own; ticks round to 1/hz.
        assert!(spent >= 0.3 - 2.0 / hz, "{spent} s in ticks");
    }

    /// The byte counts of `procfs`'s fixtures (a process moved 67 MB while another job read
    /// 541 MB from the same disk), over a window of 2 s chosen by the test.
    #[test]
    fn a_window_says_what_others_moved_on_the_disk() {
        let start = Instant::now();
        let disk = |at, disk, own| {
            let mut snapshot = recorded("before", at, 0);
            snapshot.disk = Some(DiskBytes { disk, own });
            snapshot
        };
        let before = disk(start, (6_347_209_282 + 803_218_640) * 512, 1_000);
        let after = disk(
            start + Duration::from_secs(2),
            (6_348_331_530 + 803_284_528) * 512,
            1_000 + 33_611_776 + 33_570_816,
        );
        let others = after.since(&before, 0.5).others_disk_gbps.unwrap();
        assert!((others - 0.541_143_040 / 2.0).abs() < 1e-9, "{others}");
        // Either end without the disk's counters: not said.
        assert_eq!(
            recorded("after", start, 0)
                .since(&before, 0.5)
                .others_disk_gbps,
            None
        );
    }

    /// This very process writes, syncs and reads back a file on the target's disk: its bytes
    /// are counted as the gate's own, not as others'.
    #[test]
    fn the_gates_own_disk_bytes_are_its_own() {
        // Beside the test binary: on the target's disk, where /tmp may be tmpfs.
        let dir = tempfile::tempdir_in(std::env::current_exe().unwrap().parent().unwrap()).unwrap();
        let Some(disk) = Disk::of(dir.path()) else {
            return; // a file system without a block device here: nothing to count
        };
        let path = dir.path().join("bytes");
        let size = 8 << 20;
        let own = || Snapshot::take(Some(disk)).unwrap().disk.map(|d| d.own);
        let Some(before) = own() else {
            return; // no /proc/diskstats line or /proc/self/io here
        };
        std::fs::write(&path, vec![3u8; size]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        crate::cache::drop_pages(&file).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), size);
        let moved = own().unwrap() - before;
        // Written (dirtied) and read back from the disk, at least.
        assert!(moved >= 2 * size as u64, "{moved} bytes");
    }
}
