//! Waiting for the runner before a confirmation run: read the control, and while the runner is
//! below its blessed level, wait and read it again, up to a limit. Once a run has waited the limit
//! out, the runner is slow for the rest of the run: later confirmations do not wait again, so a
//! throttled disk costs one wait per run, not one per trial.

use std::io;
use std::sync::Mutex;
use std::time::Duration;

use gds_model::record::RunnerCheck;

use super::{ControlBaseline, ControlReading};

/// Why the control could not say how the runner is doing.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// The control could not be read; its error names the file and what went wrong.
    #[error(transparent)]
    Read(#[from] io::Error),
    /// A changed `--control-size`: readings of another size cannot be compared.
    #[error(
        "the control read {read} bytes and its baseline {blessed}: bless again to record the control at this size"
    )]
    OtherSize { read: u64, blessed: u64 },
}

/// Reads the control once.
pub type ReadControl = Box<dyn Fn() -> io::Result<ControlReading> + Send + Sync>;

pub struct Settler {
    read: ReadControl,
    baseline: ControlBaseline,
    /// The longest wait for the runner before one confirmation run.
    max_wait: Duration,
    /// The pause between control reads while waiting.
    poll: Duration,
    /// The runner stayed below its level for a whole wait earlier in this run.
    slow_for_the_run: Mutex<bool>,
}

impl Settler {
    pub fn new(
        read: ReadControl,
        baseline: ControlBaseline,
        max_wait: Duration,
        poll: Duration,
    ) -> Settler {
        Settler {
            read,
            baseline,
            max_wait,
            poll: poll.max(Duration::from_millis(1)),
            slow_for_the_run: Mutex::new(false),
        }
    }

    /// Waits (with `sleep`) until the runner is at its level, the limit is reached, or an earlier
    /// wait of this run already ran out; returns what the control said. `Err` when the control
    /// cannot be read or compared: the confirmation then runs as it would without a control.
    pub fn settle(&self, sleep: &dyn Fn(Duration)) -> Result<RunnerCheck, SettleError> {
        let condition = || {
            let reading = (self.read)()?;
            self.baseline
                .condition(&reading)
                .ok_or(SettleError::OtherSize {
                    read: reading.size,
                    blessed: self.baseline.size,
                })
        };
        let first = condition()?;
        let mut last = first;
        let mut waited = Duration::ZERO;
        let mut slow_for_the_run = self
            .slow_for_the_run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while last.below_level() && !*slow_for_the_run {
            if waited >= self.max_wait {
                *slow_for_the_run = true;
                break;
            }
            let pause = self.poll.min(self.max_wait - waited);
            sleep(pause);
            waited += pause;
            if gds_runner::interrupt::received().is_some() {
                break;
            }
            last = condition()?;
        }
        Ok(RunnerCheck {
            disk_before: first.disk,
            cpu_before: first.cpu,
            cpu_share_before: first.cpu_share,
            disk: last.disk,
            cpu: last.cpu,
            cpu_share: last.cpu_share,
            waited_s: waited.as_secs_f64(),
            still_slow: last.below_level(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Fixture, not measured: a control blessed at 2 GB/s and 3 GiB per CPU second.
    fn baseline() -> ControlBaseline {
        ControlBaseline {
            size: 64,
            disk_runs: vec![vec![2.0; 3]; 4],
            cpu_runs: vec![vec![3.0; 3]; 4],
        }
    }

    /// Fixture: a control reading of `size` bytes, the disk at `disk` of its level.
    fn reading(size: u64, disk: f64) -> ControlReading {
        ControlReading {
            size,
            disk_gbps: vec![2.0 * disk],
            cpu_gib_per_s: vec![3.0],
            cpu_share: vec![1.0],
            direct: true,
        }
    }

    /// Waits up to 60 s, reading every 10 s.
    fn settler_of(read: ReadControl) -> Settler {
        Settler::new(
            read,
            baseline(),
            Duration::from_secs(60),
            Duration::from_secs(10),
        )
    }

    /// A control whose successive reads find the disk at `disk[i]` of its level (the last repeats).
    fn settler(disk: &[f64]) -> (Settler, Arc<AtomicUsize>) {
        let reads = Arc::new(AtomicUsize::new(0));
        let (disk, count) = (disk.to_vec(), Arc::clone(&reads));
        let read: ReadControl = Box::new(move || {
            let i = count.fetch_add(1, Ordering::Relaxed).min(disk.len() - 1);
            Ok(reading(64, disk[i]))
        });
        (settler_of(read), reads)
    }

    fn no_sleep(_: Duration) {}

    #[test]
    fn a_runner_at_its_level_is_not_waited_for() {
        let (settler, reads) = settler(&[0.97]);
        let check = settler.settle(&no_sleep).unwrap();
        assert_eq!((check.waited_s, check.still_slow), (0.0, false));
        assert_eq!(reads.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_dip_is_waited_out_and_both_ends_are_reported() {
        let (settler, reads) = settler(&[0.7, 0.72, 0.95]);
        let check = settler.settle(&no_sleep).unwrap();
        assert!(!check.still_slow, "{check:?}");
        assert_eq!(check.waited_s, 20.0);
        assert!((check.disk_before - 0.7).abs() < 1e-9 && (check.disk - 0.95).abs() < 1e-9);
        assert_eq!(reads.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_runner_that_stays_slow_is_waited_for_once_per_run() {
        let (settler, reads) = settler(&[0.5]);
        let check = settler.settle(&no_sleep).unwrap();
        assert!(check.still_slow);
        assert_eq!(check.waited_s, 60.0);
        assert_eq!(reads.load(Ordering::Relaxed), 7);
        // The next trial's confirmation reads the control once and does not wait again.
        let again = settler.settle(&no_sleep).unwrap();
        assert!(again.still_slow && again.waited_s == 0.0, "{again:?}");
        assert_eq!(reads.load(Ordering::Relaxed), 8);
    }

    #[test]
    fn a_control_of_another_size_is_an_error_not_a_wait() {
        let settler = settler_of(Box::new(|| Ok(reading(128, 0.5))));
        let error = settler.settle(&no_sleep).unwrap_err();
        assert!(
            matches!(
                error,
                SettleError::OtherSize {
                    read: 128,
                    blessed: 64
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("bless again"), "{error}");
    }
}
