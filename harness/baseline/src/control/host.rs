//! Whether the host is busier than when the baseline was blessed, and how a host reading is
//! quoted. The figures compared are shares of time (of all cores' CPU time, of the window), so
//! a reading of a few seconds compares with one of another length.
//!
//! What is compared, and why:
//! - **Other processes' CPU time** (user and system time of everything outside the gate's own
//!   process tree): another job takes the CPU and the memory bandwidth a trial needs. A job that
//!   keeps one core of a 2-core host busy is 50% of the host's time.
//! - **Steal**: on a VM, the hypervisor running other guests on this VM's CPUs.
//! - **CPU and memory pressure** (PSI `some`) over a control read, in which the gate runs one
//!   thread as it did at bless, and over a confirmation run whose threads leave a core free;
//!   more threads than that stall each other. I/O pressure is recorded but not compared: the
//!   control's own O_DIRECT reads stall on I/O most of their time, and a busier disk shows in the
//!   control's disk rate already.
//! - **Other processes' bytes on the data dir's disk** (the disk's bytes less the gate's tree's,
//!   from `/proc/diskstats` and `/proc/PID/io`), against the control's blessed disk rate, for a
//!   trial that moves bytes to or from the disk: a job that reads or writes the same disk takes
//!   its bandwidth with little CPU time, and may start after the control read.
//! - **The load average** is quoted, not compared: it counts the gate's own trials (a
//!   4-thread trial adds 4) and lags a minute behind, while other processes' CPU time over the
//!   very window measures what others did, without either fault.

use gds_model::busy::{HostReading, Pressure};
use gds_model::numbers::median;
use gds_model::record::Shortfall;

/// A share counts as busier once it is above its blessed level by more than this share of the
/// host's time: a quiet host's background (a few %) moves less, and another job that keeps even
/// a fifth of a core busy on 2 cores moves more. A false "busier" costs a wait (once per run)
/// and a message that points at the host; it never passes a slower trial.
pub const BUSIER_BY: f64 = 0.10;

/// The blessed runs' readings as one: each figure the least busy of the runs', so that a host is
/// busier than at bless when it is busier than its quietest blessed run. A bless that caught
/// another job in some of its runs then does not raise the bar, and a slowdown is called a
/// trial's own only on a host as quiet as it was blessed. `None` without readings.
pub fn blessed_level(runs: &[HostReading]) -> Option<HostReading> {
    let first = runs.first()?;
    let least = |figure: &dyn Fn(&HostReading) -> f64| {
        runs.iter().map(figure).fold(f64::INFINITY, f64::min)
    };
    let pressures: Option<Vec<Pressure>> = runs.iter().map(|r| r.pressure).collect();
    let disks: Option<Vec<f64>> = runs.iter().map(|r| r.others_disk_gbps).collect();
    Some(HostReading {
        seconds: median(&runs.iter().map(|r| r.seconds).collect::<Vec<_>>()),
        cores: first.cores,
        load: least(&|r| r.load),
        others_cpu: least(&|r| r.others_cpu),
        steal: least(&|r| r.steal),
        pressure: pressures.map(|p| {
            let least =
                |figure: fn(&Pressure) -> f64| p.iter().map(figure).fold(f64::INFINITY, f64::min);
            Pressure {
                cpu: least(|p| p.cpu),
                io: least(|p| p.io),
                memory: least(|p| p.memory),
            }
        }),
        others_disk_gbps: disks.map(|d| d.into_iter().fold(f64::INFINITY, f64::min)),
    })
}

/// What is busier in `now` than in `blessed`; `with_pressure` compares PSI too (see the module's
/// notes for when it may), and `disk_gbps` (the control's blessed disk rate, for a trial that
/// moves bytes on the disk) other processes' bytes on it, as shares of that rate.
pub fn busier(
    now: &HostReading,
    blessed: &HostReading,
    with_pressure: bool,
    disk_gbps: Option<f64>,
) -> Vec<Shortfall> {
    let above = |now: f64, then: f64| now > then + BUSIER_BY;
    let mut busier = Vec::new();
    if above(now.others_cpu, blessed.others_cpu) {
        busier.push(Shortfall::OtherProcesses);
    }
    if above(now.steal, blessed.steal) {
        busier.push(Shortfall::Steal);
    }
    if with_pressure && let (Some(now), Some(then)) = (now.pressure, blessed.pressure) {
        if above(now.cpu, then.cpu) {
            busier.push(Shortfall::CpuPressure);
        }
        if above(now.memory, then.memory) {
            busier.push(Shortfall::MemoryPressure);
        }
    }
    if let (Some(rate), Some(now), Some(then)) =
        (disk_gbps, now.others_disk_gbps, blessed.others_disk_gbps)
        && rate > 0.0
        && above(now / rate, then / rate)
    {
        busier.push(Shortfall::DiskTraffic);
    }
    busier
}

/// A reading as the baseline file keeps it: shares to 0.1%, so that a re-bless of the same
/// figures writes the same text.
pub fn rounded(reading: HostReading) -> HostReading {
    let round = |x: f64| (x * 1e3).round() / 1e3;
    HostReading {
        seconds: (reading.seconds * 1e2).round() / 1e2,
        cores: reading.cores,
        load: (reading.load * 1e2).round() / 1e2,
        others_cpu: round(reading.others_cpu),
        steal: round(reading.steal),
        pressure: reading.pressure.map(|p| Pressure {
            cpu: round(p.cpu),
            io: round(p.io),
            memory: round(p.memory),
        }),
        others_disk_gbps: reading.others_disk_gbps.map(round),
    }
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// `load 3.10 on 2 cores, 41% of CPU time in other processes, CPU pressure 12% (at bless: load
/// 0.20, 2%, 0%)`: a host reading beside the blessed one, as messages quote it. Steal and memory
/// pressure are named only when they are among `busier`, to keep the line short.
pub fn describe(now: &HostReading, blessed: Option<&HostReading>, busier: &[Shortfall]) -> String {
    let figures = |r: &HostReading, with_words: bool| {
        let mut parts = vec![
            if with_words {
                format!("load {:.2} on {} cores", r.load, r.cores)
            } else {
                format!("load {:.2}", r.load)
            },
            if with_words {
                format!("{} of CPU time in other processes", percent(r.others_cpu))
            } else {
                percent(r.others_cpu)
            },
        ];
        if busier.contains(&Shortfall::Steal) {
            parts.push(if with_words {
                format!("{} stolen by the hypervisor", percent(r.steal))
            } else {
                percent(r.steal)
            });
        }
        if let Some(p) = r.pressure {
            parts.push(if with_words {
                format!("CPU pressure {}", percent(p.cpu))
            } else {
                percent(p.cpu)
            });
            if busier.contains(&Shortfall::MemoryPressure) {
                parts.push(if with_words {
                    format!("memory pressure {}", percent(p.memory))
                } else {
                    percent(p.memory)
                });
            }
        }
        if let Some(gbps) = r
            .others_disk_gbps
            .filter(|_| busier.contains(&Shortfall::DiskTraffic))
        {
            let rate = format!("{:.0} MB/s", gbps * 1e3);
            parts.push(if with_words {
                format!("{rate} read or written on the data disk by other processes")
            } else {
                rate
            });
        }
        parts
    };
    let now_parts = figures(now, true);
    match blessed {
        Some(blessed) => {
            // As many blessed figures as the reading shows, in the same order.
            let mut then = figures(blessed, false);
            then.truncate(now_parts.len());
            format!("{} (at bless: {})", now_parts.join(", "), then.join(", "))
        }
        None => now_parts.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixture, not measured: a reading with the given load, others' share and CPU pressure.
    fn reading(load: f64, others: f64, cpu_pressure: f64) -> HostReading {
        HostReading {
            seconds: 1.5,
            cores: 2,
            load,
            others_cpu: others,
            steal: 0.0,
            pressure: Some(Pressure {
                cpu: cpu_pressure,
                io: 0.3,
                memory: 0.0,
            }),
            others_disk_gbps: None,
        }
    }

    #[test]
    fn the_blessed_level_is_the_quietest_of_each_figure() {
        let level = blessed_level(&[
            reading(0.4, 0.05, 0.01),
            reading(1.9, 0.30, 0.2),
            reading(0.2, 0.06, 0.03),
        ])
        .unwrap();
        assert_eq!((level.load, level.others_cpu), (0.2, 0.05));
        assert_eq!(level.pressure.unwrap().cpu, 0.01);
        assert_eq!(blessed_level(&[]), None);
        // One run without PSI: pressure is not compared.
        let mut no_psi = reading(0.2, 0.02, 0.0);
        no_psi.pressure = None;
        assert_eq!(
            blessed_level(&[no_psi, reading(0.2, 0.02, 0.0)])
                .unwrap()
                .pressure,
            None
        );
    }

    #[test]
    fn a_second_gate_is_busier_and_a_quiet_hosts_background_is_not() {
        let blessed = reading(0.3, 0.03, 0.01);
        // A second gate on 2 cores: one core busy, half the host's time.
        let second_gate = reading(1.6, 0.48, 0.02);
        assert_eq!(
            busier(&second_gate, &blessed, true, None),
            [Shortfall::OtherProcesses]
        );
        // A build with more jobs than cores: tasks also wait for a CPU.
        let build = reading(3.5, 0.9, 0.6);
        assert_eq!(
            busier(&build, &blessed, true, None),
            [Shortfall::OtherProcesses, Shortfall::CpuPressure]
        );
        // Over a confirmation run the trial's own threads stall each other: no pressure then.
        assert_eq!(
            busier(&build, &blessed, false, None),
            [Shortfall::OtherProcesses]
        );
        // Background within the margin, and a load that is the gate's own, are not busier.
        assert_eq!(busier(&reading(2.5, 0.10, 0.05), &blessed, true, None), []);
        let stolen = HostReading {
            steal: 0.2,
            ..blessed
        };
        assert_eq!(busier(&stolen, &blessed, true, None), [Shortfall::Steal]);
    }

    /// Fixture, not measured: another job reading 400 MB/s from a disk blessed at 1.3 GB/s,
    /// with no more CPU time than at bless.
    #[test]
    fn another_jobs_bytes_on_the_disk_are_busier_for_a_trial_that_uses_it() {
        let blessed = HostReading {
            others_disk_gbps: Some(0.01),
            ..reading(0.3, 0.03, 0.01)
        };
        let reader = HostReading {
            others_disk_gbps: Some(0.4),
            ..reading(0.9, 0.05, 0.02)
        };
        assert_eq!(
            busier(&reader, &blessed, true, Some(1.3)),
            [Shortfall::DiskTraffic]
        );
        // A trial that does not use the disk (a warm read), or a disk without counters: not.
        assert_eq!(busier(&reader, &blessed, true, None), []);
        let unread = HostReading {
            others_disk_gbps: None,
            ..reader
        };
        assert_eq!(busier(&unread, &blessed, true, Some(1.3)), []);
        // Within 10% of the disk's rate of the bless: a quiet host's background.
        let background = HostReading {
            others_disk_gbps: Some(0.1),
            ..reader
        };
        assert_eq!(busier(&background, &blessed, true, Some(1.3)), []);
        assert_eq!(
            describe(&reader, Some(&blessed), &[Shortfall::DiskTraffic]),
            "load 0.90 on 2 cores, 5% of CPU time in other processes, CPU pressure 2%, 400 MB/s read or written on the data disk by other processes (at bless: load 0.30, 3%, 1%, 10 MB/s)"
        );
    }

    #[test]
    fn a_reading_is_quoted_beside_the_blessed_one() {
        let blessed = reading(0.2, 0.02, 0.0);
        let now = reading(3.1, 0.41, 0.12);
        assert_eq!(
            describe(&now, Some(&blessed), &[Shortfall::OtherProcesses]),
            "load 3.10 on 2 cores, 41% of CPU time in other processes, CPU pressure 12% (at bless: load 0.20, 2%, 0%)"
        );
        let stolen = HostReading { steal: 0.25, ..now };
        assert_eq!(
            describe(&stolen, None, &[Shortfall::Steal]),
            "load 3.10 on 2 cores, 41% of CPU time in other processes, 25% stolen by the hypervisor, CPU pressure 12%"
        );
    }

    #[test]
    fn a_reading_is_rounded_for_the_baseline_file() {
        let r = rounded(reading(0.123, 0.04567, 0.0));
        assert_eq!((r.load, r.others_cpu), (0.12, 0.046));
    }
}
