//! What this host can deliver: which read paths are possible here and why, what each selected
//! trial should come out as (the path its bytes would take, or why it cannot run), and from
//! that the verdict the exit status follows: can the selected suites pass on this host.
//!
//! The rules are the path verdict's own ([`gds_model::verdict::stack`]): cuFile without nvidia-fs
//! reads in its compat mode when allowed; a file cuFile cannot register (no udev record, no
//! `O_DIRECT`) fails the cufile reader and KvikIO OFF, and sends KvikIO AUTO to POSIX without a
//! word.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::capability::{
    Answer, BATCH_API, Can, STREAM_API, Settings, auto, entry_point, gpu, kvikio_loads_cufile,
    libcufile, no, nvfs, p2p, registration, unknown, yes,
};
use super::{Check, State};
use crate::facts::{ConfigStatus, DriverOpen, Fact, Facts};
use gds_model::path::Path;
use gds_model::scenario::{CompatMode, ExpectedPath, FileSet, Pattern, Reader, TrialSpec};
use gds_model::verdict::expected_name;
use gds_model::verdict::stack::{self, CufileRoute, KvikioPosix};

/// One line of "what this host can meet", e.g. `path nvfs: no — nvidia-fs is not loaded`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    pub subject: String,
    pub can: Can,
    pub why: String,
    /// What it means for the selected trials, when any depend on it.
    pub consequence: Option<String>,
}

/// What a line of "what this host can meet" is about.
enum Subject {
    /// A path the trials' `expect.path` asks for: `path nvfs`.
    Path(Path),
    /// A reader the trials use: `reader cufile`.
    Reader(Reader),
    /// KvikIO in AUTO handing its reads to cuFile.
    KvikioAuto,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Path(path) => write!(f, "path {path}"),
            Subject::Reader(reader) => write!(f, "reader {}", reader.name()),
            Subject::KvikioAuto => f.write_str("KvikIO AUTO uses cuFile"),
        }
    }
}

/// What a trial should come out as on this host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Outcome {
    /// Runs and its bytes take `path`, which meets its expectation.
    Pass {
        path: Path,
        why: String,
    },
    Fail {
        reason: String,
    },
    Ignored {
        reason: String,
    },
    Unknown {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialOutlook {
    pub name: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conclusion {
    /// Drives the exit status: 0 when true, 1 when false.
    pub can_pass: bool,
    pub summary: String,
    pub pass: usize,
    pub fail: usize,
    pub ignored: usize,
    pub unknown: usize,
}

/// The path expectations, each trial's outcome, and the verdict.
pub fn outlook(
    facts: &Facts,
    trials: &[TrialSpec],
    require_gpu: bool,
    checks: &[Check],
) -> (Vec<Expectation>, Vec<TrialOutlook>, Conclusion) {
    let host = Settings::of(facts, &BTreeMap::new());
    let space = space_problem(facts, trials);
    let outlooks: Vec<TrialOutlook> = trials
        .iter()
        .map(|spec| TrialOutlook {
            name: spec.name.clone(),
            outcome: trial(facts, spec, require_gpu, space.as_deref()),
        })
        .collect();
    let expectations = expectations(facts, &host, trials, &outlooks);
    let verdict = verdict(&outlooks, checks);
    (expectations, outlooks, verdict)
}

/// The path cuFile would take for a registered file, with why ([`stack::cufile_route`]).
fn cufile_path(facts: &Facts, settings: &Settings) -> Result<(Path, String), Outcome> {
    let (p2p, nvfs) = (p2p(facts, settings), nvfs(facts));
    let known = |answer: &Answer| match answer.can {
        Can::Yes => Some(true),
        Can::No => Some(false),
        Can::Unknown => None,
    };
    let route = stack::cufile_route(
        settings.force_compat,
        known(&p2p),
        known(&nvfs),
        settings.allow_compat,
    );
    match route {
        CufileRoute::Forced => Ok((
            Path::CufilePosix,
            "`properties.force_compat_mode` is true".into(),
        )),
        CufileRoute::P2p => Ok((Path::P2p, p2p.why)),
        CufileRoute::Nvfs => Ok((Path::Nvfs, nvfs.why)),
        CufileRoute::Unknown => Err(Outcome::Unknown { reason: nvfs.why }),
        CufileRoute::Compat => Ok((
            Path::CufilePosix,
            format!("cuFile's compat mode: {}", nvfs.why),
        )),
        CufileRoute::Refused => Err(Outcome::Fail {
            reason: format!(
                "no GDS path ({}) and `properties.allow_compat_mode` is false, so cuFile refuses",
                nvfs.why
            ),
        }),
    }
}

fn config_broken(facts: &Facts) -> Option<String> {
    let path = facts.config.path.as_deref().unwrap_or("cufile.json");
    match &facts.config.status {
        ConfigStatus::Syntax {
            line,
            column,
            message,
        } => Some(format!("{path}:{line}:{column}: {message}")),
        ConfigStatus::Unreadable { error } => Some(format!("cannot read {path}: {error}")),
        ConfigStatus::NotAnObject => Some(format!("{path} is not a JSON object")),
        ConfigStatus::Absent | ConfigStatus::Parsed => None,
    }
}

/// The size of the reads a KvikIO trial hands to KvikIO (its tasks are at most `task_size`).
fn read_size(spec: &TrialSpec) -> u64 {
    match &spec.pattern {
        Pattern::Whole => spec.task_size,
        Pattern::Chunks(size) => size.bytes().min(spec.task_size),
        Pattern::Random(random) => random.size.bytes().min(spec.task_size),
    }
}

fn trial(facts: &Facts, spec: &TrialSpec, require_gpu: bool, space: Option<&str>) -> Outcome {
    let predicted = predicted_path(facts, spec, require_gpu);
    // The gate prepares data only for trials that can run.
    if let (Some(problem), FileSet::Generated { .. }) = (space, &spec.files)
        && !matches!(predicted, Err(Outcome::Ignored { .. }))
    {
        return Outcome::Fail {
            reason: format!("test data unavailable: {problem}"),
        };
    }
    let path = match predicted {
        Ok(path) => path,
        Err(outcome) => return outcome,
    };
    if let Some(why) = gpu_verification_blocked(facts, spec) {
        return Outcome::Fail {
            reason: format!(
                "its reads land in GPU memory and are verified there, which needs NVRTC: {why}"
            ),
        };
    }
    let expected = spec.expect.path;
    if path.0.satisfies(expected) {
        Outcome::Pass {
            path: path.0,
            why: path.1,
        }
    } else {
        Outcome::Fail {
            reason: format!(
                "expects path {}, but its reads would take {} here: {}",
                expected_name(expected),
                path.0.name(),
                path.1
            ),
        }
    }
}

fn predicted_path(
    facts: &Facts,
    spec: &TrialSpec,
    require_gpu: bool,
) -> Result<(Path, String), Outcome> {
    if spec.reader == Reader::Posix {
        return Ok((Path::Host, "POSIX reads into host memory".into()));
    }
    let driver = gpu(facts);
    if driver.can != Can::Yes {
        let why = driver.why;
        return Err(match require_gpu {
            true => Outcome::Fail {
                reason: format!("GPU trial could not run: {why} (--require-gpu)"),
            },
            false => Outcome::Ignored { reason: why },
        });
    }
    if spec.reader == Reader::H2d {
        return Ok((Path::Bounce, "POSIX into pinned memory, then a copy".into()));
    }
    if let Some(problem) = config_broken(facts) {
        return Err(Outcome::Fail {
            reason: format!("the trial's cufile.json cannot be written from the host's: {problem}"),
        });
    }
    let settings = Settings::of(facts, &spec.cufile);
    match spec.reader {
        Reader::Kvikio => kvikio_path(facts, spec, &settings),
        _ => {
            let lib = libcufile(facts);
            if lib.can != Can::Yes {
                return Err(Outcome::Fail {
                    reason: format!(
                        "the {} reader needs libcufile: {}",
                        spec.reader.name(),
                        lib.why
                    ),
                });
            }
            if let Some(DriverOpen::Failed { error }) = facts.cufile.driver_open.known() {
                return Err(Outcome::Fail {
                    reason: format!("cuFileDriverOpen fails here: {error}"),
                });
            }
            let register = registration(facts);
            match register.can {
                Can::Yes => cufile_path(facts, &settings),
                Can::No => Err(Outcome::Fail {
                    reason: format!("cuFileHandleRegister will fail: {}", register.why),
                }),
                Can::Unknown => Err(Outcome::Unknown {
                    reason: register.why,
                }),
            }
        }
    }
}

fn kvikio_path(
    facts: &Facts,
    spec: &TrialSpec,
    settings: &Settings,
) -> Result<(Path, String), Outcome> {
    let missing = |reason: String| match spec.require_kvikio {
        true => Outcome::Fail { reason },
        false => Outcome::Ignored { reason },
    };
    let probe = match &facts.kvikio.probe {
        Fact::Known(probe) => probe,
        Fact::Unknown(why) => return Err(missing(why.clone())),
    };
    for (name, module) in [("kvikio", &probe.kvikio), ("cupy", &probe.cupy)] {
        if module.version.is_none() {
            return Err(missing(format!(
                "{name} is not importable in {} ({})",
                facts.kvikio.python,
                module.error.as_deref().unwrap_or("no version")
            )));
        }
    }
    let posix = |why: String| Ok((Path::KvikioPosix, why));
    let mode = spec.compat_mode.unwrap_or(CompatMode::AUTO);
    match stack::kvikio_posix(Some(mode), Some(read_size(spec)), Some(spec.gds_threshold)) {
        Some(KvikioPosix::CompatOn) => return posix("KVIKIO_COMPAT_MODE=ON".into()),
        Some(KvikioPosix::BelowThreshold { read, threshold }) => {
            return posix(format!(
                "reads of {read} bytes are below KVIKIO_GDS_THRESHOLD ({threshold} bytes)"
            ));
        }
        None => {}
    }
    let decision = auto(facts);
    let register = registration(facts);
    match mode {
        CompatMode::OFF if kvikio_loads_cufile(probe) == Some(false) => Err(Outcome::Fail {
            reason: "KvikIO OFF will raise: KvikIO cannot load libcufile".into(),
        }),
        CompatMode::OFF => match register.can {
            Can::Yes => cufile_path(facts, settings),
            Can::No => Err(Outcome::Fail {
                reason: format!(
                    "KvikIO OFF will raise: cuFileHandleRegister fails: {}",
                    register.why
                ),
            }),
            Can::Unknown => Err(Outcome::Unknown {
                reason: register.why,
            }),
        },
        _ => match (decision.can, register.can) {
            (Can::No, _) => posix(format!("KvikIO AUTO reads with POSIX: {}", decision.why)),
            (Can::Yes, Can::No) => posix(format!(
                "KvikIO AUTO falls back to POSIX for the file, silently: {}",
                register.why
            )),
            (Can::Yes, Can::Yes) => cufile_path(facts, settings),
            (Can::Unknown, _) => Err(Outcome::Unknown {
                reason: decision.why,
            }),
            (_, Can::Unknown) => Err(Outcome::Unknown {
                reason: register.why,
            }),
        },
    }
}

/// Not enough free space for the generated files the runnable trials need, if so.
pub(crate) fn space_problem(facts: &Facts, trials: &[TrialSpec]) -> Option<String> {
    let need = super::storage::space_needed(facts, trials);
    let free = *facts.data_dir.free_bytes.known()?;
    (need.to_generate > free).then(|| {
        format!(
            "{} more bytes of generated files are needed in the data dir, and its file system has {} free",
            need.to_generate, free
        )
    })
}

/// Why a GPU trial that verifies its bytes cannot compile its verification kernels here: the
/// driver loads but NVRTC does not. Facts saved before NVRTC was asked say nothing either way.
fn gpu_verification_blocked(facts: &Facts, spec: &TrialSpec) -> Option<String> {
    let on_gpu = !matches!(spec.reader, Reader::Posix);
    let verifies = spec.expect.integrity != gds_model::scenario::Integrity::None;
    match &facts.driver.nvrtc {
        Fact::Unknown(why)
            if on_gpu
                && verifies
                && gpu(facts).can == Can::Yes
                && !why.starts_with("not collected") =>
        {
            Some(why.clone())
        }
        _ => None,
    }
}

fn expectations(
    facts: &Facts,
    host: &Settings,
    trials: &[TrialSpec],
    outlooks: &[TrialOutlook],
) -> Vec<Expectation> {
    let gpu_answer = gpu(facts);
    let register = registration(facts);
    let cufile_posix = match (libcufile(facts), &register, host.allow_compat) {
        (lib, _, _) if lib.can != Can::Yes => no(lib.why),
        (_, reg, _) if reg.can != Can::Yes => Answer {
            can: reg.can,
            why: format!("cuFileHandleRegister: {}", reg.why),
        },
        (_, _, false) => no("`properties.allow_compat_mode` is false"),
        _ => yes("cuFile falls back to its compat mode wherever nvidia-fs cannot read"),
    };
    let kvikio = match &facts.kvikio.probe {
        Fact::Known(p) => match (&p.kvikio.version, &p.cupy.version) {
            (Some(k), Some(c)) => yes(format!("kvikio {k}, cupy {c} in {}", facts.kvikio.python)),
            (None, _) => no(format!(
                "kvikio is not installed in {}",
                facts.kvikio.python
            )),
            (_, None) => no(format!("cupy is not installed in {}", facts.kvikio.python)),
        },
        Fact::Unknown(why) => no(why.clone()),
    };
    let nvfs = match (nvfs(facts), &register) {
        (answer, _) if answer.can != Can::Yes => answer,
        (_, reg) if reg.can != Can::Yes => Answer {
            can: reg.can,
            why: reg.why.clone(),
        },
        (answer, _) => answer,
    };
    let both = |a: &Answer, b: &Answer| match (a.can, b.can) {
        (Can::Yes, Can::Yes) => yes(format!("{}; {}", a.why, b.why)),
        (Can::No, _) => a.clone(),
        (_, Can::No) => b.clone(),
        _ => unknown(format!("{}; {}", a.why, b.why)),
    };
    let register_for_reader = Answer {
        can: register.can,
        why: format!("files register: {}", register.why),
    };
    type Selects = Box<dyn Fn(&TrialSpec) -> bool>;
    let subjects: Vec<(Subject, Answer, Selects)> = vec![
        (
            Subject::Path(Path::Nvfs),
            nvfs,
            Box::new(|t: &TrialSpec| {
                matches!(t.expect.path, ExpectedPath::Nvfs | ExpectedPath::Gds)
            }),
        ),
        (
            Subject::Path(Path::P2p),
            p2p(facts, host),
            Box::new(|t: &TrialSpec| t.expect.path == ExpectedPath::P2p),
        ),
        (
            Subject::Path(Path::CufilePosix),
            cufile_posix,
            Box::new(|t: &TrialSpec| t.expect.path == ExpectedPath::CufilePosix),
        ),
        (
            Subject::Path(Path::KvikioPosix),
            both(&gpu_answer, &kvikio),
            Box::new(|t: &TrialSpec| t.expect.path == ExpectedPath::KvikioPosix),
        ),
        (
            Subject::Path(Path::Bounce),
            gpu_answer.clone(),
            Box::new(|t: &TrialSpec| t.expect.path == ExpectedPath::Bounce),
        ),
        (
            Subject::Path(Path::Host),
            yes("POSIX reads need nothing but the data"),
            Box::new(|t: &TrialSpec| t.expect.path == ExpectedPath::Host),
        ),
        (
            Subject::Reader(Reader::Cufile),
            both(&both(&gpu_answer, &libcufile(facts)), &register_for_reader),
            Box::new(|t: &TrialSpec| t.reader == Reader::Cufile),
        ),
        (
            Subject::Reader(Reader::CufileBatch),
            both(
                &both(&gpu_answer, &libcufile(facts)),
                &both(
                    &register_for_reader,
                    &entry_point(facts, BATCH_API, "cufile-batch"),
                ),
            ),
            Box::new(|t: &TrialSpec| t.reader == Reader::CufileBatch),
        ),
        (
            Subject::Reader(Reader::CufileAsync),
            both(
                &both(&gpu_answer, &libcufile(facts)),
                &both(
                    &register_for_reader,
                    &entry_point(facts, STREAM_API, "cufile-async"),
                ),
            ),
            Box::new(|t: &TrialSpec| t.reader == Reader::CufileAsync),
        ),
        (
            Subject::Reader(Reader::Kvikio),
            both(&gpu_answer, &kvikio),
            Box::new(|t: &TrialSpec| t.reader == Reader::Kvikio),
        ),
        (
            Subject::Reader(Reader::H2d),
            gpu_answer.clone(),
            Box::new(|t: &TrialSpec| t.reader == Reader::H2d),
        ),
        (
            Subject::KvikioAuto,
            auto(facts),
            Box::new(|t: &TrialSpec| {
                t.reader == Reader::Kvikio
                    && t.compat_mode.unwrap_or(CompatMode::AUTO) == CompatMode::AUTO
            }),
        ),
    ];
    subjects
        .into_iter()
        .map(|(subject, answer, selects)| {
            let (mut selected, mut failing, mut ignored) = (Vec::new(), Vec::new(), 0);
            for (spec, outlook) in trials.iter().zip(outlooks) {
                if !selects(spec) {
                    continue;
                }
                selected.push(spec);
                match &outlook.outcome {
                    Outcome::Fail { .. } => failing.push(spec.name.clone()),
                    Outcome::Ignored { .. } => ignored += 1,
                    _ => {}
                }
            }
            let consequence = consequence(&subject, &selected, failing, ignored);
            Expectation {
                subject: subject.to_string(),
                can: answer.can,
                why: answer.why,
                consequence,
            }
        })
        .collect()
}

fn consequence(
    subject: &Subject,
    selected: &[&TrialSpec],
    failing: Vec<String>,
    ignored: usize,
) -> Option<String> {
    if selected.is_empty() {
        return None;
    }
    let which = match subject {
        Subject::Path(_) => {
            let mut names: Vec<&str> = selected
                .iter()
                .map(|t| expected_name(t.expect.path))
                .collect();
            names.sort_unstable();
            names.dedup();
            format!("expect {}", names.join(" or "))
        }
        Subject::Reader(reader) => format!("use the {} reader", reader.name()),
        Subject::KvikioAuto => "run KvikIO in AUTO".into(),
    };
    let mut parts = vec![format!("{} selected trial(s) {which}", selected.len())];
    if !failing.is_empty() {
        let shown: Vec<&str> = failing.iter().take(3).map(String::as_str).collect();
        let more = failing.len().saturating_sub(3);
        parts.push(format!(
            "{} will fail ({}{})",
            failing.len(),
            shown.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if ignored > 0 {
        parts.push(format!("{ignored} will be ignored"));
    }
    Some(parts.join("; "))
}

fn verdict(outlooks: &[TrialOutlook], checks: &[Check]) -> Conclusion {
    let count = |f: fn(&Outcome) -> bool| outlooks.iter().filter(|o| f(&o.outcome)).count();
    let pass = count(|o| matches!(o, Outcome::Pass { .. }));
    let fail = count(|o| matches!(o, Outcome::Fail { .. }));
    let ignored = count(|o| matches!(o, Outcome::Ignored { .. }));
    let unknown = count(|o| matches!(o, Outcome::Unknown { .. }));
    let (can_pass, summary) = if outlooks.is_empty() {
        let failing: Vec<&str> = checks
            .iter()
            .filter(|c| c.state == State::Fail)
            .map(|c| c.component.as_str())
            .collect();
        match failing.is_empty() {
            true => (true, "no suite selected; no check failed".to_string()),
            false => (
                false,
                format!("no suite selected; failing checks: {}", failing.join(", ")),
            ),
        }
    } else {
        let mut parts = vec![format!("{pass} trial(s) should pass")];
        if fail > 0 {
            parts.push(format!("{fail} will fail"));
        }
        if ignored > 0 {
            parts.push(format!("{ignored} will be ignored"));
        }
        if unknown > 0 {
            parts.push(format!("{unknown} cannot be predicted"));
        }
        let head = match fail {
            0 => "the selected suites can pass here",
            _ => "the selected suites cannot pass here",
        };
        (fail == 0, format!("{head}: {}", parts.join(", ")))
    };
    Conclusion {
        can_pass,
        summary,
        pass,
        fail,
        ignored,
        unknown,
    }
}
