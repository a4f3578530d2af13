//! `summary.md`: the run in one table, for the CI step summary and for people.

use std::fmt::Write;

use super::Report;
use gds_baseline::outcome::Outcome;
use gds_baseline::stats::Summary;
use gds_model::hex;
use gds_model::record::{Measurement, Status, TrialRecord};
use gds_model::units::Rate;
use gds_runner::escape::{markdown as text, markdown_code as code};

pub fn render(report: &Report) -> String {
    let totals = report.totals;
    let mut out = String::new();
    let _ = writeln!(out, "## gds-gate: {}\n", totals.verdict());
    let _ = writeln!(
        out,
        "{} — host {}, {:.1} s\n",
        totals.counts(),
        code(&report.host.hostname),
        report.duration_seconds
    );
    for note in &report.notes {
        let _ = writeln!(out, "> {}\n", text(note));
    }
    out.push_str(&trial_table(report));
    out.push('\n');
    out.push_str(&crate::direct::markdown(
        &report.direct_vs_posix,
        report.rate,
    ));
    out.push_str(&crate::buffers::markdown(
        &report.registered_vs_unregistered,
        report.rate,
    ));
    out.push_str(&crate::loads::markdown(&report.trials, report.rate));
    out.push_str(&per_gpu(&report.trials, report.rate));
    out.push_str(&memory(&report.trials));
    out.push_str(&time(report));
    out
}

/// Where the run's wall time went, per trial and in all: what it held the runner for and what of
/// that the gate itself added. Empty for a report without the figures.
fn time(report: &Report) -> String {
    let Some(time) = &report.time else {
        return String::new();
    };
    let mut out = String::new();
    let s = |seconds: f64| format!("{seconds:.1}");
    let share = |seconds: f64| {
        if time.wall > 0.0 {
            format!("{:.0}%", 100.0 * seconds / time.wall)
        } else {
            "-".into()
        }
    };
    let t = &time.trials;
    section_head(
        &mut out,
        "Time",
        &format!(
            "The runner was held {} s: I/O {} s ({}), the libraries' start-up {} s ({}), the passes' preparation {} s ({}: page cache drops, destinations cleared, written files blanked), verification {} s ({}), waiting for the runner {} s, the workers' exits {} s ({}: answers written, processes ended, and for a GPU worker the kernel releasing its CUDA context and pinned memory, where the next worker's start-up did not hide them), the gate {} s ({}: starting and reading back workers, judging, and {} s before and after the trials). Seconds per trial:",
            s(time.wall),
            s(t.io),
            share(t.io),
            s(t.startup),
            share(t.startup),
            s(t.preparation),
            share(t.preparation),
            s(t.verification),
            share(t.verification),
            s(t.runner_wait),
            s(t.exit),
            share(t.exit),
            s(time.gate()),
            share(time.gate()),
            s(time.outside_trials)
        ),
        "| trial | wall | start-up | preparation | I/O | verification | runner wait | exit | gate |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    );
    for (name, t) in &time.by_trial {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            code(name),
            s(t.wall),
            s(t.startup),
            s(t.preparation),
            s(t.io),
            s(t.verification),
            s(t.runner_wait),
            s(t.exit),
            s(t.gate)
        );
    }
    out.push('\n');
    out
}

/// Per trial: whole buffer or window, the worker's peak memory, and the share of the passes
/// spent verifying. Empty when no trial measured its memory.
fn memory(trials: &[TrialRecord]) -> String {
    let measured: Vec<(&TrialRecord, &Measurement)> = trials
        .iter()
        .filter_map(|trial| {
            let m = trial.measurement.as_ref()?;
            m.memory.is_some().then_some((trial, m))
        })
        .collect();
    if measured.is_empty() {
        return String::new();
    }
    let size = |bytes: u64| gds_model::units::format_bytes(bytes, 2);
    let mut out = String::new();
    section_head(
        &mut out,
        "Memory",
        "Peak memory of each trial's worker: host RSS (`VmHWM`), and GPU memory in use on its GPU (every process's, sampled after each window). A window bounds both; `whole` reads each pass into one buffer.",
        "| trial | mode | bytes per pass | peak host RSS | peak GPU memory | verifying (share of read + verify) |",
        "|---|---|---:|---:|---:|---:|",
    );
    for (trial, m) in measured {
        let peak = m.memory.unwrap_or_default();
        let mode = m
            .window
            .map_or("whole".into(), |w| format!("window {}", size(w)));
        let read: f64 = m.warmup_seconds.iter().chain(&m.seconds).sum();
        let share = if read + m.verify_seconds > 0.0 {
            format!(
                "{:.2}%",
                100.0 * m.verify_seconds / (read + m.verify_seconds)
            )
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "| {} | {mode} | {} | {} | {} | {share} |",
            code(&trial.name),
            size(m.bytes_per_repetition),
            peak.host_rss_bytes.map_or("-".into(), size),
            peak.device_bytes.map_or("-".into(), size),
        );
    }
    out.push('\n');
    out
}

/// One row per trial: throughput, path, what the reads cost beside it (a path through host
/// memory shows as CPU per GiB even where its GB/s holds), checksum, and the start-up apart from
/// the throughput, which times only the reads.
fn trial_table(report: &Report) -> String {
    let rate = report.rate;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| trial | result | {} (median) | min–max | path | CPU s/GiB | IOPS | latency p50 / p95 / p99 | checksum | start-up (worker start → first read) | note |",
        rate.label()
    );
    let _ = writeln!(out, "|---|---|---:|---|---|---:|---:|---:|---|---:|---|");
    for trial in &report.trials {
        let result = match trial.status {
            Outcome::Passed | Outcome::Ignored | Outcome::Limited => {
                trial.status.label().to_string()
            }
            failing => format!("**{}**", failing.label()),
        };
        let (median, range, path, checksum) = match &trial.measurement {
            Some(m) if !m.gbps.is_empty() => {
                let Summary { min, max, .. } = Summary::of(&m.gbps);
                (
                    m.median_gbps.map_or("-".into(), |g| rate.number(g, 2)),
                    format!("{}–{}", rate.number(min, 2), rate.number(max, 2)),
                    text(m.path.name()),
                    m.integrity.checksum.map_or("-".into(), hex::format),
                )
            }
            _ => Default::default(),
        };
        let startup = trial
            .measurement
            .as_ref()
            .and_then(|m| m.startup_text())
            .unwrap_or_default();
        let (cpu, iops, latency) = trial
            .measurement
            .as_ref()
            .map_or_else(Default::default, cost);
        let note = match (report.failure_of(trial), trial.limited_line()) {
            (Some(words), _) => text(&words.headline),
            (None, Some(limited)) => text(&limited),
            (None, None) => text(trial.reason.as_deref().unwrap_or("")),
        };
        let _ = writeln!(
            out,
            "| {} | {result} | {median} | {range} | {path} | {cpu} | {iops} | {latency} | {checksum} | {startup} | {note} |",
            code(&trial.name)
        );
    }
    out
}

/// The cost cells: median CPU s/GiB and IOPS of the passes, and the read-call latency (a mean
/// where only KvikIO's own statistics know it); empty when nothing was recorded.
fn cost(m: &Measurement) -> (String, String, String) {
    use gds_model::cost::format_micros;
    let cpu = m.cpu_per_gib();
    let cpu = if cpu.is_empty() {
        String::new()
    } else {
        format!("{:.3}", gds_model::numbers::median(&cpu))
    };
    let iops = m
        .median_iops()
        .map_or(String::new(), gds_model::cost::format_iops);
    let latency = m
        .latency
        .as_ref()
        .map_or(String::new(), |l| match (l.p50_us, l.p99_us) {
            // How many calls a percentile rests on: with few passes, p99 is a handful of calls.
            // Records of older gates have no p95.
            (Some(p50), Some(p99)) => format!(
                "{} / {} / {} of {} calls",
                format_micros(p50),
                l.p95_us.map_or("-".into(), format_micros),
                format_micros(p99),
                l.calls
            ),
            _ => format!("mean {} of {} calls", format_micros(l.mean_us), l.calls),
        });
    (cpu, iops, latency)
}

/// Each worker of the trials over several GPUs (`gpus:`) or ranks (`ranks:`): its own throughput,
/// path, cuFile counters, CPU cost, IOPS, latency and verdict. Empty when no trial had several.
fn per_gpu(trials: &[TrialRecord], rate: Rate) -> String {
    let multi: Vec<(&TrialRecord, &Measurement)> = trials
        .iter()
        .filter_map(|trial| {
            let m = trial.measurement.as_ref()?;
            (!m.per_gpu.is_empty()).then_some((trial, m))
        })
        .collect();
    if multi.is_empty() {
        return String::new();
    }
    let label = rate.label();
    let mut out = String::new();
    section_head(
        &mut out,
        "Per GPU and rank",
        &format!(
            "Trials over several GPUs (`gpus:`) or ranks (`ranks:`) run one worker per GPU or rank at the same time. Their {label} above is all workers' bytes over the slowest worker's time of each repetition; the workers start together but are not synchronised pass by pass."
        ),
        &format!(
            "| trial | worker | result | {label} (median) | bytes per pass | path | cuFile reads (total / nvfs / p2p / posix) | CPU s/GiB | IOPS | latency p50 / p95 / p99 | checksum | note |"
        ),
        "|---|---|---|---:|---:|---|---|---:|---:|---:|---|---|",
    );
    for (trial, m) in multi {
        for shard in &m.per_gpu {
            let result = match shard.status {
                Status::Passed => "ok",
                Status::Failed => "**FAILED**",
                Status::Ignored => "ignored",
            };
            let own = shard.measurement.as_ref();
            let median = own
                .and_then(|m| m.median_gbps)
                .map_or("-".into(), |g| rate.number(g, 2));
            let bytes = own.map_or("-".into(), |m| m.bytes_per_repetition.to_string());
            let path = own.map_or("-".into(), |m| text(m.path.name()));
            let counters = own
                .and_then(|m| m.cufile.as_ref())
                .and_then(|c| c.stats.as_ref())
                .map_or("-".into(), |stats| {
                    let rows = stats.gpus.iter().filter(|row| row.index == shard.gpu);
                    let sum = rows.fold([0u64; 4], |sum, row| {
                        [
                            sum[0] + row.n_total_reads,
                            sum[1] + row.n_nvfs_reads,
                            sum[2] + row.n_p2p_reads,
                            sum[3] + row.n_posix_reads,
                        ]
                    });
                    format!("{} / {} / {} / {}", sum[0], sum[1], sum[2], sum[3])
                });
            let (cpu, iops, latency) = own.map_or_else(Default::default, cost);
            let checksum = own
                .and_then(|m| m.integrity.checksum)
                .map_or("-".into(), hex::format);
            let note = text(shard.reason.as_deref().unwrap_or(""));
            let _ = writeln!(
                out,
                "| {} | {} | {result} | {median} | {bytes} | {path} | {counters} | {cpu} | {iops} | {latency} | {checksum} | {note} |",
                code(&trial.name),
                shard.label()
            );
        }
    }
    out.push('\n');
    out
}

/// A section's title, what it shows, and its table's header.
fn section_head(out: &mut String, title: &str, intro: &str, columns: &str, alignment: &str) {
    let _ = writeln!(out, "### {title}\n\n{intro}\n\n{columns}\n{alignment}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_baseline::fixtures;
    use gds_model::record::GpuShardResult;

    fn measurement(gbps: f64) -> Measurement {
        fixtures::measurement(&[gbps], "nvfs", 7)
    }

    fn trial(name: &str, gbps: f64) -> TrialRecord {
        fixtures::passed(name, &[gbps], "nvfs", 7)
    }

    #[test]
    fn start_up_has_its_own_column_beside_the_throughput() {
        let mut started = trial("s::cufile", 2.0);
        started.measurement.as_mut().unwrap().startup_seconds = Some(0.929);
        let summary = trial_table(&crate::test_support::report(vec![
            started,
            trial("s::old", 1.0),
        ]));
        assert!(
            summary.contains(
                "| `s::cufile` | ok | 2.00 | 2.00–2.00 | nvfs |  |  |  | 0x0000000000000007 | 929 ms |  |"
            ),
            "{summary}"
        );
        // A result from before start-up was measured leaves the cell empty, not zero.
        assert!(
            summary.contains(
                "| `s::old` | ok | 1.00 | 1.00–1.00 | nvfs |  |  |  | 0x0000000000000007 |  |  |"
            ),
            "{summary}"
        );
    }

    #[test]
    fn the_time_section_splits_the_runners_time_and_names_the_gates_share() {
        // Fixture: one pass of 1 GiB in 0.5 s, 0.1 s verifying, in a trial the gate timed at
        // 2 s whose worker took 0.3 s to exit after its answer, in a run of 3 s.
        let mut timed = trial("s::a", 2.147_483_648);
        timed.wall_seconds = Some(2.0);
        timed.worker = Some(gds_model::record::WorkerRun {
            dir: "trial".into(),
            ending: gds_model::record::Ending::Exited { code: 0 },
            seconds: 1.5,
            after_answer_seconds: Some(0.3),
            exit_beside_next_seconds: None,
        });
        timed.measurement.as_mut().unwrap().startup_seconds = Some(0.0);
        let mut report = crate::test_support::report(vec![timed, trial("s::untimed", 1.0)]);
        report.time = Some(gds_model::timing::RunTime::of(&report.trials, 3.0));
        let section = time(&report);
        assert!(
            section.contains(
                "The runner was held 3.0 s: I/O 1.0 s (33%), the libraries' start-up 0.0 s (0%), the passes' preparation 0.0 s (0%: page cache drops, destinations cleared, written files blanked), verification 0.1 s (3%), waiting for the runner 0.0 s, the workers' exits 0.3 s (10%: answers written, processes ended, and for a GPU worker the kernel releasing its CUDA context and pinned memory, where the next worker's start-up did not hide them), the gate 1.6 s (53%: starting and reading back workers, judging, and 1.0 s before and after the trials)"
            ),
            "{section}"
        );
        assert!(
            section.contains("| `s::a` | 2.0 | 0.0 | 0.0 | 1.0 | 0.1 | 0.0 | 0.3 | 0.6 |"),
            "{section}"
        );
        assert!(!section.contains("s::untimed"), "{section}");
        // A report without the figures (an older one) has no section rather than zeros.
        report.time = None;
        assert_eq!(time(&report), "");
    }

    #[test]
    fn cpu_iops_and_latency_sit_beside_the_path() {
        // Fixture: one pass of 1 GiB at 0.4 CPU s/GiB, 256 calls in 0.537 s, 100 of them timed,
        // p50 1 ms, p99 9 ms (shown as the midpoint of its bucket, within 0.8%).
        let mut costly = fixtures::with_cpu(trial("s::cufile", 2.0), &[0.4]);
        let m = costly.measurement.as_mut().unwrap();
        let mut histogram = gds_model::cost::Histogram::default();
        for i in 0..100u64 {
            histogram.record(if i < 98 { 1_000_000 } else { 9_000_000 });
        }
        m.latency = histogram.latency();
        let mut kvikio = trial("s::kvikio", 1.0);
        kvikio.measurement.as_mut().unwrap().latency = Some(gds_model::cost::Latency {
            calls: 8192,
            mean_us: 95.0,
            p50_us: None,
            p90_us: None,
            p95_us: None,
            p99_us: None,
            p999_us: None,
            max_us: None,
        });
        let summary = trial_table(&crate::test_support::report(vec![costly, kvikio]));
        assert!(
            summary.contains("| nvfs | 0.400 | 477 | 1.00 ms / 1.00 ms / 8.98 ms of 100 calls |"),
            "{summary}"
        );
        assert!(
            summary.contains("| nvfs |  |  | mean 95 µs of 8192 calls |"),
            "{summary}"
        );
    }

    #[test]
    fn memory_says_the_mode_the_peaks_and_the_share_spent_verifying() {
        let mut streamed = trial("suite::big[window=1GiB]", 2.0);
        let m = streamed.measurement.as_mut().unwrap();
        m.window = Some(1 << 30);
        m.memory = Some(gds_model::record::MemoryPeak {
            host_rss_bytes: Some(300 << 20),
            device_bytes: None,
        });
        let mut whole = trial("suite::big[window=whole]", 2.0);
        whole.measurement.as_mut().unwrap().memory = Some(gds_model::record::MemoryPeak {
            host_rss_bytes: Some(5 << 30),
            device_bytes: Some(6 << 30),
        });
        let table = memory(&[streamed, whole, trial("suite::old", 1.0)]);
        assert!(table.starts_with("### Memory"), "{table}");
        assert!(
            table.contains(
                "| `suite::big[window=1GiB]` | window 1.00 GiB | 1.00 GiB | 300.00 MiB | - |"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "| `suite::big[window=whole]` | whole | 1.00 GiB | 5.00 GiB | 6.00 GiB |"
            ),
            "{table}"
        );
        assert!(!table.contains("suite::old"), "no figures, no row: {table}");
        assert_eq!(memory(&[trial("suite::old", 1.0)]), "");
    }

    #[test]
    fn trials_over_several_gpus_get_a_row_per_gpu() {
        let mut multi = trial("s::multi[gpus=all]", 4.0);
        let one = trial("s::one", 2.0);
        assert_eq!(per_gpu(std::slice::from_ref(&one), Rate::Gb), "");
        let shard = |gpu, status, reason: Option<&str>| GpuShardResult {
            gpu,
            rank: None,
            reader: None,
            op: None,
            status,
            reason: reason.map(str::to_owned),
            details: None,
            measurement: Some(measurement(2.0)),
            warnings: Vec::new(),
            worker: None,
        };
        let mut costly = shard(0, Status::Passed, None);
        costly.measurement = fixtures::with_cpu(trial("s::shard", 2.0), &[0.4]).measurement;
        costly.measurement.as_mut().unwrap().latency = Some(gds_model::cost::Latency {
            calls: 10,
            mean_us: 1500.0,
            p50_us: Some(1000.0),
            p90_us: Some(2000.0),
            p95_us: Some(2000.0),
            p99_us: Some(3000.0),
            p999_us: Some(3000.0),
            max_us: Some(3000.0),
        });
        multi.measurement.as_mut().unwrap().per_gpu =
            vec![costly, shard(1, Status::Failed, Some("path: a|b"))];
        let table = per_gpu(&[one, multi], Rate::Gb);
        assert!(table.starts_with("### Per GPU"), "{table}");
        assert!(
            table.contains("| `s::multi[gpus=all]` | GPU 1 | **FAILED** | 2.00 | 1073741824 | nvfs | - |  |  |  | 0x0000000000000007 | path: a\\|b |"),
            "{table}"
        );
        // Each GPU's own cost and latency: percentiles of several workers do not add up.
        assert!(
            table.contains("| nvfs | - | 0.400 | 477 | 1.00 ms / 2.00 ms / 3.00 ms of 10 calls |"),
            "{table}"
        );
        assert_eq!(table.matches("s::multi").count(), 2);
        assert!(!table.contains("s::one"));
    }
}
