//! Issue 15's hostile and clumsy inputs against the real gate binary: each must be refused with
//! the file, the line or the key and a fix, or fail its trial, and never pass, panic or fill the
//! disk. Two drills use stand-ins, labelled where they are built: a worker started under a memory
//! limit that cannot start its threads, and a `libcuda.so.1` that lacks the driver's functions.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const GATE: &str = env!("CARGO_BIN_EXE_gds-gate");

/// A scratch folder on the build disk (a cold read cannot drop the pages of a tmpfs).
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// `gds-gate ARGS` with its data, reports and baselines in `dir`: (exit code, stdout, stderr).
fn gate(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = gate_command(dir, args).output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let code = output.status.code().unwrap_or(-1);
    (code, text(&output.stdout), text(&output.stderr))
}

fn gate_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(GATE);
    command
        .args(args)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--baselines")
        .arg(dir.join("baselines"))
        .env("GDS_GATE_HISTORY", dir.join("history.jsonl"))
        // The runner's control at test size (256 MiB by default).
        .env("GDS_GATE_CONTROL_SIZE", "1MiB")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GDS_GATE_REQUIRE_GPU")
        .env_remove("GDS_GATE_SUITE")
        .env_remove("GDS_GATE_TIMEOUT");
    command
}

fn write_suite(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

/// Issue 15, case 1: `warmup: 4294967295, repetitions: 1` ran no pass and reported "ok".
#[test]
fn passes_that_would_overflow_stop_the_run_before_any_trial() {
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "wrap.yaml",
        "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    warmup: 4294967295\n    repetitions: 1\n",
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("wrap.yaml:4:5:") && stderr.contains("4294967296 passes per trial"),
        "{stderr}"
    );
    assert!(!stdout.contains(" ok"), "{stdout}");
}

/// Issue 15, case 4: a 0-byte file of the user's passed as "0.00 GB/s … ok".
#[test]
fn an_empty_user_file_fails_its_trial() {
    let dir = scratch();
    fs::write(dir.path().join("empty.bin"), b"").unwrap();
    let suite = write_suite(
        dir.path(),
        "empty.yaml",
        "scenarios:\n  - name: t\n    files: { path: empty.bin }\n    warmup: 0\n    repetitions: 1\n",
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("empty.bin` (scenario key `files.path`) is empty"),
        "{stdout}"
    );
}

/// Issue 15, case 12: the plan of a user's own file is known only at run time; one of a million
/// 1-byte reads fails its trial before the plan is built (a generated file's, in `validate`).
#[test]
fn a_plan_too_large_for_a_users_file_fails_its_trial_before_it_is_built() {
    let dir = scratch();
    fs::write(dir.path().join("mine.bin"), vec![1u8; 1 << 20]).unwrap();
    let suite = write_suite(
        dir.path(),
        "mine.yaml",
        "scenarios:\n  - name: t\n    files: { path: mine.bin }\n    pattern: { chunks: 1 }\n",
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("read plan: one pass would make 1048576 reads, at most 65536"),
        "{stdout}"
    );
    assert!(!dir.path().join("out/trials").exists());
}

/// Issue 15, case 14: the free-space check wrapped around to "needs 0 bytes" for a size near
/// 2^64, and generation went on to fill the disk.
#[test]
fn a_file_near_two_to_the_64_bytes_fails_for_want_of_space() {
    let dir = scratch();
    let max = u64::MAX.to_string();
    let suite = write_suite(
        dir.path(),
        "huge.yaml",
        &format!("scenarios:\n  - name: t\n    files: {{ size: {max} }}\n    task_size: {max}\n"),
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("(needs 16.00 EiB, "), "{stdout}");
    let data: Vec<_> = fs::read_dir(dir.path().join("data")).unwrap().collect();
    assert!(data.len() <= 1, "only the lock file may be there: {data:?}");
}

/// Issue 15, case 13: libtest-mimic panicked on names over ~65 530 characters (exit 101, no
/// report).
#[test]
fn a_trial_name_too_long_for_a_folder_stops_the_run_with_the_line() {
    let dir = scratch();
    let suite = write_suite(
        dir.path(),
        "long.yaml",
        &format!(
            "scenarios:\n  - name: {}\n    files: {{ size: 1MiB }}\n",
            "n".repeat(70_000)
        ),
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("long.yaml:2:1:") && stderr.contains("at most 200"),
        "{stderr}"
    );
}

/// Issue 15, case 15: the worker panicked starting 100 000 threads, and the gate blamed the stack
/// under test. The spec here skips validation (which now refuses it) and the worker runs under
/// `ulimit -v`, so that the host refuses the threads: a stand-in for a host out of threads.
#[test]
fn a_worker_refused_its_threads_answers_with_the_reason() {
    let dir = scratch();
    let file = dir.path().join("data.bin");
    fs::write(&file, vec![7u8; 4096]).unwrap();
    let suite = gds_model::scenario::parse(
        Path::new("s.yaml"),
        "scenarios:\n  - name: t\n    files: { size: 4KiB }\n    cache: warm\n    warmup: 0\n    repetitions: 1\n",
    )
    .unwrap();
    let mut trial = gds_model::scenario::expand(&suite).remove(0);
    trial.nthreads = 100_000;
    let planned = gds_model::plan::PlannedFile {
        path: file,
        size: 4096,
        seed: None,
        checksum: 0,
    };
    let plan = gds_model::plan::ReadPlan::new(vec![planned], &gds_model::scenario::Pattern::Whole);
    let spec = dir.path().join("spec.json");
    let spec_json = gds_model::protocol::WorkerSpec::new(trial, plan);
    fs::write(&spec, serde_json::to_string(&spec_json).unwrap()).unwrap();
    let result = dir.path().join("result.json");
    let status = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2000000 && exec \"$0\" worker --spec \"$1\" --result \"$2\"")
        .args([GATE.as_ref(), spec.as_os_str(), result.as_os_str()])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "the worker must answer, not panic");
    let answer: gds_model::protocol::WorkerResult =
        serde_json::from_str(&fs::read_to_string(&result).unwrap()).unwrap();
    let failure = answer.failure.expect("a failure");
    assert!(
        failure.reason.starts_with("cannot start reader thread "),
        "{failure:?}"
    );
    assert!(failure.reason.contains(" of 100000"), "{failure:?}");
    assert!(failure.next.contains("use fewer threads"), "{failure:?}");
}

/// Issue 15, case 17: `--timeout 0` was accepted (every trial timed out at once), and `--suite`
/// split a path at its commas.
#[test]
fn a_zero_timeout_is_refused_and_a_suite_path_is_taken_whole() {
    let dir = scratch();
    let (code, _, stderr) = gate(dir.path(), &["--timeout", "0", "--list"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--timeout"), "{stderr}");

    let suite = write_suite(
        dir.path(),
        "a,b.yaml",
        "\u{feff}suite: ab\nscenarios:\n  - name: t\n    files: { size: 1MiB }\n",
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap(), "--list"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("ab::t: test"), "{stdout}");
}

/// Issue 15, case 17: a `libcuda.so.1` without the driver's functions made cudarc panic in the
/// preflight. The library here is a **stand-in** built from one C function, found first through
/// `LD_LIBRARY_PATH`; without a C compiler the test says so and passes.
#[test]
fn a_libcuda_without_the_driver_functions_is_named_not_panicked_on() {
    let dir = scratch();
    let source = dir.path().join("stand_in_libcuda.c");
    fs::write(
        &source,
        "int cuDriverGetVersion(int *v) { *v = 13000; return 0; }\n",
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.path().join("libcuda.so.1"))
        .arg(&source)
        .status();
    if !built.is_ok_and(|status| status.success()) {
        eprintln!("skipped: no C compiler (`cc`) to build the stand-in libcuda.so.1");
        return;
    }
    let suite = write_suite(
        dir.path(),
        "gpu.yaml",
        "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    reader: [posix, h2d]\n    warmup: 0\n    repetitions: 1\n",
    );
    let output = gate_command(dir.path(), &["--suite", suite.to_str().unwrap()])
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stdout.contains("ignored (the NVIDIA driver library `libcuda.so.1` has no `cuInit`"),
        "{stdout}"
    );
}

/// `--data-dir` naming a regular file failed every trial (exit 1) with an error per file; it is
/// a setup error, named once before any trial runs.
#[test]
fn a_data_dir_that_is_a_file_is_a_setup_error_before_any_trial() {
    let dir = scratch();
    fs::write(dir.path().join("data"), b"not a folder").unwrap();
    let suite = write_suite(
        dir.path(),
        "s.yaml",
        "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    warmup: 0\n    repetitions: 1\n",
    );
    let (code, stdout, stderr) = gate(dir.path(), &["--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 4, "{stdout}\n{stderr}");
    let data = dir.path().join("data");
    assert!(
        stderr.contains(&format!(
            "error: --data-dir `{}` is a file, not a folder",
            data.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("GDS_GATE_DATA_DIR"), "{stderr}");
    assert!(!stdout.contains("test s::t"), "{stdout}");
    assert!(!dir.path().join("out/trials").exists());
    assert_eq!(fs::read(&data).unwrap(), b"not a folder");
    // `gen` prepares the same folder and stops the same way.
    let output = Command::new(GATE)
        .args(["gen", "--suite", suite.to_str().unwrap(), "--data-dir"])
        .arg(data.join("sub"))
        .env_remove("GDS_GATE_DATA_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(&format!("`{}` is a file, not a folder", data.display())),
        "{stderr}"
    );
}
