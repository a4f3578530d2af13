//! The gate's command line, declared once. `cargo xtask gds-gate ARGS` runs `gds-gate ARGS`.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

/// Where reports go unless `--out` says otherwise.
pub const DEFAULT_OUT: &str = "target/gds-gate";
/// The suite run when no `--suite` is given, relative to the repository root.
pub const DEFAULT_SUITE: &str = "scenarios/default.yaml";
/// Where generated test files are kept unless `--data-dir` says otherwise.
pub const DEFAULT_DATA_DIR: &str = "target/gds-gate/data";

/// CI regression gate for NVIDIA GPUDirect Storage: which path the bytes took, whether they are
/// the right bytes, and whether it is as fast as it was.
#[derive(Debug, Parser)]
#[command(name = "gds-gate", version, after_help = crate::exit::HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
    /// Throughput as printed and drawn: gb (10^9 B/s) or gib (2^30 B/s, as gdsio and KvikIO
    /// print). report.json, history and baselines keep GB/s whatever this says.
    #[arg(
        long,
        value_name = "UNIT",
        env = "GDS_GATE_UNITS",
        global = true,
        default_value = "gb"
    )]
    pub units: Units,
}

/// What `limitation` does to the selected trials' records.
#[derive(Debug, Subcommand)]
pub enum LimitationAction {
    /// Record the selected trials the doctor says cannot pass here, each with its reason.
    Record {
        /// Boxed: the run's options dwarf every other subcommand's.
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Drop the selected trials' records.
    Drop {
        #[command(flatten)]
        run: Box<RunArgs>,
    },
}

/// `--units`: the throughput unit shown to people.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Units {
    Gb,
    Gib,
}

impl From<Units> for gds_model::units::Rate {
    fn from(units: Units) -> Self {
        match units {
            Units::Gb => gds_model::units::Rate::Gb,
            Units::Gib => gds_model::units::Rate::Gib,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check suite files without running anything.
    Validate {
        /// Suite files (default: every `scenarios/*.yaml`).
        paths: Vec<PathBuf>,
    },
    /// Generate (or verify and reuse) the data files of the selected suites.
    Gen {
        #[command(flatten)]
        inputs: Inputs,
    },
    /// Run the trials (or take a saved report) and write the runner's baseline from those that
    /// passed every check but throughput. Refuses in CI; prints the diff.
    Bless {
        /// Take the results of a saved run instead of running the trials.
        #[arg(long, value_name = "REPORT.json")]
        from: Option<PathBuf>,
        /// Take each trial's last passing runs of this runner's current fingerprint from the run
        /// history (--history) instead of running the trials: the recommended way once CI runs
        /// have accumulated. Refuses when there are too few or they span too little time.
        // Not in conflict with `interval`: a runner's GDS_GATE_BLESS_INTERVAL, set for its
        // scheduled bless, must not refuse a bless from history, which does not use it.
        #[arg(long, conflicts_with_all = ["from", "runs"])]
        from_history: bool,
        /// With --from-history: passing runs each trial takes, its last ones (more when those
        /// span less than --min-span).
        #[arg(long, value_name = "N", requires = "from_history",
              default_value_t = crate::baseline::bless::history::DEFAULT_RUNS,
              value_parser = clap::value_parser!(u16).range(1..=1000))]
        history_runs: u16,
        /// With --from-history: the least time from the first taken run's start to the last's
        /// (`10m`, `2h`, `0s`): runs close together understate the run-to-run spread, so earlier
        /// runs are taken too until they span it.
        #[arg(long, value_name = "DURATION", requires = "from_history",
              default_value = "10m", value_parser = parse_span)]
        min_span: std::time::Duration,
        /// Record a changed fingerprint (driver, kernel, cuFile, ...) instead of refusing.
        #[arg(long)]
        accept_fingerprint: bool,
        /// Drop baseline trials that did not run or that no suite defines any more.
        #[arg(long)]
        remove_missing: bool,
        /// Re-record trials even when they are within noise of their baseline.
        #[arg(long)]
        refresh: bool,
        /// Complete runs of the selected trials to record (fresh workers, trial by trial in turn):
        /// their spread is what later runs are judged against; 3 at least to measure it. Without
        /// it: 6, then one more at a time, up to 10, while a trial's spread hides a 20% drop that
        /// more runs would show.
        #[arg(long, value_name = "N", conflicts_with = "from",
              value_parser = clap::value_parser!(u16).range(1..=100))]
        runs: Option<u16>,
        /// Seconds from the start of one blessed run to the start of the next, at least: short
        /// suites then wait between runs, so that the runs also sample the runner's slow drift (a
        /// shared or cloud disk's level can move by a quarter over minutes). Unused with --from
        /// and --from-history.
        #[arg(
            long,
            value_name = "SECONDS",
            env = "GDS_GATE_BLESS_INTERVAL",
            default_value_t = 60
        )]
        interval: u64,
        /// Boxed: the run's options dwarf every other subcommand's.
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Run the selected trials on two stacks (libcufile, KvikIO, cufile.json: each an environment)
    /// in alternating rounds and judge B against A from the paired rounds: another path, or
    /// slower beyond the stacks file's tolerance with 95% confidence, fails. No baseline, no
    /// history.
    Rehearse {
        /// The stacks file: `a:` and `b:`, each with `name:` and `env:`, and `tolerance:`.
        #[arg(long, value_name = "FILE")]
        stacks: PathBuf,
        /// Rounds each side of each trial runs (fresh workers, A and B in turn); 2 at least to
        /// have an interval, more to be sure of smaller differences. Default: as many as
        /// `--budget` fits, else 6.
        #[arg(long, value_name = "N",
              value_parser = clap::value_parser!(u32).range(2..=100))]
        rounds: Option<u32>,
        #[command(flatten)]
        run: Box<RunArgs>,
    },
    /// Record or drop a runner's known limitation: a trial that cannot pass on this runner
    /// (`strict-gds` without nvidia-fs), with the doctor's reason. Runs count it `limited` while
    /// it fails for that reason. Refuses in CI; prints what changed.
    Limitation {
        #[command(subcommand)]
        action: LimitationAction,
    },
    /// Plots of throughput over past runs with the baseline band (SVG), linked from summary.md.
    Report {
        /// Merge these runs' reports (each DIR holds a report.json) into merged.* under --out.
        #[arg(long, value_name = "DIR", num_args = 1..)]
        merge: Vec<PathBuf>,
        /// Where the run's reports are (and the plots go).
        #[arg(
            long,
            value_name = "DIR",
            env = "GDS_GATE_OUT",
            default_value = "target/gds-gate"
        )]
        out: PathBuf,
        #[command(flatten)]
        baselines: BaselineArgs,
    },
    /// Can this host do GDS, and can the selected suites pass here? One row per component, with
    /// the evidence and the fix. Exit 0 when the suites can pass, 1 when they cannot.
    Doctor {
        #[command(flatten)]
        inputs: Inputs,
        /// Machine-readable output for CI.
        #[arg(long)]
        json: bool,
        /// Judge as if GPU trials must run (as `--require-gpu` does for the gate).
        #[arg(long, env = "GDS_GATE_REQUIRE_GPU")]
        require_gpu: bool,
        /// Only collect this host's facts and write them to FILE (JSON), to replay elsewhere.
        #[arg(long, value_name = "FILE", conflicts_with = "facts")]
        collect: Option<PathBuf>,
        /// Judge facts collected earlier (`--collect`) instead of this host's.
        #[arg(long, value_name = "FILE")]
        facts: Option<PathBuf>,
    },
    /// The path verdict and diagnosis from saved outputs, for debugging a host by hand.
    Explain {
        /// Output of `gds_stats -p PID -l 3`.
        #[arg(long, value_name = "FILE")]
        gds_stats: Option<PathBuf>,
        /// A copy of /proc/driver/nvidia-fs/stats taken after the I/O.
        #[arg(long, value_name = "FILE")]
        nvfs_stats: Option<PathBuf>,
        /// The process's cufile.log.
        #[arg(long, value_name = "FILE")]
        cufile_log: Option<PathBuf>,
        /// The path the bytes should have taken, as suites spell `expect.path`: gds, nvfs, p2p,
        /// cufile-posix, kvikio-posix, host, bounce, any.
        #[arg(long, value_name = "PATH", default_value = "gds",
              value_parser = parse_expected)]
        expect: gds_model::scenario::ExpectedPath,
    },
    /// Run one trial, probe or GPU bench in this process (started by the gate; not for people).
    #[command(hide = true)]
    Worker {
        #[arg(long, value_enum, default_value_t = WorkerJob::Trial)]
        job: WorkerJob,
        #[arg(long)]
        spec: PathBuf,
        #[arg(long)]
        result: PathBuf,
    },
    /// Stop what the gate's workers left once the gate is gone (started by the gate; not for
    /// people).
    #[command(hide = true)]
    Guard {
        #[arg(long)]
        lineage: String,
    },
    /// Measure the gate's own costs: data generation, writing, CPU verification.
    Bench {
        /// File size, e.g. `4GiB`.
        #[arg(long, default_value = "4GiB", value_parser = parse_size)]
        size: u64,
        /// Repetitions per measurement (at least 5: a median and a range).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(5..))]
        runs: u16,
        /// Directory on the disk to measure.
        #[arg(
            long = "data-dir",
            value_name = "DIR",
            env = "GDS_GATE_DATA_DIR",
            default_value = DEFAULT_DATA_DIR
        )]
        dir: PathBuf,
        /// Measure the GPU side instead: worker start-up, verification kernels, the cufile reader
        /// against dd, and the parity table of `--parity`.
        #[arg(long, conflicts_with = "stats")]
        gpu: bool,
        /// Measure only reader and writer parity and what recording costs: dd, the cufile reader,
        /// KvikIO (compat OFF) and the cufile reader with KvikIO's libcufile, posix, with latency
        /// and CPU recording on and off, the cufile-batch and cufile-async readers at the same
        /// I/Os in flight, then dd's write, KvikIO's pwrite (compat OFF) and the cufile writer,
        /// interleaved run by run on one cold file.
        #[arg(long, conflicts_with_all = ["stats", "gpu"])]
        parity: bool,
        /// Reader threads of the parity table (`--gpu`, `--parity`).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        threads: u32,
        /// Task size of the parity table (`--gpu`, `--parity`).
        #[arg(long, default_value = "4MiB", value_parser = parse_size)]
        task_size: u64,
        /// Seconds the parity bench waits before each row (`--parity`): on a disk that
        /// throttles in bursts, each row's read then follows the same rest, whichever worker
        /// (the Python one starts slower) ran before it.
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        rest: u64,
        /// Only these rows of the parity table (`--parity`, comma-separated; all by default), so
        /// that more runs of one comparison fit in the same time, e.g. `dd,cufile,kvikio`. A
        /// ratio whose rows did not run is left out.
        #[arg(long, value_enum, value_delimiter = ',', value_name = "ROW")]
        rows: Vec<crate::bench::parity::Row>,
        /// Simulate the baseline comparison and the change-point search over history: false
        /// alarms and detected drops, also for a noise model fitted to this runner's history
        /// when it has one.
        #[arg(long)]
        stats: bool,
        /// With `--stats`: a twentieth of every simulation's cycles, histories and comparisons,
        /// for coarse figures in seconds rather than minutes; the targets are not judged (exit 0).
        #[arg(long, requires = "stats")]
        quick: bool,
        /// The history the noise model is fitted to.
        #[arg(
            long,
            value_name = "FILE",
            env = "GDS_GATE_HISTORY",
            default_value = crate::baseline::history::DEFAULT
        )]
        history: PathBuf,
    },
}

/// What a worker process is started to do (`gds-gate worker --job …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkerJob {
    Trial,
    Probe,
    GpuBench,
}

/// What to run and where its data lives.
#[derive(Debug, Clone, Args)]
pub struct Inputs {
    /// Suite file to run (repeatable; default `scenarios/default.yaml`). A path is taken whole,
    /// commas and all; `GDS_GATE_SUITE` names one file.
    #[arg(long = "suite", value_name = "PATH", env = "GDS_GATE_SUITE")]
    pub suites: Vec<PathBuf>,
    /// Where generated test files are kept between runs.
    #[arg(
        long,
        value_name = "DIR",
        env = "GDS_GATE_DATA_DIR",
        default_value = DEFAULT_DATA_DIR
    )]
    pub data_dir: PathBuf,
}

impl Inputs {
    pub fn suite_paths(&self) -> Vec<PathBuf> {
        if self.suites.is_empty() {
            vec![PathBuf::from(DEFAULT_SUITE)]
        } else {
            self.suites.clone()
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub inputs: Inputs,
    /// The unit rates are shown in: the global `--units`, which `dispatch` hands to the run here
    /// so that whatever the run prints or draws is given it.
    #[arg(skip)]
    pub rate: gds_model::units::Rate,
    /// Where the run's lines go, handed in by `dispatch` (a buffer in tests).
    #[arg(skip)]
    pub console: crate::console::Console,
    /// Where report.json, junit.xml and summary.md are written.
    #[arg(
        long,
        value_name = "DIR",
        env = "GDS_GATE_OUT",
        default_value = DEFAULT_OUT
    )]
    pub out: PathBuf,
    /// Fail GPU trials that cannot run here instead of ignoring them.
    #[arg(long, env = "GDS_GATE_REQUIRE_GPU")]
    pub require_gpu: bool,
    /// Print every doctor finding before the trials. Without it, a host that will run only CPU
    /// trials (no GPU, no --require-gpu) gets one line; the findings are in report.json either way.
    #[arg(long)]
    pub doctor: bool,
    /// Fail trials that only warn, such as a worker that crashed after a complete result.
    #[arg(long, env = "GDS_GATE_STRICT")]
    pub strict: bool,
    /// How far below the posix reader a GPU reader over the same file and reads may be (`10%`,
    /// `0.1`) before it is a warning on its trial ("slower than POSIX"); never a failure.
    #[arg(long, value_name = "FRACTION", env = "GDS_GATE_POSIX_TOLERANCE",
          default_value_t = crate::report::direct::DEFAULT_TOLERANCE, value_parser = parse_fraction)]
    pub posix_tolerance: f64,
    /// Start each GPU trial's worker only once the previous one has exited. By default it starts
    /// while the previous one reads (or, for the first of its reader in a run, as it answers),
    /// so that its start-up hides behind that trial, and waits before its first pass's
    /// preparation until that worker is gone.
    #[arg(long, env = "GDS_GATE_ONE_WORKER_AT_A_TIME")]
    pub one_worker_at_a_time: bool,
    #[command(flatten)]
    pub baselines: BaselineArgs,
    /// Runs of a trial that looks slower than its baseline again (fresh worker) up to N times;
    /// it fails as slower only if every repeat is slower too. 0: fail on the first run.
    #[arg(long, value_name = "N", env = "GDS_GATE_CONFIRM", default_value_t = 1,
          value_parser = clap::value_parser!(u8).range(0..=5))]
    pub confirm: u8,
    /// Seconds to wait before a confirmation run: a disturbance of the disk lasting seconds (another
    /// job's burst of I/O) then no longer slows the run and its repeat alike.
    #[arg(
        long,
        value_name = "SECONDS",
        env = "GDS_GATE_CONFIRM_DELAY",
        default_value_t = 10
    )]
    pub confirm_delay: u64,
    /// Bytes of the runner's control file, read by the gate at the start of every run and before
    /// every confirmation run to tell a slow runner (disk or CPU) from a slower stack; 0: no
    /// control. A bless records it; a run compares it only at the blessed size.
    #[arg(long, value_name = "SIZE", env = "GDS_GATE_CONTROL_SIZE", default_value = "256MiB",
          value_parser = parse_size)]
    pub control_size: u64,
    /// Seconds a confirmation run waits, at most, for a runner whose control read is below its
    /// blessed level to come back (once per run: a runner that stays slow is not waited for again).
    #[arg(
        long,
        value_name = "SECONDS",
        env = "GDS_GATE_RUNNER_WAIT",
        default_value_t = 120
    )]
    pub runner_wait: u64,
    /// The wall time the run should fit (`5m`, `90s`; default: the smallest `budget:` of the
    /// suites): trials are kept in suite order while this runner's history (or an estimate at
    /// 1 GB/s) says they fit, the rest left out, said before the first trial and in the reports.
    #[arg(long, value_name = "DURATION", env = "GDS_GATE_BUDGET", value_parser = parse_budget)]
    pub budget: Option<gds_model::scenario::size::Budget>,
    /// Seconds a trial's worker may run (default: a minute plus every pass at 50 MB/s); at least 1.
    #[arg(long, value_name = "SECONDS", env = "GDS_GATE_TIMEOUT",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// libtest's own arguments: FILTER, --exact, --skip, --list, --ignored, --format, ...
    #[command(flatten)]
    pub libtest: libtest_mimic::Arguments,
}

impl RunArgs {
    /// This command line's selection flags, which the bless commands it prints carry: every
    /// `--suite`, and `--data-dir`, `--out` and `--history` where they differ from the defaults.
    pub fn scope(&self) -> crate::baseline::message::Scope {
        let unless_default =
            |path: &Path, default: &str| (path != Path::new(default)).then(|| path.to_path_buf());
        crate::baseline::message::Scope {
            suites: self.inputs.suites.clone(),
            data_dir: unless_default(&self.inputs.data_dir, DEFAULT_DATA_DIR),
            out: unless_default(&self.out, DEFAULT_OUT),
            history: unless_default(&self.baselines.history, crate::baseline::history::DEFAULT),
            source: crate::baseline::message::Source::Run,
        }
    }
}

/// Which baseline a run is judged against.
#[derive(Debug, Clone, Args)]
pub struct BaselineArgs {
    /// Runner profile: the baseline file is `<baselines>/<runner>.yaml` (default: the host name).
    #[arg(long, value_name = "NAME", env = "GDS_GATE_RUNNER")]
    pub runner: Option<String>,
    /// Folder of the baseline files.
    #[arg(long, value_name = "DIR", env = "GDS_GATE_BASELINES", default_value = crate::baseline::DEFAULT_DIR)]
    pub baselines: PathBuf,
    /// The run history (a line per run) that the plots draw; kept out of target/, which `cargo
    /// clean` deletes. One left in --out by an earlier gate is moved here once.
    #[arg(long, value_name = "FILE", env = "GDS_GATE_HISTORY", default_value = crate::baseline::history::DEFAULT)]
    pub history: PathBuf,
}

/// libtest's flags that mean nothing to the gate (no benchmarks, no capture, one trial at a time,
/// a GPU-ignored trial cannot be forced to run): accepted so that cargo's test runners can still
/// pass them, but kept out of `--help`.
const LIBTEST_NO_OPS: [&str; 9] = [
    "include_ignored",
    "ignored",
    "test",
    "bench",
    "nocapture",
    "show_output",
    "unstable_flags",
    "test_threads",
    "logfile",
];

/// The program's help: name, description, usage, flags, exit codes. libtest-mimic's arguments
/// bring their own template (`USAGE: [OPTIONS] [FILTER]`) and closing text about parallel tests.
fn help_template(name: &str) -> String {
    format!(
        "{{before-help}}{name} {{version}}\n{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{{all-args}}{{after-help}}"
    )
}

/// The command line as people see it: [`Cli`] with `--version`, the gate's own help template and
/// exit codes on the commands that run trials, and libtest's no-op flags hidden.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let tidy = |mut command: clap::Command, name: &str| {
        for id in LIBTEST_NO_OPS {
            command = command.mut_arg(id, |arg| arg.hide(true));
        }
        command
            .help_template(help_template(name))
            .after_help(crate::exit::HELP)
    };
    let command = tidy(Cli::command(), "gds-gate")
        .disable_version_flag(false)
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .mut_subcommand("bless", |bless| tidy(bless, "gds-gate bless"));
    // Plain subcommands keep clap's template, named.
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .filter(|name| name != "bless")
        .collect();
    names.into_iter().fold(command, |command, name| {
        let template = help_template(&format!("gds-gate {name}"));
        command.mut_subcommand(name, |sub| sub.help_template(template))
    })
}

/// The subcommands people type (not the hidden `worker` and `guard`), for "did you mean" on a
/// mistyped one.
pub fn subcommand_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .filter(|command| !command.is_hide_set())
        .map(|command| command.get_name().to_string())
        .collect()
}

fn parse_budget(
    text: &str,
) -> Result<gds_model::scenario::size::Budget, gds_model::scenario::size::BudgetError> {
    gds_model::scenario::size::Budget::parse(text)
}

/// A span given on the command line that is not a duration; holds the word and why.
#[derive(Debug, thiserror::Error)]
#[error("`{text}` is not a duration ({error}); write one such as `10m`, `90s` or `2h`")]
struct NotASpan {
    text: String,
    error: humantime::DurationError,
}

fn parse_span(text: &str) -> Result<std::time::Duration, NotASpan> {
    humantime::parse_duration(text.trim()).map_err(|error| NotASpan {
        text: text.to_string(),
        error,
    })
}

/// A fraction given on the command line that is not one between 0 and 1; holds the word.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a fraction between 0 and 1; write one such as `10%` or `0.1`")]
struct NotAFraction(String);

/// A fraction as suites spell one (`10%`, `0.1`).
fn parse_fraction(text: &str) -> Result<f64, NotAFraction> {
    yaml_serde::from_str::<gds_model::scenario::size::Fraction>(text)
        .map(|fraction| fraction.0)
        .map_err(|_| NotAFraction(text.to_string()))
}

fn parse_size(text: &str) -> Result<u64, gds_model::scenario::size::SizeError> {
    gds_model::scenario::size::ByteSize::parse(text).map(|size| size.0)
}

/// `--expect` given a word that names no path; holds that word.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{0}` is not a path; expected one of nvfs, p2p, gds, cufile-posix, kvikio-posix, host, bounce, any"
)]
struct NotAPath(String);

/// `--expect`: a path as suites spell it (`gds`, `nvfs`, `p2p`, `cufile-posix`, ...).
fn parse_expected(text: &str) -> Result<gds_model::scenario::ExpectedPath, NotAPath> {
    yaml_serde::from_str::<gds_model::scenario::ExpectedPath>(text)
        .map_err(|_| NotAPath(text.to_string()))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// The first table of docs/reference/environment.md lists exactly the variables the command
    /// line reads, so that a new `env =` cannot go undocumented.
    #[test]
    fn the_environment_page_lists_every_variable_the_command_line_reads() {
        use clap::CommandFactory;
        use std::collections::BTreeSet;
        fn read_by(command: &clap::Command, found: &mut BTreeSet<String>) {
            for arg in command.get_arguments() {
                found.extend(arg.get_env().map(|env| env.to_string_lossy().into_owned()));
            }
            for sub in command.get_subcommands() {
                read_by(sub, found);
            }
        }
        let mut clap_reads = BTreeSet::new();
        read_by(&super::Cli::command(), &mut clap_reads);
        let page = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/reference/environment.md"
        ))
        .expect("docs/reference/environment.md");
        let options = page.split("\n## ").nth(1).expect("a table of options");
        let documented: BTreeSet<String> = options
            .lines()
            .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
            .map(str::to_string)
            .collect();
        assert_eq!(documented, clap_reads);
    }

    #[test]
    fn the_posix_tolerance_is_a_fraction_or_a_percentage() {
        assert_eq!(super::parse_fraction("25%").unwrap(), 0.25);
        assert_eq!(super::parse_fraction("0.2").unwrap(), 0.2);
        for bad in ["2", "-10%", "fast"] {
            assert_eq!(
                super::parse_fraction(bad).unwrap_err().to_string(),
                format!(
                    "`{bad}` is not a fraction between 0 and 1; write one such as `10%` or `0.1`"
                )
            );
        }
    }

    #[test]
    fn an_expected_path_that_is_none_is_refused_with_the_paths_there_are() {
        let error = super::Cli::try_parse_from(["gds-gate", "explain", "--expect", "fast"])
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            error.contains(
                "`fast` is not a path; expected one of nvfs, p2p, gds, cufile-posix, kvikio-posix, host, bounce, any"
            ),
            "{error}"
        );
    }
}
