//! The kernel's counters of how busy the host is, parsed from the text of `/proc`: the load
//! average, the CPU time of all cores (`/proc/stat`), one process's CPU time and parent
//! (`/proc/PID/stat`), pressure stall information (`/proc/pressure/*`), the bytes a disk moved
//! (`/proc/diskstats`) and those one process had moved (`/proc/PID/io`). Pure functions: the
//! reading of the files is [`super::Snapshot`]'s.

/// Why a `/proc` file's text could not be parsed: what was expected, and what was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProcfsError {
    /// No line starting with this word (`cpu`, `some`).
    #[error("expected a `{0}` line")]
    NoLine(&'static str),
    #[error("expected whole numbers on the `cpu` line, found `{0}`")]
    CpuNotNumbers(String),
    #[error("expected at least 8 numbers on the `cpu` line, found {0}")]
    CpuTooShort(usize),
    #[error("expected a load average first, found `{0}`")]
    NoLoadAverage(String),
    #[error("expected `total=MICROSECONDS` on the `some` line, found `{0}`")]
    NoStallTotal(String),
    #[error("expected `PID (COMMAND) STATE …`")]
    NoCommand,
    #[error("expected the process id first")]
    NoProcessId,
    /// A field of `/proc/PID/stat`, counted from 1.
    #[error("expected a number as field {0}")]
    NotANumber(usize),
    #[error(transparent)]
    ParentOutOfRange(#[from] std::num::TryFromIntError),
    /// A field of a `/proc/diskstats` line, counted from 1.
    #[error("expected a number as field {field} of `{line}`")]
    DiskNotANumber { field: usize, line: String },
    /// A `name:` line of `/proc/PID/io`.
    #[error("expected a `{0}:` line with a number")]
    NoCounter(String),
}

/// Clock ticks of all cores since boot, by what they were spent on (the `cpu` line of
/// `/proc/stat`, in `USER_HZ` ticks). Guest time is already inside `user` and `nice`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// User, nice and system time: what processes ran.
    pub processes: u64,
    /// Interrupts and softirqs: the kernel's work for devices, nobody's process.
    pub interrupts: u64,
    /// Idle and waiting for I/O.
    pub idle: u64,
    /// Time the hypervisor ran other guests on this VM's CPUs.
    pub steal: u64,
}

impl CpuTicks {
    pub fn total(&self) -> u64 {
        self.processes + self.interrupts + self.idle + self.steal
    }
}

/// The `cpu` line of `/proc/stat` and the number of `cpuN` lines (the CPUs online).
pub fn parse_stat(text: &str) -> Result<(CpuTicks, u32), ProcfsError> {
    let line = text
        .lines()
        .find(|line| line.split_whitespace().next() == Some("cpu"))
        .ok_or(ProcfsError::NoLine("cpu"))?;
    let numbers: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| ProcfsError::CpuNotNumbers(line.to_string()))?;
    // user nice system idle iowait irq softirq steal (guest guest_nice are inside user and nice).
    let [user, nice, system, idle, iowait, irq, softirq, steal, ..] = numbers[..] else {
        return Err(ProcfsError::CpuTooShort(numbers.len()));
    };
    let cores = text
        .lines()
        .filter(|line| {
            line.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    Ok((
        CpuTicks {
            processes: user + nice + system,
            interrupts: irq + softirq,
            idle: idle + iowait,
            steal,
        },
        u32::try_from(cores.max(1)).unwrap_or(u32::MAX),
    ))
}

/// The 1-minute load average, the first field of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Result<f64, ProcfsError> {
    let first = text.split_whitespace().next().unwrap_or_default();
    first
        .parse::<f64>()
        .ok()
        .filter(|load| load.is_finite() && *load >= 0.0)
        .ok_or_else(|| ProcfsError::NoLoadAverage(first.to_string()))
}

/// Microseconds some task stalled on the resource since boot: `total=` of the `some` line of a
/// `/proc/pressure/{cpu,io,memory}` file.
pub fn parse_pressure_some(text: &str) -> Result<u64, ProcfsError> {
    let line = text
        .lines()
        .find(|line| line.starts_with("some "))
        .ok_or(ProcfsError::NoLine("some"))?;
    line.split_whitespace()
        .find_map(|field| field.strip_prefix("total="))
        .and_then(|total| total.parse().ok())
        .ok_or_else(|| ProcfsError::NoStallTotal(line.to_string()))
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessTicks {
    pub pid: u32,
    pub parent: u32,
    /// User and system time of the process and of its children it has waited for, in ticks: a
    /// child's time moves into its parent's when it is reaped, so the sum over a live tree
    /// never loses a finished worker.
    pub ticks: u64,
}

/// `/proc/PID/stat`. The command name (field 2) is in parentheses and may itself hold spaces
/// and parentheses, so the fields are counted from the last `)`.
pub fn parse_pid_stat(text: &str) -> Result<ProcessTicks, ProcfsError> {
    let (head, rest) = text.rsplit_once(')').ok_or(ProcfsError::NoCommand)?;
    let pid = head
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse().ok())
        .ok_or(ProcfsError::NoProcessId)?;
    // After the name: state(3) ppid(4) … utime(14) stime(15) cutime(16) cstime(17).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, ProcfsError> {
        fields
            .get(n - 3)
            .and_then(|value| value.parse::<i64>().ok())
            .map(|value| value.max(0).unsigned_abs())
            .ok_or(ProcfsError::NotANumber(n))
    };
    Ok(ProcessTicks {
        pid,
        parent: u32::try_from(field(4)?)?,
        ticks: field(14)? + field(15)? + field(16)? + field(17)?,
    })
}

/// Bytes read from and written to the block device `major:minor` since boot: its line of
/// `/proc/diskstats` (sectors read, field 6, and written, field 10, in 512-byte units whatever
/// the device's sector size). `None` without a line for it.
pub fn parse_diskstats(text: &str, major: u32, minor: u32) -> Result<Option<u64>, ProcfsError> {
    let Some(line) = text.lines().find(|line| {
        let mut fields = line.split_whitespace();
        fields.next() == Some(&*major.to_string()) && fields.next() == Some(&*minor.to_string())
    }) else {
        return Ok(None);
    };
    let fields: Vec<&str> = line.split_whitespace().collect();
    let sectors = |n: usize| -> Result<u64, ProcfsError> {
        fields
            .get(n - 1)
            .and_then(|value| value.parse().ok())
            .ok_or_else(|| ProcfsError::DiskNotANumber {
                field: n,
                line: line.to_string(),
            })
    };
    Ok(Some((sectors(6)? + sectors(10)?).saturating_mul(512)))
}

/// Bytes the process had the storage read and write for it (`read_bytes` + `write_bytes` of
/// `/proc/PID/io`), its reaped children's included. Reads count when submitted, `O_DIRECT` ones
/// too; writes when the pages are dirtied, or submitted for `O_DIRECT`.
pub fn parse_pid_io(text: &str) -> Result<u64, ProcfsError> {
    let field = |name: &str| -> Result<u64, ProcfsError> {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
            .ok_or_else(|| ProcfsError::NoCounter(name.to_string()))
    };
    Ok(field("read_bytes")?.saturating_add(field("write_bytes")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verbatim from the 2-core CPU test host (kernel 6.18), read 2 s apart around a busy loop
    /// while other builds ran: see `tests/fixtures/README.md`.
    const STAT_BEFORE: &str = include_str!("../../tests/fixtures/proc/stat_before.txt");
    const STAT_AFTER: &str = include_str!("../../tests/fixtures/proc/stat_after.txt");

    #[test]
    fn the_cpu_line_and_the_cores_of_proc_stat() {
        let (before, cores) = parse_stat(STAT_BEFORE).unwrap();
        assert_eq!(cores, 2);
        // cpu  2223331 41 244537 2338615 40487 0 3344 11686 0 0
        assert_eq!(
            before,
            CpuTicks {
                processes: 2223331 + 41 + 244537,
                interrupts: 3344,
                idle: 2338615 + 40487,
                steal: 11686,
            }
        );
        let (after, _) = parse_stat(STAT_AFTER).unwrap();
        // Two seconds of two cores (about 400 ticks), none of them idle.
        assert_eq!(after.total() - before.total(), 413);
        assert_eq!(after.idle, before.idle);
    }

    #[test]
    fn a_damaged_stat_says_what_it_expected() {
        assert_eq!(
            parse_stat("intr 1 2 3\n").unwrap_err().to_string(),
            "expected a `cpu` line"
        );
        let short = parse_stat("cpu  1 2 3\ncpu0 1 2 3\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            short,
            "expected at least 8 numbers on the `cpu` line, found 3"
        );
        let words = parse_stat("cpu  1 x 3 4 5 6 7 8\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            words,
            "expected whole numbers on the `cpu` line, found `cpu  1 x 3 4 5 6 7 8`"
        );
    }

    #[test]
    fn the_load_average_is_the_first_field() {
        let text = include_str!("../../tests/fixtures/proc/loadavg_before.txt");
        assert_eq!(parse_loadavg(text), Ok(2.37));
        assert!(parse_loadavg("").is_err());
        assert!(parse_loadavg("-1 0 0").is_err());
    }

    #[test]
    fn pressure_is_the_total_of_the_some_line() {
        let cpu = include_str!("../../tests/fixtures/proc/pressure_cpu_before.txt");
        assert_eq!(parse_pressure_some(cpu), Ok(4_908_230_373));
        let memory = include_str!("../../tests/fixtures/proc/pressure_memory_after.txt");
        assert_eq!(parse_pressure_some(memory), Ok(0));
        assert!(parse_pressure_some("full avg10=0.00 total=0\n").is_err());
        assert!(parse_pressure_some("some avg10=0.00\n").is_err());
    }

    #[test]
    fn a_process_is_read_past_a_name_with_spaces_and_parentheses() {
        // A copy of `sleep` named `a) b (c`, as the kernel printed it.
        let odd = include_str!("../../tests/fixtures/proc/pid_stat_odd_comm.txt");
        assert_eq!(
            parse_pid_stat(odd),
            Ok(ProcessTicks {
                pid: 27148,
                parent: 1,
                ticks: 0
            })
        );
        // init: utime 1149, stime 7669, cutime 2217119, cstime 227144.
        let init = include_str!("../../tests/fixtures/proc/pid_stat_init.txt");
        assert_eq!(
            parse_pid_stat(init),
            Ok(ProcessTicks {
                pid: 1,
                parent: 0,
                ticks: 1149 + 7669 + 2217119 + 227144
            })
        );
        assert!(parse_pid_stat("12 (x) S 1 2").is_err());
        assert!(parse_pid_stat("no parentheses").is_err());
    }

    /// Verbatim from the 2-core CPU test host: `/proc/diskstats` before and after a process
    /// wrote 32 MiB, synced it and read it back with `O_DIRECT` (its `/proc/self/io` after),
    /// while another job read from the same disk.
    const DISKSTATS_BEFORE: &str = include_str!("../../tests/fixtures/proc/diskstats_before.txt");
    const DISKSTATS_AFTER: &str = include_str!("../../tests/fixtures/proc/diskstats_after.txt");
    const PID_IO: &str = include_str!("../../tests/fixtures/proc/pid_io_direct_read.txt");

    #[test]
    fn a_disks_bytes_and_a_processs_bytes() {
        // 254 0 vda 7668343 253529 6347209282 27653421 1117707 482918 803218640 …
        let before = parse_diskstats(DISKSTATS_BEFORE, 254, 0).unwrap().unwrap();
        assert_eq!(before, (6_347_209_282 + 803_218_640) * 512);
        let after = parse_diskstats(DISKSTATS_AFTER, 254, 0).unwrap().unwrap();
        // The process's 32 MiB read and 32 MiB written, and 541 MB the other job read.
        let own = parse_pid_io(PID_IO).unwrap();
        assert_eq!(own, 33_611_776 + 33_570_816);
        assert_eq!(after - before, (1_122_248 + 65_888) * 512);
        assert!(after - before - own > 500_000_000);
        // No line for a device (a network file system's anonymous one): nothing to compare.
        assert_eq!(parse_diskstats(DISKSTATS_AFTER, 0, 42).unwrap(), None);
        assert!(parse_diskstats("254 0 vda 1 2\n", 254, 0).is_err());
        assert!(parse_pid_io("rchar: 1\n").is_err());
    }
}
