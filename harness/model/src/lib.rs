//! gds-model: what gds-gate knows, as plain data and pure functions. Suites and their trials,
//! read plans and shards, the trial record and the protocol spoken with workers, the evidence a
//! trial leaves and the path verdict drawn from it, the CPU reference of the test data and of
//! both verifications, cuFile's data types and small utilities.
//!
//! Nothing here links CUDA or cuFile or starts a process: the worker crate does the first, the
//! gate crate the second, and both build on this one.

pub mod busy;
pub mod cache;
pub mod conformance;
pub mod cost;
pub mod cufile_abi;
pub mod cufile_config;
pub mod evidence;
pub mod explain;
pub mod fsutil;
pub mod hex;
pub mod integrity;
pub mod meminfo;
pub mod numbers;
pub mod outcome;
pub mod path;
pub mod plan;
pub mod progress;
pub mod protocol;
pub mod record;
pub mod runner_check;
pub mod scenario;
pub mod shard;
pub mod stack;
pub mod stuck;
pub mod suggest;
pub mod timing;
pub mod topology;
pub mod units;
pub mod verdict;
pub mod verify;
pub mod window;
pub mod write;
pub mod yaml;

/// `error: caused by: …` as one line per cause, the way nextest prints error chains.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str("\n  caused by: ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `error` and its causes on one line (`what: cause: cause`), for a reason that is recorded as
/// one line (a probe's answer, a doctor's fact); [`error_chain`] is for printing.
pub fn error_line(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The text of a caught panic (`panic!` with a message, or a plain string), or nothing.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[derive(Debug, thiserror::Error)]
    #[error("cannot start `worker`")]
    struct Start(#[source] std::io::Error);

    #[test]
    fn a_chain_prints_a_line_per_cause_and_a_reason_keeps_one_line() {
        let error = Start(std::io::Error::other("no such file"));
        assert_eq!(
            super::error_chain(&error),
            "cannot start `worker`\n  caused by: no such file"
        );
        assert_eq!(
            super::error_line(&error),
            "cannot start `worker`: no such file"
        );
    }
}
