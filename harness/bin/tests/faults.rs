//! Fault drills against the real gate binary: two gates on one `--out`, Ctrl-C, SIGTERM and
//! SIGKILL of the gate while a worker (and a child of it in a session of its own) runs, inputs that can fail before the first trial, and a
//! mistyped subcommand. The worker that must hang is a **stand-in**: a shell script named by
//! `GDS_GATE_WORKER` that writes its pid and sleeps (probes still go to the real binary).

pub mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const GATE: &str = env!("CARGO_BIN_EXE_gds-gate");

const TWO_TRIALS: &str = "suite: drill\nscenarios:\n  - name: read\n    files: { size: 1MiB, seed: 3 }\n    nthreads: [1, 2]\n    warmup: 0\n    repetitions: 1\n";

/// A scratch folder with a suite, and the gate started on it.
struct Drill {
    dir: tempfile::TempDir,
}

impl Drill {
    fn new(suite: &str) -> Drill {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        fs::write(dir.path().join("suite.yaml"), suite).unwrap();
        // The stand-in worker: trials (`worker --spec S --result R`) write their pid and sleep;
        // probes (`worker --job …`) run in the real binary.
        write_worker(
            &dir.path().join("stand-in-worker"),
            "echo $$ > \"$(dirname \"$0\")/worker.pid\"\nexec sleep 60",
        );
        Drill { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The gate on the drill's suite, data, reports and baselines, plus `args`.
    fn gate(&self, args: &[&str]) -> Command {
        let mut command = Command::new(GATE);
        command
            .args(args)
            .arg("--suite")
            .arg(self.path("suite.yaml"))
            .arg("--data-dir")
            .arg(self.path("data"))
            .arg("--baselines")
            .arg(self.path("baselines"))
            .env("GDS_GATE_HISTORY", self.path("history.jsonl"))
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("CI")
            .env_remove("GDS_GATE_OUT")
            .env_remove("GDS_GATE_RUNNER")
            .env_remove("GDS_GATE_WORKER")
            .stdin(Stdio::null());
        if !args.contains(&"--out") {
            command.arg("--out").arg(self.path("out"));
        }
        command
    }

    /// The gate with the stand-in worker, started; returns once its first worker runs.
    fn start_hanging(&self) -> (Child, u32) {
        let child = self
            .gate(&[])
            .env("GDS_GATE_WORKER", self.path("stand-in-worker"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid_file = self.path("worker.pid");
        let worker = wait_for(Duration::from_secs(60), || {
            fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
        })
        .expect("the stand-in worker did not start");
        (child, worker)
    }

    fn report(&self) -> serde_json::Value {
        let text = fs::read_to_string(self.path("out/report.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

fn wait_for<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Some(value) = check() {
            return Some(value);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Whether `pid` runs (a zombie no longer does; PID 1 of a container may never reap it).
fn running(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: signalling a child this test started and has not reaped.
    unsafe { libc::kill(child.id() as i32, signal) };
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_second_gate_on_the_same_out_is_refused_naming_the_first() {
    let drill = Drill::new(TWO_TRIALS);
    let (first, _) = drill.start_hanging();
    let second = drill.gate(&[]).output().unwrap();
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("another gds-gate (pid {})", first.id()))
            && stderr.contains("--out"),
        "{stderr}"
    );
    signal(&first, libc::SIGTERM);
    assert_eq!(finish(first).status.code(), Some(143));
    // The first gate's lock went with it: the folder is free again.
    let third = drill.gate(&["--list"]).output().unwrap();
    assert_eq!(third.status.code(), Some(0));
}

#[test]
fn ctrl_c_stops_the_worker_and_still_writes_the_reports() {
    let drill = Drill::new(TWO_TRIALS);
    let (gate, worker) = drill.start_hanging();
    let started = Instant::now();
    signal(&gate, libc::SIGINT);
    let output = finish(gate);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
    assert!(!running(worker), "the worker outlived the gate");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    let report = drill.report();
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2, "{report}");
    assert_eq!(trials[0]["status"], "failed");
    assert!(
        trials[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the gate was interrupted by SIGINT"),
        "{report}"
    );
    assert_eq!(trials[1]["status"], "ignored");
    assert_eq!(
        trials[1]["reason"],
        "not run: the gate was interrupted by SIGINT"
    );
}

#[test]
fn a_gate_killed_outright_takes_its_worker_with_it() {
    let drill = Drill::new(TWO_TRIALS);
    let (gate, worker) = drill.start_hanging();
    signal(&gate, libc::SIGKILL);
    finish(gate);
    assert!(
        wait_for(Duration::from_secs(5), || (!running(worker)).then_some(())).is_some(),
        "the worker outlived a SIGKILLed gate"
    );
}

/// A worker's child in a session of its own (a Python worker's helper under `setsid`) does not
/// outlive a gate killed outright either: the worker dies with the gate, its child by the guard.
#[test]
fn a_gate_killed_outright_takes_its_workers_children_with_it() {
    let drill = Drill::new(TWO_TRIALS);
    write_worker(
        &drill.path("stand-in-worker"),
        "setsid sleep 300 &\necho $! > \"$(dirname \"$0\")/child.pid\"\necho $$ > \"$(dirname \"$0\")/worker.pid\"\nexec sleep 60",
    );
    let (gate, worker) = drill.start_hanging();
    let child: u32 = fs::read_to_string(drill.path("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(running(child));
    signal(&gate, libc::SIGKILL);
    finish(gate);
    assert!(
        wait_for(Duration::from_secs(5), || {
            (!running(worker) && !running(child)).then_some(())
        })
        .is_some(),
        "the worker's child {child} outlived a SIGKILLed gate"
    );
}

#[test]
fn what_can_fail_without_a_trial_fails_before_the_first() {
    let drill = Drill::new(TWO_TRIALS);
    let nothing_prepared = |output: &Output, code: i32, says: &str| {
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!drill.path("data").exists(), "data was prepared: {stderr}");
    };
    fs::write(drill.path("a-file"), "").unwrap();
    let out_in_a_file = drill.path("a-file/out");
    let out = out_in_a_file.to_str().unwrap();
    let unwritable = drill.gate(&["--out", out]).output().unwrap();
    nothing_prepared(&unwritable, 4, "cannot write the reports folder");
    let evil = drill.gate(&["--runner", "../evil"]).output().unwrap();
    nothing_prepared(&evil, 2, "../evil");

    fs::create_dir_all(drill.path("baselines")).unwrap();
    fs::write(drill.path("baselines/r.yaml"), "schema_version: [\n").unwrap();
    let corrupt = drill.gate(&["--runner", "r"]).output().unwrap();
    nothing_prepared(&corrupt, 4, "r.yaml");
    let bless = drill
        .gate(&["bless", "--runner", "r", "--runs", "1"])
        .output()
        .unwrap();
    nothing_prepared(&bless, 4, "r.yaml");
    let bless = drill
        .gate(&["bless", "--runner", "ok", "--runs", "1", "--out", out])
        .output()
        .unwrap();
    nothing_prepared(&bless, 4, "cannot write the reports folder");
}

#[test]
fn a_mistyped_subcommand_is_an_error_and_leaves_the_last_reports() {
    let drill = Drill::new(TWO_TRIALS);
    let run = drill.gate(&[]).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let last = fs::read(drill.path("out/report.json")).unwrap();

    let typo = drill.gate(&["valdate"]).output().unwrap();
    let stderr = text(&typo.stderr);
    assert_eq!(typo.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("did you mean `gds-gate validate`?"),
        "{stderr}"
    );
    let unmatched = drill.gate(&["no-such-trial"]).output().unwrap();
    assert_eq!(unmatched.status.code(), Some(5));
    assert!(text(&unmatched.stderr).contains("matches none of the 2 trials"));
    assert_eq!(fs::read(drill.path("out/report.json")).unwrap(), last);
    assert_eq!(drill.report()["totals"]["passed"], 2);
}

/// Hostile text from every source a run prints (a worker's output, a file path from the suite, the
/// `python:` string) reaches the CI log with no line a runner would take for a workflow command,
/// and the step summary with no markup. The worker is a stand-in that prints the text and fails.
#[test]
fn hostile_text_reaches_the_ci_log_and_the_step_summary_inert() {
    let suite = "suite: hostile\npython: \"::error title=py::python\"\nscenarios:\n  - name: worker\n    files: { size: 1MiB, seed: 3 }\n    warmup: 0\n    repetitions: 1\n  - name: path\n    files: { path: \"missing\\n::add-mask::from-the-suite\" }\n";
    let drill = Drill::new(suite);
    let worker = drill.path("hostile-worker");
    // Its answer: a failure whose reason and fix are hostile too.
    let answer = serde_json::json!({
        "protocol": gds_model::protocol::PROTOCOL_VERSION,
        "measurement": null,
        "failure": {
            "reason": "<img src=x onerror=alert(1)>\n# heading<script>alert(1)</script>",
            "next": "x\n::add-mask::from-the-result",
        },
    });
    fs::write(drill.path("answer.json"), answer.to_string()).unwrap();
    write_worker(
        &worker,
        "printf '::stop-commands::pwned\\n  ::add-mask::from-the-worker\\n##[error]old form\\nline\\r::error title=x::after a CR\\n\\033[31mred\\n' >&2\ncp \"$(dirname \"$0\")/answer.json\" \"$5\"",
    );
    let step_summary = drill.path("step-summary.md");
    let output = drill
        .gate(&[])
        .env("GDS_GATE_WORKER", &worker)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .output()
        .unwrap();
    let log = text(&output.stdout) + &text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{log}");
    assert!(
        ["from-the-worker", "from-the-suite", "from-the-result",]
            .iter()
            .all(|text| log.contains(text)),
        "the hostile text should be shown, inert: {log}"
    );
    // The runner splits at LF and at a lone CR and trims leading whitespace before it parses.
    // The gate's own annotations parse as commands of their own, with the text escaped as data.
    let own = ["::error file=", "::warning file=", "::notice file="];
    for line in log.split(['\n', '\r']) {
        let line = line.trim_start();
        if own.iter().any(|form| line.starts_with(form)) {
            continue;
        }
        assert!(
            !line.starts_with("::"),
            "a workflow command got through: {line}"
        );
        assert!(
            !line.contains("##["),
            "an old-form command got through: {line}"
        );
    }
    // junit.xml: markup escaped and what XML cannot hold dropped (quick-junit's XmlString).
    let junit = fs::read_to_string(drill.path("out/junit.xml")).unwrap();
    assert!(
        junit.contains("from-the-worker")
            && !junit.contains("<script")
            && !junit.contains('\u{1b}'),
        "{junit}"
    );
    for summary in [
        fs::read_to_string(drill.path("out/summary.md")).unwrap(),
        fs::read_to_string(&step_summary).unwrap(),
    ] {
        assert!(
            !summary.contains("<img")
                && !summary.contains("<script")
                && !summary.contains("\n# heading"),
            "{summary}"
        );
        for trial in ["`hostile::worker`", "`hostile::path`"] {
            let row = summary
                .lines()
                .find(|line| line.starts_with(&format!("| {trial}")))
                .unwrap_or_else(|| panic!("{summary}"));
            assert!(row.ends_with(" |"), "the reason left its cell: {row}");
        }
    }
}

/// Ctrl-C before the first trial (here while its data is generated): no libtest summary that
/// reads "ok", exit 130, and the trial reported as not run.
#[test]
fn ctrl_c_before_the_first_trial_does_not_say_ok() {
    let drill = Drill::new(
        "suite: drill\nscenarios:\n  - name: read\n    files: { size: 128MiB, seed: 4 }\n    warmup: 0\n    repetitions: 1\n",
    );
    let gate = drill
        .gate(&[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let generating = wait_for(Duration::from_secs(30), || {
        fs::read_dir(drill.path("data"))
            .ok()?
            .flatten()
            .find(|entry| entry.file_name().to_string_lossy().contains(".partial-"))
    });
    assert!(generating.is_some(), "the data was not being generated");
    signal(&gate, libc::SIGINT);
    let output = finish(gate);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(!stdout.contains("test result: ok"), "{stdout}");
    let report = drill.report();
    assert_eq!(report["trials"][0]["status"], "ignored", "{report}");
    assert_eq!(
        report["trials"][0]["reason"],
        "not run: the gate was interrupted by SIGINT"
    );
}

/// A cgroup that caps reads from one block device, for one test (cgroup v2 `io.max`, else v1
/// `blkio.throttle.read_bps_device`); `None` where this host offers neither to this user.
struct ReadCap {
    dir: PathBuf,
}

impl ReadCap {
    /// A cap on the disk under `dir`; `None`, said on stderr, where this user cannot make one.
    fn under(dir: &std::path::Path, bytes_per_second: u64) -> Option<ReadCap> {
        use std::os::unix::fs::MetadataExt;
        let cap = ReadCap::new(fs::metadata(dir).unwrap().dev(), bytes_per_second);
        if cap.is_none() {
            eprintln!("skipped: cannot cap this disk's reads with a cgroup here (needs root)");
        }
        cap
    }

    fn new(device: u64, bytes_per_second: u64) -> Option<ReadCap> {
        let (major, minor) = (libc::major(device), libc::minor(device));
        let v2 = PathBuf::from("/sys/fs/cgroup");
        let (parent, file, rule) = if v2.join("cgroup.controllers").exists() {
            let enabled = fs::read_to_string(v2.join("cgroup.subtree_control")).ok()?;
            if !enabled.split_whitespace().any(|c| c == "io") {
                fs::write(v2.join("cgroup.subtree_control"), "+io").ok()?;
            }
            (
                v2,
                "io.max",
                format!("{major}:{minor} rbps={bytes_per_second}"),
            )
        } else {
            let v1 = PathBuf::from("/sys/fs/cgroup/blkio");
            (
                v1,
                "blkio.throttle.read_bps_device",
                format!("{major}:{minor} {bytes_per_second}"),
            )
        };
        let dir = parent.join(format!("gds-gate-test-{}", std::process::id()));
        fs::create_dir(&dir).ok()?;
        let cap = ReadCap { dir };
        fs::write(cap.dir.join(file), rule).ok()?;
        Some(cap)
    }

    /// `command`, started inside the cgroup (its children inherit it).
    fn wrap(&self, command: &Command) -> Command {
        let mut inside = Command::new("sh");
        inside
            .arg("-c")
            .arg("echo $$ > \"$0/cgroup.procs\" && exec \"$@\"")
            .arg(&self.dir)
            .arg(command.get_program())
            .args(command.get_args());
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => inside.env(key, value),
                None => inside.env_remove(key),
            };
        }
        inside
    }
}

impl Drop for ReadCap {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Ctrl-C while the gate itself reads at the start (its control file, O_DIRECT) from a disk the
/// cgroup io controller caps at 4 MB/s: honoured within 2 s, not when the read ends (16 s).
/// Skipped where this user cannot make such a cgroup.
#[test]
fn ctrl_c_during_the_gates_own_reads_on_a_throttled_disk_ends_it_within_two_seconds() {
    let drill = Drill::new(
        "suite: drill\nscenarios:\n  - name: read\n    files: { size: 1MiB, seed: 4 }\n    warmup: 0\n    repetitions: 1\n",
    );
    let Some(cap) = ReadCap::under(drill.dir.path(), 4 << 20) else {
        return;
    };
    let mut command = drill.gate(&[]);
    command.env("GDS_GATE_CONTROL_SIZE", "64MiB");
    let gate = cap
        .wrap(&command)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The control is a generated file of its own size: once it is complete, the gate reads it.
    let written = wait_for(Duration::from_secs(30), || {
        fs::read_dir(drill.path("data"))
            .ok()?
            .flatten()
            .find(|entry| {
                !entry.file_name().to_string_lossy().contains(".partial-")
                    && entry.metadata().is_ok_and(|m| m.len() == 64 << 20)
            })
    });
    assert!(written.is_some(), "the control file was not written");
    std::thread::sleep(Duration::from_secs(2));
    signal(&gate, libc::SIGINT);
    let stopping = Instant::now();
    let output = finish(gate);
    let took = stopping.elapsed();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        took < Duration::from_secs(2),
        "took {took:?} to stop\n{stderr}"
    );
}

/// Every report this test wrote matches the published schema.
impl Drop for Drill {
    fn drop(&mut self) {
        support::validate_reports(self.dir.path());
    }
}

/// A worker script for `GDS_GATE_WORKER`: probes (`worker --job …`) run in the real binary,
/// trials (`worker --spec S --result R`) run `body`.
fn write_worker(path: &std::path::Path, body: &str) {
    fs::write(
        path,
        format!("#!/bin/sh\ncase \"$2\" in --job) exec {GATE} \"$@\";; esac\n{body}\n"),
    )
    .unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The real worker, started by a script that runs `setup` first (probes skip it).
fn real_worker_with(drill: &Drill, setup: &str) -> PathBuf {
    let worker = drill.path("worker-with-setup");
    write_worker(&worker, &format!("{setup}\nexec {GATE} \"$@\""));
    worker
}

/// A hung worker's trial: exit 1, the terminal names where it hung, its bundle holds every
/// thread's kernel and user-space stack, and no process of it is left.
fn assert_hung_with_a_bundle(drill: &Drill, output: &Output, hung_in: &str) {
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("the worker hung in {hung_in} (")),
        "{stdout}"
    );
    let report = drill.report();
    let trial_dir = PathBuf::from(report["trials"][0]["worker"]["dir"].as_str().unwrap());
    let threads = fs::read_to_string(trial_dir.join("hang/threads.txt")).unwrap();
    let pid: u32 = threads
        .split_once("(pid ")
        .and_then(|(_, rest)| rest.split(')').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {threads}"));
    assert!(threads.contains(&format!(", in {hung_in}\n")), "{threads}");
    assert!(
        fs::read_to_string(trial_dir.join("hang/user-stacks.txt")).is_ok(),
        "no user-space stacks"
    );
    assert!(!running(pid), "the hung worker {pid} is still running");
}

/// A fake library that blocks: the worker runs with a `pread64` that never returns (preloaded,
/// it waits in `pause`),
/// as a library under test that hangs inside a read would. Skipped without a C compiler.
#[test]
fn a_worker_hung_in_a_blocking_library_leaves_a_bundle_and_fails() {
    let drill = Drill::new(TWO_TRIALS);
    let Some(library) = support::preload_library(
        &drill.path(""),
        "block",
        "#include <unistd.h>\n#include <sys/types.h>\nssize_t pread64(int fd, void *b, size_t n, off_t o) { for (;;) pause(); }\nssize_t pread(int fd, void *b, size_t n, off_t o) { for (;;) pause(); }\n",
    ) else {
        eprintln!("skipped: no C compiler (cc) to build the blocking library");
        return;
    };
    let worker = real_worker_with(&drill, &format!("export LD_PRELOAD={}", library.display()));
    let output = drill
        .gate(&["read[nthreads=1]", "--timeout", "3"])
        .env("GDS_GATE_WORKER", &worker)
        .env("GDS_GATE_CONTROL_SIZE", "1MiB")
        .output()
        .unwrap();
    assert_hung_with_a_bundle(&drill, &output, "pause");
}

/// A posix trial past its `--timeout` on a disk the cgroup io controller caps at a trickle
/// (4 MiB/s, a 64 MiB cold read: 16 s against a 3 s timeout; a slower trickle only makes the
/// read in flight at the kill take longer to end): the real worker, stuck in the kernel. Skipped
/// where this user cannot make such a cgroup.
#[test]
fn a_trial_hung_on_a_throttled_disk_leaves_a_bundle_and_fails() {
    let drill = Drill::new(
        "suite: drill\nscenarios:\n  - name: read\n    files: { size: 64MiB, seed: 5 }\n    cache: cold\n    warmup: 0\n    repetitions: 1\n",
    );
    let Some(cap) = ReadCap::under(drill.dir.path(), 4 << 20) else {
        return;
    };
    // Only the trial's worker is capped: the gate's own reads of the data (its checks, the
    // control) stay at the disk's rate.
    let cgroup_procs = cap.dir.join("cgroup.procs");
    let worker = real_worker_with(&drill, &format!("echo $$ > {}", cgroup_procs.display()));
    let output = drill
        .gate(&["--timeout", "3"])
        .env("GDS_GATE_WORKER", &worker)
        .env("GDS_GATE_CONTROL_SIZE", "1MiB")
        .output()
        .unwrap();
    assert_hung_with_a_bundle(&drill, &output, "pread64");
}
