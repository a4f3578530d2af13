//! Runs one worker process the way nextest runs a test: stdin closed, its own process group,
//! stdout and stderr captured to files, a timeout enforced with SIGTERM, a grace period, then
//! SIGKILL to the whole group, and the way it ended told apart (exit code, signal, timeout).
//! A worker never outlives the gate: it is stopped the same way when the gate is interrupted
//! ([`crate::interrupt`]), and killed by the kernel when the gate dies (`PR_SET_PDEATHSIG`).
//! What it leaves outside its group (a child under `setsid`) is stopped once it ends
//! ([`sweep`]), or by the [`guard`] when the gate is killed with SIGKILL.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gds_model::record::Ending;

mod guard;
mod sweep;

pub use guard::{serve as serve_guard, set_program as set_guard_program};

/// How long a worker gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

pub struct Job {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    /// stdout.log and stderr.log are written here.
    pub dir: PathBuf,
    pub timeout: Duration,
}

pub struct Finished {
    pub ending: Ending,
    pub elapsed: Duration,
    /// The wall clock (ns since the epoch) when the gate saw the process end, to within the
    /// 5 ms it polls at: what a worker's own clock stamps are compared with.
    pub ended_unix_ns: u64,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

impl Finished {
    /// The last lines of stderr (then stdout), for a failure message.
    pub fn tail(&self, lines: usize) -> String {
        let mut text = tail_of(&self.stderr, lines);
        if text.trim().is_empty() {
            text = tail_of(&self.stdout, lines);
        }
        text
    }
}

pub fn run(job: &Job) -> io::Result<Finished> {
    run_watching(job, |_, _| {})
}

/// [`run`], calling `watch(pid, time_left)` at every poll while the worker runs (to sample it
/// from outside); `time_left` is what remains of the timeout, which `watch` must not outlast,
/// and zero in the last call, just before a worker that reached its timeout is stopped.
pub fn run_watching(job: &Job, watch: impl FnMut(u32, Duration)) -> io::Result<Finished> {
    spawn(job)?.watch(watch)
}

/// A worker started and not yet waited for: [`Running::watch`] it to its end, or
/// [`Running::stop`] it; dropped on the way (an error, a panic), it is stopped. Its timeout
/// counts from the start.
pub struct Running {
    /// Whether the worker ended and was reaped.
    ended: bool,
    child: std::process::Child,
    pgid: i32,
    lineage: String,
    start: Instant,
    timeout: Duration,
    stdout: PathBuf,
    stderr: PathBuf,
}

/// Starts `job`'s worker.
pub fn spawn(job: &Job) -> io::Result<Running> {
    let stdout = job.dir.join("stdout.log");
    let stderr = job.dir.join("stderr.log");
    sweep::become_subreaper();
    guard::start();
    let lineage = sweep::new_lineage();
    let mut command = Command::new(&job.program);
    command
        .args(&job.args)
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .env(sweep::LINEAGE_VAR, &lineage)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout)?)
        .stderr(File::create(&stderr)?)
        .process_group(0);
    die_with_this_thread(&mut command);
    let start = Instant::now();
    let child = command.spawn()?;
    Ok(Running {
        ended: false,
        pgid: child.id() as i32,
        child,
        lineage,
        start,
        timeout: job.timeout,
        stdout,
        stderr,
    })
}

impl Running {
    /// Waits for the worker's end as [`run_watching`] says.
    pub fn watch(mut self, mut watch: impl FnMut(u32, Duration)) -> io::Result<Finished> {
        let (child, pgid, start) = (&mut self.child, self.pgid, self.start);
        let ending = loop {
            if let Some(status) = child.try_wait()? {
                break match (status.code(), status.signal()) {
                    (Some(code), _) => Ending::Exited { code },
                    (None, Some(signal)) => Ending::Signalled {
                        signal,
                        name: signal_name(signal),
                        core_dumped: status.core_dumped(),
                    },
                    (None, None) => Ending::Exited { code: -1 },
                };
            }
            if let Some(signal) = crate::interrupt::received() {
                terminate(child, pgid)?;
                break Ending::Interrupted {
                    signal,
                    name: signal_name(signal),
                };
            }
            // Called once with nothing left, before the kill: a hung worker's last look.
            let left = self.timeout.saturating_sub(start.elapsed());
            watch(child.id(), left);
            if left.is_zero() {
                terminate(child, pgid)?;
                break Ending::TimedOut {
                    after_seconds: self.timeout.as_secs(),
                };
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let ended_unix_ns = gds_model::protocol::now_unix_ns();
        self.ended = true;
        self.clean_up();
        Ok(Finished {
            ending,
            elapsed: start.elapsed(),
            ended_unix_ns,
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        })
    }

    /// Gives the worker `more` time before its timeout: what it spent waiting for the gate.
    pub fn extend_timeout(&mut self, more: Duration) {
        self.timeout += more;
    }

    /// Ends a worker that is not wanted any more, and what it started, at once.
    pub fn stop(self) {
        drop(self);
    }

    fn clean_up(&self) {
        // Whatever the worker left running in its group (helper threads are gone with it, but a
        // spawned tool might not be) must not outlive the trial.
        kill_group(self.pgid, libc::SIGKILL);
        // Nor what left the group: those are the gate's children now, the gate being a subreaper.
        sweep::sweep(self.pgid, &self.lineage);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.ended {
            kill_group(self.pgid, libc::SIGKILL);
            let _ = self.child.wait();
            self.clean_up();
        }
    }
}

fn terminate(child: &mut std::process::Child, pgid: i32) -> io::Result<()> {
    kill_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_group(pgid, libc::SIGKILL);
    child.wait().map(|_| ())
}

/// Has the kernel SIGKILL the child when the thread that spawns it exits, which a SIGKILL of the
/// gate (or a second Ctrl-C) does. The signal follows the spawning *thread*, not the process: that
/// is safe here because every caller spawns and waits on one thread, trials over several GPUs
/// included, and a worker started ahead of its trial is watched or stopped on the thread that
/// started it.
fn die_with_this_thread(command: &mut Command) {
    // SAFETY: getpid before the fork; in the child only prctl and getppid, both
    // async-signal-safe, and no allocation.
    let gate = unsafe { libc::getpid() };
    // SAFETY: see above.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The gate died between the fork and the prctl: nobody is left to signal us.
            if libc::getppid() != gate {
                return Err(io::Error::other("the gate exited while starting a worker"));
            }
            Ok(())
        });
    }
}

fn kill_group(pgid: i32, signal: i32) {
    // SAFETY: signalling a process group we created; ESRCH (already gone) is fine.
    unsafe { libc::kill(-pgid, signal) };
}

fn signal_name(signal: i32) -> String {
    crate::interrupt::signal_name(signal).to_string()
}

/// Whether process `pid` runs: it exists and is not a zombie (PID 1 of a container may never reap
/// one).
pub fn running(pid: u32) -> bool {
    sweep::running(pid)
}

/// The fields of a `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) line after the command name,
/// its state first. The name is in parentheses and may hold spaces or parentheses itself.
pub(crate) fn stat_fields(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    stat.rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace())
}

/// The last `lines` lines of a file, reading at most its last 64 KiB.
fn tail_of(path: &Path, lines: usize) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 << 10)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> (tempfile::TempDir, Finished) {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("GDS_GATE_TEST_VALUE".into(), "42".into())],
            dir: dir.path().to_path_buf(),
            timeout,
        };
        let finished = run(&job).unwrap();
        (dir, finished)
    }

    #[test]
    fn exit_codes_and_output_are_captured() {
        let (_dir, finished) = sh(
            "echo out; echo \"err $GDS_GATE_TEST_VALUE\" >&2; exit 3",
            Duration::from_secs(10),
        );
        assert_eq!(finished.ending, Ending::Exited { code: 3 });
        assert_eq!(finished.tail(5), "err 42");
    }

    #[test]
    fn an_abort_is_reported_as_its_signal() {
        let (_dir, finished) = sh("echo dying >&2; kill -ABRT $$", Duration::from_secs(10));
        assert!(
            matches!(&finished.ending, Ending::Signalled { signal, name, .. } if *signal == libc::SIGABRT && name == "SIGABRT"),
            "{}",
            finished.ending
        );
        assert!(finished.ending.to_string().contains("SIGABRT"));
        assert_eq!(finished.tail(1), "dying");
    }

    /// A script for `sh` that starts `child` in the background and writes its pid to the file
    /// it returns, in a folder of its own.
    fn leaving(child: &str, then: &str) -> (tempfile::TempDir, PathBuf, String) {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child.pid");
        let script = format!("{child} & echo $! > '{}'; {then}", pid_file.display());
        (dir, pid_file, script)
    }

    fn pid_in(file: &Path) -> u32 {
        std::fs::read_to_string(file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Gone, reaped too: no zombie left behind either.
    fn gone(pid: u32) -> bool {
        !Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn a_child_in_a_session_of_its_own_ends_with_the_worker() {
        let (_pids, pid_file, script) = leaving("setsid sleep 300", "exit 1");
        let (_dir, finished) = sh(&script, Duration::from_secs(10));
        assert_eq!(finished.ending, Ending::Exited { code: 1 });
        let child = pid_in(&pid_file);
        std::thread::sleep(Duration::from_secs(5));
        assert!(gone(child), "the worker's child {child} outlived it");
    }

    #[test]
    fn a_child_that_ignores_sigterm_ends_with_a_timed_out_worker() {
        let (_pids, pid_file, script) =
            leaving("setsid sh -c \"trap '' TERM; exec sleep 300\"", "sleep 30");
        let (_dir, finished) = sh(&script, Duration::from_millis(300));
        assert_eq!(finished.ending, Ending::TimedOut { after_seconds: 0 });
        let child = pid_in(&pid_file);
        assert!(gone(child), "the worker's child {child} outlived it");
    }

    /// Two workers of one trial (one per GPU): the first to end leaves the other's children alone.
    #[test]
    fn a_worker_that_ends_leaves_another_workers_children_alone() {
        let (_pids, pid_file, script) = leaving("setsid sleep 300", "sleep 3; exit 0");
        let other = std::thread::spawn(move || sh(&script, Duration::from_secs(30)));
        let child = wait_for_pid(&pid_file);
        let (_dir, finished) = sh("exit 0", Duration::from_secs(10));
        assert_eq!(finished.ending, Ending::Exited { code: 0 });
        assert!(running(child), "another worker's child was stopped");
        let (_dir, finished) = other.join().unwrap();
        assert_eq!(finished.ending, Ending::Exited { code: 0 });
        assert!(gone(child), "the worker's child {child} outlived it");
    }

    /// A worker started ahead of its trial and not wanted after all: stopped at once, with
    /// what it started, reaped.
    #[test]
    fn a_stopped_worker_is_gone_with_its_children() {
        let (dir, pid_file, script) = leaving("setsid sleep 300", "sleep 300");
        let job = Job {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: Vec::new(),
            dir: dir.path().to_path_buf(),
            timeout: Duration::from_secs(60),
        };
        let running = spawn(&job).unwrap();
        let worker = running.child.id();
        let child = wait_for_pid(&pid_file);
        let started = Instant::now();
        running.stop();
        assert!(started.elapsed() < Duration::from_secs(2), "not at once");
        assert!(gone(worker), "the worker {worker} outlived its stop");
        let end = Instant::now() + Duration::from_secs(5);
        while !gone(child) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(gone(child), "the worker's child {child} outlived it");
    }

    fn wait_for_pid(file: &Path) -> u32 {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no pid in {}", file.display());
    }

    #[test]
    fn a_hang_is_killed_after_the_timeout_with_its_children() {
        let started = Instant::now();
        let (_dir, finished) = sh(
            "trap '' TERM; sleep 30 & sleep 30; wait",
            Duration::from_millis(300),
        );
        assert_eq!(finished.ending, Ending::TimedOut { after_seconds: 0 });
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "SIGKILL after the grace period must end it"
        );
    }
}
