//! A confirmed slowdown on a host busier than at bless: the words name what was busy and never
//! call the slowdown the trial's own; they do so only when everything was at its level.

use super::slow_then;
use crate::fixtures::SLOW;
use crate::fixtures::host;
use crate::judgement::Judgement;
use gds_model::busy::HostReading;
use gds_model::record::{Needs, RunnerCheck, Shortfall};

/// Fixture: what the control said before the confirmation run of a warm read, everything of
/// the control at its level and the host as given.
fn warm_check(now: HostReading, below: Vec<Shortfall>) -> RunnerCheck {
    RunnerCheck {
        disk_before: 1.0,
        cpu_before: 1.0,
        cpu_share_before: 0.99,
        disk: 1.0,
        cpu: 1.0,
        cpu_share: 0.99,
        waited_s: 120.0,
        still_slow: !below.is_empty(),
        memory_before: Some(0.97),
        memory: Some(0.96),
        host: Some(now),
        host_blessed: Some(host(0.2, 0.02)),
        during: None,
        needs: Needs {
            disk: false,
            memory: true,
        },
        below,
        busy_during: Vec::new(),
    }
}

/// The words of a confirmed regression of `s::a` after `check`: headline and message.
fn slower_after(check: RunnerCheck) -> (String, String) {
    let comparison = slow_then(&SLOW, Some(check));
    let a = comparison.get("s::a").unwrap();
    assert!(matches!(a.judgement, Judgement::Regression { .. }), "{a:?}");
    (a.headline.clone(), a.message.clone())
}

/// The run of the issue: a second gate beside this one, a warm read 20% slower twice, the disk
/// and the check as blessed.
#[test]
fn a_slowdown_on_a_busy_host_names_the_host_not_the_trial() {
    let check = warm_check(host(1.8, 0.47), vec![Shortfall::OtherProcesses]);
    let (headline, message) = slower_after(check);
    assert!(
        headline.ends_with(", while the host was busy"),
        "{headline}"
    );
    for needle in [
        "likely cause: the runner was not at its level when the confirmation ran, so the slowdown is not shown to be this trial's: the host was busy: load 1.80 on 2 cores, 47% of CPU time in other processes, CPU pressure 0% (at bless: load 0.20, 2%, 0%), after waiting 120 s for it; look at the host",
        "run again on a quiet runner",
    ] {
        assert!(message.contains(needle), "{needle}\n{message}");
    }
    assert!(!message.contains("this trial's own"), "{message}");
}

/// Quiet when the control read, busy while the confirmation ran (the other job started as the
/// wait ended): still not the trial's own.
#[test]
fn a_host_busy_during_the_confirmation_is_not_blamed_on_the_trial() {
    let mut check = warm_check(host(0.3, 0.03), Vec::new());
    check.during = Some(host(1.5, 0.45));
    check.busy_during = vec![Shortfall::OtherProcesses];
    let (headline, message) = slower_after(check);
    assert!(
        message.contains(
            "the host was busy while the confirmation ran: load 1.50 on 2 cores, 45% of CPU time in other processes (at bless: load 0.20, 2%)"
        ),
        "{message}"
    );
    assert!(!message.contains("this trial's own"), "{message}");
    assert!(headline.ends_with(", while the host was busy"));
}

/// Only a runner at its level in all the trial depends on, on a host as quiet as at bless,
/// makes the slowdown the trial's own.
#[test]
fn a_quiet_host_and_a_control_at_its_level_blame_the_trial() {
    let mut check = warm_check(host(0.3, 0.03), Vec::new());
    check.during = Some(host(0.4, 0.04));
    let (headline, message) = slower_after(check);
    assert!(
        message.contains(
            "likely cause: the runner was at its level when the confirmation ran (the gate's control read: disk 1.00 and CPU 1.00 of their blessed levels, 99% of a core for its check, memory 0.96 of its blessed level; the host: load 0.30 on 2 cores, 3% of CPU time in other processes, CPU pressure 0% (at bless: load 0.20, 2%, 0%), after waiting 120 s for it), so the slowdown is this trial's own"
        ),
        "{message}"
    );
    assert!(!headline.contains("busy"), "{headline}");
}

/// A baseline blessed before the host was read: the host was not compared, and the words say
/// so instead of blaming the trial.
#[test]
fn without_a_blessed_host_the_trial_is_not_blamed() {
    let mut check = warm_check(host(1.8, 0.47), Vec::new());
    check.host_blessed = None;
    check.memory = None;
    let (_, message) = slower_after(check);
    assert!(
        message.contains(
            "but the control's copy in memory and how busy the host was could not be compared with the bless, whose baseline lacks them (bless again to record them), so the slowdown is not shown to be this trial's own"
        ),
        "{message}"
    );
}

/// A host whose `/proc` could not be read during the check: not compared, and said why.
#[test]
fn an_unread_host_is_not_compared_and_the_trial_is_not_blamed() {
    let mut check = warm_check(host(0.3, 0.03), Vec::new());
    check.host = None;
    let (_, message) = slower_after(check);
    assert!(
        message.contains(
            "but how busy the host was could not be compared with the bless, since /proc could not be read, so the slowdown is not shown to be this trial's own"
        ),
        "{message}"
    );
}
