//! A trial's judgement against its baseline, as data: what was compared and found, and how
//! much it matters. Its words are [`super::message`]'s, rendered when a report is written; the
//! comparison that makes it is [`super::compare`].

use gds_model::cost::Percentile;
use gds_model::path::Path;
use gds_model::record::LoadStep;
use serde::{Deserialize, Serialize};

use super::changes::Creep;
use super::cost::Cost;
use super::decision::Throughput;

/// A cost a passing run's first run looked higher in, with its confirmation runs
/// ([`Judgement::Pass`]): the CPU per GiB, a load's step, or a read-latency percentile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "figure", rename_all = "kebab-case")]
pub enum Cleared {
    Cpu { cost: Cost },
    Load { step: LoadStep, cost: Cost },
    Latency { percentile: Percentile, cost: Cost },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Judgement {
    /// Same path, same checksum, throughput within what the tolerance and the runner's
    /// run-to-run spread allow (or a slow run that its confirmation run did not repeat).
    Pass {
        throughput: Throughput,
        /// A cost that looked higher in the first run and that its confirmation runs did not
        /// repeat: why a run that passed took confirmation runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cleared: Option<Cleared>,
    },
    /// Slower beyond the tolerance and the runner's spread, in the run and in every confirmation.
    Regression { throughput: Throughput },
    /// This run alone is within the noise, but the runner's history since the bless has a
    /// confirmed level shift whose level is below the baseline by more than the tolerance: steps
    /// that each stayed inside the noise and added up. A regression like a slower run.
    Creep {
        throughput: Throughput,
        creep: Creep,
        /// When the baseline was blessed: the runs searched are this trial's on this runner since
        /// then, this run included.
        since: String,
    },
    /// Faster beyond the tolerance and the spread: consider blessing. Not a failure.
    Faster { throughput: Throughput },
    /// As fast (within the tolerance, or faster), but more CPU seconds per GiB beyond
    /// `expect.cpu_tolerance`, the runner's spread and 0.1 s/GiB, in the run and in every
    /// confirmation: a regression like a slower one.
    CpuCostlier { throughput: Throughput, cpu: Cost },
    /// A load's set-up step (`step`: the time to the first byte, to open the files, to register
    /// the buffer) takes longer beyond `expect.load_tolerance` and the runner's spread, in the run
    /// and in every confirmation: a regression like a slower one, and what a slower load is
    /// reported as when its set-up explains it.
    LoadCostlier {
        throughput: Throughput,
        step: LoadStep,
        cost: Cost,
    },
    /// A trial with writing ranks (`writers:`): the reading rank's read-call latency at
    /// `percentile` is higher beyond `expect.latency_tolerance` and the runner's spread, in the
    /// run and in every confirmation: a regression like a slower one.
    LatencyHigher {
        throughput: Throughput,
        percentile: Percentile,
        cost: Cost,
    },
    /// The path verdict differs from the baseline's (e.g. `nvfs` → `cufile-posix`). A failure.
    PathChanged {
        from: Path,
        to: Path,
        throughput: Throughput,
    },
    /// The bytes read are not the bytes the baseline measured. A failure.
    ChecksumChanged {
        #[serde(with = "gds_model::hex::option")]
        #[schemars(with = "Option<gds_model::hex::Hex>")]
        from: Option<u64>,
        #[serde(with = "gds_model::hex::option")]
        #[schemars(with = "Option<gds_model::hex::Hex>")]
        to: Option<u64>,
    },
    /// The baseline has the trial, the run does not (a GPU or a mount that vanished). A failure.
    MissingTrial { cause: Missing },
    /// Not in the baseline yet. Informational.
    NewTrial,
    /// The runner has no baseline at all. Informational.
    NoBaseline,
    /// Not compared, with the reason (the trial failed on its own, or did not run and the
    /// baseline does not expect it).
    NotJudged { reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "why", rename_all = "kebab-case")]
pub enum Missing {
    /// It was selected but did not run.
    Ignored { reason: String },
    /// No suite defines it any more.
    NotDefined,
    /// It is not among this run's trials (what defines them is unknown).
    NotRun,
    /// The gate was interrupted (by this signal) before it.
    Interrupted { signal: String },
}

/// What the baseline expected of a trial, as far as a judgement's words quote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Expected {
    pub median_gbps: f64,
    /// Each blessed run's median, in the order the runs ran.
    pub run_medians_gbps: Vec<f64>,
    pub path: Path,
    pub blessed_at: String,
}

/// How much a judgement matters to the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    Ok,
    /// Worth reading, not a failure: faster, new trial, no baseline.
    Notice,
    /// Slower than the baseline: exit 3.
    Regression,
    /// Wrong path, wrong bytes, or a trial that vanished: exit 1.
    Failure,
}

impl Judgement {
    pub fn severity(&self) -> Severity {
        match self {
            Judgement::Pass { .. } | Judgement::NotJudged { .. } => Severity::Ok,
            Judgement::Faster { .. } | Judgement::NewTrial | Judgement::NoBaseline => {
                Severity::Notice
            }
            Judgement::Regression { .. }
            | Judgement::Creep { .. }
            | Judgement::CpuCostlier { .. }
            | Judgement::LoadCostlier { .. }
            | Judgement::LatencyHigher { .. } => Severity::Regression,
            Judgement::PathChanged { .. }
            | Judgement::ChecksumChanged { .. }
            | Judgement::MissingTrial { .. } => Severity::Failure,
        }
    }

    /// The throughput comparison, where the judgement made one.
    pub fn throughput(&self) -> Option<&Throughput> {
        match self {
            Judgement::Pass { throughput, .. }
            | Judgement::Regression { throughput }
            | Judgement::Creep { throughput, .. }
            | Judgement::Faster { throughput }
            | Judgement::CpuCostlier { throughput, .. }
            | Judgement::LoadCostlier { throughput, .. }
            | Judgement::LatencyHigher { throughput, .. }
            | Judgement::PathChanged { throughput, .. } => Some(throughput),
            _ => None,
        }
    }
}
