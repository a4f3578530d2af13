//! The path a trial's bytes took (nvfs, p2p, cuFile compat, KvikIO POSIX, host, bounce, ...):
//! one type for the verdict, the record on the wire, baselines, comparisons and their words.
//!
//! On the wire it is the name people read (`nvfs`, `cufile-posix`, `cufile (unconfirmed)`), as
//! report.json, history.jsonl and baseline files have always held it; a name this build does not
//! know (a worker's `kvikio` before the verdict, a newer gate's) is kept verbatim, never refused.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::scenario::ExpectedPath;

/// A way bytes reach the reader's buffer (or, written, the file).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Path {
    /// GPUDirect Storage through the nvidia-fs kernel module.
    Nvfs,
    /// GPUDirect Storage through PCIe P2PDMA.
    P2p,
    /// cuFile's compat mode: POSIX reads into host bounce buffers, then copies.
    CufilePosix,
    /// KvikIO's own POSIX path (compat mode ON, its per-file AUTO fallback, small reads).
    KvikioPosix,
    /// The posix reader: host memory, no GPU.
    Host,
    /// The h2d reader: POSIX into pinned memory, then a copy.
    Bounce,
    /// Handed to cuFile, but no counter says whether as nvfs, p2p or compat POSIX.
    Cufile,
    /// Nothing says how these bytes were read.
    Unknown,
    /// More than one path; see the split.
    Mixed,
    /// A name this build does not know, kept as written: the Python worker's `kvikio` or `torch`
    /// before the verdict replaces it, or a path a newer gate recorded.
    Other(String),
}

/// Every path this build knows, in the order of [`Path`]'s variants.
const KNOWN: [Path; 9] = [
    Path::Nvfs,
    Path::P2p,
    Path::CufilePosix,
    Path::KvikioPosix,
    Path::Host,
    Path::Bounce,
    Path::Cufile,
    Path::Unknown,
    Path::Mixed,
];

impl Path {
    /// The name on the wire and in words.
    pub fn name(&self) -> &str {
        match self {
            Path::Nvfs => "nvfs",
            Path::P2p => "p2p",
            Path::CufilePosix => "cufile-posix",
            Path::KvikioPosix => "kvikio-posix",
            Path::Host => "host",
            Path::Bounce => "bounce",
            Path::Cufile => "cufile (unconfirmed)",
            Path::Unknown => "unknown",
            Path::Mixed => "mixed",
            Path::Other(name) => name,
        }
    }

    /// The path `name` stands for; any name reads, an unknown one as [`Path::Other`]. `cufile`
    /// is [`Path::Cufile`] too: the Rust worker's name for it before the verdict, and the
    /// verdict's own in its JSON before both were one type.
    pub fn parse(name: &str) -> Path {
        if name == "cufile" {
            return Path::Cufile;
        }
        KNOWN
            .into_iter()
            .find(|path| path.name() == name)
            .unwrap_or_else(|| Path::Other(name.to_string()))
    }

    /// Whether bytes on this path satisfy `expected`.
    pub fn satisfies(&self, expected: ExpectedPath) -> bool {
        match expected {
            ExpectedPath::Nvfs => *self == Path::Nvfs,
            ExpectedPath::P2p => *self == Path::P2p,
            ExpectedPath::Gds => matches!(self, Path::Nvfs | Path::P2p),
            ExpectedPath::CufilePosix => *self == Path::CufilePosix,
            ExpectedPath::KvikioPosix => *self == Path::KvikioPosix,
            ExpectedPath::Host => *self == Path::Host,
            ExpectedPath::Bounce => *self == Path::Bounce,
            ExpectedPath::Any => true,
        }
    }

    /// A POSIX fallback of the GPU stack: cuFile's compat mode or KvikIO's own POSIX path, the
    /// bytes through host memory where a GPU path was possible.
    pub fn is_posix_fallback(&self) -> bool {
        matches!(self, Path::CufilePosix | Path::KvikioPosix)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<&str> for Path {
    fn from(name: &str) -> Path {
        Path::parse(name)
    }
}

impl Serialize for Path {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Path::parse(&String::deserialize(deserializer)?))
    }
}

/// A plain string in the schema, as before the type: any name reads.
impl schemars::JsonSchema for Path {
    fn schema_name() -> Cow<'static, str> {
        "Path".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_written() {
        for path in KNOWN {
            let json = serde_json::to_string(&path).unwrap();
            assert_eq!(json, format!("\"{}\"", path.name()));
            assert_eq!(serde_json::from_str::<Path>(&json).unwrap(), path);
        }
        // Names of older gates and of the Python worker before the verdict: kept verbatim.
        for name in ["kvikio", "torch", "", "gds"] {
            let path: Path = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(path, Path::Other(name.to_string()));
            assert_eq!(serde_json::to_string(&path).unwrap(), format!("\"{name}\""));
        }
        assert_eq!(Path::parse("cufile"), Path::Cufile);
    }

    /// `expect.path: cufile-posix` asks for the path named `cufile-posix`: the expectations of
    /// one path are spelled as that path, so the two lists cannot drift apart.
    #[test]
    fn an_expectation_of_one_path_is_spelled_as_that_path() {
        use ExpectedPath::*;
        for expected in [Nvfs, P2p, CufilePosix, KvikioPosix, Host, Bounce] {
            let path = Path::parse(crate::verdict::expected_name(expected));
            assert!(!matches!(path, Path::Other(_)), "{path}");
            assert!(path.satisfies(expected), "{path}");
        }
    }

    #[test]
    fn names_are_keys_of_a_map() {
        let split = std::collections::BTreeMap::from([(Path::CufilePosix, 3u64), (Path::Nvfs, 1)]);
        let json = serde_json::to_string(&split).unwrap();
        assert_eq!(json, r#"{"nvfs":1,"cufile-posix":3}"#);
        let back: std::collections::BTreeMap<Path, u64> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, split);
    }
}
