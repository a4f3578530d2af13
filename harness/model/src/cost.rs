//! What a pass costs besides time: read-call latency, read calls per second and the worker's CPU
//! time, the figures fio, elbencho and gdsio print and a GB/s alone hides. A fallback to bounce
//! buffers can keep its GB/s while it burns cores; CPU seconds per GiB shows it.
//!
//! Latency is kept in a [`Histogram`] per reader thread, merged after the pass, so that recording
//! one call costs two clock reads and an increment in memory no other thread touches. It is a
//! small log-linear histogram of our own rather than `hdrhistogram`: fixed buckets of 1/64 of an
//! octave (every bucket's midpoint within 0.8% of any value in it, far inside the 5% the
//! percentiles are held to), no allocation while recording, merge by addition, and no dependency
//! for what is forty lines.

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two: values below 64 ns are exact, larger ones within 1/64.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Rows of `SUB` buckets: row 0 holds 0..64 exactly, row `r` holds `[2^(r+5), 2^(r+6))`.
const ROWS: usize = 64 - SUB_BITS as usize + 1;

/// Latencies in nanoseconds, log-linear buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum_ns: u128,
    max_ns: u64,
    /// Calls known only through their summed time ([`Histogram::add_totals`]): with any, the
    /// distribution is unknown and only the mean is said.
    unbinned: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: vec![0; ROWS * SUB],
            total: 0,
            sum_ns: 0,
            max_ns: 0,
            unbinned: 0,
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let shift = 63 - ns.leading_zeros() - SUB_BITS;
    (shift as usize + 1) * SUB + ((ns >> shift) as usize & (SUB - 1))
}

/// The midpoint of a bucket's range (its value when a percentile falls in it).
fn midpoint(index: usize) -> u64 {
    let (row, sub) = (index / SUB, (index % SUB) as u64);
    if row == 0 {
        return sub;
    }
    let shift = row as u32 - 1;
    let low = (SUB as u64 + sub) << shift;
    low + ((1u64 << shift) >> 1)
}

impl Histogram {
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.total += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// `calls` calls that took `sum_ns` together, as a library that counts its calls but keeps
    /// no distribution reports them (KvikIO's statistics).
    pub fn add_totals(&mut self, calls: u64, sum_ns: u128) {
        self.total += calls;
        self.sum_ns += sum_ns;
        self.unbinned += calls;
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.unbinned += other.unbinned;
        self.total += other.total;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (0–1] in ns: the bucket holding the ⌈q·n⌉-th smallest value,
    /// never above the largest value seen. `None` when nothing was recorded, or some calls only
    /// as a sum.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 || self.unbinned > 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(midpoint(index).min(self.max_ns));
            }
        }
        Some(self.max_ns)
    }

    /// The percentiles people compare (`None` when nothing was recorded).
    pub fn latency(&self) -> Option<Latency> {
        let us = |q: f64| self.quantile(q).map(|ns| ns as f64 / 1e3);
        (self.total > 0).then(|| Latency {
            calls: self.total,
            mean_us: self.sum_ns as f64 / self.total as f64 / 1e3,
            p50_us: us(0.50),
            p90_us: us(0.90),
            p95_us: us(0.95),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: (self.unbinned == 0).then(|| self.max_ns as f64 / 1e3),
        })
    }
}

/// Latency of one read call (a task: one `pread`, one `cuFileRead`, or one bounce read and copy),
/// in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Latency {
    pub calls: u64,
    pub mean_us: f64,
    /// `None` where only a mean is known: KvikIO's own statistics have no distribution.
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    /// Records of older gates have none.
    #[serde(default)]
    pub p95_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub max_us: Option<f64>,
}

/// A read-call latency percentile a trial with writing ranks is judged by.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Percentile {
    P50,
    P95,
    P99,
}

impl Percentile {
    /// In the order they are judged: the tail first, as it moves first under contention.
    pub const ALL: [Percentile; 3] = [Percentile::P99, Percentile::P95, Percentile::P50];

    pub fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P95 => "p95",
            Percentile::P99 => "p99",
        }
    }

    fn of(self, latency: &Latency) -> Option<f64> {
        match self {
            Percentile::P50 => latency.p50_us,
            Percentile::P95 => latency.p95_us,
            Percentile::P99 => latency.p99_us,
        }
    }
}

/// Each measured pass's read-call latency percentiles in µs: what the baseline keeps of a trial
/// judged by its latency (reads beside writes, `writers:`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PassLatencies {
    pub p50_us: Vec<f64>,
    pub p95_us: Vec<f64>,
    pub p99_us: Vec<f64>,
}

impl PassLatencies {
    /// From the passes' costs, when every pass has all three percentiles.
    pub fn from_costs(costs: &[PassCost]) -> Option<PassLatencies> {
        let per_pass = |p: Percentile| -> Option<Vec<f64>> {
            costs
                .iter()
                .map(|cost| p.of(cost.latency.as_ref()?))
                .collect()
        };
        let latencies = PassLatencies {
            p50_us: per_pass(Percentile::P50)?,
            p95_us: per_pass(Percentile::P95)?,
            p99_us: per_pass(Percentile::P99)?,
        };
        (!latencies.p50_us.is_empty()).then_some(latencies)
    }

    pub fn of(&self, percentile: Percentile) -> &[f64] {
        match percentile {
            Percentile::P50 => &self.p50_us,
            Percentile::P95 => &self.p95_us,
            Percentile::P99 => &self.p99_us,
        }
    }
}

/// User and system CPU time of the worker process (every thread, cuFile's own included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuTime {
    pub user_seconds: f64,
    pub system_seconds: f64,
}

impl CpuTime {
    pub fn total(&self) -> f64 {
        self.user_seconds + self.system_seconds
    }

    /// The time of two sections together (the windows of a pass, the workers of a trial).
    pub fn plus(&self, other: &CpuTime) -> CpuTime {
        CpuTime {
            user_seconds: self.user_seconds + other.user_seconds,
            system_seconds: self.system_seconds + other.system_seconds,
        }
    }

    /// The time between two readings (`self` the later).
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user_seconds: (self.user_seconds - earlier.user_seconds).max(0.0),
            system_seconds: (self.system_seconds - earlier.system_seconds).max(0.0),
        }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// What one measured pass cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PassCost {
    /// Read calls the reader made (tasks; for KvikIO its `pread` operations).
    pub read_calls: u64,
    /// Read calls per second of the read section.
    pub iops: f64,
    /// The worker's CPU time over the read section; `None` when recording was off.
    pub cpu: Option<CpuTime>,
    /// CPU seconds (user + system) per GiB read.
    pub cpu_seconds_per_gib: Option<f64>,
    pub latency: Option<Latency>,
}

impl PassCost {
    /// The cost of a pass of `bytes` in `seconds` with `read_calls` calls.
    pub fn new(
        bytes: u64,
        seconds: f64,
        read_calls: u64,
        cpu: Option<CpuTime>,
        latency: Option<Latency>,
    ) -> PassCost {
        PassCost {
            read_calls,
            iops: if seconds > 0.0 {
                read_calls as f64 / seconds
            } else {
                0.0
            },
            cpu_seconds_per_gib: cpu
                .filter(|_| bytes > 0)
                .map(|cpu| cpu.total() / (bytes as f64 / GIB)),
            cpu,
            latency,
        }
    }
}

/// CPU seconds per GiB of each pass that has the figure, in pass order: what the baseline keeps
/// and compares.
pub fn cpu_per_gib(costs: &[PassCost]) -> Vec<f64> {
    costs
        .iter()
        .filter_map(|cost| cost.cpu_seconds_per_gib)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect()
}

/// Whether the worker records latency and CPU time: on unless `GDS_GATE_RECORD_COST=0`, which
/// only the recording-overhead bench sets (to measure what recording costs).
pub const RECORD_ENV: &str = "GDS_GATE_RECORD_COST";

pub fn recording_enabled(value: Option<&str>) -> bool {
    value != Some("0")
}

/// A latency for people: `850 µs`, `3.12 ms`, `1.20 s`.
pub fn format_micros(us: f64) -> String {
    if us < 1e3 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Read calls per second for people: whole numbers from 10 up, more digits below, since a reader
/// of one call per file or window makes a few calls a second or fewer (`0.46`, not `0`).
pub fn format_iops(iops: f64) -> String {
    if iops >= 10.0 {
        format!("{iops:.0}")
    } else if iops >= 1.0 {
        format!("{iops:.1}")
    } else {
        format!("{iops:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_64_and_within_one_64th_above() {
        for ns in 0..64 {
            assert_eq!(midpoint(bucket(ns)), ns);
        }
        for ns in [
            64u64,
            65,
            127,
            128,
            1000,
            123_456,
            9_876_543_210,
            u64::MAX / 3,
        ] {
            let mid = midpoint(bucket(ns)) as f64;
            assert!(
                (mid - ns as f64).abs() / ns as f64 <= 1.0 / 64.0,
                "{ns}: {mid}"
            );
        }
        assert!(bucket(u64::MAX) < ROWS * SUB);
        // Buckets are ordered like their values.
        let mut last = 0;
        for ns in (0..20).map(|e| 3u64 << (3 * e)) {
            assert!(bucket(ns) >= last);
            last = bucket(ns);
        }
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        // Fixture: 1..=10_000 µs, one call each: p50 = 5000 µs, p99 = 9900 µs, max 10_000 µs.
        let mut h = Histogram::default();
        for us in 1..=10_000u64 {
            h.record(us * 1000);
        }
        let l = h.latency().unwrap();
        assert_eq!(l.calls, 10_000);
        let near = |got: Option<f64>, want: f64| {
            let got = got.unwrap();
            assert!((got - want).abs() / want < 0.01, "{got} vs {want}");
        };
        near(l.p50_us, 5000.0);
        near(l.p90_us, 9000.0);
        near(l.p99_us, 9900.0);
        near(l.p999_us, 9990.0);
        assert_eq!(l.max_us, Some(10_000.0));
        assert!((l.mean_us - 5000.5).abs() < 1e-6);
    }

    #[test]
    fn calls_known_only_as_a_sum_give_a_mean_and_no_distribution() {
        let mut library = Histogram::default();
        library.add_totals(4, 10_000_000);
        let l = library.latency().unwrap();
        assert_eq!((l.calls, l.mean_us), (4, 2500.0));
        assert_eq!((l.p50_us, l.p99_us, l.max_us), (None, None, None));
        // Merged into timed calls, the distribution is unknown too.
        let mut timed = Histogram::default();
        timed.record(1_000_000);
        timed.merge(&library);
        let l = timed.latency().unwrap();
        assert_eq!((l.calls, l.mean_us, l.p50_us), (5, 2200.0, None));
        assert_eq!(Histogram::default().latency(), None);
    }

    #[test]
    fn merged_thread_histograms_equal_one_histogram_of_all_calls() {
        let values: Vec<u64> = (0..5000u64).map(|i| (i * 7919) % 3_000_000 + 1).collect();
        let mut whole = Histogram::default();
        let mut parts = vec![Histogram::default(); 4];
        for (i, &v) in values.iter().enumerate() {
            whole.record(v);
            parts[i % 4].record(v);
        }
        let mut merged = Histogram::default();
        for part in &parts {
            merged.merge(part);
        }
        assert_eq!(merged, whole);
        assert_eq!(merged.quantile(0.999), whole.quantile(0.999));
    }

    #[test]
    fn a_percentile_never_exceeds_the_largest_call_and_empty_has_none() {
        let mut h = Histogram::default();
        assert_eq!(h.latency(), None);
        h.record(1_000_001);
        assert_eq!(h.quantile(0.5), Some(1_000_001));
    }

    #[test]
    fn cpu_per_gib_and_iops_of_a_pass() {
        let cpu = CpuTime {
            user_seconds: 0.25,
            system_seconds: 0.75,
        };
        let later = CpuTime {
            user_seconds: 1.25,
            system_seconds: 2.75,
        };
        assert_eq!(later.since(&cpu).total(), 3.0);
        assert_eq!(later.since(&cpu).plus(&cpu), later);
        let cost = PassCost::new(4 << 30, 2.0, 1024, Some(cpu), None);
        assert_eq!(cost.iops, 512.0);
        assert_eq!(cost.cpu_seconds_per_gib, Some(0.25));
        let off = PassCost::new(4 << 30, 2.0, 1024, None, None);
        assert_eq!(cpu_per_gib(&[cost, off]), vec![0.25]);
        assert!(recording_enabled(None) && recording_enabled(Some("1")));
        assert!(!recording_enabled(Some("0")));
        assert_eq!(format_micros(850.4), "850 µs");
        assert_eq!(format_micros(3120.0), "3.12 ms");
        assert_eq!(format_iops(398.4), "398");
        assert_eq!(format_iops(6.26), "6.3");
        assert_eq!(format_iops(0.4631), "0.46");
    }
}
