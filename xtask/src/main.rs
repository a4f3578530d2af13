//! `cargo xtask`: the commands people type. Each builds the gate with optimisations (it moves
//! gigabytes) and hands over to it, so the exit status is the gate's own; `docs` regenerates the
//! generated documents.

mod docs;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use xshell::{Shell, cmd};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "gds-gate tasks; paths are relative to the repository root"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gate (`cargo xtask gds-gate --help` for its options, `validate`, `gen`).
    #[command(name = "gds-gate", disable_help_flag = true)]
    GdsGate {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Can this host do GDS, and can the suites pass here? (`gds-gate doctor`)
    #[command(disable_help_flag = true)]
    Doctor {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Measure the gate's own costs: data generation, writing next to `dd`, CPU verification.
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Regenerate docs/report.schema.json and docs/reference/cli.md (`--check`: only compare).
    Docs {
        /// Fail when a generated document is stale instead of rewriting it.
        #[arg(long)]
        check: bool,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let sh = Shell::new()?;
    let root = project_root();
    sh.change_dir(&root);
    let (subcommand, args): (Option<&str>, Vec<OsString>) = match cli.command {
        Command::GdsGate { args } => (None, args),
        Command::Bench { args } => (Some("bench"), args),
        Command::Doctor { args } => (Some("doctor"), args),
        Command::Docs { check } => return docs::run(&sh, check),
    };
    cmd!(
        sh,
        "cargo build --release --package gds-gate-bin --bin gds-gate"
    )
    .run()
    .context("building the gate failed")?;
    let gate = target_dir(&root).join("release/gds-gate");
    let mut command = std::process::Command::new(&gate);
    command.current_dir(&root).args(subcommand).args(args);
    // exec: signals, the terminal and the exit status go straight to the gate.
    let error = command.exec();
    Err(error).with_context(|| format!("cannot start `{}`", gate.display()))
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}
