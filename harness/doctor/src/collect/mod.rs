//! Collection: every read of `/proc` and `/sys`, every tool the doctor runs and every probe of
//! CUDA and libcufile (in a worker process) happens under this module, and each failure becomes
//! an unknown fact with its reason.
//! The parsers of what is read are plain functions beside their collectors, tested on samples.

mod gds;
mod gpu;
mod kvikio;
mod platform;
mod storage;

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

pub use gds::{config_facts, facts_of, parse_config};
pub use gpu::{CsvError, parse_bar1, parse_query_csv};
pub use kvikio::{KVIKIO_PROBE, UnreadableProbe, parse_probe};
pub use platform::{parse_acs, parse_cmdline_iommu};

use super::DoctorOptions;
use super::facts::{Fact, Facts, Provenance, SCHEMA_VERSION, ToolFacts};
use gds_model::record::Ending;
use gds_model::topology::NumaNode;
use gds_runner::process::{self, Job};

/// Reads the host. Never panics: what cannot be read is recorded as unknown, with why.
pub fn collect(opts: &DoctorOptions) -> Facts {
    let tools = tools();
    let nvidia_smi = tools.nvidia_smi.as_deref();
    // The collectors that start processes (nvidia-smi, workers loading libcuda and libcufile,
    // Python importing KvikIO, gdscheck) need nothing of each other: side by side, a run waits
    // for the longest of them, not for their sum, before its first trial.
    std::thread::scope(|scope| {
        let gpus = scope.spawn(|| gpu::gpus(nvidia_smi));
        let cufile = scope.spawn(|| gds::cufile(opts));
        let kvikio = scope.spawn(|| kvikio::kvikio(opts));
        let gdscheck = scope.spawn(|| match (&tools.gdscheck, opts.quick) {
            (_, true) => Fact::Unknown("not run (quick check)".into()),
            (Some(program), false) => platform::gdscheck(Path::new(program)),
            (None, false) => Fact::Unknown(
                "gdscheck is not installed (not on PATH nor in /usr/local/cuda/gds/tools); it ships in the `gds-tools` package".into(),
            ),
        });
        let platform = scope.spawn(|| platform::platform(&tools, nvidia_smi, opts.quick));
        let host = gds_runner::host::HostFacts::probe();
        Facts {
            schema_version: SCHEMA_VERSION,
            provenance: Provenance {
                source: format!("collected by gds-gate {}", env!("CARGO_PKG_VERSION")),
                hostname: host.hostname.clone(),
                kernel: host.kernel.clone(),
                collected_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                    .to_string(),
            },
            driver: gpu::driver(&host, nvidia_smi),
            gpus: joined(gpus),
            cufile: joined(cufile),
            nvidia_fs: gds::nvidia_fs(),
            data_dir: storage::data_dir(&opts.data_dir),
            platform: joined(platform),
            config: config_facts(),
            kvikio: joined(kvikio),
            gdscheck: joined(gdscheck),
            tools: tools.clone(),
        }
    })
}

/// A collector's facts; its panic, a bug, goes on as it would have on this thread.
fn joined<T>(collector: std::thread::ScopedJoinHandle<'_, T>) -> T {
    collector
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn tools() -> ToolFacts {
    use gds_runner::tools::{GDS_TOOL_DIRS, find_program};
    let find = |name: &str, extra: &[&str]| find_program(name, extra).map(|p| display(&p));
    ToolFacts {
        nvidia_smi: find("nvidia-smi", &[]),
        gdscheck: find("gdscheck", GDS_TOOL_DIRS),
        gdsio: find("gdsio", GDS_TOOL_DIRS),
        gds_stats: find("gds_stats", GDS_TOOL_DIRS),
        lspci: find("lspci", &["/usr/sbin", "/sbin", "/usr/bin"]),
    }
}

/// What a tool printed, when it ran to completion.
pub(crate) struct ToolOutput {
    pub stdout: String,
    pub stderr: String,
    pub ending: Ending,
}

/// Why a tool gave the doctor nothing to read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolError {
    #[error("cannot create a temporary folder to run `{program}`")]
    TempDir {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{program}` not found")]
    NotFound { program: String },
    #[error("cannot run `{program}`")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// It ran but did not exit cleanly: the command, how it ended, and the first line it said.
    #[error(
        "`{command}` {ending}{}",
        said.as_deref().map(|said| format!(": {said}")).unwrap_or_default()
    )]
    Failed {
        command: String,
        ending: Ending,
        said: Option<String>,
    },
}

/// Runs `program` with a timeout, stdin closed, in its own process group (the gate's worker
/// runner), and returns what it printed; `Err` says why there is nothing to read.
pub(crate) fn run_tool(
    program: &Path,
    args: &[&str],
    env: Vec<(String, String)>,
    timeout: Duration,
) -> Result<ToolOutput, ToolError> {
    let shown = display(program);
    let dir = tempfile::Builder::new()
        .prefix("gds-gate-doctor-")
        .tempdir()
        .map_err(|source| ToolError::TempDir {
            program: shown.clone(),
            source,
        })?;
    let job = Job {
        program: program.to_path_buf(),
        args: args.iter().map(OsString::from).collect(),
        env,
        dir: dir.path().to_path_buf(),
        timeout,
    };
    let finished = process::run(&job).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound { program: shown },
        _ => ToolError::Start {
            program: shown,
            source,
        },
    })?;
    let read = |path: &Path| {
        std::fs::read(path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    };
    Ok(ToolOutput {
        stdout: read(&finished.stdout),
        stderr: read(&finished.stderr),
        ending: finished.ending,
    })
}

/// `run_tool`, insisting on a clean exit: the error names the command, how it ended, and the
/// first line of what it said.
pub(crate) fn run_ok(
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<String, ToolError> {
    let output = run_tool(program, args, Vec::new(), timeout)?;
    if output.ending.is_clean() {
        return Ok(output.stdout);
    }
    let said = output
        .stderr
        .lines()
        .chain(output.stdout.lines())
        .find(|line| !line.trim().is_empty())
        .map(|line| line.trim().to_string());
    Err(ToolError::Failed {
        command: format!("{} {}", display(program), args.join(" ")),
        ending: output.ending,
        said,
    })
}

pub(crate) fn display(path: &Path) -> String {
    path.display().to_string()
}

/// The NUMA node of the device at `device` in sysfs: its own `numa_node`, else its nearest
/// ancestor's (a virtio disk's is its PCI function's, an NVMe namespace's its controller's PCI
/// device's); `None` when no ancestor has one.
pub(crate) fn numa_node_above(device: &Path) -> Option<NumaNode> {
    device.ancestors().find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("numa_node")).ok()?;
        text.trim().parse::<i64>().ok().map(NumaNode::from_sysfs)
    })
}

/// A file's text, trimmed, or why it could not be read.
pub(crate) fn read_text(path: &str) -> Fact<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Fact::Known(text.trim().to_string()),
        Err(error) => Fact::Unknown(format!("cannot read {path}: {error}")),
    }
}
