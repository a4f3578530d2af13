//! The host's memory, from `/proc/meminfo`.

/// Memory the kernel says a new allocation can get without swapping.
pub fn available_memory() -> Option<u64> {
    meminfo("MemAvailable:")
}

/// A `/proc/meminfo` line's value in bytes.
fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
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
