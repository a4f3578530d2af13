//! The real gate binary on small suites with the `posix` reader: generation, reading,
//! verification, reports, exit codes and the data cache. GPU trials are ignored on hosts without a
//! driver, which is what these tests check the wording of.

pub mod support;

use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::process::Command;

use support::{GATE, Run, SMALL, Scratch, pin_baseline};

fn has_nvidia_driver() -> bool {
    // The probe runs in a worker of the binary under test.
    gds_gate::job::set_worker_program(GATE.into());
    gds_gate::host::HostFacts::probe().gpu_unavailable.is_none()
}

#[test]
fn smoke_suite_passes_and_writes_well_formed_reports() {
    let scratch = Scratch::new();
    let run = scratch.gate(&["--suite", "scenarios/smoke.yaml"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("test [posix]  smoke::cold-read[reader=posix,nthreads=4]"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("GB/s median of 3, path host, checksum 0x"),
        "{run:?}"
    );

    let report = scratch.report();
    assert_eq!(report["schema_version"], 2);
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 16);
    assert_eq!(report["totals"]["passed"], 5);
    for trial in trials.iter().filter(|t| t["status"] == "passed") {
        let m = &trial["measurement"];
        assert_eq!(m["gbps"].as_array().unwrap().len(), 3, "{trial}");
        assert_eq!(m["integrity"]["bad_words"], 0);
        assert_eq!(
            m["integrity"]["checksum"],
            m["integrity"]["expected_checksum"]
        );
        assert!(m["median_gbps"].as_f64().unwrap() > 0.0);
        // The worker's exit is timed apart, inside its time.
        let worker = &trial["worker"];
        let exit = worker["after_answer_seconds"].as_f64().unwrap();
        assert!(
            exit >= 0.0 && exit < worker["seconds"].as_f64().unwrap(),
            "{worker}"
        );
    }
    let junit = fs::read_to_string(scratch.out().join("junit.xml")).unwrap();
    assert!(
        junit.starts_with("<?xml") && junit.contains("<testsuite name=\"smoke\" tests=\"16\""),
        "{junit}"
    );
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("| `smoke::multi-file` | ok |"),
        "{summary}"
    );

    if !has_nvidia_driver() {
        assert_eq!(report["totals"]["ignored"], 11);
        assert!(
            run.stdout
                .contains("ignored (no NVIDIA driver (libcuda.so.1 not found))"),
            "{run:?}"
        );
        assert!(
            run.stderr.contains("the GPU part of the gate did not run"),
            "{run:?}"
        );
        assert!(summary.contains("the GPU part of the gate did not run"));
    }
}

#[test]
fn cached_files_are_reused_and_regenerated_after_a_change() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let suite = suite.to_str().unwrap();
    let first = scratch.gate(&["--suite", suite]);
    assert_eq!(first.code, 0, "{first:?}");
    assert!(first.stderr.contains("data: generated"), "{first:?}");

    let second = scratch.gate(&["--suite", suite]);
    assert_eq!(second.code, 0, "{second:?}");
    // Reused data is the quiet, usual case: report.json says it.
    assert!(!second.stderr.contains("data:"), "{second:?}");
    assert_eq!(scratch.report()["data"][0]["action"], "reused");

    // Writing to the file changes its mtime: the cache must not trust it any more.
    let file = scratch.data().join("gds-gate-s5-3145728.bin");
    fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .write_at(b"X", 12345)
        .unwrap();
    let third = scratch.gate(&["--suite", suite]);
    assert_eq!(third.code, 0, "{third:?}");
    assert!(third.stderr.contains("data: generated"), "{third:?}");
}

#[test]
fn corruption_that_slips_past_the_cache_fails_the_trial_at_its_offset() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let suite = suite.to_str().unwrap();
    assert_eq!(scratch.gate(&["--suite", suite]).code, 0);
    let (file, offset) = damage_unseen(&scratch, 5, 3 << 20, 0);

    let run = scratch.gate(&["--suite", suite]);
    assert_eq!(run.code, 1, "{run:?}");
    let expected = format!(
        "first wrong byte at offset {offset} of `{}`",
        file.display()
    );
    assert!(run.stdout.contains(&expected), "{expected}\n{run:?}");
    assert!(run.stdout.contains("scenario: `read` at "), "{run:?}");
    // The worker read the disk again around the byte: the file is damaged, not the read path.
    let damaged = format!("first wrong at offset {offset}): the data file is damaged");
    assert!(run.stdout.contains(&damaged), "{damaged}\n{run:?}");
    let report = scratch.report();
    assert_eq!(report["trials"][0]["status"], "failed");
    assert_eq!(
        report["trials"][0]["measurement"]["integrity"]["first_bad"]["file_offset"],
        offset
    );
}

/// The default suite's `odd-offsets` trial through the posix reader, as a CPU host runs it: reads
/// at offsets, lengths and buffer offsets off every 4 KiB boundary pass, and a byte damaged in the
/// file's short tail is named by its offset.
#[test]
fn odd_offsets_pass_and_a_wrong_byte_in_the_tail_is_named_by_its_offset() {
    let scratch = Scratch::new();
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/default.yaml");
    let args = [
        "--suite",
        suite,
        "--exact",
        "default::odd-offsets[reader=posix]",
    ];
    let clean = scratch.gate(&args);
    assert_eq!(clean.code, 0, "{clean:?}");
    assert_eq!(scratch.report()["totals"]["passed"], 1, "{clean:?}");

    // The scenario's file: 16 MiB + 4099 bytes in reads of 1060919, so the tail starts here.
    let (size, chunk) = (16_781_315, 1_060_919);
    let tail = size / chunk * chunk;
    let (file, offset) = damage_unseen(&scratch, 13, size, tail);
    assert!(offset % 4096 != 0 && offset < size);
    let run = scratch.gate(&args);
    assert_eq!(run.code, 1, "{run:?}");
    let expected = format!(
        "first wrong byte at offset {offset} of `{}`",
        file.display()
    );
    assert!(run.stdout.contains(&expected), "{expected}\n{run:?}");
}

/// Flips a byte of the generated file (`seed`, `size`) at or after `from`, outside the
/// spot-checked blocks; restores the mtime and makes the sidecar vouch for the new ctime, as
/// damage on the disk that the file system never saw would: the file then looks like the cached
/// one, so only the read verification can notice. Returns the file and the byte's offset.
fn damage_unseen(scratch: &Scratch, seed: u64, size: u64, from: u64) -> (PathBuf, u64) {
    let file = scratch.data().join(format!("gds-gate-s{seed}-{size}.bin"));
    let spots = gds_gate::data::spot_check_offsets(seed, size);
    let offset = (from..size)
        .step_by(4096)
        .find(|block| !spots.contains(block))
        .unwrap()
        + 1001;
    let handle = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .unwrap();
    let mtime = handle.metadata().unwrap().modified().unwrap();
    let mut byte = [0u8];
    handle.read_at(&mut byte, offset).unwrap();
    handle.write_at(&[byte[0] ^ 0x40], offset).unwrap();
    handle.set_modified(mtime).unwrap();
    drop(handle);
    let sidecar = scratch
        .data()
        .join(format!("gds-gate-s{seed}-{size}.bin.id.json"));
    let mut identity: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&sidecar).unwrap()).unwrap();
    let meta = fs::metadata(&file).unwrap();
    identity["ctime_ns"] = (meta.ctime() * 1_000_000_000 + meta.ctime_nsec()).into();
    fs::write(&sidecar, identity.to_string()).unwrap();
    (file, offset)
}

/// A pass read through a 1 MiB window of an 8 MiB file checksums as the whole buffer does, the
/// report says which mode ran and how much memory it took, and a damaged byte in a late window
/// is named at its file offset.
#[test]
fn a_windowed_pass_verifies_like_the_whole_buffer_and_names_a_bad_byte() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: stream\nscenarios:\n  - name: read\n    files: { size: 8MiB, seed: 6 }\n    window: [whole, 1MiB]\n    repetitions: 2\n",
    );
    let suite = suite.to_str().unwrap();
    let run = scratch.gate(&["--suite", suite]);
    assert_eq!(run.code, 0, "{run:?}");
    let report = scratch.report();
    let m = |i: usize| report["trials"][i]["measurement"].clone();
    assert_eq!(report["trials"][0]["name"], "stream::read[window=whole]");
    assert_eq!(m(0)["window"], serde_json::Value::Null);
    assert_eq!(m(1)["window"], 1 << 20);
    assert_eq!(m(0)["integrity"]["checksum"], m(1)["integrity"]["checksum"]);
    assert_eq!(
        m(1)["integrity"]["checksum"],
        m(1)["integrity"]["expected_checksum"]
    );
    for i in 0..2 {
        assert!(m(i)["memory"]["host_rss_bytes"].as_u64().unwrap() > 1 << 20);
        assert_eq!(m(i)["memory"]["device_bytes"], serde_json::Value::Null);
    }
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(summary.contains("### Memory"), "{summary}");
    assert!(
        summary.contains("| `stream::read[window=1MiB]` | window 1.00 MiB | 8.00 MiB |"),
        "{summary}"
    );

    let (file, offset) = damage_unseen(&scratch, 6, 8 << 20, 5 << 20);
    let run = scratch.gate(&["--suite", suite]);
    assert_eq!(run.code, 1, "{run:?}");
    let expected = format!(
        "first wrong byte at offset {offset} of `{}`",
        file.display()
    );
    assert_eq!(
        run.stdout.matches(&expected).count(),
        2,
        "{expected}\n{run:?}"
    );
    let report = scratch.report();
    for i in 0..2 {
        let bad = &report["trials"][i]["measurement"]["integrity"]["first_bad"];
        assert_eq!(bad["file_offset"], offset);
        assert_eq!(
            bad["buffer_offset"], offset,
            "one file: the pass's offset is the file's"
        );
    }
}

#[test]
fn a_generation_killed_mid_write_is_regenerated_by_the_next_run() {
    let scratch = Scratch::new();
    let suite = scratch.suite("suite: big\nscenarios:\n  - name: read\n    files: { size: 768MiB, seed: 9 }\n    repetitions: 1\n    warmup: 0\n");
    let mut child = Command::new(GATE)
        .args(["gen", "--suite", suite.to_str().unwrap(), "--data-dir"])
        .arg(scratch.data())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let partial = || {
        fs::read_dir(scratch.data())
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().contains(".partial-"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !partial() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(partial(), "the generation never showed its temporary file");
    child.kill().unwrap();
    child.wait().unwrap();
    let final_name = scratch.data().join("gds-gate-s9-805306368.bin");
    assert!(
        !final_name.exists()
            || !scratch
                .data()
                .join("gds-gate-s9-805306368.bin.id.json")
                .exists(),
        "a killed generation left a file that looks valid"
    );

    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("data: generated"), "{run:?}");
    let leftovers: Vec<_> = fs::read_dir(scratch.data())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".partial-"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary files left behind: {leftovers:?}"
    );
}

#[test]
fn exit_codes_say_what_happened() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let suite = suite.to_str().unwrap();

    let nothing = scratch.gate(&["--suite", suite, "no-such-trial"]);
    assert_eq!(nothing.code, 5, "{nothing:?}");
    assert!(
        nothing.stderr.contains("matches none of the 1 trials"),
        "{nothing:?}"
    );

    let bad = scratch.suite("scenarios:\n  - name: a\n    files: { size: 4GB }\n");
    let bad = scratch.gate(&["--suite", bad.to_str().unwrap()]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("suite.yaml:3:") && bad.stderr.contains("did you mean `GiB`?"),
        "{bad:?}"
    );

    let listed = scratch.gate(&[
        "--suite",
        "scenarios/smoke.yaml",
        "--list",
        "--format",
        "terse",
    ]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(
        listed.stdout.lines().all(|line| line.ends_with(": test")),
        "{listed:?}"
    );
    assert_eq!(listed.stdout.lines().count(), 16);
}

#[test]
fn gpu_trials_fail_under_require_gpu_when_they_cannot_run() {
    let scratch = Scratch::new();
    let suite = scratch.suite("scenarios:\n  - name: gpu\n    files: { size: 1MiB }\n    reader: [posix, cufile]\n    repetitions: 1\n");
    let run = scratch.gate(&["--suite", suite.to_str().unwrap(), "--require-gpu"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("GPU trial could not run"), "{run:?}");
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn validate_checks_files_without_running() {
    let scratch = Scratch::new();
    let good = scratch.suite(SMALL);
    let run = scratch.gate_plain(&["validate", good.to_str().unwrap(), "scenarios/smoke.yaml"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("(1 scenarios, 1 trials)"), "{run:?}");
    assert!(!scratch.data().exists(), "validate must not generate data");
    let typo = scratch.path("typo.yaml");
    fs::write(
        &typo,
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    repetitons: 3\n",
    )
    .unwrap();
    let run = scratch.gate_plain(&["validate", typo.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("typo.yaml:4:5:")
            && run.stderr.contains("did you mean the key `repetitions`?"),
        "{run:?}"
    );
}

#[test]
fn bless_writes_a_baseline_that_the_next_run_is_judged_against_and_refuses_in_ci() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let suite = suite.to_str().unwrap();

    let bless = |ci: bool| {
        let mut command = Command::new(GATE);
        command
            .args([
                "bless",
                "--interval",
                "0",
                "--suite",
                suite,
                "--runner",
                "ci-box",
                "--baselines",
            ])
            .arg(scratch.path("baselines"))
            .arg("--data-dir")
            .arg(scratch.data())
            .arg("--out")
            .arg(scratch.out())
            .env("GDS_GATE_HISTORY", scratch.history())
            .env("GDS_GATE_CONTROL_SIZE", "1MiB")
            .env_remove("GITHUB_ACTIONS");
        if ci {
            command.env("CI", "true");
        } else {
            command.env_remove("CI");
        }
        Run::from(command.output().unwrap())
    };

    let refused = bless(true);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("refusing to write baselines in CI"),
        "{refused:?}"
    );
    assert!(!scratch.path("baselines/ci-box.yaml").exists());

    let blessed = bless(false);
    assert_eq!(blessed.code, 0, "{blessed:?}");
    assert!(blessed.stdout.contains("creating:"), "{blessed:?}");
    let baseline = fs::read_to_string(scratch.path("baselines/ci-box.yaml")).unwrap();
    assert!(baseline.contains("small::read"), "{baseline}");
    assert!(
        baseline.contains("control:\n  size: 1048576\n  disk_runs:"),
        "the runner's control is blessed with the trials: {baseline}"
    );

    // A bless says one line per blessed run, then the diff; the runs' trial lines go to logs.
    // Without --runs it takes 6, and one more (up to 10) each time it says a trial's spread
    // hides a 20% drop: this host's spread decides how many.
    let count = |start: &str| {
        blessed
            .stderr
            .lines()
            .filter(|l| l.starts_with(start))
            .count()
    };
    let (runs, grown) = (
        count("bless: run "),
        count("bless: small::read cannot see a 20% drop"),
    );
    assert!((6..=10).contains(&runs) && runs == 6 + grown, "{blessed:?}");
    assert!(!blessed.stdout.contains("test [posix]"), "{blessed:?}");
    assert!(scratch.out().join("bless-run-6.log").exists());

    let judged = scratch.gate(&["--suite", suite, "--runner", "ci-box"]);
    assert!(judged.code == 0 || judged.code == 3, "{judged:?}");
    let report = scratch.report();
    let confirmed = report["trials"][0]["confirmations"]
        .as_array()
        .is_some_and(|runs| !runs.is_empty());
    if judged.code == 0 {
        // A clean run: libtest's lines for its one trial, then a line each for the baseline
        // and the reports, and no warning per trial. Not counted: the run's `control:` line,
        // said when the runner starts below its blessed level, and a `progress:` line of a wait
        // for the runner before a confirmation (on a shared host, whenever another job keeps it
        // busier than at bless). A first run that looked slower on a host busy with the other
        // tests and was confirmed away adds one line, its warning, by design.
        let runner = judged
            .stderr
            .lines()
            .filter(|l| l.starts_with("control: ") || l.starts_with("progress: waiting"))
            .count();
        assert!(runner <= 2, "{judged:?}");
        let lines = judged.stdout.lines().count() + judged.stderr.lines().count() - runner;
        assert!(
            lines <= 10 + usize::from(confirmed),
            "{lines} lines: {judged:?}"
        );
        let warnings: Vec<&str> = judged
            .stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .collect();
        let confirmed_away = warnings.len() == 1 && warnings[0].contains(": not slower: ");
        assert!(
            warnings.is_empty() || (confirmed && confirmed_away),
            "{judged:?}"
        );
    }
    assert_eq!(report["runner"], "ci-box");
    assert!(
        report["baseline"]["trials"][0]["trial"] == "small::read",
        "{}",
        report["baseline"]
    );
    assert!(scratch.history().exists());
    assert!(!scratch.out().join("history.jsonl").exists());

    // A baseline at 1000 GB/s: every run of the trial is a confirmed regression, shown as a
    // failure everywhere a user looks, and exit 3, not 1.
    pin_baseline(&scratch.path("baselines/ci-box.yaml"), 1000.0);
    let slower = scratch.gate(&[
        "--suite",
        suite,
        "--runner",
        "ci-box",
        "--confirm-delay",
        "0",
        "--runner-wait",
        "0",
    ]);
    assert_eq!(slower.code, 3, "{slower:?}");
    let line = slower
        .stdout
        .lines()
        .find(|l| l.starts_with("test [posix] small::read"));
    assert!(line.is_some_and(|l| l.ends_with("FAILED")), "{slower:?}");
    assert!(
        slower
            .stdout
            .contains("test result: FAILED. 0 passed; 1 failed")
            && slower
                .stdout
                .contains("small::read: slower than its baseline by"),
        "{slower:?}"
    );
    let report = scratch.report();
    assert_eq!(report["totals"]["slower"], 1, "{}", report["totals"]);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["totals"]);
    let trial = &report["trials"][0];
    // The outcome that failed the build is the trial's status; its own checks passed.
    assert_eq!(trial["status"], "slower", "{trial}");
    assert_eq!(trial["checks"], "passed", "{trial}");
    assert_eq!(
        trial["confirmations"].as_array().map(Vec::len),
        Some(1),
        "the slow run is confirmed by one more: {trial}"
    );
    assert_eq!(
        trial["runner_checks"].as_array().map(Vec::len),
        Some(1),
        "the runner's control is read before the confirmation: {trial}"
    );
    assert!(report["control"]["disk_gbps"].is_array(), "{report}");
    assert!(
        scratch
            .out()
            .join("trials/confirmation-1")
            .read_dir()
            .is_ok_and(|mut dir| dir.next().is_some())
    );
    let junit = fs::read_to_string(scratch.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains("failures=\"1\"") && junit.contains("type=\"regression\""),
        "{junit}"
    );
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(
        summary.starts_with("## gds-gate: SLOWER than the baseline")
            && summary.contains("| `small::read` | **SLOWER** |"),
        "{summary}"
    );

    // The trial renamed away: the baseline's trial is missing, failing on a line of its own.
    let renamed = scratch.suite(&SMALL.replace("name: read", "name: renamed"));
    let missing = scratch.gate(&["--suite", renamed.to_str().unwrap(), "--runner", "ci-box"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    let line = missing
        .stdout
        .lines()
        .find(|l| l.starts_with("test [missing] small::read"));
    assert!(line.is_some_and(|l| l.ends_with("FAILED")), "{missing:?}");
    let report = scratch.report();
    assert_eq!(report["totals"]["missing"], 1, "{}", report["totals"]);
    assert_eq!(report["totals"]["passed"], 1, "{}", report["totals"]);
}

/// A filter matches the reader shown in brackets too (`[posix] smoke::multi-file`): the data of
/// every trial libtest then runs must have been prepared.
#[test]
fn a_filter_on_the_reader_runs_with_its_data_prepared() {
    let scratch = Scratch::new();
    let run = scratch.gate(&["--suite", "scenarios/smoke.yaml", "posix"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("smoke::multi-file ") && run.stdout.contains("5 passed"),
        "{run:?}"
    );
}

#[test]
fn a_trial_leaves_no_page_cache_for_the_next_one() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: warm\nscenarios:\n  - name: read\n    files: { size: 3MiB, seed: 6 }\n    cache: warm\n    repetitions: 2\n",
    );
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    // A warm trial reads through the page cache and keeps it; the gate drops it afterwards.
    let file = fs::File::open(scratch.data().join("gds-gate-s6-3145728.bin")).unwrap();
    let resident = gds_model::cache::resident_fraction(&file, 3 << 20).unwrap();
    assert!(resident < 0.05, "{resident} of the file still cached");
}

/// `op: write` and `roundtrip` with the posix writer: the files are written under their own
/// names (no generated data is made for them), verified on the disk or read back, the write
/// section's throughput and cost are reported like a read's with `fsync` apart, and the written
/// files are removed after the trial.
#[test]
fn posix_write_and_roundtrip_trials_write_verify_and_report_fsync_apart() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: w\nscenarios:\n  - name: ckpt\n    files: { size: 3MiB, seed: 9, count: 2 }\n    op: [write, roundtrip]\n    nthreads: 3\n    task_size: 1MiB\n    pattern: { chunks: 1000000 }\n    warmup: 1\n    repetitions: 2\n",
    );
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    for (trial, extra) in [("write", ""), ("roundtrip", ", read back ")] {
        let line = run
            .stdout
            .lines()
            .find(|line| line.contains(&format!("w::ckpt[op={trial}]")))
            .unwrap_or_else(|| panic!("{run:?}"));
        assert!(
            line.contains("GB/s median of 2 written, fsync ")
                && line.contains(extra)
                && line.contains("path host"),
            "{line}"
        );
    }
    let report = scratch.report();
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    for trial in trials {
        assert_eq!(trial["status"], "passed", "{trial}");
        let m = &trial["measurement"];
        assert_eq!(m["path"], "host");
        assert_eq!(m["gbps"].as_array().unwrap().len(), 2, "{trial}");
        assert_eq!(m["costs"].as_array().unwrap().len(), 2, "{trial}");
        assert_eq!(m["integrity"]["method"], "exact");
        assert_eq!(m["integrity"]["bad_words"], 0);
        assert_eq!(
            m["integrity"]["checksum"],
            m["integrity"]["expected_checksum"]
        );
        let names: Vec<&str> = m["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert!(
            names[0].ends_with("data/gds-gate-written-s9-3145728.bin")
                && names[1].ends_with("data/gds-gate-written-s10-3145728.bin"),
            "{names:?}"
        );
        let write = &m["write"];
        assert_eq!(write["fsync_seconds"].as_array().unwrap().len(), 2);
        let roundtrip = trial["spec"]["op"] == "roundtrip";
        assert_eq!(
            write["verify_read_seconds"].as_array().unwrap().len(),
            if roundtrip { 0 } else { 2 },
            "{trial}"
        );
        assert_eq!(
            write["read_back_gbps"].as_array().map_or(0, Vec::len),
            if roundtrip { 2 } else { 0 },
            "{trial}"
        );
    }
    let left: Vec<String> = fs::read_dir(scratch.data())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".bin") && *name != control_file_name())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(
        left,
        [
            "gds-gate-written-s10-3145728.bin",
            "gds-gate-written-s9-3145728.bin"
        ],
        "no generated data for writing trials, and the written files are kept"
    );
    // The next run writes over what this one left, blanked first.
    let again = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{again:?}");
}

/// `op: load` with the posix reader: every pass opens the files again, the load's time includes
/// the opening, and the first byte and the opening are figures of their own per measured pass.
#[test]
fn a_posix_load_reports_its_first_byte_and_opening_per_pass_and_blesses_them() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: l\nscenarios:\n  - name: shards\n    files: { size: 2MiB, seed: 21, count: 4 }\n    op: load\n    nthreads: 2\n    task_size: 1MiB\n    warmup: 1\n    repetitions: 3\n",
    );
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|line| line.contains("l::shards"))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        line.contains(" loaded, first byte ") && line.contains(", open "),
        "{line}"
    );
    let report = scratch.report();
    let m = &report["trials"][0]["measurement"];
    assert_eq!(report["trials"][0]["status"], "passed", "{report}");
    let figures = |key: &str| -> Vec<f64> {
        m["load"][key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {m}"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (seconds, first, open) = (
        m["seconds"].as_array().unwrap(),
        figures("first_byte_seconds"),
        figures("open_seconds"),
    );
    assert_eq!((seconds.len(), first.len(), open.len()), (3, 3, 3), "{m}");
    assert!(
        m["load"].get("register_seconds").is_none(),
        "posix registers no buffer: {m}"
    );
    for ((load, first), open) in seconds.iter().zip(&first).zip(&open) {
        let load = load.as_f64().unwrap();
        assert!(
            0.0 < *open && open < first && *first < load,
            "{open} {first} {load}"
        );
    }
    assert_eq!(m["integrity"]["bad_words"], 0);

    // Blessed, the steps are in the baseline and the next run is compared with it (whether two
    // blessed runs of 8 MiB on a busy test host call it as fast is noise: the baseline crate's
    // tests judge the steps).
    let control = [("GDS_GATE_CONTROL_SIZE", "1MiB")];
    let suite = suite.to_str().unwrap();
    let args = ["--suite", suite, "--runner", "r"];
    let blessed = scratch.gate_with(
        &[&["bless", "--runs", "2", "--interval", "0"], &args[..]].concat(),
        &control,
    );
    assert_eq!(blessed.code, 0, "{blessed:?}");
    let baseline = fs::read_to_string(scratch.path("baselines/r.yaml")).unwrap();
    assert!(
        baseline.contains("load_runs:") && baseline.contains("first_byte_seconds:"),
        "{baseline}"
    );
    let judged = scratch.gate_with(&[&args[..], &["--confirm", "0"]].concat(), &control);
    assert!([0, 3].contains(&judged.code), "{judged:?}");
    let report = scratch.report();
    let kind = report["baseline"]["trials"][0]["judgement"]["kind"].clone();
    assert!(
        [
            "pass",
            "faster",
            "regression",
            "load-costlier",
            "cpu-costlier"
        ]
        .contains(&kind.as_str().unwrap_or("")),
        "{report}"
    );
}

/// `ranks: 4` with the posix reader: four workers at once, each reading and verifying its own
/// file in its own folder; the trial's figures are all ranks' bytes over the slowest rank's time,
/// and each rank's are in the report, on the trial's line and in summary.md.
#[test]
fn four_posix_ranks_read_their_own_files_at_once_and_are_each_reported() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: k\nscenarios:\n  - name: ranks\n    files: { size: 2MiB, seed: 41, count: 4 }\n    ranks: 4\n    nthreads: 2\n    task_size: 1MiB\n    warmup: 0\n    repetitions: 2\n",
    );
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|line| line.contains("k::ranks[ranks=4]"))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        line.contains(" over 4 ranks (rank 0 ") && line.contains("; slowest rank "),
        "{line}"
    );
    let report = scratch.report();
    let trial = &report["trials"][0];
    assert_eq!(trial["status"], "passed", "{report}");
    let m = &trial["measurement"];
    assert_eq!(m["bytes_per_repetition"], 4 * 2 * 1024 * 1024);
    let ranks = m["per_gpu"].as_array().unwrap();
    assert_eq!(ranks.len(), 4, "{m}");
    let mut files = std::collections::BTreeSet::new();
    for (rank, result) in ranks.iter().enumerate() {
        assert_eq!(result["rank"], rank, "{result}");
        assert_eq!(result["status"], "passed", "{result}");
        let own = &result["measurement"];
        assert_eq!(own["bytes_per_repetition"], 2 * 1024 * 1024, "{own}");
        assert_eq!(own["integrity"]["bad_words"], 0);
        assert_eq!(own["files"].as_array().unwrap().len(), 1, "{own}");
        files.insert(own["files"][0]["path"].as_str().unwrap().to_owned());
        let folder = result["worker"]["dir"].as_str().unwrap();
        assert!(folder.ends_with(&format!("rank{rank}")), "{folder}");
    }
    assert_eq!(files.len(), 4, "each rank reads its own file: {files:?}");
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("### Per GPU and rank")
            && summary.contains("| `k::ranks[ranks=4]` | rank 3 | ok |"),
        "{summary}"
    );
}

/// `writers: 1` beside reading ranks, the KV-cache shape: one rank writes copies of its files
/// and reads them back while the others read; every written block is read back and verified,
/// and the one reading rank's latency percentiles are the trial's.
#[test]
fn a_writing_rank_beside_a_reading_one_is_verified_and_the_reads_latency_is_the_trials() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: m\nscenarios:\n  - name: kv\n    files: { size: 4MiB, seed: 51, count: 2 }\n    ranks: 2\n    writers: 1\n    nthreads: 2\n    task_size: 256KiB\n    warmup: 0\n    repetitions: 2\n",
    );
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|line| line.contains("m::kv[ranks=2,writers=1]"))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(line.contains("rank 1 (roundtrip) "), "{line}");
    let report = scratch.report();
    let trial = &report["trials"][0];
    assert_eq!(trial["status"], "passed", "{report}");
    let m = &trial["measurement"];
    let (reader, writer) = (&m["per_gpu"][0], &m["per_gpu"][1]);
    assert!(reader.get("op").is_none(), "{reader}");
    assert_eq!(writer["op"], "roundtrip", "{writer}");
    let written = writer["measurement"]["files"][0]["path"].as_str().unwrap();
    assert!(written.contains("gds-gate-written-s52-"), "{written}");
    assert_eq!(writer["measurement"]["integrity"]["bad_words"], 0);
    assert!(
        writer["measurement"]["write"].is_object(),
        "the rank wrote: {writer}"
    );
    // 16 reads of 256 KiB per pass: the reading rank's percentiles, p95 among them.
    let latency = &m["latency"];
    assert_eq!(latency, &reader["measurement"]["latency"], "{m}");
    assert_eq!(latency["calls"], 2 * 16, "{latency}");
    for key in ["p50_us", "p95_us", "p99_us"] {
        assert!(latency[key].as_f64().unwrap() > 0.0, "{key}: {latency}");
    }
    assert_eq!(
        m["read_latency"]["p99_us"].as_array().unwrap().len(),
        2,
        "{m}"
    );

    // Blessed, the baseline keeps every pass's percentiles, to judge the next run by them.
    let blessed = scratch.gate_with(
        &[
            "bless",
            "--runs",
            "2",
            "--interval",
            "0",
            "--suite",
            suite.to_str().unwrap(),
            "--runner",
            "r",
        ],
        &[("GDS_GATE_CONTROL_SIZE", "1MiB")],
    );
    assert_eq!(blessed.code, 0, "{blessed:?}");
    let baseline = fs::read_to_string(scratch.path("baselines/r.yaml")).unwrap();
    assert!(
        baseline.contains("latency_runs:") && baseline.contains("p95_us:"),
        "{baseline}"
    );
}

/// On a host that runs only CPU trials, the doctor is one line before the trials (every GPU
/// finding is expected there); `--doctor` lists them all. Plots and charts only for what ran.
#[test]
fn a_cpu_only_host_gets_one_doctor_line_and_plots_only_of_what_ran() {
    if has_nvidia_driver() {
        eprintln!("skipped: this host has a GPU, so the doctor lists its findings in full");
        return;
    }
    let scratch = Scratch::new();
    let doctor_lines = |run: &Run| {
        run.stderr
            .lines()
            .filter(|l| l.starts_with("doctor:"))
            .count()
    };
    let short = scratch.gate(&["--suite", "scenarios/smoke.yaml", "chunked"]);
    assert_eq!(short.code, 0, "{short:?}");
    assert_eq!(doctor_lines(&short), 1, "{short:?}");
    assert!(
        short
            .stderr
            .contains("doctor: CPU trials only on this host")
            && short.stderr.contains("--doctor"),
        "{short:?}"
    );
    assert!(!scratch.report()["doctor"].as_array().unwrap().is_empty());
    // Only the trial that ran has a plot and a chart; the ignored cufile one has neither.
    let plots: Vec<String> = fs::read_dir(scratch.out().join("plots"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(plots.len(), 1, "{plots:?}");
    assert!(plots[0].contains("reader_posix"), "{plots:?}");
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(summary.contains("```mermaid\nxychart-beta"), "{summary}");
    assert!(!summary.contains("reader_cufile"), "{summary}");
    // Reports, like the history and baselines, are for everyone on a shared host to read.
    for file in ["report.json", "junit.xml", "summary.md"]
        .map(|name| scratch.out().join(name))
        .into_iter()
        .chain([scratch.history()])
    {
        let mode = fs::metadata(&file).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o644, "{}: {mode:o}", file.display());
    }
    let full = scratch.gate(&["--suite", "scenarios/smoke.yaml", "chunked", "--doctor"]);
    assert_eq!(full.code, 0, "{full:?}");
    assert!(doctor_lines(&full) > 1, "{full:?}");
}

/// The runner's control file at the size the tests use (the one generated file every run leaves).
fn control_file_name() -> String {
    gds_gate::data::GeneratedFile {
        seed: gds_gate::control::SEED,
        size: 1 << 20,
    }
    .file_name()
}

#[test]
fn a_budget_keeps_the_trials_that_fit_and_says_what_it_left_out() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: b\nbudget: 1h\ndefaults: { files: { size: 1MiB }, warmup: 0, repetitions: 1 }\nscenarios:\n  - name: one\n  - name: two\n  - name: three\n",
    );
    let suite = suite.to_str().unwrap();
    let run = scratch.gate(&["--suite", suite]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("budget 1h: all 3 trials, about 1 s (3 estimated at 1 GB/s with no history of them here)"),
        "{run:?}"
    );
    // The history now times each trial, baseline or none.
    let run = scratch.gate(&["--suite", suite]);
    assert!(run.stderr.contains("(by this runner's history)"), "{run:?}");
    // A budget below the first trial's time leaves every trial out, before the first starts:
    // nothing ran, which is not a pass.
    let run = scratch.gate(&["--suite", suite, "--budget", "1ms"]);
    assert_eq!(run.code, 5, "{run:?}");
    assert!(
        run.stderr
            .contains("budget 1ms: none of the 3 trials fits;")
            && run.stderr.contains("left out 3 trial(s)")
            && run
                .stderr
                .contains("b::one, b::two, b::three; they run with a larger --budget"),
        "{run:?}"
    );
    let report = scratch.report();
    assert_eq!(report["totals"]["filtered_out"], 3, "{report}");
    assert_eq!(report["totals"]["passed"], 0, "{report}");
    assert!(
        report["notes"].as_array().unwrap().iter().any(|note| note
            .as_str()
            .unwrap()
            .starts_with("budget 1ms: left out 3 trial(s)")),
        "{report}"
    );
}

/// A posix worker sizes its buffer by the host memory available as it starts, and starts in
/// milliseconds: it is never started beside another worker's exit, even a slow one. The worker
/// is a **stand-in** for a long exit: the real one, run by a shell script that sleeps 0.3 s
/// after it. (GPU trials are started ahead: `commands::run::ahead`'s tests.)
#[test]
fn a_posix_worker_never_starts_beside_another() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    let worker = scratch.path("slow-exit");
    let script = format!("#!/bin/sh\n'{GATE}' \"$@\"\ncode=$?\nsleep 0.3\nexit $code\n");
    fs::write(&worker, script).unwrap();
    fs::set_permissions(&worker, fs::Permissions::from_mode(0o755)).unwrap();
    let suite = scratch.suite(
        "suite: alone\nscenarios:\n  - name: read\n    files: { size: 1MiB, seed: 5 }\n    nthreads: [1, 2]\n    window: [whole, auto]\n    warmup: 0\n    repetitions: 1\n",
    );
    let env = [("GDS_GATE_WORKER", worker.to_str().unwrap())];
    let run = scratch.gate_with(&["--suite", suite.to_str().unwrap()], &env);
    assert_eq!(run.code, 0, "{run:?}");
    let report = scratch.report();
    for trial in report["trials"].as_array().unwrap() {
        assert!(
            trial["worker"]["exit_beside_next_seconds"].is_null(),
            "{trial}"
        );
        let setup = trial["measurement"]["setup"].as_array().unwrap();
        assert!(
            setup
                .iter()
                .all(|phase| phase[0] != gds_model::record::HELD_PHASE)
        );
    }
    assert!(
        report["time"]["trials"]["exit"].as_f64().unwrap() > 4.0 * 0.25,
        "{}",
        report["time"]
    );
}

/// `rounds: 3`: each trial's passes in three fresh workers, the trials' rounds interleaved (a b a
/// b a b), each round in its own folder; the report holds every pass and which round read it.
#[test]
fn rounds_interleave_the_trials_workers_and_join_their_passes() {
    let scratch = Scratch::new();
    let suite = scratch.suite(
        "suite: r\ndefaults: { files: { size: 1MiB, seed: 5 }, warmup: 0, repetitions: 3, rounds: 3 }\nscenarios:\n  - name: a\n  - name: b\n",
    );
    let run = scratch.gate(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let report = scratch.report();
    let mut answered = Vec::new();
    for (trial, letter) in report["trials"].as_array().unwrap().iter().zip(["a", "b"]) {
        let m = &trial["measurement"];
        assert_eq!(m["gbps"].as_array().unwrap().len(), 3, "{trial}");
        assert_eq!(m["rounds"], serde_json::json!([1, 1, 1]), "{trial}");
        let last = PathBuf::from(trial["worker"]["dir"].as_str().unwrap());
        let trials = last.parent().unwrap();
        let name = last.file_name().unwrap();
        for (round, folder) in [
            (1, trials.join("round-1").join(name)),
            (2, trials.join("round-2").join(name)),
            (3, last.clone()),
        ] {
            let result = fs::metadata(folder.join("result.json")).unwrap();
            answered.push((result.modified().unwrap(), format!("{letter}{round}")));
        }
    }
    answered.sort();
    let order: Vec<&str> = answered.iter().map(|(_, job)| job.as_str()).collect();
    assert_eq!(
        order,
        ["a1", "b1", "a2", "b2", "a3", "b3"],
        "the trials' rounds must alternate"
    );
}

/// A rehearsal on the CPU host: stack B's workers preload a `pread` that sleeps before each call
/// (a fixture library standing in for a slower libcufile), stack A's do not. B must fail as
/// slower, with its interval and rounds in every report; the same stacks with B's library left
/// out must pass. Skipped without a C compiler.
#[test]
fn a_rehearsal_fails_the_stack_that_reads_slower_and_passes_twins() {
    let scratch = Scratch::new();
    let Some(library) = support::preload_library(
        &scratch.path(""),
        "slow",
        "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <unistd.h>\n#include <sys/types.h>\n\
         typedef ssize_t (*read_at)(int, void *, size_t, off_t);\n\
         static ssize_t slow(const char *name, int fd, void *b, size_t n, off_t o) {\n\
           read_at real = (read_at)dlsym(RTLD_NEXT, name); usleep(50000); return real(fd, b, n, o); }\n\
         ssize_t pread64(int fd, void *b, size_t n, off_t o) { return slow(\"pread64\", fd, b, n, o); }\n\
         ssize_t pread(int fd, void *b, size_t n, off_t o) { return slow(\"pread\", fd, b, n, o); }\n",
    ) else {
        eprintln!("skipped: no C compiler (cc) to build the slow library");
        return;
    };
    let suite = scratch.suite(SMALL);
    let stacks = scratch.path("stacks.yaml");
    let rehearse = |b_env: &str| {
        // A wide tolerance and six rounds: twins on a busy 2-core host must not fail, and a 50 ms
        // sleep per call must, whatever one round of A met.
        fs::write(
            &stacks,
            format!("a: {{name: now}}\nb: {{name: next, env: {{{b_env}}}}}\ntolerance: 40%\n"),
        )
        .unwrap();
        scratch.gate(&[
            "rehearse",
            "--stacks",
            stacks.to_str().unwrap(),
            "--rounds",
            "6",
            "--suite",
            suite.to_str().unwrap(),
        ])
    };

    let run = rehearse(&format!("LD_PRELOAD: {}", library.display()));
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stdout.contains("test [posix] small::read @now ")
            && run.stdout.contains("test [posix] small::read @next ... "),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("small::read: next reads at 0.")
            && run
                .stderr
                .contains("over 6 rounds): slower by more than the 40% tolerance"),
        "{run:?}"
    );
    let report = scratch.report();
    let pair = &report["rehearsal"]["pairs"][0];
    assert_eq!(pair["verdict"], "slower", "{pair}");
    assert_eq!(pair["round_ratios"].as_array().unwrap().len(), 6, "{pair}");
    assert!(pair["high"].as_f64().unwrap() < 0.6, "{pair}");
    assert_eq!(report["totals"]["slower"], 1);
    let junit = fs::read_to_string(scratch.out().join("junit.xml")).unwrap();
    assert!(junit.contains("type=\"regression\""), "{junit}");
    let summary = fs::read_to_string(scratch.out().join("summary.md")).unwrap();
    assert!(
        summary.contains("## Rehearsal: `next` against `now`") && summary.contains("xychart-beta"),
        "{summary}"
    );

    let run = rehearse("");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(scratch.report()["rehearsal"]["pairs"][0]["verdict"], "same");
}
