//! The parity bench's embedded suite, its rows and the ratios it states.

use super::*;
use gds_model::scenario::{CompatMode, Op, Reader, TrialSpec};

fn embedded(setting: &Setting) -> Vec<TrialSpec> {
    let suite = gds_model::scenario::parse(Path::new("<parity bench>"), &suite(setting)).unwrap();
    gds_model::scenario::expand(&suite)
}

#[test]
fn the_embedded_suite_reads_one_file_at_the_same_settings_with_every_reader() {
    let setting = Setting {
        size: 64 << 20,
        threads: 8,
        task_size: 4 << 20,
        rest: Duration::ZERO,
        rows: Vec::new(),
        rate: Default::default(),
        console: Default::default(),
    };
    let trials = embedded(&setting);
    let readers: Vec<(Reader, Op)> = trials.iter().map(|t| (t.reader, t.op)).collect();
    assert_eq!(
        readers,
        [
            (Reader::Cufile, Op::Read),
            (Reader::Kvikio, Op::Read),
            (Reader::Posix, Op::Read),
            (Reader::Kvikio, Op::Write),
            (Reader::Cufile, Op::Write),
            (Reader::CufileBatch, Op::Read),
            (Reader::CufileAsync, Op::Read),
        ]
    );
    // The same I/Os in flight: 8 threads, one batch of 8 entries, 8 streams.
    let in_flight: Vec<u32> = trials
        .iter()
        .map(|t| match t.reader {
            Reader::CufileBatch => t.batch_size * t.queue_depth,
            Reader::CufileAsync => t.queue_depth,
            _ => t.nthreads,
        })
        .collect();
    assert_eq!(in_flight, [8; 7]);
    for t in &trials {
        assert_eq!(t.task_size, 4 << 20, "{}", t.name);
        assert_eq!((t.warmup, t.repetitions), (0, 1));
        assert_eq!(t.files, trials[0].files);
    }
    assert_eq!(trials[1].compat_mode, Some(CompatMode::OFF));
    assert_eq!(trials[3].compat_mode, Some(CompatMode::OFF));
    // The writing rows run the writing scenarios, the reading rows the reading ones.
    for row in ROWS {
        if let Some(scenario) = row.scenario() {
            let spec = trials.iter().find(|t| t.scenario == scenario).unwrap();
            assert_eq!(spec.op.writes(), row.writes(), "{row:?}");
        }
    }
    // Every row that runs a worker finds its scenario.
    for row in ROWS {
        if let Some(scenario) = row.scenario() {
            assert!(trials.iter().any(|t| t.scenario == scenario), "{row:?}");
        }
    }
}

#[test]
fn parity_ratios_pair_rows_within_a_run_and_a_missed_run_leaves_out_only_its_own() {
    let mut rates = [Some(1.0); ROWS.len()];
    rates[Row::Cufile.position()] = Some(1.5);
    rates[Row::Kvikio.position()] = Some(2.0);
    rates[Row::Batch.position()] = None; // failed this run
    let ratios = pair_ratios_of_run(&rates);
    let of = |pair: (Row, Row)| ratios[PAIRS.iter().position(|p| *p == pair).unwrap()];
    assert_eq!(of((Row::Cufile, Row::Kvikio)), Some(0.75));
    assert_eq!(of((Row::Batch, Row::Cufile)), None);
    assert_eq!(of((Row::Async, Row::Cufile)), Some(1.0 / 1.5));
}

#[test]
fn each_parity_pair_is_cufile_over_a_reference_in_one_direction() {
    for (row, over) in PAIRS {
        assert_eq!(row.writes(), over.writes(), "{row:?} / {over:?}");
        let reference = over.scenario().unwrap_or_default();
        assert!(
            reference.starts_with("kvikio") || reference == "cufile",
            "{over:?}"
        );
        assert_eq!(row.scenario().map(|s| s.starts_with("cufile")), Some(true));
    }
}

#[test]
fn the_ratio_line_gives_the_median_and_every_run() {
    assert_eq!(
        ratio_line("cufile writer", "KvikIO", &[1.1, 0.98, 1.03]).as_deref(),
        Some("- cufile writer / KvikIO: median 1.03 (runs: 1.10 0.98 1.03)")
    );
    assert_eq!(ratio_line("cufile writer", "KvikIO", &[]), None);
    // Measured by `bench --parity --runs 25` on the H200 (cufile reader / KvikIO compat OFF).
    let h200 = [
        0.57, 0.90, 1.11, 0.61, 1.15, 0.96, 0.83, 1.18, 0.89, 0.99, 1.15, 0.94, 0.96, 0.90, 0.91,
        1.02, 0.86, 1.10, 0.96, 1.00, 0.70, 0.84, 1.01, 0.99, 0.55,
    ];
    let line = ratio_line("cufile reader", "KvikIO", &h200).unwrap();
    assert!(
        line.starts_with(
            "- cufile reader / KvikIO: median 0.96, 95% confidence 0.89–1.00 (runs: 0.57 "
        ),
        "{line}"
    );
}

#[test]
fn dd_writes_whole_blocks_with_o_direct() {
    let args = dd_write_args(Path::new("d/w.bin"), 3);
    assert_eq!(
        args,
        [
            "if=/dev/zero",
            "of=d/w.bin",
            "bs=16M",
            "count=3",
            "oflag=direct",
            "status=none"
        ]
    );
}

#[test]
fn every_row_is_listed_once_at_its_position() {
    for (index, row) in ROWS.iter().enumerate() {
        assert_eq!(row.position(), index, "{row:?}");
    }
}

#[test]
fn a_recording_off_row_follows_its_recording_on_row() {
    for (index, row) in ROWS.iter().enumerate() {
        if !row.recording() {
            assert!(ROWS[index - 1].recording(), "{row:?}");
            assert_eq!(ROWS[index - 1].scenario(), row.scenario());
        }
    }
}

#[test]
fn a_runs_ratios_take_dd_in_the_rows_direction_and_the_recording_on_neighbour() {
    let mut rates = [None; ROWS.len()];
    for (index, row) in ROWS.iter().enumerate() {
        rates[index] = Some(if row.writes() { 2.0 } else { 4.0 });
    }
    rates[Row::CufileNoRecording.position()] = Some(5.0);
    rates[Row::KvikioWrite.position()] = Some(1.0);
    rates[Row::Batch.position()] = None;
    let ratios = run_ratios(&rates);
    assert_eq!(ratios[Row::Dd.position()], Some(1.0));
    assert_eq!(ratios[Row::Cufile.position()], Some(1.0));
    // Off over on: the cufile reader's row beside it.
    assert_eq!(ratios[Row::CufileNoRecording.position()], Some(1.25));
    // A writing row over dd's write, not dd's read.
    assert_eq!(ratios[Row::KvikioWrite.position()], Some(0.5));
    assert_eq!(ratios[Row::CufileWrite.position()], Some(1.0));
    assert_eq!(ratios[Row::Batch.position()], None);
    // Without dd's write in a run, the writing rows have no ratio in it.
    rates[Row::DdWrite.position()] = None;
    let ratios = run_ratios(&rates);
    assert_eq!(ratios[Row::CufileWrite.position()], None);
    assert_eq!(ratios[Row::Cufile.position()], Some(1.0));
}

#[test]
fn rows_left_out_by_rows_are_neither_run_nor_shown() {
    let asked = [Row::Dd, Row::Cufile, Row::Kvikio];
    let setting = Setting {
        size: 64 << 20,
        threads: 1,
        task_size: 4 << 20,
        rest: Duration::ZERO,
        rows: asked.to_vec(),
        rate: Default::default(),
        console: Default::default(),
    };
    assert!(
        ROWS.iter()
            .all(|row| setting.runs(*row) == asked.contains(row))
    );
    let mut samples = vec![Samples::default(); ROWS.len()];
    for row in asked {
        samples[row.position()].gbps.push(1.0);
    }
    let mut pair_ratios = vec![Vec::new(); PAIRS.len()];
    pair_ratios[0] = vec![0.9];
    let file = PlannedFile {
        path: "d/f.bin".into(),
        size: 64 << 20,
        seed: Some(1),
        checksum: 0,
    };
    let mut out = String::new();
    render(&setting, 1, &file, &samples, &pair_ratios, &mut out);
    assert!(
        out.contains("| cufile reader, 1 thread(s), 4 MiB tasks | "),
        "{out}"
    );
    assert!(
        !out.contains("| cufile-batch") && !out.contains("not measured"),
        "{out}"
    );
    assert!(out.contains("/ KvikIO: median 0.90 (runs: 0.90)"), "{out}");
}

#[test]
fn rows_are_named_on_the_command_line_in_kebab_case() {
    use clap::ValueEnum;
    let names: Vec<String> = ROWS
        .iter()
        .map(|row| row.to_possible_value().unwrap().get_name().to_string())
        .collect();
    assert_eq!(
        &names[..4],
        ["dd", "cufile", "cufile-no-recording", "kvikio"]
    );
    assert_eq!(
        Row::from_str("cufile-kvikio-library", false),
        Ok(Row::CufileKvikioLibrary)
    );
}
