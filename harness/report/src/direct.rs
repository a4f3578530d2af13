//! GDS against the plain path, in the same run: each trial of a GPU reader that tries the direct
//! path (cuFile, natively or from KvikIO or PyTorch) beside the `posix` trial of the run that
//! reads the same file the same way ([`gds_model::scenario::ReadShape`]), their ratio, the path
//! each took, and a warning on the GPU trial where it is slower than POSIX by more than the
//! tolerance, with the doctor's topology facts beside it.
//!
//! A warning, not a failure: where cuFile has no direct path (no nvidia-fs, no P2PDMA), its
//! compat mode reads through host bounce buffers and may well be slower than plain POSIX; that
//! runner is not broken, and its baseline judges whether it got worse. Against the baseline a
//! trial is compared with its own past; here with the other reader, under the same drift.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use gds_model::path::Path;
use gds_model::record::{Status, TrialRecord};
use gds_model::scenario::Reader;
use gds_model::topology::{HostTopology, Topology};
use gds_model::units::Rate;
use gds_runner::escape::{markdown as text, markdown_code as code};

/// How far below the posix reader a GPU reader may be before it is a warning: 10%. Passes of
/// one trial agree to 2–8% on the H200 runner (DESIGN.md), so a gap past 10% between two
/// trials' medians is more than their passes' spread; run-to-run drift moves both trials of a
/// run much alike, minutes apart. `--posix-tolerance` changes it.
pub const DEFAULT_TOLERANCE: f64 = 0.10;

/// A GPU reader's trial and the `posix` trial of the same run over the same file and reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DirectVsPosix {
    pub gpu_trial: String,
    pub posix_trial: String,
    pub gpu_reader: Reader,
    /// The GPU trial's median GB/s over the posix trial's; absent where a side measured nothing.
    pub ratio: Option<f64>,
    pub gpu_gbps: Option<f64>,
    pub posix_gbps: Option<f64>,
    /// The path each trial's bytes took, as its path verdict said.
    pub gpu_path: Option<Path>,
    pub posix_path: Option<Path>,
    /// The GPU reader may be this fraction below the posix reader before it is a warning.
    pub tolerance: f64,
    /// `ratio` is below `1 - tolerance`: a warning on the GPU trial.
    pub below_tolerance: bool,
    /// Why there is no ratio: which side did not run or measured nothing, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ratio: Option<String>,
    /// The doctor's facts about the GPU the trial read into and the data dir's disk.
    pub topology: Topology,
}

/// The pairs of `trials`, in the order of their GPU trials. A GPU trial with no `posix` trial of
/// the same shape in the run has none; of several, the first that measured is taken.
pub fn pairs(
    trials: &[TrialRecord],
    topology: &HostTopology,
    tolerance: f64,
) -> Vec<DirectVsPosix> {
    let posix: Vec<&TrialRecord> = trials
        .iter()
        .filter(|t| t.spec.reader == Reader::Posix && t.spec.read_shape().is_some())
        .collect();
    let mut pairs = Vec::new();
    for gpu in trials {
        if gpu.spec.reader == Reader::Posix || !gpu.spec.tries_direct_path() {
            continue;
        }
        let Some(shape) = gpu.spec.read_shape() else {
            continue;
        };
        let same: Vec<&&TrialRecord> = posix
            .iter()
            .filter(|p| p.spec.read_shape().as_ref() == Some(&shape))
            .collect();
        let Some(plain) = same
            .iter()
            .find(|p| measured(p).is_ok())
            .or_else(|| same.first())
        else {
            continue;
        };
        pairs.push(pair(gpu, plain, topology.for_gpu(gpu.spec.gpu), tolerance));
    }
    pairs
}

fn pair(
    gpu: &TrialRecord,
    posix: &TrialRecord,
    topology: Topology,
    tolerance: f64,
) -> DirectVsPosix {
    let (gpu_gbps, posix_gbps) = (measured(gpu), measured(posix));
    let ratio = match (&gpu_gbps, &posix_gbps) {
        (Ok(g), Ok(p)) if *p > 0.0 => Some(g / p),
        _ => None,
    };
    let no_ratio = match (&gpu_gbps, &posix_gbps) {
        (Err(g), Err(p)) => Some(format!("the GPU trial {g}; the posix trial {p}")),
        (Err(g), _) => Some(format!("the GPU trial {g}")),
        (_, Err(p)) => Some(format!("the posix trial {p}")),
        (Ok(_), Ok(_)) if ratio.is_none() => Some("the posix trial measured 0 GB/s".into()),
        _ => None,
    };
    let path = |t: &TrialRecord| t.measurement.as_ref().map(|m| m.path.clone());
    DirectVsPosix {
        gpu_trial: gpu.name.clone(),
        posix_trial: posix.name.clone(),
        gpu_reader: gpu.spec.reader,
        ratio,
        gpu_gbps: gpu_gbps.ok(),
        posix_gbps: posix_gbps.ok(),
        gpu_path: path(gpu),
        posix_path: path(posix),
        tolerance,
        below_tolerance: ratio.is_some_and(|r| r < 1.0 - tolerance),
        no_ratio,
        topology,
    }
}

/// Why a trial of a pair gives no median, said as the end of a sentence (`did not run: …`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoMeasurement {
    #[error("did not run: {0}")]
    DidNotRun(String),
    #[error("failed its own checks: {0}")]
    Failed(String),
    #[error("measured no pass")]
    NoPass,
}

/// The trial's median GB/s when its own checks passed and it measured a pass.
pub(crate) fn measured(trial: &TrialRecord) -> Result<f64, NoMeasurement> {
    let reason = || trial.reason.clone().unwrap_or_default();
    match trial.checks {
        Status::Ignored => Err(NoMeasurement::DidNotRun(reason())),
        Status::Failed => Err(NoMeasurement::Failed(reason())),
        Status::Passed => trial
            .measurement
            .as_ref()
            .and_then(|m| m.median_gbps)
            .ok_or(NoMeasurement::NoPass),
    }
}

impl DirectVsPosix {
    /// The warning on the GPU trial, where it is below the tolerance: the figures, the path and
    /// what it means, the topology, and what to do next. Every sink shows these words.
    pub fn warning(&self, rate: Rate) -> Option<String> {
        if !self.below_tolerance {
            return None;
        }
        let (ratio, gpu, posix) = (self.ratio?, self.gpu_gbps?, self.posix_gbps?);
        let mut out = format!(
            "slower than POSIX: {ratio:.2}× the posix reader over the same file and reads in this run ({} against {} of `{}`), {:.0}% below, past the {:.0}% tolerance",
            rate.rate(gpu),
            rate.rate(posix),
            self.posix_trial,
            100.0 * (1.0 - ratio),
            100.0 * self.tolerance
        );
        let path = self.gpu_path.clone().unwrap_or(Path::Unknown);
        let _ = write!(out, "\n  path: {path}: {}", meaning(&path));
        let _ = write!(out, "\n  topology: {}", self.topology.line());
        for concern in self.topology.concerns() {
            let _ = write!(out, "\n  likely cause: {concern}");
        }
        let _ = write!(out, "\n  next: {}", next_step(&path));
        Some(out)
    }
}

/// What the GPU reader's path says about its being slower than POSIX.
fn meaning(path: &Path) -> &'static str {
    match path {
        Path::CufilePosix => {
            "cuFile's compat mode, POSIX reads through host bounce buffers and a copy, not GPUDirect: this runner gives cuFile no direct path"
        }
        Path::KvikioPosix => {
            "KvikIO's own POSIX path through host memory, not GPUDirect (its AUTO fallback, compat mode, or reads below KVIKIO_GDS_THRESHOLD)"
        }
        Path::Nvfs | Path::P2p => {
            "GPUDirect itself is slower here: the PCIe path between the disk and the GPU, or a request size that suits the page cache better"
        }
        _ => "the counters do not say which path cuFile took; see the trial's path evidence",
    }
}

fn next_step(path: &Path) -> &'static str {
    if path.is_posix_fallback() {
        "`cargo xtask doctor` names what stands between cuFile and a direct path (nvidia-fs, P2PDMA, the udev record); on a runner that has none by design, raise --posix-tolerance or let the baseline judge the trial"
    } else {
        "`cargo xtask doctor` (without --quick) prints `nvidia-smi topo -m` and ACS: keep the GPU and the disk under one PCIe switch and NUMA node; try larger requests (`pattern: { chunks: … }`, `properties.max_direct_io_size_kb`)"
    }
}

/// Each pair's warning on its GPU trial's record, where the pair is below the tolerance, so that
/// every sink that shows a trial's warnings shows it.
pub fn warn(trials: &mut [TrialRecord], pairs: &[DirectVsPosix], rate: Rate) {
    for pair in pairs {
        let Some(warning) = pair.warning(rate) else {
            continue;
        };
        if let Some(trial) = trials.iter_mut().find(|t| t.name == pair.gpu_trial) {
            trial.warnings.push(warning);
        }
    }
}

/// The terminal's lines after the trials: each pair with a ratio, and how many have none.
/// Empty when the run has no pair.
pub fn console(pairs: &[DirectVsPosix]) -> String {
    // A run where no pair measured both sides (no GPU) has nothing to show here.
    if pairs.iter().all(|p| p.ratio.is_none()) {
        return String::new();
    }
    let mut out = String::from(
        "GDS vs POSIX in this run (GPU reader's median over the posix reader's, same file and reads):\n",
    );
    for pair in pairs.iter().filter(|p| p.ratio.is_some()) {
        let _ = writeln!(
            out,
            "  {} {} ({}) / {} ({}){}",
            ratio_text(pair.ratio),
            pair.gpu_trial,
            path_text(&pair.gpu_path),
            pair.posix_trial,
            path_text(&pair.posix_path),
            if pair.below_tolerance {
                "  slower than POSIX"
            } else {
                ""
            }
        );
    }
    let without = pairs.iter().filter(|p| p.ratio.is_none()).count();
    if without > 0 {
        let _ = writeln!(
            out,
            "  {without} of {} pairs have no ratio: a side did not run or measured nothing (summary.md says which)",
            pairs.len()
        );
    }
    out
}

/// summary.md's section: one row per pair, then each warning. Empty when the run has no pair.
pub(crate) fn markdown(pairs: &[DirectVsPosix], rate: Rate) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let label = rate.label();
    let tolerance = pairs[0].tolerance;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### GDS vs POSIX\n\nEach trial of a GPU reader that tries the direct path, beside the `posix` trial of this run that reads the same file the same way (pattern, task size, requests in flight, cache, window): the ratio of their median {label}. Below {:.2} (POSIX faster by more than {:.0}%) is a warning on the GPU trial, not a failure.\n",
        1.0 - tolerance,
        100.0 * tolerance
    );
    let _ = writeln!(
        out,
        "| GPU trial | POSIX trial | ratio | GPU {label} | POSIX {label} | GPU path | POSIX path | note |\n|---|---|---:|---:|---:|---|---|---|"
    );
    let number = |gbps: Option<f64>| gbps.map_or("-".into(), |g| rate.number(g, 2));
    for pair in pairs {
        let note = match (&pair.no_ratio, pair.below_tolerance) {
            (Some(why), _) => format!("no ratio: {}", text(why)),
            (None, true) => format!(
                "**slower than POSIX** by {:.0}%",
                100.0 * (1.0 - pair.ratio.unwrap_or(1.0))
            ),
            (None, false) => String::new(),
        };
        let ratio = if pair.below_tolerance {
            format!("**{}**", ratio_text(pair.ratio))
        } else {
            ratio_text(pair.ratio)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {ratio} | {} | {} | {} | {} | {note} |",
            code(&pair.gpu_trial),
            code(&pair.posix_trial),
            number(pair.gpu_gbps),
            number(pair.posix_gbps),
            text(&path_text(&pair.gpu_path)),
            text(&path_text(&pair.posix_path)),
        );
    }
    out.push('\n');
    for pair in pairs {
        if let Some(warning) = pair.warning(rate) {
            let lines: Vec<String> = warning.lines().map(|l| text(l.trim())).collect();
            let _ = writeln!(
                out,
                "> **Warning:** {}: {}\n",
                code(&pair.gpu_trial),
                lines.join("<br>")
            );
        }
    }
    out
}

/// A ratio (or any figure near 1) with two decimals; `-` where there is none.
pub(crate) fn ratio_text(ratio: Option<f64>) -> String {
    ratio.map_or("-".into(), |r| format!("{r:.2}"))
}

/// The path's name; `-` where the trial has none.
pub(crate) fn path_text(path: &Option<Path>) -> String {
    path.as_ref().map_or("-".into(), |p| p.name().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_baseline::fixtures;
    use gds_model::scenario::{self, TrialSpec};

    /// Fixture suite: the default suite's shapes in small (one file, two thread counts, one
    /// chunked pattern), every reader that reads.
    const SUITE: &str = "suite: s
defaults: { files: { size: 64MiB, seed: 1 } }
scenarios:
  - name: cold
    reader: [posix, h2d, cufile]
    nthreads: [1, 8]
  - name: kvikio
    reader: kvikio
    compat_mode: [ON, AUTO]
    nthreads: 8
  - name: chunked
    reader: [posix, cufile]
    nthreads: 8
    pattern: { chunks: 16MiB }
  - name: other-file
    files: { size: 64MiB, seed: 2 }
    reader: cufile
  - name: write
    reader: [posix, cufile]
    op: write
";

    fn specs() -> Vec<TrialSpec> {
        scenario::expand(&scenario::parse(std::path::Path::new("s.yaml"), SUITE).unwrap())
    }

    /// A fixture record of `spec` that measured `gbps` on `path`.
    fn measured(spec: &TrialSpec, gbps: f64, path: &str) -> TrialRecord {
        let mut record = fixtures::passed(&spec.name, &[gbps, gbps, gbps], path, 7);
        record.spec = spec.clone();
        record
    }

    /// Fixture: every trial of [`SUITE`] measured; cufile slower than posix at one thread.
    fn run() -> Vec<TrialRecord> {
        specs()
            .iter()
            .map(|spec| match spec.name.as_str() {
                "s::cold[reader=posix,nthreads=1]" => measured(spec, 1.30, "host"),
                "s::cold[reader=cufile,nthreads=1]" => measured(spec, 1.01, "cufile-posix"),
                "s::cold[reader=posix,nthreads=8]" => measured(spec, 1.28, "host"),
                "s::cold[reader=cufile,nthreads=8]" => measured(spec, 1.29, "cufile-posix"),
                "s::kvikio[compat=AUTO]" => measured(spec, 2.22, "cufile-posix"),
                _ => measured(spec, 1.0, "bounce"),
            })
            .collect()
    }

    fn named<'a>(pairs: &'a [DirectVsPosix], gpu: &str) -> &'a DirectVsPosix {
        pairs
            .iter()
            .find(|p| p.gpu_trial == gpu)
            .unwrap_or_else(|| panic!("no pair for {gpu}: {pairs:#?}"))
    }

    #[test]
    fn each_gpu_reader_pairs_with_the_posix_trial_of_its_file_and_reads() {
        let pairs = pairs(&run(), &crate::test_support::topology(), DEFAULT_TOLERANCE);
        let found: Vec<(&str, &str)> = pairs
            .iter()
            .map(|p| (p.gpu_trial.as_str(), p.posix_trial.as_str()))
            .collect();
        // Not h2d nor KvikIO with compat mode ON (no direct path tried), nor another file's,
        // nor a write's.
        assert_eq!(
            found,
            [
                (
                    "s::cold[reader=cufile,nthreads=1]",
                    "s::cold[reader=posix,nthreads=1]"
                ),
                (
                    "s::cold[reader=cufile,nthreads=8]",
                    "s::cold[reader=posix,nthreads=8]"
                ),
                ("s::kvikio[compat=AUTO]", "s::cold[reader=posix,nthreads=8]"),
                ("s::chunked[reader=cufile]", "s::chunked[reader=posix]"),
            ]
        );
        let kvikio = named(&pairs, "s::kvikio[compat=AUTO]");
        assert!(
            (kvikio.ratio.unwrap() - 2.22 / 1.28).abs() < 1e-9,
            "{kvikio:?}"
        );
        assert_eq!(kvikio.gpu_path, Some(Path::CufilePosix));
        assert_eq!(kvikio.posix_path, Some(Path::Host));
        assert!(!kvikio.below_tolerance && kvikio.warning(Rate::Gb).is_none());
    }

    #[test]
    fn a_gpu_reader_past_the_tolerance_below_posix_warns_with_the_topology() {
        let pairs = pairs(&run(), &crate::test_support::topology(), DEFAULT_TOLERANCE);
        let slow = named(&pairs, "s::cold[reader=cufile,nthreads=1]");
        assert!((slow.ratio.unwrap() - 1.01 / 1.30).abs() < 1e-9);
        assert!(slow.below_tolerance);
        let warning = slow.warning(Rate::Gb).unwrap();
        assert!(
            warning.starts_with(
                "slower than POSIX: 0.78× the posix reader over the same file and reads in this run (1.01 GB/s against 1.30 GB/s of `s::cold[reader=posix,nthreads=1]`), 22% below, past the 10% tolerance\n  path: cufile-posix: cuFile's compat mode"
            ),
            "{warning}"
        );
        assert!(
            warning.contains(
                "\n  topology: GPU 0 at 00000000:00:05.0: PCIe gen 5 x16, no NUMA node; disk vda (virtio_blk): no NUMA node\n  next: `cargo xtask doctor`"
            ),
            "{warning}"
        );
        // 1.29 against 1.28: not a warning.
        let even = named(&pairs, "s::cold[reader=cufile,nthreads=8]");
        assert!(!even.below_tolerance, "{even:?}");
        // At a tolerance of 25%, 0.78 is within it.
        let lenient = super::pairs(&run(), &crate::test_support::topology(), 0.25);
        assert!(!named(&lenient, "s::cold[reader=cufile,nthreads=1]").below_tolerance);

        // The warning goes on the GPU trial's record, and on no other.
        let mut trials = run();
        warn(&mut trials, &pairs, Rate::Gb);
        for trial in &trials {
            let expected = usize::from(trial.name == "s::cold[reader=cufile,nthreads=1]");
            assert_eq!(trial.warnings.len(), expected, "{}", trial.name);
        }
    }

    #[test]
    fn a_side_that_did_not_run_gives_no_ratio_and_says_why() {
        let mut trials = run();
        let ignored = "s::cold[reader=cufile,nthreads=8]";
        let spec = trials
            .iter()
            .find(|t| t.name == ignored)
            .unwrap()
            .spec
            .clone();
        *trials.iter_mut().find(|t| t.name == ignored).unwrap() =
            TrialRecord::ignored(spec, "no NVIDIA driver (libcuda.so.1 not found)".into());
        let chunked = "s::chunked[reader=posix]";
        let spec = trials
            .iter()
            .find(|t| t.name == chunked)
            .unwrap()
            .spec
            .clone();
        *trials.iter_mut().find(|t| t.name == chunked).unwrap() = TrialRecord::failed(
            spec,
            "the worker exited with status 1".into(),
            "".into(),
            None,
        );
        let pairs = pairs(&trials, &crate::test_support::topology(), DEFAULT_TOLERANCE);

        let none = named(&pairs, ignored);
        assert_eq!(none.ratio, None);
        assert_eq!(none.gpu_gbps, None);
        assert_eq!(none.posix_gbps, Some(1.28));
        assert!(!none.below_tolerance && none.warning(Rate::Gb).is_none());
        assert_eq!(
            none.no_ratio.as_deref(),
            Some("the GPU trial did not run: no NVIDIA driver (libcuda.so.1 not found)")
        );
        assert_eq!(
            named(&pairs, "s::chunked[reader=cufile]")
                .no_ratio
                .as_deref(),
            Some("the posix trial failed its own checks: the worker exited with status 1")
        );

        let console = console(&pairs);
        assert!(
            console.contains(
                "  0.78 s::cold[reader=cufile,nthreads=1] (cufile-posix) / s::cold[reader=posix,nthreads=1] (host)  slower than POSIX\n"
            ),
            "{console}"
        );
        assert!(
            console.contains("  2 of 4 pairs have no ratio: a side did not run"),
            "{console}"
        );
        let section = markdown(&pairs, Rate::Gb);
        assert!(
            section.contains(
                "| `s::cold[reader=cufile,nthreads=8]` | `s::cold[reader=posix,nthreads=8]` | - | - | 1.28 | - | host | no ratio: the GPU trial did not run: no NVIDIA driver (libcuda.so.1 not found) |"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "| `s::cold[reader=cufile,nthreads=1]` | `s::cold[reader=posix,nthreads=1]` | **0.78** | 1.01 | 1.30 | cufile-posix | host | **slower than POSIX** by 22% |"
            ),
            "{section}"
        );
        assert!(
            section
                .contains("> **Warning:** `s::cold[reader=cufile,nthreads=1]`: slower than POSIX"),
            "{section}"
        );
    }

    #[test]
    fn the_default_suite_pairs_every_direct_reader_of_the_cold_file_with_posix() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/default.yaml");
        let suite = scenario::load(&path).unwrap();
        // Fixture: every trial of the default suite measured at 1 GB/s on a made-up path.
        let trials: Vec<TrialRecord> = scenario::expand(&suite)
            .iter()
            .map(|spec| measured(spec, 1.0, "nvfs"))
            .collect();
        let pairs = pairs(&trials, &crate::test_support::topology(), DEFAULT_TOLERANCE);
        let found: Vec<String> = pairs
            .iter()
            .map(|p| format!("{} / {}", p.gpu_trial, p.posix_trial))
            .collect();
        let one = "default::cold-read[reader=posix,nthreads=1]";
        let eight = "default::cold-read[reader=posix,nthreads=8]";
        let expected = [
            format!("default::cold-read[reader=cufile,nthreads=1] / {one}"),
            format!("default::cold-read[reader=cufile,nthreads=8] / {eight}"),
            format!("default::kvikio[compat=OFF,nthreads=1] / {one}"),
            format!("default::kvikio[compat=OFF,nthreads=8] / {eight}"),
            format!("default::kvikio[compat=AUTO,nthreads=1] / {one}"),
            format!("default::kvikio[compat=AUTO,nthreads=8] / {eight}"),
            format!("default::strict-gds / {one}"),
            "default::chunked-16MiB[reader=cufile] / default::chunked-16MiB[reader=posix]".into(),
            "default::random-1MiB[reader=cufile] / default::random-1MiB[reader=posix]".into(),
            format!("default::batch-read[batch=1] / {one}"),
            format!("default::batch-read[batch=8] / {eight}"),
            format!("default::async-read[depth=1] / {one}"),
            format!("default::async-read[depth=8] / {eight}"),
        ];
        // Not `odd-offsets`, whose reads are off 4 KiB blocks, nor KvikIO ON, async, PyTorch,
        // the trials over several GPUs or the writes.
        assert_eq!(found, expected);
        assert!(pairs.iter().all(|p| p.ratio == Some(1.0)));
    }

    #[test]
    fn a_run_without_a_posix_trial_of_the_same_reads_has_no_pair() {
        let trials: Vec<TrialRecord> = run()
            .into_iter()
            .filter(|t| t.spec.reader != Reader::Posix)
            .collect();
        let pairs = pairs(&trials, &crate::test_support::topology(), DEFAULT_TOLERANCE);
        assert!(pairs.is_empty(), "{pairs:#?}");
        assert_eq!(console(&pairs), "");
        assert_eq!(markdown(&pairs, Rate::Gb), "");
    }
}
