//! Worker processes other than trials ([`probe`]s, the GPU bench): the gds-gate binary's
//! `worker --job NAME`, given a spec as JSON in a temporary folder, answering with a JSON result
//! there, run with a timeout in its own process group like a trial's worker. The gate itself
//! links neither CUDA nor cuFile; this is how it asks them.

pub mod probe;

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use gds_model::record::Ending;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::process::{self, Job};

/// Why a worker job has no answer: its program could not be found or started, or it ended
/// without a readable result.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("cannot read the path of this program (/proc/self/exe)")]
    CurrentExe(#[source] io::Error),
    #[error(
        "`{}` is not the gds-gate binary, which runs the workers; set GDS_GATE_WORKER to the gds-gate binary",
        .0.display()
    )]
    NotTheGate(PathBuf),
    #[error("cannot create a temporary folder for a worker")]
    TempDir(#[source] io::Error),
    #[error("cannot write `{}`", path.display())]
    WriteSpec {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start `{}`", program.display())]
    Start {
        program: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the {job} worker's answer is not a valid result")]
    InvalidResult {
        job: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the {job} worker `{}` {ending} without a result{}",
        program.display(),
        said.as_deref().map(|said| format!(": {said}")).unwrap_or_default()
    )]
    NoResult {
        job: String,
        program: PathBuf,
        ending: Ending,
        /// The last line it printed, if any.
        said: Option<String>,
    },
}

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the binary that runs workers (`gds-gate worker …`). The gate binary sets itself; a
/// program that embeds the gate library sets the gds-gate binary it ships with.
pub fn set_worker_program(path: PathBuf) {
    let _ = PROGRAM.set(path);
}

/// The binary that runs workers: `GDS_GATE_WORKER` (a stand-in worker in the fault drills, or a
/// wrapper that ends in `gds-gate worker "$@"`), else the one set with [`set_worker_program`],
/// else this process when it is the gds-gate binary.
pub fn worker_program() -> Result<PathBuf, JobError> {
    if let Some(program) = std::env::var_os("GDS_GATE_WORKER").filter(|path| !path.is_empty()) {
        return Ok(PathBuf::from(program));
    }
    if let Some(program) = PROGRAM.get() {
        return Ok(program.clone());
    }
    let exe = std::env::current_exe().map_err(JobError::CurrentExe)?;
    if exe.file_name().is_some_and(|name| name == "gds-gate") {
        Ok(exe)
    } else {
        Err(JobError::NotTheGate(exe))
    }
}

/// Runs `gds-gate worker --job <job>` on `spec` and reads its result; `Err` says why there is
/// none (the worker could not start, crashed, hung, or answered nonsense).
pub fn run<S: Serialize, R: DeserializeOwned>(
    job: &str,
    spec: &S,
    timeout: Duration,
) -> Result<R, JobError> {
    let program = worker_program()?;
    let dir = tempfile::Builder::new()
        .prefix("gds-gate-worker-")
        .tempdir()
        .map_err(JobError::TempDir)?;
    let spec_path = dir.path().join("spec.json");
    let result_path = dir.path().join("result.json");
    let text = serde_json::to_string_pretty(spec).unwrap_or_default();
    std::fs::write(&spec_path, text).map_err(|source| JobError::WriteSpec {
        path: spec_path.clone(),
        source,
    })?;
    let args: Vec<OsString> = vec![
        "worker".into(),
        "--job".into(),
        job.into(),
        "--spec".into(),
        spec_path.into(),
        "--result".into(),
        result_path.clone().into(),
    ];
    // cuFile writes its log to the working directory unless told otherwise.
    let env = vec![(
        "CUFILE_LOGFILE_PATH".to_string(),
        dir.path().join("cufile.log").display().to_string(),
    )];
    let finished = process::run(&Job {
        program: program.clone(),
        args,
        env,
        dir: dir.path().to_path_buf(),
        timeout,
    })
    .map_err(|source| JobError::Start {
        program: program.clone(),
        source,
    })?;
    match std::fs::read_to_string(&result_path) {
        Ok(text) => serde_json::from_str(&text).map_err(|source| JobError::InvalidResult {
            job: job.to_string(),
            source,
        }),
        Err(_) => {
            let said = finished.tail(1);
            let said = said.trim();
            Err(JobError::NoResult {
                job: job.to_string(),
                program,
                ending: finished.ending,
                said: (!said.is_empty()).then(|| said.to_string()),
            })
        }
    }
}
