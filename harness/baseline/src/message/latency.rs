//! The words of a trial with writing ranks whose reads wait longer than at bless
//! ([`Judgement::LatencyHigher`](super::Judgement::LatencyHigher)).

use super::rise::Rise;
use crate::cost::Cost;
use crate::decision::Throughput;
use crate::judgement::Expected;
use gds_model::cost::{Percentile, format_micros};

/// The words' facts: the judged percentile, its cost and the trial's throughput.
pub(super) fn rise<'a>(
    percentile: Percentile,
    cost: &'a Cost,
    throughput: &'a Throughput,
    entry: &'a Expected,
) -> Rise<'a> {
    let p = percentile.name();
    Rise {
        headline: format!("slower reads beside writes: {p} read latency"),
        subject: format!("the reading rank's {p} read-call latency beside the writing ranks is"),
        compared: ("as high as", "higher"),
        baseline: "its baseline's",
        whole: "the trial",
        tolerance: "latency",
        shown: format_micros,
        per: ("pass", "passes"),
        accepted: "latency",
        cost,
        throughput,
        entry,
    }
}

pub(super) const LIKELY_CAUSE: &str = "the reads wait longer behind the writes: a libcufile or driver upgrade, a changed cufile.json (the POSIX pool, `execution.max_io_threads`), or the write path of the file system or disk (write-back, a full write cache, a deeper queue)";
