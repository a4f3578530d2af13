//! A runner check in words, as the progress line of a wait and a judgement's likely cause quote
//! it: what was off its blessed level, by name and figure, beside the level it was blessed at.

use gds_model::busy::HostReading;
use gds_model::record::{RunnerCheck, Shortfall};

use super::host;

/// `the host was busy: load 1.70 on 2 cores, 48% of CPU time in other processes (at bless: load
/// 0.30, 3%); the control's memory 0.71 of its blessed level`: what the check's last control
/// read found off its level. Empty when nothing was.
pub fn what_was_off(check: &RunnerCheck) -> String {
    let mut parts = Vec::new();
    let busier: Vec<Shortfall> = check
        .below
        .iter()
        .copied()
        .filter(|s| s.of_host())
        .collect();
    if !busier.is_empty() {
        let mut figures = Vec::new();
        if let Some(now) = &check.host {
            figures.push(host::describe(now, check.host_blessed.as_ref(), &busier));
        }
        if busier.contains(&Shortfall::CoreShare) {
            figures.push(format!(
                "the control's check got {:.0}% of a core",
                check.cpu_share * 100.0
            ));
        }
        parts.push(format!("the host was busy: {}", figures.join("; ")));
    }
    let control: Vec<String> = check
        .below
        .iter()
        .filter_map(|shortfall| match shortfall {
            Shortfall::Disk => Some(format!("disk {:.2}", check.disk)),
            Shortfall::Cpu => Some(format!("CPU {:.2}", check.cpu)),
            Shortfall::Memory => check.memory.map(|m| format!("memory {m:.2}")),
            _ => None,
        })
        .collect();
    if !control.is_empty() {
        parts.push(format!(
            "the control's {} of the blessed level",
            control.join(", ")
        ));
    }
    parts.join("; ")
}

/// `the host was busy while it ran: load 1.70 on 2 cores, 48% of CPU time in other processes
/// (at bless: load 0.30, 3%)`; empty unless the host was busier during the confirmation run.
pub fn busy_during(check: &RunnerCheck) -> String {
    match (&check.during, check.busy_during.is_empty()) {
        (Some(during), false) => {
            // Pressure over the confirmation run is quoted only where it was compared (the trial
            // left a core free); otherwise it counts the trial's own threads.
            let compared = check
                .busy_during
                .iter()
                .any(|s| matches!(s, Shortfall::CpuPressure | Shortfall::MemoryPressure));
            let quoted = |r: &HostReading| HostReading {
                pressure: r.pressure.filter(|_| compared),
                ..*r
            };
            format!(
                "the host was busy while the confirmation ran: {}",
                host::describe(
                    &quoted(during),
                    check.host_blessed.map(|b| quoted(&b)).as_ref(),
                    &check.busy_during
                )
            )
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::host;

    #[test]
    fn what_was_off_is_named_with_its_figures() {
        let check = RunnerCheck {
            disk: 0.5,
            cpu: 1.0,
            cpu_share: 0.6,
            memory: Some(0.7),
            host: Some(host(1.7, 0.48)),
            host_blessed: Some(host(0.3, 0.03)),
            below: vec![
                Shortfall::Disk,
                Shortfall::CoreShare,
                Shortfall::Memory,
                Shortfall::OtherProcesses,
            ],
            still_slow: true,
            ..RunnerCheck::default()
        };
        assert_eq!(
            what_was_off(&check),
            "the host was busy: load 1.70 on 2 cores, 48% of CPU time in other processes, CPU pressure 0% (at bless: load 0.30, 3%, 0%); the control's check got 60% of a core; the control's disk 0.50, memory 0.70 of the blessed level"
        );
        assert_eq!(what_was_off(&RunnerCheck::default()), "");
    }

    #[test]
    fn a_host_busy_during_the_confirmation_is_said_without_its_pressure() {
        let mut check = RunnerCheck {
            during: Some(host(1.2, 0.45)),
            host_blessed: Some(host(0.3, 0.03)),
            ..RunnerCheck::default()
        };
        assert_eq!(busy_during(&check), "");
        check.busy_during = vec![Shortfall::OtherProcesses];
        assert_eq!(
            busy_during(&check),
            "the host was busy while the confirmation ran: load 1.20 on 2 cores, 45% of CPU time in other processes (at bless: load 0.30, 3%)"
        );
        // Compared over a trial that left a core free: then quoted.
        let with_cpu_pressure = |reading: HostReading, cpu: f64| HostReading {
            pressure: reading
                .pressure
                .map(|p| gds_model::busy::Pressure { cpu, ..p }),
            ..reading
        };
        check.during = check.during.map(|r| with_cpu_pressure(r, 0.27));
        check.host_blessed = check.host_blessed.map(|r| with_cpu_pressure(r, 0.09));
        check.busy_during = vec![Shortfall::CpuPressure];
        assert_eq!(
            busy_during(&check),
            "the host was busy while the confirmation ran: load 1.20 on 2 cores, 45% of CPU time in other processes, CPU pressure 27% (at bless: load 0.30, 3%, 9%)"
        );
    }
}
