//! Sizes for people, in binary units (`1.00 GiB`), as suite files write them.

/// Bytes in binary units for people: `format_bytes(1 << 30, 2)` is `1.00 GiB`.
pub fn format_bytes(bytes: u64, decimals: usize) -> String {
    match binary_scale(bytes) {
        (_, "B") => format!("{bytes} B"),
        (value, unit) => format!("{value:.decimals$} {unit}"),
    }
}

/// `bytes` in the largest binary unit that keeps the value at or above 1: `(1.5, "KiB")`.
pub fn binary_scale(bytes: u64) -> (f64, &'static str) {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    (value, UNITS[unit])
}
