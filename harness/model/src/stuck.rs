//! The line a worker writes while a library call it watches has not come back, and what the gate
//! reads from it when it has to stop that worker: the call that held it. Written by the Rust
//! worker's call watchdog (which also watches the Python worker's sections, through `gds_pass`),
//! parsed by the gate; the format lives here.

use std::time::Duration;

const PREFIX: &str = "gds-gate worker: ";
const STUCK: &str = " has not returned after ";

/// `gds-gate worker: cuFileBatchIOSubmit (a batch of 32 entries) has not returned after 10 s (it
/// should within 10.0 s): the worker is stuck inside the library`.
pub fn line(call: &str, detail: &str, stuck_for: Duration, bound: Duration) -> String {
    format!(
        "{PREFIX}{call} ({detail}){STUCK}{:.0} s (it should within {:.1} s): the worker is stuck inside the library",
        stuck_for.as_secs_f64(),
        bound.as_secs_f64()
    )
}

/// The first stuck call a worker's output names, with what it was called on:
/// `cuFileBatchIOSubmit (a batch of 32 entries)`.
pub fn first_call(output: &str) -> Option<&str> {
    output.lines().find_map(|text| {
        let (call, _) = text.trim_start().strip_prefix(PREFIX)?.split_once(STUCK)?;
        Some(call)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verbatim from the H200 runner: the worker of `entry-points::batch-deep`, killed at the
    /// trial's timeout, four batches stuck in cuFileBatchIOSubmit (libcufile 1.15.1).
    const H200: &str = "    gds-gate worker: cuFileBatchIOSubmit (a batch of 32 entries) has not returned after 10 s (it should within 10.0 s): the worker is stuck inside the library\n    gds-gate worker: cuFileBatchIOSubmit (a batch of 32 entries) has not returned after 10 s (it should within 10.0 s): the worker is stuck inside the library\n";

    #[test]
    fn the_stuck_call_is_read_back_from_the_workers_output() {
        assert_eq!(
            first_call(H200),
            Some("cuFileBatchIOSubmit (a batch of 32 entries)")
        );
        let written = line(
            "cuStreamSynchronize",
            "stream 3 of 8",
            Duration::from_secs(16),
            Duration::from_secs(15),
        );
        assert_eq!(
            first_call(&format!("progress\n{written}\nmore")),
            Some("cuStreamSynchronize (stream 3 of 8)")
        );
    }

    #[test]
    fn output_without_a_stuck_call_names_none() {
        assert_eq!(
            first_call("cuFile: driver exploded\ngds-gate worker: done"),
            None
        );
        assert_eq!(first_call(""), None);
    }
}
