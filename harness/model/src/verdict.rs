//! The path verdict: which way a trial's bytes went (nvfs, p2p, cuFile compat, KvikIO POSIX,
//! host, bounce, or a mix), from every evidence source, cross-checked; then the judgement against
//! the scenario's `expect.path`, with the evidence table, the likely cause and the fix.
//!
//! Never green by accident: bytes no source can place count as a fallback, sources that contradict
//! each other fail the trial, and a missing source is said to be missing.

mod builder;
mod cross_check;
pub mod diagnose;
mod ops;
mod split;
pub mod stack;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::evidence::{Bytes, Evidence};
use crate::path::Path;
use crate::scenario::{Expectations, ExpectedPath};

pub use diagnose::Diagnosis;

/// `expect.path` as written in suite files.
pub fn expected_name(expected: ExpectedPath) -> &'static str {
    match expected {
        ExpectedPath::Nvfs => "nvfs",
        ExpectedPath::P2p => "p2p",
        ExpectedPath::Gds => "gds",
        ExpectedPath::CufilePosix => "cufile-posix",
        ExpectedPath::KvikioPosix => "kvikio-posix",
        ExpectedPath::Host => "host",
        ExpectedPath::Bounce => "bounce",
        ExpectedPath::Any => "any",
    }
}

/// Where a line of the evidence table came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Reader,
    Cpu,
    Kvikio,
    CufileApi,
    GdsStats,
    NvidiaFs,
    Host,
    CufileLog,
    Settings,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::Reader => "reader",
            Source::Cpu => "CPU",
            Source::Kvikio => "KvikIO",
            Source::CufileApi => "cuFile",
            Source::GdsStats => "gds_stats",
            Source::NvidiaFs => "nvidia-fs",
            Source::CufileLog => "cufile.log",
            Source::Host => "host",
            Source::Settings => "settings",
        }
    }
}

/// What one source said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLine {
    pub source: Source,
    pub said: String,
}

/// The path a trial's bytes took, and what each source said about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathVerdict {
    pub path: Path,
    /// Bytes per path; only paths that carried bytes.
    pub split: BTreeMap<Path, u64>,
    /// cuFile's bytes were shared between its paths by read counts, not measured per path.
    pub approximate: bool,
    /// One line per source, missing ones included.
    pub lines: Vec<SourceLine>,
    /// The short claims of the one-line summary: `KvikIO: GDS 1.00 GiB`, `cuFile: 256 posix reads, 0 nvfs`.
    pub claims: Vec<String>,
    /// Sources that contradict each other, in words.
    pub conflicts: Vec<String>,
    /// Read errors any source counted, in words.
    pub errors: Vec<String>,
    /// Caveats: missing sources, inferred counts.
    pub notes: Vec<String>,
}

impl PathVerdict {
    pub fn bytes_on(&self, path: Path) -> u64 {
        self.split.get(&path).copied().unwrap_or(0)
    }

    /// Whether `path` carried bytes or, where bytes are unknown, is the verdict.
    pub fn involves(&self, path: Path) -> bool {
        self.path == path || self.bytes_on(path) > 0
    }

    /// The source column padded so that the table lines up.
    pub fn table(&self) -> String {
        let width = self
            .lines
            .iter()
            .map(|line| line.source.label().len())
            .max()
            .unwrap_or(0);
        let mut text = String::new();
        for line in &self.lines {
            text.push_str(&format!("{:width$}  {}\n", line.source.label(), line.said));
        }
        text
    }
}

impl fmt::Display for PathVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path.name())?;
        if self.path == Path::Mixed {
            let parts: Vec<String> = self
                .split
                .iter()
                .map(|(path, bytes)| format!("{path} {}", Bytes(*bytes)))
                .collect();
            write!(f, " ({}", parts.join(", "))?;
            if self.approximate {
                f.write_str("; cuFile's share split by read counts")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// The path the bytes took, from every source in `evidence`.
pub fn verdict(evidence: &Evidence) -> PathVerdict {
    split::build(evidence)
}

/// A trial's path judged against its expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathJudgement {
    pub verdict: PathVerdict,
    pub expected: ExpectedPath,
    pub passed: bool,
    /// One line: `expected gds, got cufile-posix: KvikIO: GDS 1.00 GiB; cuFile: 256 posix reads,
    /// 0 nvfs → cuFile compat mode: nvidia-fs is not loaded`.
    pub summary: String,
    /// Why it failed, one reason a line (empty when it passed).
    pub reasons: Vec<String>,
    /// Which source said what, one line each.
    pub evidence_table: String,
    pub likely_cause: Option<String>,
    pub fix: Option<String>,
    /// Further causes that fit the evidence, most likely first.
    pub other_causes: Vec<Diagnosis>,
}

/// Judges `evidence` against `expected`, allowing `max_fallback_bytes` on other paths.
pub fn judge_path(
    evidence: &Evidence,
    expected: ExpectedPath,
    max_fallback_bytes: u64,
) -> PathJudgement {
    let verdict = verdict(evidence);
    let total = verdict
        .split
        .values()
        .fold(0u64, |sum, bytes| sum.saturating_add(*bytes));
    let on_path = verdict
        .split
        .iter()
        .filter(|(path, _)| path.satisfies(expected))
        .fold(0u64, |sum, (_, bytes)| sum.saturating_add(*bytes));
    let elsewhere = total.saturating_sub(on_path);
    let want = expected_name(expected);
    let mut reasons = Vec::new();
    if expected != ExpectedPath::Any {
        if total == 0 && verdict.path == Path::Unknown {
            reasons.push(format!(
                "expected {want}, but the trial {} no bytes: there is no path to judge",
                match evidence.op {
                    crate::scenario::Op::Read => "read",
                    crate::scenario::Op::Load => "loaded",
                    crate::scenario::Op::Write => "wrote",
                    crate::scenario::Op::Roundtrip => "wrote and read back",
                }
            ));
        } else if total == 0 {
            // A path named by a log or counters without any byte count is never a pass.
            reasons.push(format!(
                "expected {want}; the evidence points to {verdict}, but no bytes were counted"
            ));
        } else if on_path == 0 {
            reasons.push(format!("expected {want}, the bytes took {verdict}"));
        } else if elsewhere > max_fallback_bytes {
            reasons.push(format!(
                "expected {want}: {} of {} took other paths ({verdict}), more than `max_fallback_bytes` ({})",
                Bytes(elsewhere),
                Bytes(total),
                Bytes(max_fallback_bytes)
            ));
        }
        reasons.extend(
            verdict
                .conflicts
                .iter()
                .map(|conflict| format!("sources disagree: {conflict}")),
        );
        reasons.extend(verdict.errors.iter().cloned());
    }
    let passed = reasons.is_empty();
    let mut causes = if passed {
        Vec::new()
    } else {
        diagnose::diagnose(evidence, &verdict, expected)
    };
    let claims = verdict.claims.join("; ");
    let summary = match causes.first() {
        None if passed => format!("{verdict}: {claims}"),
        None => format!("expected {want}, got {verdict}: {claims}"),
        Some(first) => format!("expected {want}, got {verdict}: {claims} → {}", first.cause),
    };
    let (likely_cause, fix) = if causes.is_empty() {
        (None, None)
    } else {
        let first = causes.remove(0);
        (Some(first.cause), Some(first.fix))
    };
    PathJudgement {
        evidence_table: verdict.table(),
        verdict,
        expected,
        passed,
        summary,
        reasons,
        likely_cause,
        fix,
        other_causes: causes,
    }
}

/// [`judge_path`] against a trial's `expect:`; without `max_fallback_bytes` no byte may go elsewhere.
pub fn judge_path_of_trial(evidence: &Evidence, expect: &Expectations) -> PathJudgement {
    judge_path(
        evidence,
        expect.path,
        expect.max_fallback_bytes.unwrap_or(0),
    )
}

impl fmt::Display for PathJudgement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary)?;
        for reason in &self.reasons {
            writeln!(f, "  {reason}")?;
        }
        writeln!(f, "evidence:")?;
        for line in self.evidence_table.lines() {
            writeln!(f, "  {line}")?;
        }
        for note in &self.verdict.notes {
            writeln!(f, "  note: {note}")?;
        }
        if let (Some(cause), Some(fix)) = (&self.likely_cause, &self.fix) {
            writeln!(f, "likely cause: {cause}")?;
            writeln!(f, "fix: {fix}")?;
        }
        for other in &self.other_causes {
            writeln!(f, "also possible: {}", other.cause)?;
            writeln!(f, "  fix: {}", other.fix)?;
        }
        Ok(())
    }
}
