//! Suite parsing, validation and expansion on small inline suites.

use std::path::Path;

use super::*;

pub(super) fn parse_ok(text: &str) -> Suite {
    parse(Path::new("suites/test.yaml"), text).unwrap_or_else(|error| panic!("{error}"))
}

/// The error as the user sees it, checked for position, message and hint.
fn parse_err(text: &str) -> String {
    let error = parse(Path::new("suites/test.yaml"), text).expect_err("must be rejected");
    let shown = error.to_string();
    assert!(
        shown.starts_with("suites/test.yaml:"),
        "no file in: {shown}"
    );
    shown
}

/// Each `(what, suite text, needles)` is rejected with an error that holds every needle.
pub(super) fn assert_rejected(cases: &[(&str, &str, &[&str])]) {
    for (what, text, needles) in cases {
        let shown = parse_err(text);
        for needle in *needles {
            assert!(
                shown.contains(needle),
                "{what}: `{needle}` not in:\n{shown}"
            );
        }
    }
}

const MINIMAL: &str = "scenarios:\n  - name: read\n    files: { size: 1MiB }\n";

#[test]
fn minimal_suite_takes_kvikio_defaults() {
    let suite = parse_ok(MINIMAL);
    assert_eq!(suite.name, "test");
    let trials = expand(&suite);
    assert_eq!(trials.len(), 1);
    let trial = &trials[0];
    assert_eq!(trial.name, "test::read");
    assert_eq!(trial.reader, Reader::Posix);
    assert_eq!((trial.nthreads, trial.task_size), (1, 4 << 20));
    assert_eq!(
        trial.files,
        FileSet::Generated {
            size: 1 << 20,
            seed: 1,
            count: 1
        }
    );
    assert_eq!(trial.expect.integrity, Integrity::Exact);
    assert_eq!((trial.warmup, trial.repetitions), (1, 5));
    assert_eq!(trial.source_line, 2);
}

#[test]
fn lists_expand_into_named_trials() {
    let suite = parse_ok(
        "suite: default\ndefaults:\n  files: { size: 4GiB, seed: 7 }\n  nthreads: [1, 8]\nscenarios:\n  - name: cold-read\n    reader: kvikio\n    compat_mode: [ON, OFF, AUTO]\n",
    );
    let names: Vec<String> = expand(&suite).into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 6);
    assert!(
        names.contains(&"default::cold-read[compat=OFF,nthreads=8]".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"default::cold-read[compat=ON,nthreads=1]".to_string()),
        "{names:?}"
    );
}

#[test]
fn axes_that_do_not_apply_to_a_reader_are_dropped() {
    let suite = parse_ok(
        "scenarios:\n  - name: r\n    files: { size: 1MiB }\n    reader: [posix, kvikio]\n    compat_mode: [ON, OFF]\n    gpu: [0, 1]\n",
    );
    let names: Vec<String> = expand(&suite).into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "test::r[reader=posix]",
            "test::r[reader=kvikio,compat=ON,gpu=0]",
            "test::r[reader=kvikio,compat=ON,gpu=1]",
            "test::r[reader=kvikio,compat=OFF,gpu=0]",
            "test::r[reader=kvikio,compat=OFF,gpu=1]",
        ]
    );
}

#[test]
fn every_key_parses() {
    let suite = parse_ok(
        r#"
suite: full
python: /usr/bin/python3
defaults:
  cache: warm
scenarios:
  - name: all-keys
    description: every key once
    files: { size: 64MiB, seed: 3, count: 2 }
    reader: kvikio
    compat_mode: AUTO
    nthreads: 4
    task_size: 1MiB
    gds_threshold: 0
    bounce_buffer_size: 8MiB
    cufile: { execution.max_io_threads: 8, properties.allow_compat_mode: false }
    pattern: { chunks: 256KiB }
    warmup: 0
    repetitions: 3
    buffer: registered
    gpu: 1
    expect: { path: gds, max_fallback_bytes: 0, integrity: checksum, tolerance: 15% }
  - name: random
    files: { size: 64MiB }
    pattern: { random: { size: 64KiB, count: 100, seed: 9 } }
  - name: user-file
    files: { path: data/ckpt.bin }
    pattern: whole
"#,
    );
    let trials = expand(&suite);
    let all = &trials[0];
    assert_eq!(all.cache, Cache::Warm);
    assert_eq!(all.compat_mode, Some(CompatMode::AUTO));
    assert_eq!(all.gds_threshold, 0);
    assert_eq!(
        all.pattern,
        Pattern::Chunks(size::PositiveSize(size::ByteSize(256 << 10)))
    );
    assert_eq!(all.cufile["execution.max_io_threads"], serde_json::json!(8));
    assert_eq!(all.expect.path, ExpectedPath::Gds);
    assert!((all.expect.tolerance - 0.15).abs() < 1e-12);
    assert!(
        matches!(&trials[1].pattern, Pattern::Random(r) if r.align.bytes() == 4096 && r.seed == 9)
    );
    assert_eq!(
        trials[2].files,
        FileSet::User {
            path: "suites/data/ckpt.bin".into()
        }
    );
    assert_eq!(trials[2].expect.integrity, Integrity::Checksum);
}

/// Each mistake: the suite text, the position it must point at, and words the message must contain.
#[test]
fn mistakes_are_reported_with_position_and_fix() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "bad YAML",
            "scenarios:\n  - name: a\n  files: [\n",
            &[":3:", "did not find expected"],
        ),
        (
            "unknown key",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    colour: red\n",
            &[":4:5:", "unknown field `colour`"],
        ),
        (
            "typo in a key",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    compat_mdoe: ON\n",
            &[":4:5:", "did you mean the key `compat_mode`?"],
        ),
        (
            "wrong type",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    nthreads: lots\n",
            &[
                ":4:15:",
                "`nthreads` must be a whole number of at least 1, found \"lots\"",
            ],
        ),
        (
            "zero size",
            "scenarios:\n  - name: a\n    files: { size: 0 }\n",
            &[":3:", "greater than zero"],
        ),
        (
            "negative size",
            "scenarios:\n  - name: a\n    files: { size: -4096 }\n",
            &[":3:", "must not be negative"],
        ),
        (
            "unknown compat mode",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: kvikio\n    compat_mode: [ON, MAYBE]\n",
            &[":5:", "compat_mode[1]", "unknown variant `MAYBE`"],
        ),
        (
            "unknown reader",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufle\n",
            &[":4:", "did you mean the value `cufile`?"],
        ),
        ("empty suite", "scenarios: []\n", &[":1:1:", "no scenarios"]),
        ("empty file", "\n", &[":1:1:", "empty"]),
        (
            "duplicate names",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n  - name: b\n    files: { size: 1MiB }\n  - name: a\n    files: { size: 1MiB }\n",
            &[":6:5:", "duplicate scenario name `a`"],
        ),
        (
            "bad size unit",
            "scenarios:\n  - name: a\n    files: { size: 4GB }\n",
            &[":3:", "unknown size unit `GB`", "did you mean `GiB`?"],
        ),
        (
            "missing files",
            "scenarios:\n  - name: a\n    reader: posix\n",
            &[":2:", "missing key `files`"],
        ),
        (
            "size and path",
            "scenarios:\n  - name: a\n    files: { size: 1MiB, path: /x }\n",
            &[":3:", "both `size` and `path`"],
        ),
        (
            "missing name",
            "scenarios:\n  - files: { size: 1MiB }\n",
            &[":2:3:", "missing key `name`"],
        ),
        (
            "name in defaults",
            "defaults:\n  name: x\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n",
            &[":1:1:", "`defaults` cannot have a `name`"],
        ),
        (
            "bad name",
            "scenarios:\n  - name: cold read\n    files: { size: 1MiB }\n",
            &[":2:", "may only contain"],
        ),
        (
            "impossible path",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    expect: { path: gds }\n",
            &[":4:", "reader `posix` cannot take the path `gds`"],
        ),
        (
            "exact on a user file",
            "scenarios:\n  - name: a\n    files: { path: /x }\n    expect: { integrity: exact }\n",
            &[":4:", "needs generated files"],
        ),
        (
            "random on a user file",
            "scenarios:\n  - name: a\n    files: { path: /x }\n    pattern: { random: { size: 4KiB, count: 1 } }\n",
            &[":4:", "`pattern: random` needs generated files"],
        ),
        (
            "random bigger than file",
            "scenarios:\n  - name: a\n    files: { size: 4KiB }\n    pattern: { random: { size: 8KiB, count: 1 } }\n",
            &[":4:", "do not fit"],
        ),
        (
            "random reads with one possible offset",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    pattern: { random: { size: 4KiB, count: 4, align: 1TiB } }\n",
            &[
                ":4:",
                "random reads of 4KiB aligned to 1TiB fit at one offset only in files of 1MiB",
                "all 4 reads would read the same bytes",
                "help: use a smaller `pattern.random.align`",
            ],
        ),
        (
            "random reads as large as the file",
            "scenarios:\n  - name: a\n    files: { size: 64KiB }\n    pattern: { random: { size: 64KiB, count: 2 } }\n",
            &[":4:", "fit at one offset only", "all 2 reads"],
        ),
        (
            "empty list",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    nthreads: []\n",
            &[":4:", "empty list"],
        ),
        (
            "zero threads",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    nthreads: 0\n",
            &[":4:", "nthreads"],
        ),
        (
            "bad tolerance",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    expect: { tolerance: 150% }\n",
            &[":4:", "between 0 and 1"],
        ),
    ];
    assert_rejected(cases);
}

#[test]
fn gpus_makes_one_trial_over_several_gpus_named_by_its_set() {
    let suite = parse_ok(
        "defaults:\n  gpu: 0\nscenarios:\n  - name: all\n    files: { size: 1MiB, count: 2 }\n    reader: [cufile, kvikio]\n    gpus: all\n  - name: pair\n    files: { size: 1MiB }\n    reader: h2d\n    gpus: [1, 0]\n    nthreads: [1, 8]\n",
    );
    let trials = expand(&suite);
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test::all[reader=cufile,gpus=all]",
            "test::all[reader=kvikio,gpus=all]",
            "test::pair[nthreads=1,gpus=1+0]",
            "test::pair[nthreads=8,gpus=1+0]",
        ]
    );
    assert_eq!(trials[0].gpus, Some(GpuSet::All));
    assert_eq!(trials[2].gpus, Some(GpuSet::List(vec![1, 0])));
    assert_eq!(trials[2].gpu, 1);
    // The worker spec carries it through JSON: `all`, or the list.
    let json = serde_json::to_value(&trials[0]).unwrap();
    assert_eq!(json["gpus"], serde_json::json!("all"));
    let back: TrialSpec =
        serde_json::from_value(serde_json::to_value(&trials[2]).unwrap()).unwrap();
    assert_eq!(back, trials[2]);
    // Specs written before the key existed still read.
    let mut old = serde_json::to_value(&trials[0]).unwrap();
    old.as_object_mut().unwrap().remove("gpus");
    let old: TrialSpec = serde_json::from_value(old).unwrap();
    assert_eq!(old.gpus, None);
    // Without `gpus`, nothing changes in the names.
    let plain =
        parse_ok("scenarios:\n  - name: r\n    files: { size: 1MiB }\n    reader: cufile\n");
    assert_eq!(expand(&plain)[0].name, "test::r");
    assert_eq!(expand(&plain)[0].gpus, None);
}

#[test]
fn gpus_mistakes_are_reported_with_position_and_fix() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "gpus with a gpu list",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpus: all\n    gpu: [0, 1]\n",
            &[
                ":5:5:",
                "`gpus: all` (line 5) and `gpu: [0, 1]` (line 6) cannot be combined",
                "one trial per GPU",
            ],
        ),
        (
            "gpu list in defaults",
            "defaults:\n  gpu: [0, 1]\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpus: [0, 1]\n",
            &[":7:5:", "`gpus: 0+1` (line 7) and `gpu: [0, 1]` (line 2)"],
        ),
        (
            "gpus for posix",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: [posix, cufile]\n    gpus: all\n",
            &[":5:5:", "`gpus` does not apply to reader `posix`", "help:"],
        ),
        (
            "gpus for the default reader",
            "defaults:\n  gpus: all\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n",
            &[":2:3:", "reader `posix`"],
        ),
        (
            "gpus over a user file",
            "scenarios:\n  - name: a\n    files: { path: /data/ckpt.bin }\n    reader: kvikio\n    gpus: all\n",
            &[
                ":5:5:",
                "cannot split your own file `/data/ckpt.bin` across GPUs",
                "`gpu: N`",
            ],
        ),
        (
            "a GPU twice",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpus: [0, 1, 0]\n",
            &[":5:5:", "GPU 0 is listed twice"],
        ),
        (
            "gpus: some",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpus: some\n",
            &[":5:", "expected `all` or a list of GPU indices"],
        ),
        (
            "gpus: 2",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpus: 2\n",
            &[":5:", "for one GPU write `gpu: 2`"],
        ),
        (
            "gpus: []",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpus: []\n",
            &[":5:", "`gpus` is an empty list"],
        ),
    ];
    assert_rejected(cases);
    // One GPU of a user file is fine, and so is a single `gpu` beside `gpus`.
    parse_ok(
        "scenarios:\n  - name: a\n    files: { path: /x }\n    reader: cufile\n    gpus: [1]\n",
    );
    parse_ok(
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    reader: cufile\n    gpu: 1\n    gpus: all\n",
    );
}

/// Issue 15, case 1: in 32 bits `warmup + repetitions` wrapped to zero passes, and a trial that
/// read nothing passed.
#[test]
fn passes_that_overflow_are_rejected_with_the_line() {
    let shown = parse_err(
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    warmup: 4294967295\n    repetitions: 1\n",
    );
    assert!(
        shown.starts_with("suites/test.yaml:4:5:") && shown.contains("4294967296 passes"),
        "{shown}"
    );
    let shown = parse_err(
        "defaults:\n  repetitions: 1001\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n",
    );
    assert!(shown.starts_with("suites/test.yaml:2:3:"), "{shown}");
}

/// Issue 15, case 12: a matrix of millions or a plan of billions of reads is refused, with the
/// line, before anything is expanded or allocated.
#[test]
fn matrices_and_plans_beyond_the_limits_are_refused_before_they_are_built() {
    let list = |n: u64, unit: &str| {
        let values: Vec<String> = (1..=n).map(|i| format!("{i}{unit}")).collect();
        format!("[{}]", values.join(", "))
    };
    let started = std::time::Instant::now();
    let huge = format!(
        "scenarios:\n  - name: a\n    files: {{ size: 1GiB }}\n    reader: kvikio\n    nthreads: {}\n    task_size: {}\n    gds_threshold: {}\n    bounce_buffer_size: {}\n",
        list(1000, ""),
        list(1000, "KiB"),
        list(1000, "KiB"),
        list(1000, "KiB")
    );
    let shown = parse_err(&huge);
    assert!(
        shown.starts_with("suites/test.yaml:2:") && shown.contains("at most 10000"),
        "{shown}"
    );
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "1-byte chunks",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    pattern: { chunks: 1 }\n",
            &[":4:", "1048576 reads, at most 65536"],
        ),
        (
            "four billion random reads",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    pattern: { random: { size: 4KiB, count: 4000000000 } }\n",
            &[":4:", "4000000000 reads"],
        ),
        (
            "1-byte tasks",
            "scenarios:\n  - name: a\n    files: { size: 4GiB }\n    task_size: 1\n",
            &[":4:", "tasks of `task_size: 1`", "larger `task_size`"],
        ),
        (
            "a file count beyond the reads",
            "scenarios:\n  - name: a\n    files: { size: 4KiB, count: 4000000000 }\n",
            &[":3:", "4000000000 reads"],
        ),
    ];
    assert_rejected(cases);
    let suite = format!(
        "scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    nthreads: {}\n    task_size: {}\n",
        list(100, ""),
        list(100, "KiB")
    );
    assert_eq!(expand(&parse_ok(&suite)).len(), 10_000);
}

/// Issue 15, case 13: a name past libtest's or the file system's limits is found by `validate`.
#[test]
fn trial_names_longer_than_a_folder_name_are_rejected() {
    for length in [300, 70_000] {
        let text = format!(
            "scenarios:\n  - name: ok\n    files: {{ size: 1MiB }}\n  - name: {}\n    files: {{ size: 1MiB }}\n",
            "x".repeat(length)
        );
        let shown = parse_err(&text);
        assert!(
            shown.starts_with("suites/test.yaml:4:1:")
                && shown.contains(&format!("{} characters, at most 200", length + 6)),
            "{shown}"
        );
    }
}

/// Issue 15, case 15: a worker asked for 100 000 threads panicked starting them.
#[test]
fn thread_counts_are_limited() {
    let shown = parse_err(
        "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    nthreads: [8, 100000]\n",
    );
    assert!(
        shown.starts_with("suites/test.yaml:4:5:") && shown.contains("more than 1024 threads"),
        "{shown}"
    );
    parse_ok("scenarios:\n  - name: a\n    files: { size: 1MiB }\n    nthreads: 1024\n");
}

/// Issue 15, case 16: the parser's time grows with the square of the flow nesting (160 KB took
/// 13 s); the nesting is refused before parsing.
#[test]
fn deep_flow_nesting_is_refused_before_parsing() {
    let depth = 80_000;
    let text = format!(
        "scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    nthreads: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let started = std::time::Instant::now();
    let shown = parse_err(&text);
    assert!(
        started.elapsed().as_millis() < 500,
        "{:?}",
        started.elapsed()
    );
    assert!(
        shown.starts_with("suites/test.yaml:4:") && shown.contains("nested more than 64 deep"),
        "{shown}"
    );
    let big = format!("{MINIMAL}# {}\n", "x".repeat(limits::MAX_SUITE_BYTES));
    assert!(parse_err(&big).contains("at most 1048576 are read"));
}

/// Issue 15, case 17: duplicate values passed `validate` and failed the run with neither line nor
/// fix; a byte-order mark made the whole file unreadable.
#[test]
fn duplicate_axis_values_are_rejected_and_a_byte_order_mark_is_accepted() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "the same thread count twice",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    nthreads: [1, 1]\n",
            &[
                ":4:5:",
                "`nthreads` lists 1 twice",
                "list each value of `nthreads` once",
            ],
        ),
        (
            "one size written two ways",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    task_size: [4MiB, 4194304]\n",
            &[":4:5:", "`task_size` lists 4MiB twice"],
        ),
        (
            "in defaults, found there",
            "defaults:\n  files: { size: 1MiB }\n  cache: [cold, warm, cold]\nscenarios:\n  - name: a\n  - name: b\n    reader: [posix, posix]\n",
            &[":3:3:", "`cache` lists cold twice"],
        ),
        (
            "in the second scenario, not the first",
            "scenarios:\n  - name: a\n    files: { size: 1MiB }\n  - name: b\n    files: { size: 1MiB }\n    reader: [posix, h2d, posix]\n",
            &[":6:5:", "`reader` lists posix twice"],
        ),
    ];
    assert_rejected(cases);
    let suite = parse_ok(&format!("\u{feff}{MINIMAL}"));
    assert_eq!(suite.scenarios.len(), 1);
}

#[test]
fn window_is_an_axis_named_in_the_trials_and_checked_where_written() {
    let suite = parse_ok(
        "scenarios:\n  - name: big\n    files: { size: 32GiB }\n    reader: [posix, cufile]\n    window: [whole, 1GiB]\n",
    );
    let names: Vec<(String, window_mode::WindowMode)> = expand(&suite)
        .into_iter()
        .map(|t| (t.name, t.window))
        .collect();
    use window_mode::WindowMode::{Size, Whole};
    assert_eq!(
        names,
        [
            ("test::big[reader=posix,window=whole]".to_string(), Whole),
            (
                "test::big[reader=posix,window=1GiB]".to_string(),
                Size(1 << 30)
            ),
            ("test::big[reader=cufile,window=whole]".to_string(), Whole),
            (
                "test::big[reader=cufile,window=1GiB]".to_string(),
                Size(1 << 30)
            ),
        ]
    );
    let default = &expand(&parse_ok(MINIMAL))[0];
    assert_eq!(default.window, window_mode::WindowMode::Auto);
    assert_rejected(&[
        (
            "not on the page grid",
            "scenarios:\n  - name: a\n    files: { size: 1GiB }\n    window: 66KiB\n",
            &[":4:", "multiple of 4KiB", "window: 1GiB"],
        ),
        (
            "a word that is no mode",
            "scenarios:\n  - name: a\n    files: { size: 1GiB }\n    window: streaming\n",
            &[":4:", "expected `whole`, `auto` or a size"],
        ),
    ]);
}

/// `op` is read unless a scenario says otherwise, is a matrix axis, and is kept in the spec the
/// worker gets.
#[test]
fn op_defaults_to_read_and_is_an_axis() {
    assert_eq!(expand(&parse_ok(MINIMAL))[0].op, Op::Read);
    let suite = parse_ok(
        "scenarios:\n  - name: ckpt\n    files: { size: 1MiB }\n    op: [write, roundtrip, read]\n",
    );
    let trials = expand(&suite);
    let named: Vec<(String, Op)> = trials.iter().map(|t| (t.name.clone(), t.op)).collect();
    assert_eq!(
        named,
        [
            ("test::ckpt[op=write]".to_string(), Op::Write),
            ("test::ckpt[op=roundtrip]".to_string(), Op::Roundtrip),
            ("test::ckpt[op=read]".to_string(), Op::Read),
        ]
    );
    assert_eq!(trials[0].expect.integrity, Integrity::Exact);
    let one = parse_ok("scenarios:\n  - name: w\n    files: { size: 1MiB }\n    op: write\n");
    assert_eq!(
        expand(&one)[0].name,
        "test::w",
        "a single op is not in the name"
    );
    // A record of an older gate has no `op`: it read.
    let mut json = serde_json::to_value(&trials[0]).unwrap();
    json.as_object_mut().unwrap().remove("op");
    let old: TrialSpec = serde_json::from_value(json).unwrap();
    assert_eq!(old.op, Op::Read);
}

#[test]
fn writing_mistakes_are_reported_with_position_and_fix() {
    assert_rejected(&[
        (
            "a user's file is never written",
            "scenarios:\n  - name: w\n    files: { path: /data/ckpt.bin }\n    op: write\n",
            &[
                ":4:5:",
                "`op: write` writes a file",
                "/data/ckpt.bin",
                "never writes over it",
                "gds-gate-written-",
            ],
        ),
        (
            "random offsets",
            "scenarios:\n  - name: w\n    files: { size: 1MiB }\n    op: [read, roundtrip]\n    pattern: { random: { size: 4KiB, count: 2 } }\n",
            &[":5:5:", "`op: roundtrip`", "pattern: whole"],
        ),
        (
            "several GPUs",
            "scenarios:\n  - name: w\n    files: { size: 1MiB }\n    reader: cufile\n    op: write\n    gpus: all\n",
            &[":6:5:", "`gpus: all`", "one worker writes"],
        ),
        (
            "unknown op",
            "scenarios:\n  - name: w\n    files: { size: 1MiB }\n    op: append\n",
            &[":4:", "unknown variant `append`", "roundtrip"],
        ),
    ]);
}

/// Writers hold the whole pass: a window smaller than it is refused for a writing trial (named
/// with its key and the fix), never ignored; `whole`, `auto` and a window that holds the pass are
/// accepted, and reads keep streaming in a scenario of their own.
#[test]
fn a_writing_trial_refuses_a_window_smaller_than_its_pass() {
    assert_rejected(&[
        (
            "a window smaller than the pass",
            "scenarios:\n  - name: w\n    files: { size: 1MiB, count: 2 }\n    op: roundtrip\n    window: 256KiB\n",
            &[
                ":5:5:",
                "`op: roundtrip`",
                "whole pass in one buffer (2MiB)",
                "`window: 256KiB`",
                "do not stream",
                "window: whole",
            ],
        ),
        (
            "a window axis beside a read",
            "scenarios:\n  - name: w\n    files: { size: 1MiB }\n    op: [read, write]\n    window: [whole, 512KiB]\n",
            &[":5:5:", "`op: write`", "`window: 512KiB`"],
        ),
    ]);
    for window in ["whole", "auto", "1MiB", "4MiB"] {
        let suite = parse_ok(&format!(
            "scenarios:\n  - name: w\n    files: {{ size: 1MiB }}\n    op: write\n    window: {window}\n"
        ));
        assert_eq!(expand(&suite).len(), 1, "{window}");
    }
    let reads = parse_ok(
        "scenarios:\n  - name: r\n    files: { size: 1MiB }\n    op: read\n    window: 256KiB\n",
    );
    assert_eq!(
        expand(&reads)[0].window,
        window_mode::WindowMode::Size(256 << 10)
    );
}

/// A load opens and registers its files every pass and reads them whole into one buffer: a
/// reader that cannot, random offsets, several GPUs and a window smaller than the pass are
/// refused with their key and the fix.
#[test]
fn load_mistakes_are_reported_with_position_and_fix() {
    assert_rejected(&[
        (
            "a reader that does not load",
            "scenarios:\n  - name: l\n    files: { size: 1MiB }\n    op: load\n    reader: [posix, cufile-batch]\n",
            &[
                ":4:5:",
                "`op: load`",
                "`cufile-batch` reader",
                "load with `posix`",
            ],
        ),
        (
            "KvikIO's stream-ordered reads",
            "scenarios:\n  - name: l\n    files: { size: 1MiB }\n    op: load\n    reader: kvikio\n    kvikio_api: async\n",
            &[":6:5:", "not `kvikio_api: async`", "leave `kvikio_api` out"],
        ),
        (
            "random offsets",
            "scenarios:\n  - name: l\n    files: { size: 1MiB }\n    op: load\n    pattern: { random: { size: 4KiB, count: 2 } }\n",
            &[":5:5:", "reads the files whole", "pattern: whole"],
        ),
        (
            "several GPUs",
            "scenarios:\n  - name: l\n    files: { size: 1MiB }\n    reader: cufile\n    op: load\n    gpus: all\n",
            &[":6:5:", "`gpus: all`", "one worker loads"],
        ),
        (
            "a window smaller than the pass",
            "scenarios:\n  - name: l\n    files: { size: 1MiB, count: 4 }\n    op: load\n    window: 1MiB\n",
            &[
                ":5:5:",
                "`op: load` holds the whole pass",
                "`window: 1MiB`",
                "window: whole",
            ],
        ),
    ]);
    let suite = parse_ok(
        "scenarios:\n  - name: l\n    files: { size: 1MiB, count: 16 }\n    op: load\n    reader: [posix, h2d, cufile, kvikio, torch]\n",
    );
    let trials = expand(&suite);
    assert_eq!(trials.len(), 5);
    assert!(trials.iter().all(|t| t.op == Op::Load && !t.op.writes()));
}

/// A `cufile:` override goes into the trial's cufile.json as written: a value of the wrong type
/// or out of range is refused with its key, what cuFile takes and the fix, and the values
/// NVIDIA's own file holds are accepted.
#[test]
fn cufile_values_of_the_wrong_type_or_range_are_refused() {
    let suite = |overrides: &str| {
        format!(
            "scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    reader: cufile\n    cufile:\n      {overrides}\n"
        )
    };
    let cases = [
        (
            "a string for a number",
            suite("execution.max_io_threads: \"lots; rm -rf /\""),
            &[
                ":6:7:",
                "`cufile.execution.max_io_threads` is the string \"lots; rm -rf /\"",
                "expected a whole number",
                "help: set `execution.max_io_threads` to a whole number",
            ][..],
        ),
        (
            "a statistics level out of range",
            suite("profile.cufile_stats: 7"),
            &[":6:7:", "is 7", "expected a whole number from 0 to 3"],
        ),
        (
            "a negative size",
            suite("properties.max_direct_io_size_kb: -16"),
            &[":6:7:", "is -16", "expected a whole number from 1 to"],
        ),
        (
            "a fraction",
            suite("execution.max_request_parallelism: 1.5"),
            &[":6:7:", "is 1.5", "expected a whole number"],
        ),
        (
            "a word for a switch",
            suite("properties.allow_compat_mode: \"no\""),
            &[
                ":6:7:",
                "is the string \"no\"",
                "expected `true` or `false`",
            ],
        ),
        (
            "a number for a switch",
            suite("execution.parallel_io: 1"),
            &[":6:7:", "expected `true` or `false`"],
        ),
        (
            "a number for a log level",
            suite("logging.level: 3"),
            &[":6:7:", "expected one of `NOTICE`, `ERROR`"],
        ),
        (
            "no value",
            suite("execution.min_io_threshold_size_kb:"),
            &[":6:7:", "is null", "expected a whole number"],
        ),
        (
            "a string for a list",
            suite("denylist.mounts: /mnt/a"),
            &[":6:7:", "expected a list of strings"],
        ),
    ];
    for (what, text, needles) in &cases {
        let shown = parse_err(text);
        for needle in *needles {
            assert!(
                shown.contains(needle),
                "{what}: `{needle}` not in:\n{shown}"
            );
        }
    }
    let accepted = suite(
        "{ logging.level: info, profile.cufile_stats: 3, execution.max_io_threads: 8, execution.parallel_io: false, properties.allow_compat_mode: false, properties.posix_pool_slab_count: [128, 64, 4], denylist.mounts: [/mnt/a], properties.io_priority: high }",
    );
    parse_ok(&accepted);
}

/// A suite saved in another encoding is named as not UTF-8, with the first bad byte's position.
#[test]
fn a_suite_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.yaml");
    std::fs::write(&path, b"# caf\xe9\nscenarios:\n  - name: a\n").unwrap();
    let shown = load(&path).unwrap_err().to_string();
    assert!(
        shown.contains("latin1.yaml:1:6: the file is not UTF-8: byte 0xe9 at offset 5"),
        "{shown}"
    );
    assert!(shown.contains("help: save the suite as UTF-8"), "{shown}");
}

/// The alias bomb of nine levels of nine aliases (9^9 nodes from a few hundred bytes), here in
/// `cufile:`, which takes any value.
pub(super) fn alias_bomb(indent: &str) -> String {
    let mut text = format!("{indent}l0: &l0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let previous = format!("*l{}", level - 1);
        let items = [previous.as_str(); 9].join(", ");
        text.push_str(&format!("{indent}l{level}: &l{level} [{items}]\n"));
    }
    text
}

/// yaml_serde stops an alias bomb without a position; the error points at the first alias, not
/// at `1:1`.
#[test]
fn an_alias_bomb_is_refused_at_its_first_alias() {
    let text = format!(
        "scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    cufile:\n{}",
        alias_bomb("      ")
    );
    let started = std::time::Instant::now();
    let shown = parse_err(&text);
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    // Line 6 is `l1: &l1 [*l0, …`; its first alias is at column 16.
    assert!(
        shown.starts_with("suites/test.yaml:6:16: repetition limit exceeded"),
        "{shown}"
    );
    assert!(shown.contains("aliases"), "{shown}");
}

/// Each error as `validate` shows it, one string apiece.
fn each_error(text: &str) -> Vec<String> {
    parse(Path::new("suites/test.yaml"), text)
        .expect_err("must be rejected")
        .into_each()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Three broken scenarios: three errors, each at its own line with its fix, in one answer.
#[test]
fn every_broken_scenario_is_reported_at_once() {
    let text = "suite: bad\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n    repetitons: 3\n  - name: b\n    files: { size: 1MiB }\n    reader: posx\n  - name: c\n    files: { size: 1MiB }\n    repetitions: -1\n";
    let errors = each_error(text);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    let expected: [&[&str]; 3] = [
        &[
            "suites/test.yaml:5:5: scenarios[0]: unknown field `repetitons`",
            "help: did you mean the key `repetitions`?",
        ],
        &[
            "suites/test.yaml:8:13: scenarios[1].reader: unknown variant `posx`",
            "help: did you mean the value `posix`?",
        ],
        &[
            "suites/test.yaml:11:18: scenarios[2]: `repetitions` must be a whole number of at least 1, found -1",
            "help: write how many measured passes each trial makes",
        ],
    ];
    for (error, needles) in errors.iter().zip(expected) {
        for needle in needles {
            assert!(error.contains(needle), "`{needle}` not in:\n{error}");
        }
    }
    // As one error, the later ones on `error:` lines of their own.
    let shown = parse_err(text);
    assert_eq!(
        shown.matches("\nerror: suites/test.yaml:").count(),
        2,
        "{shown}"
    );
}

/// A file with one mistake gets the one error it always got, not a list of one.
#[test]
fn a_single_error_stays_a_single_error() {
    let text = "scenarios:\n  - name: a\n    files: { size: 1MiB }\n    repetitons: 3\n  - name: b\n    files: { size: 1MiB }\n";
    let error = parse(Path::new("suites/test.yaml"), text).expect_err("typo");
    assert!(
        matches!(
            error,
            ScenarioError::Invalid {
                line: 4,
                column: 5,
                ..
            }
        ),
        "{error:?}"
    );
    // Not YAML: the parse error alone, where the parser stopped.
    let text = "scenarios:\n  - name: a\n    files: { size: 1MiB\n  - name: b\n    reader: posx\n";
    assert_eq!(each_error(text).len(), 1);
}

/// Top-level keys, scenarios that do not deserialise and those that deserialise but fail their
/// checks: each reported once, in the file's order.
#[test]
fn errors_of_every_part_are_gathered_in_the_files_order() {
    let text = "suite: mixed\ndescripton: typo\ndefaults:\n  warmup: 0\nscenarios:\n  - name: a\n    files: { size: 1MiB }\n    gpus: [0, 1]\n  - name: b\n    files: { size: 1MiB }\n    nthreads: [1, -1]\n  - name: c\n    files: { size: 1MiB }\n  - name: c\n    files: { size: 1MiB }\n  - 3\npythn: python3\n";
    let errors = each_error(text);
    let expected = [
        ":2:1: unknown field `descripton`",
        ":8:5: scenarios[0] (`a`): `gpus` does not apply to reader `posix`",
        ":11:19: scenarios[1]: `nthreads[1]` must be a whole number of at least 1, found -1",
        ":14:5: scenarios[3]: duplicate scenario name `c`",
        ":16:5: scenarios[4]: invalid type: integer `3`",
        ":17:1: unknown field `pythn`",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (error, start) in errors.iter().zip(expected) {
        assert!(
            error.starts_with(&format!("suites/test.yaml{start}")),
            "`{start}` does not start:\n{error}"
        );
    }
    assert!(errors[5].contains("did you mean the key `python`?"));
    // Broken `defaults` are reported; the scenarios, which take their values, are checked no
    // further than deserialisation then.
    let text = "defaults:\n  warmup: -2\nscenarios:\n  - name: a\n    gpus: [0, 1]\n  - name: b\n    cache: hot\n";
    let errors = each_error(text);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors[0].starts_with(
            "suites/test.yaml:2:11: defaults: `warmup` must be a whole number of at least 0, found -2"
        ),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].starts_with("suites/test.yaml:7:12: scenarios[1].cache: unknown variant `hot`"),
        "{}",
        errors[1]
    );
}

/// A file of many broken scenarios shows the first [`MAX_ERRORS`] and where the next one is.
#[test]
fn errors_past_the_limit_are_said_to_be_there() {
    let mut text = String::from("scenarios:\n");
    for index in 0..MAX_ERRORS + 5 {
        text.push_str(&format!(
            "  - {{ name: s{index}, files: {{ size: 1MiB }}, repetitions: 0 }}\n"
        ));
    }
    let errors = each_error(&text);
    assert_eq!(errors.len(), MAX_ERRORS + 1, "{errors:#?}");
    let last = &errors[MAX_ERRORS];
    assert!(
        last.starts_with(&format!("suites/test.yaml:{}:", MAX_ERRORS + 2))
            && last.contains("at most 20 errors of a file are shown at once")
            && last.contains("help: fix the errors above"),
        "{last}"
    );
}

/// A count out of range says the key, the bound and what was written, and how to write it.
#[test]
fn a_negative_count_is_said_in_the_suites_terms() {
    let suite =
        |line: &str| format!("scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    {line}\n");
    assert_eq!(
        parse_err(&suite("repetitions: -1")),
        "suites/test.yaml:4:18: scenarios[0]: `repetitions` must be a whole number of at least 1, found -1\n  help: write how many measured passes each trial makes, without quotes, e.g. `repetitions: 5` (the default)"
    );
    for (line, needles) in [
        (
            "warmup: -2",
            &[
                ":4:13:",
                "`warmup` must be a whole number of at least 0, found -2",
                "`warmup: 0` for none",
            ][..],
        ),
        (
            "rounds: -1",
            &[
                ":4:13:",
                "`rounds` must be a whole number of at least 1, found -1",
                "help: write how many workers",
            ],
        ),
        (
            "nthreads: 0",
            &[
                ":4:15:",
                "`nthreads` must be a whole number of at least 1, found 0",
                "`nthreads: [1, 8]`",
            ],
        ),
        (
            "repetitions: 1.5",
            &["`repetitions` must be a whole number of at least 1, found 1.5"],
        ),
        (
            "repetitions: \"3\"",
            &["`repetitions` must be a whole number of at least 1, found \"3\""],
        ),
        (
            "repetitions: 99999999999",
            &["`repetitions` must be a whole number of at most 4294967295, found 99999999999"],
        ),
        (
            "queue_depth: -4",
            &[
                "`queue_depth` must be a whole number of at least 1, found -4",
                "help: write a whole number of 1 or more: digits only",
            ],
        ),
    ] {
        let shown = parse_err(&suite(line));
        for needle in needles {
            assert!(
                shown.contains(needle),
                "{line}: `{needle}` not in:\n{shown}"
            );
        }
        assert!(
            !shown.contains("u32") && !shown.contains("invalid"),
            "{shown}"
        );
    }
}
