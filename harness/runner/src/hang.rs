//! The evidence a hung worker leaves before it is killed: a bundle in the trial's folder
//! (`hang/`) with what a bug report against the stack needs. Every thread's state, system call
//! and kernel stack from `/proc` (the kernel stack where the gate may read it: root), a
//! user-space stack of each thread from a debugger the runner has (`gdb`, else `eu-stack`), the
//! Python worker's own stacks (faulthandler, on SIGUSR1), cuFile's counters (`gds_stats`),
//! nvidia-fs's and the trial's cufile.log. Collected while the worker is still stuck, so the
//! stacks show where; each part is best effort and says why it is missing, because a half
//! bundle beats none.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{self, Job};

/// The folder in a trial's folder that holds the bundle.
pub const BUNDLE: &str = "hang";

/// How long a debugger may take: a thread in uninterruptible I/O can hold its attach, and the
/// bundle must not hang in turn.
const DEBUGGER_TIMEOUT: Duration = Duration::from_secs(15);

/// How long `gds_stats` may take (it answers within a second when it answers at all).
const GDS_STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the Python worker gets to write its stacks after SIGUSR1.
const PYTHON_DUMP_WAIT: Duration = Duration::from_secs(1);

/// What the bundle is collected with.
pub struct Collect<'a> {
    /// The hung worker.
    pub pid: u32,
    /// The trial's folder: the bundle goes in its `hang/`, its `stderr.log` and `cufile.log` are
    /// read from it.
    pub trial_dir: &'a Path,
    /// The worker is the Python one, which dumps its threads' stacks on SIGUSR1.
    pub python: bool,
    /// `gds_stats`, where the runner has it.
    pub gds_stats: Option<&'a Path>,
}

/// A collected bundle: where it is and where the worker hung.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    pub dir: PathBuf,
    /// The system calls the worker's threads were in, busiest first: `pread64 (1 of 3
    /// threads), futex (2)`; `None` where `/proc` showed none.
    pub blocked_in: Option<String>,
}

/// One thread of the worker, as `/proc/PID/task/TID` shows it.
#[derive(Clone, Debug, PartialEq)]
struct Thread {
    tid: u32,
    name: String,
    /// `R`, `S`, `D`, …
    state: String,
    /// The system call it is in (`pread64`), or `None` when it is in none (running in user
    /// space) or `/proc` would not say.
    syscall: Option<String>,
}

/// Collects the bundle; an error only where its folder cannot be written.
pub fn collect(what: &Collect) -> io::Result<Bundle> {
    let dir = what.trial_dir.join(BUNDLE);
    fs::create_dir_all(&dir)?;
    let threads = threads(what.pid);
    fs::write(dir.join("threads.txt"), threads_text(what.pid, &threads))?;
    if what.python {
        python_stacks(what, &dir)?;
    }
    user_stacks(what.pid, &dir)?;
    match what.gds_stats {
        Some(tool) => capture(
            tool,
            &[
                "-p".into(),
                what.pid.to_string().into(),
                "-l".into(),
                "3".into(),
            ],
            &dir,
            "cufile-counters",
            GDS_STATS_TIMEOUT,
        )?,
        None => fs::write(
            dir.join("cufile-counters.txt"),
            "gds_stats not found on this runner (it comes with the CUDA toolkit's GDS tools)\n",
        )?,
    }
    copy_if_present(
        Path::new("/proc/driver/nvidia-fs/stats"),
        &dir.join("nvidia-fs-stats.txt"),
    )?;
    copy_if_present(&what.trial_dir.join("cufile.log"), &dir.join("cufile.log"))?;
    // A debugger that gave up its attach can leave the worker stopped; it must still die.
    // SAFETY: a signal to the worker this gate started and has not reaped.
    unsafe { libc::kill(what.pid as i32, libc::SIGCONT) };
    Ok(Bundle {
        dir,
        blocked_in: blocked_in(&threads),
    })
}

fn threads(pid: u32) -> Vec<Thread> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut threads: Vec<Thread> = tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().to_str()?.parse().ok()?;
            let read = |name: &str| fs::read_to_string(task.path().join(name)).ok();
            Some(Thread {
                tid,
                name: read("comm").unwrap_or_default().trim().to_string(),
                state: read("stat").and_then(|s| state_of(&s)).unwrap_or_default(),
                syscall: read("syscall").and_then(|s| syscall_of(&s)),
            })
        })
        .collect();
    threads.sort_by_key(|t| t.tid);
    threads
}

/// The state field of `/proc/…/stat`.
fn state_of(stat: &str) -> Option<String> {
    Some(crate::process::stat_fields(stat)?.next()?.to_string())
}

/// The call in `/proc/…/syscall`: its number first, `running` or `-1 …` when in none.
fn syscall_of(text: &str) -> Option<String> {
    let number: i64 = text.split_whitespace().next()?.parse().ok()?;
    (number >= 0).then(|| syscall_name(number))
}

/// The name of a system call the worker's threads are found waiting in; the number for others.
fn syscall_name(number: i64) -> String {
    #[cfg(target_arch = "x86_64")]
    const NAMES: &[(i64, &str)] = &[
        (0, "read"),
        (1, "write"),
        (7, "poll"),
        (16, "ioctl"),
        (17, "pread64"),
        (18, "pwrite64"),
        (19, "readv"),
        (20, "writev"),
        (23, "select"),
        (34, "pause"),
        (35, "nanosleep"),
        (61, "wait4"),
        (74, "fsync"),
        (75, "fdatasync"),
        (202, "futex"),
        (208, "io_getevents"),
        (209, "io_submit"),
        (230, "clock_nanosleep"),
        (232, "epoll_wait"),
        (257, "openat"),
        (270, "pselect6"),
        (271, "ppoll"),
        (281, "epoll_pwait"),
        (295, "preadv"),
        (296, "pwritev"),
        (327, "preadv2"),
        (328, "pwritev2"),
        (426, "io_uring_enter"),
    ];
    #[cfg(target_arch = "aarch64")]
    const NAMES: &[(i64, &str)] = &[
        (29, "ioctl"),
        (56, "openat"),
        (63, "read"),
        (64, "write"),
        (65, "readv"),
        (66, "writev"),
        (67, "pread64"),
        (68, "pwrite64"),
        (69, "preadv"),
        (70, "pwritev"),
        (72, "pselect6"),
        (73, "ppoll"),
        (74, "fsync"),
        (75, "fdatasync"),
        (98, "futex"),
        (101, "nanosleep"),
        (115, "clock_nanosleep"),
        (260, "wait4"),
        (286, "preadv2"),
        (287, "pwritev2"),
        (426, "io_uring_enter"),
    ];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const NAMES: &[(i64, &str)] = &[];
    NAMES.iter().find(|(n, _)| *n == number).map_or_else(
        || format!("system call {number}"),
        |(_, name)| name.to_string(),
    )
}

/// Waiting for another thread or for time: where a worker's helper threads idle, not where a
/// hang is.
fn idle(syscall: &str) -> bool {
    matches!(
        syscall,
        "futex"
            | "poll"
            | "ppoll"
            | "select"
            | "pselect6"
            | "epoll_wait"
            | "epoll_pwait"
            | "nanosleep"
            | "clock_nanosleep"
            | "wait4"
    )
}

/// `pread64 (1 of 3 threads), futex (2)`: calls that move data first, then by count.
fn blocked_in(threads: &[Thread]) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for call in threads.iter().filter_map(|t| t.syscall.as_deref()) {
        *counts.entry(call).or_default() += 1;
    }
    let mut calls: Vec<(&str, usize)> = counts.into_iter().collect();
    calls.sort_by_key(|&(call, count)| (idle(call), std::cmp::Reverse(count)));
    let total = threads.len();
    let mut parts = calls.iter().enumerate().map(|(k, (call, count))| {
        if k == 0 {
            let of = if total == 1 { "thread" } else { "threads" };
            format!("{call} ({count} of {total} {of})")
        } else {
            format!("{call} ({count})")
        }
    });
    let first = parts.next()?;
    Some(parts.fold(first, |all, part| all + ", " + &part))
}

fn threads_text(pid: u32, threads: &[Thread]) -> String {
    let mut text = format!("# the worker (pid {pid}): its threads as /proc showed them\n");
    if threads.is_empty() {
        text.push_str("(none: the process had gone, or /proc/PID/task could not be read)\n");
    }
    for t in threads {
        let _ = writeln!(
            text,
            "\nthread {} `{}`: state {}, {}",
            t.tid,
            t.name,
            t.state,
            t.syscall
                .as_deref()
                .map_or("in no system call".to_string(), |c| format!("in {c}"))
        );
        let stack = fs::read_to_string(format!("/proc/{pid}/task/{}/stack", t.tid));
        match stack {
            Ok(stack) if !stack.trim().is_empty() => text.push_str(&stack),
            Ok(_) => text.push_str("(kernel stack empty)\n"),
            Err(error) => {
                let _ = writeln!(text, "(kernel stack unreadable: {error}; root may read it)");
            }
        }
    }
    text
}

/// Asks the Python worker for its stacks (faulthandler registered on SIGUSR1 writes them to its
/// stderr) and keeps what it adds to stderr.log.
fn python_stacks(what: &Collect, dir: &Path) -> io::Result<()> {
    let stderr = what.trial_dir.join("stderr.log");
    let before = fs::metadata(&stderr).map_or(0, |m| m.len());
    // SAFETY: a signal to the worker this gate started and has not reaped.
    unsafe { libc::kill(what.pid as i32, libc::SIGUSR1) };
    std::thread::sleep(PYTHON_DUMP_WAIT);
    let text = fs::read(&stderr).unwrap_or_default();
    let added = text.get(before as usize..).unwrap_or_default();
    let added = if added.is_empty() {
        b"(the worker wrote nothing within a second of SIGUSR1)\n".as_slice()
    } else {
        added
    };
    fs::write(dir.join("python-stacks.txt"), added)
}

/// Every thread's user-space stack from the first debugger found.
fn user_stacks(pid: u32, dir: &Path) -> io::Result<()> {
    let pid = pid.to_string();
    let debuggers: [(&str, Vec<OsString>); 2] = [
        (
            "gdb",
            ["-batch", "-p", &pid, "-ex", "thread apply all bt"]
                .map(OsString::from)
                .to_vec(),
        ),
        ("eu-stack", ["-p", &pid].map(OsString::from).to_vec()),
    ];
    for (name, args) in debuggers {
        if let Some(program) = crate::tools::find_program(name, &[]) {
            return capture(&program, &args, dir, "user-stacks", DEBUGGER_TIMEOUT);
        }
    }
    fs::write(
        dir.join("user-stacks.txt"),
        "no debugger on this runner (gdb or eu-stack): install one for user-space stacks\n",
    )
}

/// Runs `program` for at most `timeout`, its output in `dir/NAME.txt` (stderr after stdout).
fn capture(
    program: &Path,
    args: &[OsString],
    dir: &Path,
    name: &str,
    timeout: Duration,
) -> io::Result<()> {
    let scratch = dir.join(format!(".{name}"));
    fs::create_dir_all(&scratch)?;
    let ran = process::run(&Job {
        program: program.to_path_buf(),
        args: args.to_vec(),
        env: Vec::new(),
        dir: scratch.clone(),
        timeout,
    });
    let mut text = format!("# {} {}\n", program.display(), join(args));
    match ran {
        Ok(finished) => {
            text.push_str(&String::from_utf8_lossy(
                &fs::read(&finished.stdout).unwrap_or_default(),
            ));
            let stderr = fs::read(&finished.stderr).unwrap_or_default();
            if !stderr.is_empty() {
                text.push_str("\n# its stderr\n");
                text.push_str(&String::from_utf8_lossy(&stderr));
            }
            if !finished.ending.is_clean() {
                let _ = writeln!(text, "\n# it {}", finished.ending);
            }
        }
        Err(error) => {
            let _ = writeln!(text, "could not run it: {error}");
        }
    }
    let _ = fs::remove_dir_all(&scratch);
    fs::write(dir.join(format!("{name}.txt")), text)
}

fn join(args: &[OsString]) -> String {
    let words: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
    words.join(" ")
}

/// Read and written whole, not `fs::copy`: a `/proc` file reports a size of 0, and a copy by size
/// would leave it empty.
fn copy_if_present(from: &Path, to: &Path) -> io::Result<()> {
    match fs::read(from) {
        Ok(bytes) => fs::write(to, bytes),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => fs::write(to, format!("`{}` unreadable: {error}\n", from.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_past_a_name_with_spaces_and_parentheses() {
        assert_eq!(
            state_of("4242 (a (b) c) D 1 4242 4242 0 -1").as_deref(),
            Some("D")
        );
        assert_eq!(state_of("garbage"), None);
    }

    /// Verbatim `/proc/PID/task/TID/syscall` lines from the CPU host (x86_64).
    #[test]
    fn the_system_call_a_thread_waits_in_is_named() {
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            syscall_of("202 0x7f2c8 0x80 0x0 0x0 0x0 0x0 0x7ffd3c 0x7f2c9").as_deref(),
            Some("futex")
        );
        assert_eq!(syscall_of("running"), None);
        assert_eq!(syscall_of("-1 0x7ffd3c 0x7f2c9"), None);
        assert_eq!(syscall_name(9999), "system call 9999");
    }

    #[test]
    fn data_moving_calls_come_before_idle_ones() {
        let thread = |tid, call: &str| Thread {
            tid,
            name: "w".into(),
            state: "S".into(),
            syscall: Some(call.into()),
        };
        let threads = [
            thread(1, "futex"),
            thread(2, "pread64"),
            thread(3, "futex"),
            Thread {
                syscall: None,
                ..thread(4, "")
            },
        ];
        assert_eq!(
            blocked_in(&threads).as_deref(),
            Some("pread64 (1 of 4 threads), futex (2)")
        );
        assert_eq!(
            blocked_in(&threads[..1]).as_deref(),
            Some("futex (1 of 1 thread)")
        );
        assert_eq!(blocked_in(&[]), None);
    }

    /// A real process of this host, asleep in a system call: the bundle names the call, holds
    /// every thread, and the process survives it (killing is the caller's job).
    #[test]
    fn a_sleeping_process_leaves_a_bundle_naming_its_call() {
        let trial = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        // Until it is asleep in its call.
        let path = format!("/proc/{}/syscall", child.id());
        for _ in 0..200 {
            if fs::read_to_string(&path).is_ok_and(|s| syscall_of(&s).is_some()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::fs::write(trial.path().join("cufile.log"), "a log line\n").unwrap();
        let bundle = collect(&Collect {
            pid: child.id(),
            trial_dir: trial.path(),
            python: false,
            gds_stats: None,
        })
        .unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(bundle.dir, trial.path().join(BUNDLE));
        let blocked = bundle.blocked_in.unwrap();
        assert!(blocked.contains("nanosleep (1 of 1 thread)"), "{blocked}");
        let threads = fs::read_to_string(bundle.dir.join("threads.txt")).unwrap();
        assert!(
            threads.contains(&format!("thread {} `sleep`", child.id())),
            "{threads}"
        );
        for file in ["user-stacks.txt", "cufile-counters.txt"] {
            assert!(bundle.dir.join(file).exists(), "{file} missing");
        }
        let log = fs::read_to_string(bundle.dir.join("cufile.log")).unwrap();
        assert_eq!(log, "a log line\n");
    }
}
