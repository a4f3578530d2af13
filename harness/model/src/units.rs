//! Units for people: sizes in binary units (`1.00 GiB`), as suite files write them, and
//! throughput in the unit the user chose (GB/s unless `--units gib`), which is handed to whatever
//! prints or draws a rate.

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

/// How throughput is shown. Results are measured and stored in GB/s (10^9 bytes per second);
/// gdsio and KvikIO print GiB/s (2^30 bytes per second), so people comparing with them may
/// ask for those. Only what is printed or drawn changes: reports and baselines keep GB/s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rate {
    #[default]
    Gb,
    Gib,
}

impl Rate {
    /// `GB/s` or `GiB/s`.
    pub fn label(self) -> &'static str {
        match self {
            Rate::Gb => "GB/s",
            Rate::Gib => "GiB/s",
        }
    }

    /// A throughput in GB/s, in this unit.
    pub fn value(self, gbps: f64) -> f64 {
        match self {
            Rate::Gb => gbps,
            Rate::Gib => gbps * 1e9 / (1u64 << 30) as f64,
        }
    }

    /// `3.10`: the number alone, for tables whose header carries the label.
    pub fn number(self, gbps: f64, decimals: usize) -> String {
        format!("{:.decimals$}", self.value(gbps))
    }

    /// `3.10 GB/s`: every throughput a person reads goes through here.
    pub fn format(self, gbps: f64, decimals: usize) -> String {
        format!("{} {}", self.number(gbps, decimals), self.label())
    }

    /// `3.10 GB/s`, two decimals: the usual form.
    pub fn rate(self, gbps: f64) -> String {
        self.format(gbps, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_convert_and_carry_their_label() {
        assert_eq!(Rate::Gb.format(3.1, 2), "3.10 GB/s");
        // 2^30 bytes per second is 1.073741824 GB/s.
        assert_eq!(Rate::Gib.format(1.073741824, 2), "1.00 GiB/s");
        assert_eq!(Rate::Gib.number(2.147483648, 1), "2.0");
        assert_eq!(Rate::default(), Rate::Gb);
    }
}
