//! The `torch` reader's keys: one `load_storage` per segment from one thread, so `nthreads` and
//! `task_size` are no axes of it; it goes through cuFile (cufile.json overlay, counters) in the
//! Python worker, can take every path through cuFile but no POSIX path of its own, and writes
//! (`save_storage`) as well as reads.

use super::tests::{assert_rejected, parse_ok};
use super::*;

#[test]
fn torch_trials_drop_the_thread_and_task_axes_and_keep_the_buffer_and_cache() {
    let suite = parse_ok(
        "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    reader: [torch, cufile]\n    nthreads: [1, 8]\n    task_size: [1MiB, 4MiB]\n    buffer: [unregistered, registered]\n    cache: cold\n",
    );
    let trials = expand(&suite);
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        &names[..2],
        [
            "test::t[reader=torch,buffer=unregistered]",
            "test::t[reader=torch,buffer=registered]",
        ]
    );
    assert_eq!(names.len(), 2 + 2 * 2 * 2, "{names:?}");
    let torch = &trials[0];
    assert_eq!(torch.reader.name(), "torch");
    assert!(torch.reader.uses_cufile() && torch.reader.python() && torch.reader.uses_gpu());
    assert!(!torch.reader.native_cufile() && torch.reader.writes());
    assert!(Reader::Kvikio.python() && !Reader::Cufile.python());
}

#[test]
fn a_posix_path_is_refused_for_torch_and_it_writes() {
    let torch = "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    reader: torch\n";
    let posix = format!("{torch}    expect: {{ path: kvikio-posix }}\n");
    assert_rejected(&[(
        "PyTorch has no POSIX path",
        &posix,
        &[
            ":5:",
            "reader `torch` cannot take the path `kvikio-posix`",
            "or `any`",
        ],
    )]);
    for path in ["gds", "cufile-posix", "nvfs", "any"] {
        parse_ok(&format!("{torch}    expect: {{ path: {path} }}\n"));
    }
    let writes = expand(&parse_ok(&format!("{torch}    op: [write, roundtrip]\n")));
    let names: Vec<&str> = writes.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["test::t[op=write]", "test::t[op=roundtrip]"]);
}
