//! The Python worker's GPU-free logic (harness/worker/test_kvikio_worker.py, and
//! test_torch_reader.py for its `torch` reader), run with the host's python3 (which `.ci/run`
//! needs anyway), with the gate's extension module (harness/pyworker) importable as in a trial.

use std::path::PathBuf;
use std::process::Command;

const WORKER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../worker");

/// python3 in the worker's folder, with `gds_pass` importable: a folder holding a link to the
/// extension cargo built beside this test (a dev-dependency), under the name a trial gives it.
fn python(extension_dir: &tempfile::TempDir) -> Command {
    let exe = std::env::current_exe().unwrap();
    let built: PathBuf = exe.parent().unwrap().join("libgds_pass.so");
    assert!(built.is_file(), "{} not built", built.display());
    let link = extension_dir.path().join("gds_pass.abi3.so");
    if !link.exists() {
        std::os::unix::fs::symlink(&built, &link).unwrap();
    }
    let mut python = Command::new("python3");
    python
        .current_dir(WORKER_DIR)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONPATH", extension_dir.path());
    python
}

/// The trials the Python tests run through the Rust pass loop: one spec each, as the gate writes
/// it, over two small generated files on a disk-backed folder (cold trials drop their pages; a
/// tmpfs /tmp would keep them). The Python tests read them from `GDS_PASS_FIXTURES`.
const FIXTURE_TRIALS: &str = "
defaults: { files: { size: 64KiB, seed: 1 }, warmup: 1, repetitions: 2, cache: warm, expect: { integrity: exact } }
scenarios:
  - { name: read, reader: kvikio, cache: cold }
  - { name: windows, reader: kvikio, kvikio_api: async, queue_depth: 3, task_size: 16KiB, window: 64KiB }
  - { name: load, reader: kvikio, op: load, buffer: registered }
  - { name: torch, reader: torch, cache: cold }
  - { name: write, reader: kvikio, op: write, kvikio_api: async, queue_depth: 3, task_size: 4KiB }
  - { name: roundtrip, reader: kvikio, op: roundtrip, kvikio_api: async, queue_depth: 3, task_size: 4KiB }
";

fn write_fixtures(dir: &std::path::Path) {
    use gds_model::plan::{PlannedFile, ReadPlan};
    use gds_model::protocol::WorkerSpec;
    let suite = gds_model::scenario::parse(std::path::Path::new("fixtures.yaml"), FIXTURE_TRIALS)
        .expect("the fixture suite parses");
    std::fs::create_dir_all(dir.join("written")).unwrap();
    let files = |folder: &str| -> Vec<PlannedFile> {
        [(100_000u64, 1u64), (50_000, 2)]
            .iter()
            .enumerate()
            .map(|(index, &(size, seed))| {
                let path = dir.join(folder).join(format!("f{index}"));
                if folder == "data" {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    let mut bytes = vec![0; size as usize];
                    gds_model::verify::fill(seed, 0, &mut bytes);
                    std::fs::write(&path, bytes).unwrap();
                }
                PlannedFile {
                    path,
                    size,
                    seed: Some(seed),
                    checksum: gds_model::verify::expected_file_checksum(seed, size),
                }
            })
            .collect()
    };
    for trial in gds_model::scenario::expand(&suite) {
        let folder = if trial.op.writes() { "written" } else { "data" };
        let plan = ReadPlan::new(files(folder), &trial.pattern);
        let name = trial.scenario.clone();
        let spec = WorkerSpec::new(trial, plan);
        let text = serde_json::to_string_pretty(&spec).unwrap();
        std::fs::write(dir.join(format!("{name}.json")), text).unwrap();
    }
}

#[test]
fn the_python_workers_readers_writers_and_torch_logic_through_the_rust_pass_loop() {
    let extension = tempfile::tempdir().unwrap();
    // Beside the test binary: a disk-backed file system, where /tmp may be tmpfs.
    let fixtures =
        tempfile::tempdir_in(std::env::current_exe().unwrap().parent().unwrap()).unwrap();
    write_fixtures(fixtures.path());
    let output = python(&extension)
        .args([
            "-m",
            "unittest",
            "-v",
            "test_kvikio_worker",
            "test_torch_reader",
        ])
        .env("GDS_PASS_FIXTURES", fixtures.path())
        .output()
        .expect("python3 runs the KvikIO worker's tests");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("Ran 33 tests"), "{text}");
}

/// A Python section stuck past its bound is named as the Rust worker's stuck calls are (it is
/// the Rust worker's watchdog), after Python's stacks, and the gate reads which section it was;
/// a section that ends in time writes nothing.
#[test]
fn the_python_workers_stuck_section_is_named_for_the_gate_after_its_stacks() {
    let extension = tempfile::tempdir().unwrap();
    let output = python(&extension)
        .args([
            "-c",
            "import passes, sys, time\n\
             with passes.watched(0, bound=0.6):\n    pass\n\
             time.sleep(1.2)\n\
             print('in time', file=sys.stderr, flush=True)\n\
             with passes.watched(268435456, 'KvikIO read', bound=0.6):\n    time.sleep(1.6)",
        ])
        .output()
        .expect("python3 runs the KvikIO worker");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.starts_with("in time\n"), "{text}");
    let stacks = text.find("Timeout").expect("Python's stacks");
    let line = text.find("gds-gate worker: ").expect("the stuck line");
    assert!(stacks < line, "{text}");
    assert_eq!(
        gds_model::stuck::first_call(&text),
        Some("KvikIO read (268435456 bytes)"),
        "{text}"
    );
    assert!(text.contains("(it should within 0.6 s)"), "{text}");
}
