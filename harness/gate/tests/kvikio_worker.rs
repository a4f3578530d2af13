//! The Python worker's GPU-free logic (harness/worker/test_kvikio_worker.py, and
//! test_torch_reader.py for its `torch` reader), run with the host's python3 (which `.ci/run`
//! needs anyway).

use std::process::Command;

use gds_model::progress::{ENV, PassProgress};

const WORKER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../worker");

#[test]
fn the_python_workers_streaming_async_writes_progress_recheck_and_torch_logic() {
    let output = Command::new("python3")
        .args([
            "-m",
            "unittest",
            "-v",
            "test_kvikio_worker",
            "test_torch_reader",
        ])
        .current_dir(WORKER_DIR)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs the KvikIO worker's tests");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("Ran 40 tests"), "{text}");
}

/// The live view reads the KvikIO worker's progress with the Rust workers' parser.
#[test]
fn the_python_workers_progress_file_parses_as_the_rust_workers_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("progress");
    let output = Command::new("python3")
        .args([
            "-c",
            "import passes; passes.report_progress(3, 8, 0.75, 3 << 30)",
        ])
        .current_dir(WORKER_DIR)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env(ENV, &path)
        .output()
        .expect("python3 runs the KvikIO worker");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let progress = PassProgress::read(&path).expect("a line the gate parses");
    assert_eq!((progress.done, progress.total), (3, 8));
    assert_eq!(progress.seconds, 0.75);
    assert!((progress.gbps - (3u64 << 30) as f64 / 0.75 / 1e9).abs() < 1e-9);
}

/// A Python section stuck past its bound is named in the failure as the Rust worker's stuck calls
/// are: the gate reads the Python worker's line with the same parser.
#[test]
fn the_python_workers_stuck_line_names_its_section_for_the_gate() {
    let output = Command::new("python3")
        .args([
            "-c",
            "import passes; print(passes.stuck_line('KvikIO read', '268435456 bytes', 21.9, 20.4))",
        ])
        .current_dir(WORKER_DIR)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs the KvikIO worker");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        gds_model::stuck::first_call(&text),
        Some("KvikIO read (268435456 bytes)"),
        "{text}"
    );
}

/// The Python worker's hand-over speaks the Rust worker's names: the file it waits for and the
/// start-up phase it records.
#[test]
fn the_python_worker_waits_for_the_release_under_the_rust_names() {
    let passes = std::fs::read_to_string(format!("{WORKER_DIR}/passes.py")).unwrap();
    let phase = format!("HELD_PHASE = \"{}\"", gds_model::record::HELD_PHASE);
    assert!(passes.contains(&phase), "passes.py lacks `{phase}`");
    let file = format!("\"{}\"", gds_model::protocol::RELEASED);
    assert!(passes.contains(&file), "passes.py lacks {file}");
}
