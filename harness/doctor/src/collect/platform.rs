//! The platform around the GPU and the disk: IOMMU (`/sys/class/iommu`, the kernel command line),
//! PCIe ACS (`lspci -vvv`, readable only as root), the GPU↔storage topology (`nvidia-smi topo
//! -m`), WSL and container markers, and `gdscheck -p` where installed.

use std::path::Path;
use std::time::Duration;

use super::{read_text, run_ok, run_tool};
use crate::facts::{Acs, Fact, GdscheckFacts, PlatformFacts, ToolFacts};
use crate::gdscheck;

const TIMEOUT: Duration = Duration::from_secs(60);

pub(super) fn platform(tools: &ToolFacts, nvidia_smi: Option<&str>, quick: bool) -> PlatformFacts {
    let lower = |path: &str| read_text(path).known().map(|t| t.to_ascii_lowercase());
    let wsl = [lower("/proc/sys/kernel/osrelease"), lower("/proc/version")]
        .iter()
        .flatten()
        .any(|text| text.contains("microsoft") || text.contains("wsl"));
    let container = ["/.dockerenv", "/run/.containerenv"]
        .iter()
        .find(|marker| Path::new(marker).exists())
        .map(|marker| format!("{marker} exists"));
    let iommu_units = match std::fs::read_dir("/sys/class/iommu") {
        Ok(entries) => {
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            Fact::Known(names)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Fact::Known(Vec::new()),
        Err(error) => Fact::Unknown(format!("cannot list /sys/class/iommu: {error}")),
    };
    let acs = match (&tools.lspci, quick) {
        (_, true) => Fact::Unknown("not read (quick check)".into()),
        (None, false) => Fact::Unknown("lspci is not installed (package `pciutils`)".into()),
        (Some(lspci), false) => match run_ok(Path::new(lspci), &["-vvv"], TIMEOUT) {
            Ok(text) => parse_acs(&text),
            Err(error) => Fact::because(&error),
        },
    };
    let topology = match (nvidia_smi, quick) {
        (_, true) => Fact::Unknown("not read (quick check)".into()),
        (None, false) => Fact::Unknown("nvidia-smi is not installed".into()),
        (Some(smi), false) => match run_ok(Path::new(smi), &["topo", "-m"], TIMEOUT) {
            Ok(text) => Fact::Known(strip_ansi(text.trim_end())),
            Err(error) => Fact::because(&error),
        },
    };
    PlatformFacts {
        wsl,
        container,
        iommu_units,
        kernel_cmdline: read_text("/proc/cmdline"),
        acs,
        topology,
    }
}

/// Without terminal escapes (`nvidia-smi topo -m` underlines its header even into a pipe).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte (a letter).
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `iommu=`, `intel_iommu=` and `amd_iommu=` settings on a kernel command line.
pub fn parse_cmdline_iommu(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .filter(|word| {
            ["iommu=", "intel_iommu=", "amd_iommu="]
                .iter()
                .any(|key| word.starts_with(key))
        })
        .map(str::to_owned)
        .collect()
}

/// Devices with ACS source validation on, from `lspci -vvv`. Without root, lspci prints
/// `Capabilities: <access denied>` and ACS cannot be read: that is unknown, not "off".
pub fn parse_acs(text: &str) -> Fact<Acs> {
    let mut acs = Acs::default();
    let mut device = String::new();
    let mut denied = false;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
            device = line.split(' ').next().unwrap_or_default().to_string();
        }
        let trimmed = line.trim();
        if trimmed.contains("<access denied>") {
            denied = true;
        }
        if trimmed.starts_with("Capabilities:") && trimmed.contains("Access Control Services") {
            acs.devices += 1;
        }
        if let Some(control) = trimmed.strip_prefix("ACSCtl:")
            && control.split_whitespace().any(|flag| flag == "SrcValid+")
        {
            acs.source_validation.push(device.clone());
        }
    }
    if acs.devices == 0 && denied {
        return Fact::Unknown(
            "lspci could not read PCIe capabilities (`<access denied>`): run the doctor as root to see ACS".into(),
        );
    }
    Fact::Known(acs)
}

pub(super) fn gdscheck(program: &Path) -> Fact<GdscheckFacts> {
    match run_tool(program, &["-p"], Vec::new(), TIMEOUT) {
        Ok(output) if output.stdout.trim().is_empty() => Fact::Unknown(format!(
            "`{} -p` {} and printed nothing{}",
            program.display(),
            output.ending,
            output
                .stderr
                .lines()
                .next()
                .map(|l| format!(" (stderr: {l})"))
                .unwrap_or_default()
        )),
        // gdscheck exits non-zero when verification fails; its text is still the evidence.
        Ok(output) => Fact::Known(GdscheckFacts {
            parsed: gdscheck::parse(&output.stdout),
            text: output.stdout,
        }),
        Err(error) => Fact::because(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iommu_settings_on_the_command_line() {
        let cmdline = "BOOT_IMAGE=/boot/vmlinuz-7.0.0-29-generic root=UUID=5c38 ro amd_iommu=on iommu=pt pci=realloc";
        assert_eq!(
            parse_cmdline_iommu(cmdline),
            vec!["amd_iommu=on", "iommu=pt"]
        );
        assert!(parse_cmdline_iommu("root=/dev/vda1 ro").is_empty());
    }

    #[test]
    fn acs_source_validation_per_device() {
        // Constructed in lspci -vvv's layout (device line, indented capability lines).
        let text = "00:01.0 PCI bridge: Intel Corporation Device 09ab
\tCapabilities: [220 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
01:00.0 3D controller: NVIDIA Corporation GH100 [H200 SXM 141GB]
\tCapabilities: [250 v1] Access Control Services
\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
";
        let acs = parse_acs(text);
        let acs = acs.known().unwrap();
        assert_eq!(acs.devices, 2);
        assert_eq!(acs.source_validation, vec!["00:01.0".to_string()]);
        let denied = parse_acs("00:01.0 PCI bridge: x\n\tCapabilities: <access denied>\n");
        assert!(denied.why().unwrap().contains("root"));
    }
}
