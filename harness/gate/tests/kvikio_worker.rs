//! The KvikIO worker's GPU-free logic (harness/worker/test_kvikio_worker.py), run with the
//! host's python3 (which `.ci/run` needs anyway).

use std::process::Command;

#[test]
fn the_python_workers_streaming_and_async_logic() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../worker");
    let output = Command::new("python3")
        .args(["-m", "unittest", "-v", "test_kvikio_worker"])
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs the KvikIO worker's tests");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("Ran 5 tests"), "{text}");
}
