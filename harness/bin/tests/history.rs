//! Where the run history lives: `.gds-gate/history.jsonl` beside the run's folder, out of
//! `target/` (which `cargo clean` deletes), and a history an earlier gate left in `--out` is
//! moved there once.

pub mod support;

use std::process::Command;

use support::{GATE, Run, SMALL, Scratch};

/// The gate run from `dir` on the small suite, reports in `dir/target/gds-gate` (the default
/// `--out` there), with no history chosen by the environment.
fn run_in(scratch: &Scratch, dir: &std::path::Path, extra: &[&str]) -> Run {
    let suite = scratch.suite(SMALL);
    Command::new(GATE)
        .arg("--suite")
        .arg(&suite)
        .arg("--data-dir")
        .arg(scratch.data())
        .args(["--runner", "box", "--baselines"])
        .arg(scratch.path("baselines"))
        .args(extra)
        .current_dir(dir)
        // The runner's control at test size (256 MiB by default).
        .env("GDS_GATE_CONTROL_SIZE", "1MiB")
        .env_remove("GDS_GATE_HISTORY")
        .env_remove("GDS_GATE_OUT")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GDS_GATE_REQUIRE_GPU")
        .output()
        .unwrap()
        .into()
}

fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

#[test]
fn the_history_lives_out_of_target_and_an_old_one_moves_there_once() {
    let scratch = Scratch::new();
    let repo = scratch.path("repo");
    let old = repo.join("target/gds-gate/history.jsonl");
    let new = repo.join(".gds-gate/history.jsonl");
    std::fs::create_dir_all(&repo).unwrap();

    let first = run_in(&scratch, &repo, &[]);
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(lines(&new), 1, "{first:?}");
    assert!(!old.exists());

    // `cargo clean` deletes target/: the history stays, and the next run adds to it.
    std::fs::remove_dir_all(repo.join("target")).unwrap();
    let second = run_in(&scratch, &repo, &[]);
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(lines(&new), 2);

    // A history an earlier gate kept in target/gds-gate is moved, with a one-line note.
    std::fs::rename(&new, &old).unwrap();
    let migrated = run_in(&scratch, &repo, &[]);
    assert_eq!(migrated.code, 0, "{migrated:?}");
    assert!(
        migrated.stderr.contains(
            "note: moved the run history `target/gds-gate/history.jsonl` to `.gds-gate/history.jsonl`"
        ),
        "{migrated:?}"
    );
    assert!(!old.exists());
    assert_eq!(lines(&new), 3);
    let again = run_in(&scratch, &repo, &[]);
    assert!(!again.stderr.contains("moved the run history"), "{again:?}");

    // `report` draws from the history, and adopts one left in --out as a run does.
    std::fs::rename(&new, &old).unwrap();
    let report: Run = Command::new(GATE)
        .args(["report", "--runner", "box", "--baselines"])
        .arg(scratch.path("baselines"))
        .current_dir(&repo)
        .env_remove("GDS_GATE_HISTORY")
        .env_remove("GDS_GATE_OUT")
        .output()
        .unwrap()
        .into();
    assert_eq!(report.code, 0, "{report:?}");
    assert!(
        report.stderr.contains("moved the run history"),
        "{report:?}"
    );
    assert!(
        report.stdout.contains("plot: target/gds-gate/plots/"),
        "{report:?}"
    );
    assert_eq!(lines(&new), 4);

    // `--history` puts it elsewhere; `bench --stats` reads the default place (`--quick`: the
    // figures do not matter here, only the noise fitted).
    let chosen = scratch.path("elsewhere/h.jsonl");
    let elsewhere = run_in(&scratch, &repo, &["--history", chosen.to_str().unwrap()]);
    assert_eq!(elsewhere.code, 0, "{elsewhere:?}");
    assert_eq!((lines(&chosen), lines(&new)), (1, 4));
    let stats: Run = Command::new(GATE)
        .args(["bench", "--stats", "--quick"])
        .current_dir(&repo)
        .env_remove("GDS_GATE_HISTORY")
        .output()
        .unwrap()
        .into();
    assert!(
        stats.stdout.contains("noise fitted to 4 run(s)"),
        "{stats:?}"
    );
}
