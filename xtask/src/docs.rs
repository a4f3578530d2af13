//! `cargo xtask docs [--check]`: the generated documents (`docs/report.schema.json` from
//! report.json's types, `docs/reference/cli.md` from the gate's `--help`) rewritten, or with
//! `--check` only compared. That is the binary's `generated` test, which `cargo test` runs too,
//! so CI fails on a stale one.

use anyhow::{Context, Result};
use xshell::{Shell, cmd};

pub fn run(sh: &Shell, check: bool) -> Result<()> {
    let update = if check { "0" } else { "1" };
    cmd!(sh, "cargo test --package gds-gate-bin --test generated")
        .env("GDS_GATE_UPDATE_DOCS", update)
        .run()
        .context(if check {
            "the generated documents are stale: run `cargo xtask docs` and commit them"
        } else {
            "generating the documents failed"
        })
}
