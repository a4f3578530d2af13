//! The keys of the readers that queue I/O without threads: `queue_depth` (batches in flight for
//! `cufile-batch`, streams for `cufile-async`) and `batch_size` as matrix axes of those readers
//! only, `nthreads` dropped for them, KvikIO's `kvikio_api` (`pread` or `async` on a depth of
//! streams), and what they cannot do refused with the fix.

use super::tests::{assert_rejected, parse_ok};
use super::*;
use window_mode::WindowMode;

#[test]
fn batch_keys_are_axes_of_the_batch_reader_only() {
    let suite = parse_ok(
        "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: [cufile-batch, cufile]\n    nthreads: [1, 8]\n    queue_depth: [1, 4]\n    batch_size: 64\n",
    );
    let trials = expand(&suite);
    let named: Vec<(&str, u32, u32, u32)> = trials
        .iter()
        .map(|t| (t.name.as_str(), t.queue_depth, t.batch_size, t.nthreads))
        .collect();
    assert_eq!(
        named,
        [
            ("test::b[reader=cufile-batch,depth=1]", 1, 64, 1),
            ("test::b[reader=cufile-batch,depth=4]", 4, 64, 1),
            ("test::b[reader=cufile,nthreads=1]", 1, 64, 1),
            ("test::b[reader=cufile,nthreads=8]", 1, 64, 8),
        ]
    );
    assert_eq!(trials[0].reader.name(), "cufile-batch");
    assert!(trials[0].reader.native_cufile() && trials[0].reader.uses_cufile());
    let defaults = expand(&parse_ok(
        "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: cufile-batch\n",
    ));
    assert_eq!(
        (defaults[0].queue_depth, defaults[0].batch_size),
        (defaults::QUEUE_DEPTH, defaults::BATCH_SIZE)
    );
    // A record of an older gate has neither key: one batch of the default size in flight.
    let mut json = serde_json::to_value(&defaults[0]).unwrap();
    let object = json.as_object_mut().unwrap();
    object.remove("queue_depth");
    object.remove("batch_size");
    let old: TrialSpec = serde_json::from_value(json).unwrap();
    assert_eq!((old.queue_depth, old.batch_size), (1, defaults::BATCH_SIZE));
}

#[test]
fn batch_mistakes_are_reported_with_position_and_fix() {
    assert_rejected(&[
        (
            "the batch reader has no writer",
            "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: [cufile, cufile-batch]\n    op: write\n",
            &[
                ":5:5:",
                "`op: write` needs a writer",
                "`cufile-batch` reader only reads",
                "cuFileWrite",
            ],
        ),
        (
            "a batch larger than any driver allows",
            "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: cufile-batch\n    batch_size: 4096\n",
            &[
                ":5:5:",
                "`batch_size: 4096` is more than 1024",
                "io_batchsize",
            ],
        ),
        (
            "a depth listed twice",
            "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: cufile-batch\n    queue_depth: [2, 2]\n",
            &[":5:5:", "queue_depth"],
        ),
        (
            "a path the batch reader cannot take",
            "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: cufile-batch\n    expect: { path: host }\n",
            &["reader `cufile-batch` cannot take the path `host`"],
        ),
        (
            "a zero depth",
            "scenarios:\n  - name: b\n    files: { size: 1MiB }\n    reader: cufile-batch\n    queue_depth: 0\n",
            &[":5:"],
        ),
    ]);
}

#[test]
fn the_async_reader_takes_a_depth_of_streams_and_no_batch_size() {
    let suite = parse_ok(
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile-async\n    nthreads: 8\n    queue_depth: [1, 4]\n    batch_size: [8, 16]\n",
    );
    let names: Vec<String> = expand(&suite).into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["test::a[depth=1]", "test::a[depth=4]"]);
    // It writes too, with cuFileWriteAsync, on the same depth of streams.
    let writes = expand(&parse_ok(
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile-async\n    op: [write, roundtrip]\n    queue_depth: 4\n",
    ));
    let ops: Vec<(Op, u32)> = writes.iter().map(|t| (t.op, t.queue_depth)).collect();
    assert_eq!(ops, [(Op::Write, 4), (Op::Roundtrip, 4)]);
}

#[test]
fn kvikio_reads_with_pread_or_async_and_async_takes_a_depth_of_streams() {
    let both = expand(&parse_ok(
        "scenarios:\n  - name: k\n    files: { size: 1MiB }\n    reader: kvikio\n    kvikio_api: [pread, async]\n    queue_depth: [1, 4]\n",
    ));
    let names: Vec<&str> = both.iter().map(|t| t.name.as_str()).collect();
    // With pread in the list, a depth would only repeat the pread trials: it is dropped.
    assert_eq!(names, ["test::k[api=pread]", "test::k[api=async]"]);
    assert_eq!(both[1].kvikio_api, KvikioApi::Async);
    let streams = expand(&parse_ok(
        "scenarios:\n  - name: k\n    files: { size: 1MiB }\n    reader: kvikio\n    kvikio_api: async\n    queue_depth: [1, 4]\n",
    ));
    let depths: Vec<(&str, u32)> = streams
        .iter()
        .map(|t| (t.name.as_str(), t.queue_depth))
        .collect();
    assert_eq!(depths, [("test::k[depth=1]", 1), ("test::k[depth=4]", 4)]);
    // A record of an older gate has no `kvikio_api`: it used pread.
    let mut json = serde_json::to_value(&streams[0]).unwrap();
    json.as_object_mut().unwrap().remove("kvikio_api");
    let old: TrialSpec = serde_json::from_value(json).unwrap();
    assert_eq!(old.kvikio_api, KvikioApi::Pread);
    // Writing, `async` is KvikIO's raw_write_async on the same streams (a roundtrip reads back
    // with raw_read_async).
    let writes = expand(&parse_ok(
        "scenarios:\n  - name: k\n    files: { size: 1MiB }\n    reader: kvikio\n    kvikio_api: async\n    op: [write, roundtrip]\n    queue_depth: [1, 4]\n",
    ));
    let cells: Vec<(Op, KvikioApi, u32)> = writes
        .iter()
        .map(|t| (t.op, t.kvikio_api, t.queue_depth))
        .collect();
    assert_eq!(
        cells,
        [
            (Op::Write, KvikioApi::Async, 1),
            (Op::Write, KvikioApi::Async, 4),
            (Op::Roundtrip, KvikioApi::Async, 1),
            (Op::Roundtrip, KvikioApi::Async, 4),
        ]
    );
    assert_rejected(&[(
        "an unknown KvikIO call",
        "scenarios:\n  - name: k\n    files: { size: 1MiB }\n    reader: kvikio\n    kvikio_api: mmap\n",
        &[":5:", "unknown variant `mmap`", "async"],
    )]);
}

#[test]
fn the_batch_and_async_readers_stream_through_a_window_but_the_async_writer_does_not() {
    // Reading, both stream like `cufile`: the window is an axis of theirs and reaches the worker.
    let trials = expand(&parse_ok(
        "scenarios:\n  - name: w\n    files: { size: 4MiB }\n    reader: [cufile-batch, cufile-async]\n    window: [1MiB, whole]\n",
    ));
    let windows: Vec<(&str, WindowMode)> =
        trials.iter().map(|t| (t.name.as_str(), t.window)).collect();
    assert_eq!(
        windows,
        [
            (
                "test::w[reader=cufile-batch,window=1MiB]",
                WindowMode::Size(1 << 20)
            ),
            (
                "test::w[reader=cufile-batch,window=whole]",
                WindowMode::Whole
            ),
            (
                "test::w[reader=cufile-async,window=1MiB]",
                WindowMode::Size(1 << 20)
            ),
            (
                "test::w[reader=cufile-async,window=whole]",
                WindowMode::Whole
            ),
        ]
    );
    // Writing, `cufile-async` holds the whole pass like every writer: a smaller window is refused.
    assert_rejected(&[(
        "an async write through a window",
        "scenarios:\n  - name: w\n    files: { size: 4MiB }\n    reader: cufile-async\n    op: write\n    window: 1MiB\n",
        &[
            ":6:5:",
            "`op: write` holds the whole pass in one buffer",
            "`window: 1MiB` is smaller",
            "window: whole",
        ],
    )]);
}
