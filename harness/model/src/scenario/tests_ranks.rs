//! `ranks`: several workers of one trial on one GPU, each reading its own files; a count gives
//! every rank the trial's reader, a list names each rank's.

use super::tests::{assert_rejected, parse_ok};
use super::*;

#[test]
fn ranks_make_one_trial_named_by_its_count_or_its_readers() {
    let suite = parse_ok(
        "scenarios:\n  - name: c\n    files: { size: 1MiB, count: 4 }\n    reader: [posix, cufile]\n    ranks: 4\n  - name: l\n    files: { size: 1MiB, count: 2 }\n    ranks: [cufile, kvikio]\n    gpu: 1\n  - name: same\n    files: { size: 1MiB, count: 2 }\n    ranks: [kvikio, kvikio]\n",
    );
    let trials = expand(&suite);
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test::c[reader=posix,ranks=4]",
            "test::c[reader=cufile,ranks=4]",
            "test::l[ranks=cufile+kvikio]",
            "test::same[ranks=2]",
        ]
    );
    assert_eq!(trials[1].ranks, [Reader::Cufile; 4]);
    assert_eq!(trials[2].ranks, [Reader::Cufile, Reader::Kvikio]);
    assert_eq!((trials[2].reader, trials[2].gpu), (Reader::Cufile, 1));
    assert!(!trials[0].uses_gpu() && trials[2].uses_gpu());
    // The worker spec carries them through JSON; specs without the key read as one worker.
    let back: TrialSpec =
        serde_json::from_value(serde_json::to_value(&trials[2]).unwrap()).unwrap();
    assert_eq!(back, trials[2]);
    let plain = parse_ok("scenarios:\n  - name: r\n    files: { size: 1MiB }\n");
    let json = serde_json::to_value(&expand(&plain)[0]).unwrap();
    assert!(json.get("ranks").is_none(), "{json}");
}

#[test]
fn ranks_mistakes_are_reported_with_position_and_fix() {
    let scenario = |keys: &str| {
        format!("scenarios:\n  - name: a\n    files: {{ size: 1MiB, count: 4 }}\n{keys}")
    };
    let cases: &[(&str, String, &[&str])] = &[
        (
            "one rank",
            scenario("    ranks: 1\n"),
            &[
                ":4:5:",
                "`ranks` gives 1 rank(s), expected 2 to 64",
                "one worker needs no `ranks`",
            ],
        ),
        (
            "too many",
            scenario("    ranks: 65\n"),
            &[":4:5:", "expected 2 to 64"],
        ),
        (
            "negative",
            scenario("    ranks: -2\n"),
            &[":4:", "2 or more"],
        ),
        (
            "a word",
            scenario("    ranks: many\n"),
            &[":4:", "`[cufile, kvikio]`"],
        ),
        (
            "an unknown reader",
            scenario("    ranks: [cufile, nvme]\n"),
            &[":4:", "nvme"],
        ),
        (
            "a reader beside the list",
            scenario("    reader: cufile\n    ranks: [cufile, kvikio]\n"),
            &[
                ":4:5:",
                "`ranks` lists each rank's reader",
                "remove `reader`",
            ],
        ),
        (
            "with gpus",
            scenario("    reader: cufile\n    ranks: 2\n    gpus: [0, 1]\n"),
            &[":5:5:", "`ranks` and `gpus: 0+1` cannot be combined"],
        ),
        (
            "a write",
            scenario("    op: write\n    ranks: 2\n"),
            &[":4:5:", "`op` is `write`", "use `op: read`"],
        ),
        (
            "rounds",
            scenario("    ranks: 2\n    rounds: 2\n    repetitions: 2\n"),
            &[":5:5:", "`rounds` does not apply to a trial with `ranks`"],
        ),
        (
            "fewer files than ranks",
            scenario("    ranks: 8\n"),
            &[
                ":3:5:",
                "each of the 8 ranks reads its own file, but `files.count` is 4",
                "count: 8",
            ],
        ),
        (
            "writers without ranks",
            scenario("    writers: 1\n"),
            &[":4:5:", "the scenario has no `ranks`", "add `ranks: N`"],
        ),
        (
            "no rank left to read",
            scenario("    ranks: 2\n    writers: 2\n"),
            &[
                ":5:5:",
                "`writers: 2` leaves none of the 2 ranks to read",
                "at most 1",
            ],
        ),
        (
            "a writing rank that cannot write",
            scenario("    ranks: [cufile, cufile-batch]\n    writers: 1\n"),
            &[":5:5:", "`cufile-batch`, which does not write"],
        ),
        (
            "a writing rank streaming through a window",
            scenario("    ranks: 2\n    writers: 1\n    window: 1MiB\n"),
            &[
                ":6:5:",
                "`op: roundtrip` holds the whole pass in one buffer",
            ],
        ),
        (
            "a file of the user's",
            "scenarios:\n  - name: a\n    files: { path: /data/ckpt.bin }\n    ranks: 2\n".into(),
            &[
                ":3:5:",
                "`/data/ckpt.bin`",
                "read generated files with `ranks`",
            ],
        ),
    ];
    let cases: Vec<(&str, &str, &[&str])> = cases
        .iter()
        .map(|(what, text, needles)| (*what, text.as_str(), *needles))
        .collect();
    assert_rejected(&cases);
    // A default `reader` is for the other scenarios: a list of ranks replaces it.
    parse_ok(
        "defaults:\n  reader: cufile\nscenarios:\n  - name: a\n    files: { size: 1MiB, count: 2 }\n    ranks: [kvikio, posix]\n",
    );
}

#[test]
fn writers_name_the_last_ranks_and_the_trial() {
    let suite = parse_ok(
        "scenarios:\n  - name: kv\n    files: { size: 1MiB, count: 4 }\n    ranks: [cufile, kvikio, cufile, posix]\n    writers: 2\n    task_size: [256KiB, 2MiB]\n",
    );
    let trials = expand(&suite);
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test::kv[task=256KiB,ranks=cufile+kvikio+cufile+posix,writers=2]",
            "test::kv[task=2MiB,ranks=cufile+kvikio+cufile+posix,writers=2]",
        ]
    );
    assert_eq!((trials[0].writers, trials[0].op), (2, Op::Read));
    assert!(trials[0].writes());
}
