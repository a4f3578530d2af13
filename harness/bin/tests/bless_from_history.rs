//! `bless --from-history` end to end on the CPU reader: runs accumulate in a scratch history, the
//! bless takes them, refuses too few or too close, and never takes a run that was slower.

pub mod support;

use support::{Run, SMALL, Scratch, pin_baseline};

#[test]
fn bless_from_history_takes_passing_runs_and_refuses_too_few() {
    let scratch = Scratch::new();
    let suite = scratch.suite(SMALL);
    let common = ["--suite", suite.to_str().unwrap(), "--runner", "box"];
    let gate = |args: &[&str]| -> Run { scratch.gate(&[&common[..], args].concat()) };
    let bless = |args: &[&str]| -> Run {
        scratch.gate(&[&["bless", "--from-history"], &common[..], args].concat())
    };

    // GDS_GATE_BLESS_INTERVAL, set for a runner's scheduled bless, is no conflict here.
    let none = scratch.gate_with(
        &[&["bless", "--from-history"], &common[..]].concat(),
        &[("GDS_GATE_BLESS_INTERVAL", "30")],
    );
    assert_eq!(none.code, 2, "{none:?}");
    assert!(none.stderr.contains("there is no such file"), "{none:?}");

    // Three runs without a baseline: each passes on its own checks and appends its line.
    for _ in 0..3 {
        let run = gate(&[]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    let short = bless(&[]);
    assert_eq!(short.code, 2, "{short:?}");
    for expected in [
        "too few passing runs",
        "(10 runs over at least 10m wanted)",
        "small::read: 3 passing run(s) over",
        "help: let this runner's gate runs accumulate in",
        "--from-history",
        "--history-runs 3 --min-span",
    ] {
        assert!(short.stderr.contains(expected), "{expected}: {short:?}");
    }
    let baseline = scratch.path("baselines/box.yaml");
    assert!(!baseline.exists());

    let blessed = bless(&["--history-runs", "3", "--min-span", "0s"]);
    assert_eq!(blessed.code, 0, "{blessed:?}");
    assert!(
        blessed.stdout.contains("creating: ")
            && blessed.stdout.contains("+ small::read: level")
            && blessed.stdout.contains("over 3 runs")
            && blessed.stdout.contains("  from the history `")
            && blessed.stdout.contains(": 3 run(s) from "),
        "{blessed:?}"
    );
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(
        text.contains("control:"),
        "the runs' control readings: {text}"
    );
    // The next run is judged against it. Whether three runs of a 2-core test host, busy with the
    // other tests, call it as fast is noise: only that it was compared is checked.
    let again = gate(&["--confirm", "0"]);
    assert!([0, 3].contains(&again.code), "{again:?}");
    let kind = scratch.report()["baseline"]["trials"][0]["judgement"]["kind"].clone();
    assert!(
        ["pass", "faster", "regression"].contains(&kind.as_str().unwrap_or("")),
        "{kind}: {again:?}"
    );

    // A run slower than its baseline is in the history as such, and a bless never takes it.
    pin_baseline(&baseline, 1000.0);
    let slow = gate(&["--confirm", "0"]);
    assert_eq!(slow.code, 3, "{slow:?}");
    let refused = bless(&["--history-runs", "5", "--min-span", "0s"]);
    assert_eq!(refused.code, 2, "{refused:?}");
    let (passing, slower) = if again.code == 0 { (4, 1) } else { (3, 2) };
    assert!(
        refused
            .stderr
            .contains(&format!("small::read: {passing} passing run(s) over"))
            && refused
                .stderr
                .contains(&format!("not taken: {slower} slower")),
        "{refused:?}"
    );
    let flags = bless(&["--runs", "3"]);
    assert_eq!(flags.code, 2, "--from-history runs nothing: {flags:?}");
}
