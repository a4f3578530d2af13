//! The doctor: a gdscheck-grade preflight that says, in one screen, whether this host can do
//! GPUDirect Storage for the selected suites, and names the fix for each problem.
//!
//! Three layers, so that everything but the reading is tested without a GPU:
//! [`collect`] reads the host into [`Facts`] (all I/O is there; JSON in, JSON out), [`checks`]
//! are pure functions of the facts and the selected trials, and [`render`] prints the table, the
//! JSON and the short form the gate prints before every run.

pub mod checks;
pub mod collect;
pub mod facts;
pub mod fixes;
pub mod gdscheck;
pub mod render;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use checks::{Can, Check, Conclusion, Expectation, Outcome, State, TrialOutlook};
pub use collect::collect;
pub use facts::Facts;
pub use render::{cpu_only_line, json, short_summary, table};

use gds_model::scenario::{self, ScenarioError, TrialSpec};

/// Version of the report's JSON layout.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// How far the doctor goes with libcufile, always in a worker process (a crash inside cuFile then
/// fails the probe, not the doctor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CufileProbe {
    /// Load it and read its version; do not open its driver.
    LoadOnly,
    /// Also `cuFileDriverOpen` and the driver's properties. cuFile reads the host's cufile.json;
    /// its log goes to the worker's temporary folder.
    OpenDriver,
}

#[derive(Clone, Debug)]
pub struct DoctorOptions {
    /// Suite files whose trials the verdict is about (none: judge the host alone).
    pub suites: Vec<PathBuf>,
    pub data_dir: PathBuf,
    /// GPU trials that cannot run count as failures, as with `gds-gate --require-gpu`.
    pub require_gpu: bool,
    /// The KvikIO worker's interpreter when `GDS_GATE_PYTHON` is unset; `None`: the first
    /// suite's `python:`, else `python3`.
    pub python: Option<String>,
    /// Skip the slow probes (`gdscheck -p`, `lspci -vvv`, `nvidia-smi topo -m`).
    pub quick: bool,
    /// Start the KvikIO worker's interpreter to see what it has (a second or more of start-up).
    pub probe_kvikio: bool,
    pub cufile_probe: CufileProbe,
}

impl DoctorOptions {
    /// The full doctor over `suites`, with the cuFile driver opened (in a worker).
    pub fn new(suites: Vec<PathBuf>, data_dir: PathBuf) -> DoctorOptions {
        DoctorOptions {
            suites,
            data_dir,
            require_gpu: false,
            python: None,
            quick: false,
            probe_kvikio: true,
            cufile_probe: CufileProbe::OpenDriver,
        }
    }
}

/// The doctor's answer: the facts it judged, one row per component, what the host can meet,
/// each selected trial's likely outcome, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    pub schema_version: u32,
    pub facts: Facts,
    pub checks: Vec<Check>,
    pub expectations: Vec<Expectation>,
    pub trials: Vec<TrialOutlook>,
    pub verdict: Conclusion,
}

impl DoctorReport {
    /// 0 when the selected suites can pass here, 1 when they cannot.
    pub fn exit_code(&self) -> u8 {
        if self.verdict.can_pass {
            gds_runner::exit::PASSED
        } else {
            gds_runner::exit::TRIAL_FAILED
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error("cannot load the suite to check the host against")]
    Suite(#[from] ScenarioError),
    #[error(
        "the facts are not the doctor's facts JSON (capture them with `gds-gate doctor --collect FILE`)"
    )]
    Facts(#[source] serde_json::Error),
    #[error(
        "the facts use layout version {found}, this gate reads version {expected}; capture them again with this gate"
    )]
    Schema { found: u32, expected: u32 },
}

/// Judges `facts` for `trials`: pure, so recorded facts give the same answer anywhere.
pub fn assess(facts: Facts, trials: &[TrialSpec], require_gpu: bool) -> DoctorReport {
    let checks = checks::checks(&facts, trials);
    let (expectations, trials, verdict) = checks::outlook(&facts, trials, require_gpu, &checks);
    DoctorReport {
        schema_version: REPORT_SCHEMA_VERSION,
        facts,
        checks,
        expectations,
        trials,
        verdict,
    }
}

/// Every trial of the suites, in order, and the first suite's `python:`.
pub fn load_trials(suites: &[PathBuf]) -> Result<(Vec<TrialSpec>, Option<String>), DoctorError> {
    let mut trials = Vec::new();
    let mut python = None;
    for path in suites {
        let suite = scenario::load(path)?;
        python = python.or_else(|| suite.python.clone());
        trials.extend(scenario::expand(&suite));
    }
    Ok((trials, python))
}

/// `gds-gate doctor`: collect this host's facts and judge them for the selected suites.
/// Returns the report and the exit status (0: the suites can pass here, 1: they cannot).
pub fn run(opts: &DoctorOptions) -> Result<(DoctorReport, u8), DoctorError> {
    let (trials, python) = load_trials(&opts.suites)?;
    let mut opts = opts.clone();
    opts.python = opts.python.or(python);
    let report = assess(collect(&opts), &trials, opts.require_gpu);
    let code = report.exit_code();
    Ok((report, code))
}

/// Judges facts captured elsewhere (`--collect FILE` on the GPU host) for the selected suites.
pub fn replay(facts_json: &str, opts: &DoctorOptions) -> Result<(DoctorReport, u8), DoctorError> {
    let facts = parse_facts(facts_json)?;
    let (trials, _) = load_trials(&opts.suites)?;
    let report = assess(facts, &trials, opts.require_gpu);
    let code = report.exit_code();
    Ok((report, code))
}

pub fn parse_facts(json: &str) -> Result<Facts, DoctorError> {
    #[derive(Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let version: Version = serde_json::from_str(json).map_err(DoctorError::Facts)?;
    if version.schema_version != facts::SCHEMA_VERSION {
        return Err(DoctorError::Schema {
            found: version.schema_version,
            expected: facts::SCHEMA_VERSION,
        });
    }
    serde_json::from_str(json).map_err(DoctorError::Facts)
}

/// The facts as pretty JSON, for `--collect FILE` (and fixtures).
pub fn facts_json(facts: &Facts) -> String {
    serde_json::to_string_pretty(facts).unwrap_or_default() + "\n"
}

/// The quick form for the start of every gate run: no slow tools, libcufile loaded but its
/// driver not opened. Print [`short_summary`] of it and record it.
pub fn preflight(data_dir: &Path, trials: &[TrialSpec], require_gpu: bool) -> DoctorReport {
    let opts = DoctorOptions {
        suites: Vec::new(),
        data_dir: data_dir.to_path_buf(),
        require_gpu,
        python: trials
            .iter()
            .find(|t| t.reader.python() && t.python != "python3")
            .map(|t| t.python.clone()),
        quick: true,
        // Only a run with KvikIO trials pays for starting Python.
        probe_kvikio: trials
            .iter()
            .any(|t| t.reader == gds_model::scenario::Reader::Kvikio),
        cufile_probe: CufileProbe::LoadOnly,
    };
    assess(collect(&opts), trials, require_gpu)
}
