//! Whether a worker's answer is the measurement its spec asked for. A well-formed result can
//! still be incomplete (fewer passes than asked or none, another verification than the one asked,
//! no evidence from the reader): judged as it stands, it would pass a trial that did not happen.
//! The gate checks every answer here before its trial can pass, whichever worker wrote it.

use crate::integrity::IntegrityResult;
use crate::numbers::median;
use crate::protocol::WorkerSpec;
use crate::record::Measurement;
use crate::scenario::{Integrity, Reader};

/// What is missing or wrong in a worker's answer, as a fragment for "the worker's result is
/// incomplete: …".
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Incomplete {
    #[error("the plan reads no bytes, so nothing was measured")]
    NothingPlanned,
    #[error(
        "it reports {reported_bytes} bytes per pass of {reported_files} file(s), the plan reads {planned_bytes} of {planned_files}"
    )]
    OtherPlan {
        reported_bytes: u64,
        reported_files: usize,
        planned_bytes: u64,
        planned_files: usize,
    },
    #[error("it reports {reported} {what}, the spec asked {asked}")]
    Count {
        what: &'static str,
        reported: usize,
        asked: u32,
    },
    #[error("it reports a pass time or throughput of {0}, expected a positive number")]
    NotPositive(f64),
    #[error("its median throughput {0:?} is not the median of its passes")]
    Median(Option<f64>),
    #[error("it verified with `{done}`, the spec asked `{asked}`")]
    Method { done: String, asked: String },
    #[error(
        "its verification compared against {compared:?}, not the expected checksum {expected:#018x}, or computed none"
    )]
    Checksum {
        compared: Option<u64>,
        expected: u64,
    },
    #[error(
        "its verification found {bad_words} bad word(s) and checksum {checksum:?}, yet it reported no failure"
    )]
    Unreported {
        bad_words: u64,
        checksum: Option<u64>,
    },
    #[error("it does not report {what}, which reader `{reader}` must")]
    Evidence {
        what: &'static str,
        reader: &'static str,
    },
}

/// `Ok` when `m` is a complete answer to `asked`; otherwise what is missing or wrong.
pub fn check(asked: &WorkerSpec, m: &Measurement) -> Result<(), Incomplete> {
    let trial = &asked.trial;
    let bytes = asked.plan.total_bytes();
    if bytes == 0 {
        return Err(Incomplete::NothingPlanned);
    }
    if m.bytes_per_repetition != bytes || m.files != asked.plan.files {
        return Err(Incomplete::OtherPlan {
            reported_bytes: m.bytes_per_repetition,
            reported_files: m.files.len(),
            planned_bytes: bytes,
            planned_files: asked.plan.files.len(),
        });
    }
    count("warm-up passes", m.warmup_seconds.len(), trial.warmup)?;
    count("measured passes", m.seconds.len(), trial.repetitions)?;
    count("throughputs", m.gbps.len(), trial.repetitions)?;
    let timed = m.warmup_seconds.iter().chain(&m.seconds).chain(&m.gbps);
    if let Some(bad) = timed.copied().find(|v| !(v.is_finite() && *v > 0.0)) {
        return Err(Incomplete::NotPositive(bad));
    }
    let agrees = |reported: f64| (reported - median(&m.gbps)).abs() <= 1e-9 * reported;
    if !m.median_gbps.is_some_and(agrees) {
        return Err(Incomplete::Median(m.median_gbps));
    }
    verification(
        &m.integrity,
        trial.expect.integrity,
        asked.expected_checksum,
    )?;
    evidence(trial.reader, m)
}

fn count(what: &'static str, reported: usize, asked: u32) -> Result<(), Incomplete> {
    if u64::try_from(reported) == Ok(u64::from(asked)) {
        return Ok(());
    }
    Err(Incomplete::Count {
        what,
        reported,
        asked,
    })
}

/// The verification asked for, done, and passed: a worker that reports no failure must have
/// checked every byte the way the spec says, against the checksum the gate computed.
fn verification(done: &IntegrityResult, asked: Integrity, expected: u64) -> Result<(), Incomplete> {
    let name = |method: Integrity| format!("{method:?}").to_lowercase();
    if done.method != asked {
        return Err(Incomplete::Method {
            done: name(done.method),
            asked: name(asked),
        });
    }
    if asked == Integrity::None {
        return Ok(());
    }
    if done.expected_checksum != Some(expected) || done.checksum.is_none() {
        return Err(Incomplete::Checksum {
            compared: done.expected_checksum,
            expected,
        });
    }
    if !done.passed() {
        return Err(Incomplete::Unreported {
            bad_words: done.bad_words,
            checksum: done.checksum,
        });
    }
    Ok(())
}

/// What each reader must report besides its timing: the GPU it read into, and for cuFile and
/// KvikIO their own account of the path, without which the path verdict has nothing to judge.
fn evidence(reader: Reader, m: &Measurement) -> Result<(), Incomplete> {
    let missing = match reader {
        _ if reader.uses_gpu() && m.gpu.is_none() => Some("the GPU it read into"),
        _ if reader.native_cufile() && m.cufile.is_none() => {
            Some("cuFile's evidence (library, counters)")
        }
        Reader::Kvikio if m.kvikio.is_none() => {
            Some("KvikIO's evidence (SummaryMonitor's bytes per backend)")
        }
        Reader::Torch if m.torch.is_none() => Some("PyTorch's evidence (its version and build)"),
        _ => None,
    };
    match missing {
        Some(what) => Err(Incomplete::Evidence {
            what,
            reader: reader.name(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::expected_checksum;
    use crate::plan::{ReadPlan, test_support::generated};
    use crate::record::{CufileEvidence, KvikioEvidence, TorchEvidence};
    use crate::scenario::Pattern;

    fn asked(reader: Reader) -> WorkerSpec {
        let suite = crate::scenario::parse(
            std::path::Path::new("s.yaml"),
            "scenarios:\n  - name: t\n    files: { size: 1MiB }\n    warmup: 1\n    repetitions: 2\n",
        )
        .unwrap();
        let mut trial = crate::scenario::expand(&suite).remove(0);
        trial.reader = reader;
        let plan = ReadPlan::new(vec![generated(1, 1 << 20)], &Pattern::Whole);
        WorkerSpec::new(trial, plan)
    }

    /// What a worker that did everything it was asked answers.
    fn complete(asked: &WorkerSpec) -> Measurement {
        let expected = expected_checksum(&asked.plan);
        Measurement {
            warmup_seconds: vec![0.5],
            seconds: vec![0.5, 0.25],
            gbps: vec![2.0, 4.0],
            median_gbps: Some(3.0),
            path: "host".into(),
            integrity: IntegrityResult {
                checksum: Some(expected),
                expected_checksum: Some(expected),
                ..IntegrityResult::not_checked(Integrity::Exact)
            },
            total_seconds: 1.0,
            gpu: Some("H200 (GPU 0)".into()),
            cufile: Some(CufileEvidence::default()),
            kvikio: Some(KvikioEvidence::default()),
            torch: Some(TorchEvidence::default()),
            ..Measurement::unmeasured(asked.plan.files.clone(), asked.plan.total_bytes())
        }
    }

    /// Issue 15, case 2: each way a well-formed result fell short used to pass as "not verified
    /// ok"; each is now a reason to fail.
    #[test]
    fn an_incomplete_result_is_refused_with_what_it_lacks() {
        type Spoil = fn(&mut Measurement);
        let cases: &[(Reader, &str, Spoil)] = &[
            (Reader::Posix, "0 measured passes, the spec asked 2", |m| {
                m.seconds.clear();
                m.gbps.clear();
                m.median_gbps = None;
            }),
            (Reader::Posix, "0 warm-up passes, the spec asked 1", |m| {
                m.warmup_seconds.clear()
            }),
            (Reader::Posix, "1 throughputs, the spec asked 2", |m| {
                m.gbps.pop();
            }),
            (Reader::Posix, "a pass time or throughput of 0", |m| {
                m.gbps = vec![0.0, 0.0];
                m.median_gbps = Some(0.0);
            }),
            (Reader::Posix, "not the median of its passes", |m| {
                m.median_gbps = Some(9.0)
            }),
            (
                Reader::Posix,
                "verified with `none`, the spec asked `exact`",
                |m| m.integrity = IntegrityResult::not_checked(Integrity::None),
            ),
            (Reader::Posix, "not the expected checksum", |m| {
                m.integrity.expected_checksum = m.integrity.checksum.map(|c| c ^ 1);
                m.integrity.checksum = m.integrity.expected_checksum;
            }),
            (Reader::Posix, "found 3 bad word(s)", |m| {
                m.integrity.bad_words = 3
            }),
            (Reader::Posix, "bytes per pass", |m| {
                m.bytes_per_repetition = 1
            }),
            (Reader::Kvikio, "KvikIO's evidence", |m| m.kvikio = None),
            (Reader::Torch, "PyTorch's evidence", |m| m.torch = None),
            (Reader::Cufile, "cuFile's evidence", |m| m.cufile = None),
            (Reader::H2d, "the GPU it read into", |m| m.gpu = None),
        ];
        for (reader, needle, spoil) in cases {
            let asked = asked(*reader);
            let mut m = complete(&asked);
            assert_eq!(check(&asked, &m), Ok(()));
            spoil(&mut m);
            let problem = check(&asked, &m).expect_err(needle).to_string();
            assert!(problem.contains(needle), "`{needle}` not in: {problem}");
        }
        // `integrity: none` asked is `none` done, and needs no checksum.
        let mut asked = asked(Reader::Posix);
        asked.trial.expect.integrity = Integrity::None;
        let mut m = complete(&asked);
        m.integrity = IntegrityResult::not_checked(Integrity::None);
        assert_eq!(check(&asked, &m), Ok(()));
        // A plan of nothing measures nothing (an empty file of the user's).
        let empty = ReadPlan::new(Vec::new(), &Pattern::Whole);
        let asked = WorkerSpec::new(asked.trial, empty);
        assert!(check(&asked, &complete(&asked)).is_err());
    }
}
