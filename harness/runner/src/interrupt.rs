//! Ctrl-C and SIGTERM while trials run. Workers run in process groups of their own, so a signal
//! sent to the gate's group never reaches them: left alone they would keep reading gigabytes
//! after the gate is gone and skew whatever runs next. With [`install`]ed handlers the first
//! signal is only remembered; every running worker is then stopped like a hung one (SIGTERM to
//! its group, a grace period, SIGKILL: [`crate::process`]), trials not yet started are reported
//! as not run, and the reports of what did run are written before the gate exits with
//! [`crate::exit::interrupted`]. A second signal ends the gate at once; its workers follow it, since each is
//! started with `PR_SET_PDEATHSIG` (as is every worker when the gate is killed with SIGKILL), and
//! what they started is stopped by the gate's guard ([`crate::process`]).

use std::sync::atomic::{AtomicI32, Ordering};

/// The first SIGINT or SIGTERM received, 0 while none was.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    if RECEIVED
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // The second signal: the default action, now. Both calls are async-signal-safe.
        // SAFETY: restoring a default disposition and raising a signal from a handler.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

/// Makes SIGINT and SIGTERM stop the run in order instead of killing the gate (see the module
/// documentation). For the commands that run trials; the others keep the default action.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only touches an atomic and calls
        // async-signal-safe functions.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SA_RESTART: a signal must not turn the gate's own reads and writes into errors.
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The signal that interrupted the run, if one did.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Sleeps for `duration`, or less when the run is interrupted meanwhile.
pub fn sleep(duration: std::time::Duration) {
    let end = std::time::Instant::now() + duration;
    while received().is_none() {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
    }
}

/// An error once the gate has been interrupted: what the gate's own long reads and writes (the
/// runner's control, generating and checking data files) check between blocks, so that Ctrl-C
/// stops them within a block's time even on a slow disk.
pub fn stop_if_interrupted() -> std::io::Result<()> {
    match received() {
        Some(signal) => Err(std::io::Error::other(format!(
            "stopped: the gate was interrupted by {}",
            signal_name(signal)
        ))),
        None => Ok(()),
    }
}

/// `SIGINT`, `SIGTERM`, ... for messages.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "signal",
    }
}

/// A trial the gate did not reach because `signal` interrupted it.
pub fn not_run(
    spec: gds_model::scenario::TrialSpec,
    signal: i32,
) -> gds_model::record::TrialRecord {
    let mut record = gds_model::record::TrialRecord::ignored(spec, not_run_reason(signal));
    record.interrupted_by = Some(signal_name(signal).to_string());
    record
}

/// Why a trial did not run: for the record of every trial after the signal.
pub fn not_run_reason(signal: i32) -> String {
    format!(
        "not run: the gate was interrupted by {}",
        signal_name(signal)
    )
}
