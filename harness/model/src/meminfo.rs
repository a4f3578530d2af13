//! The host's memory, from `/proc/meminfo`.

/// Memory the kernel says a new allocation can get without swapping.
pub fn available_memory() -> Option<u64> {
    meminfo("MemAvailable:")
}

/// A `/proc/meminfo` line's value in bytes.
fn meminfo(key: &str) -> Option<u64> {
    status_value(&std::fs::read_to_string("/proc/meminfo").ok()?, key)
}

/// Peak resident set of this process (`VmHWM` of `/proc/self/status`), in bytes.
pub fn peak_rss() -> Option<u64> {
    status_value(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmHWM:",
    )
}

/// A `kB` value of a `/proc` status or meminfo text, in bytes.
fn status_value(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|line| line.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Memory the host has.
pub fn total_memory() -> Option<u64> {
    meminfo("MemTotal:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_values_are_read_in_bytes() {
        let status = "Name:\tgds-worker\nVmPeak:\t  900 kB\nVmHWM:\t  268436 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(status_value(status, "VmHWM:"), Some(268_436 * 1024));
        assert_eq!(status_value(status, "VmSwap:"), None);
        assert!(peak_rss().is_some_and(|bytes| bytes > 0));
    }
}
