//! The trial's own `cufile.json`: the host's file in effect (`CUFILE_ENV_PATH_JSON`, else
//! `/etc/cufile.json`; JSON with `//` comments), the scenario's overrides applied by dotted path,
//! statistics on and the log in the trial's folder. cuFile reads its config once per process, so
//! each worker gets its own file through `CUFILE_ENV_PATH_JSON`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Every key of NVIDIA's documented `cufile.json` (the file shipped with the CUDA toolkit and the
/// GDS configuration guide) and the value cuFile takes for it. An override outside this list is a
/// typo until proven otherwise; a value of another kind is one too (cuFile falls back to its
/// default or refuses to open the driver, and the trial would measure a setting nobody asked for).
pub const SETTINGS: &[(&str, Kind)] = &[
    ("logging.dir", Kind::Text(&[])),
    (
        "logging.level",
        Kind::Text(&["NOTICE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"]),
    ),
    ("profile.nvtx", Kind::Bool),
    ("profile.cufile_stats", Kind::Int { min: 0, max: 3 }),
    ("profile.io_batchsize", COUNT),
    ("execution.max_io_queue_depth", COUNT),
    ("execution.max_io_threads", AMOUNT),
    ("execution.parallel_io", Kind::Bool),
    ("execution.min_io_threshold_size_kb", AMOUNT),
    ("execution.max_request_parallelism", AMOUNT),
    ("properties.max_direct_io_size_kb", COUNT),
    ("properties.max_device_cache_size_kb", AMOUNT),
    ("properties.per_buffer_cache_size_kb", COUNT),
    ("properties.max_device_pinned_mem_size_kb", AMOUNT),
    ("properties.use_poll_mode", Kind::Bool),
    ("properties.poll_mode_max_size_kb", AMOUNT),
    ("properties.use_pci_p2pdma", Kind::Bool),
    ("properties.allow_compat_mode", Kind::Bool),
    ("properties.force_compat_mode", Kind::Bool),
    ("properties.gds_rdma_write_support", Kind::Bool),
    ("properties.io_batchsize", COUNT),
    (
        "properties.io_priority",
        Kind::Text(&["default", "low", "med", "high"]),
    ),
    ("properties.rdma_dev_addr_list", Kind::Texts),
    (
        "properties.rdma_load_balancing_policy",
        Kind::Text(&["RoundRobin", "RoundRobinMaxMin"]),
    ),
    ("properties.rdma_dynamic_routing", Kind::Bool),
    ("properties.rdma_dynamic_routing_order", Kind::Texts),
    ("properties.rdma_peer_affinity_policy", Kind::Text(&[])),
    ("properties.rdma_access_mask", Kind::Text(&[])),
    ("properties.posix_pool_slab_size_kb", Kind::Amounts),
    ("properties.posix_pool_slab_count", Kind::Amounts),
    ("properties.batch_io_timeout_ms", AMOUNT),
    ("fs.generic.posix_unaligned_writes", Kind::Bool),
    ("fs.lustre.posix_gds_min_kb", AMOUNT),
    ("fs.lustre.rdma_dev_addr_list", Kind::Texts),
    ("fs.lustre.mount_table", Kind::Table),
    ("fs.nfs.rdma_dev_addr_list", Kind::Texts),
    ("fs.nfs.mount_table", Kind::Table),
    ("fs.beegfs.posix_gds_min_kb", AMOUNT),
    ("fs.beegfs.rdma_dev_addr_list", Kind::Texts),
    ("fs.beegfs.mount_table", Kind::Table),
    ("fs.gpfs.gds_write_support", Kind::Bool),
    ("fs.gpfs.gds_async_support", Kind::Bool),
    ("fs.gpfs.rdma_dev_addr_list", Kind::Texts),
    ("fs.weka.rdma_write_support", Kind::Bool),
    ("denylist.drivers", Kind::Texts),
    ("denylist.devices", Kind::Texts),
    ("denylist.mounts", Kind::Texts),
    ("denylist.filesystems", Kind::Texts),
    ("miscellaneous.api_check_aggressive", Kind::Bool),
];

/// The names of [`SETTINGS`], for "did you mean".
pub const KNOWN_KEYS: &[&str] = &KEY_NAMES;

const KEY_NAMES: [&str; SETTINGS.len()] = {
    let mut names = [""; SETTINGS.len()];
    let mut index = 0;
    while index < SETTINGS.len() {
        names[index] = SETTINGS[index].0;
        index += 1;
    }
    names
};

/// A count cuFile needs at least one of (queue depths, batch sizes, I/O sizes).
const COUNT: Kind = Kind::Int {
    min: 1,
    max: u32::MAX as u64,
};
/// A size, threshold or count where 0 means "none" or "off".
const AMOUNT: Kind = Kind::Int {
    min: 0,
    max: u32::MAX as u64,
};

/// The kind of value a cufile.json setting takes. Integers stop at `u32::MAX`: cuFile reads
/// them into C integers, and a larger figure would wrap rather than be refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// A whole number in `min..=max`.
    Int {
        min: u64,
        max: u64,
    },
    /// A string; one of these (in any case) when the list is not empty.
    Text(&'static [&'static str]),
    /// A list of strings (addresses, devices, mounts, policies).
    Texts,
    /// A list of whole numbers (the POSIX pool's slabs).
    Amounts,
    /// A mapping (a file system's `mount_table`).
    Table,
}

impl Kind {
    fn accepts(&self, value: &Value) -> bool {
        match (self, value) {
            (Kind::Bool, Value::Bool(_)) => true,
            (Kind::Int { min, max }, Value::Number(n)) => {
                n.as_u64().is_some_and(|n| (*min..=*max).contains(&n))
            }
            (Kind::Text(choices), Value::String(s)) => {
                choices.is_empty() || choices.iter().any(|c| c.eq_ignore_ascii_case(s))
            }
            (Kind::Texts, Value::Array(items)) => items.iter().all(Value::is_string),
            (Kind::Amounts, Value::Array(items)) => items
                .iter()
                .all(|item| item.as_u64().is_some_and(|n| n <= u64::from(u32::MAX))),
            (Kind::Table, Value::Object(_)) => true,
            _ => false,
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Bool => f.write_str("`true` or `false`"),
            Kind::Int { min, max } => write!(f, "a whole number from {min} to {max}"),
            Kind::Text([]) => f.write_str("a string"),
            Kind::Text(choices) => {
                let shown: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
                write!(f, "one of {}", shown.join(", "))
            }
            Kind::Texts => f.write_str("a list of strings, e.g. `[\"a\", \"b\"]`"),
            Kind::Amounts => write!(f, "a list of whole numbers up to {}", u32::MAX),
            Kind::Table => f.write_str("a mapping"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read cufile.json `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}; fix the file or point CUFILE_ENV_PATH_JSON at a valid one", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("`{}` is not a JSON object at its top level", path.display())]
    NotAnObject { path: PathBuf },
    #[error("`cufile.{key}` is not a cufile.json setting NVIDIA documents{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    UnknownKey {
        key: String,
        suggestion: Option<String>,
    },
    #[error("`cufile.{key}` is {found}, expected {expected}")]
    WrongValue {
        key: String,
        /// The value as written, shortened and quoted when it is a string.
        found: String,
        expected: Kind,
    },
}

/// Checks an override key against [`KNOWN_KEYS`] (used when suites are validated).
pub fn check_key(key: &str) -> Result<(), ConfigError> {
    if KNOWN_KEYS.contains(&key) {
        return Ok(());
    }
    let suggestion = crate::suggest::nearest(key, KNOWN_KEYS)
        .map(str::to_owned)
        .or_else(|| {
            // A right leaf under the wrong section (`execution.allow_compat_mode`) is a common slip.
            let leaf = key.rsplit('.').next().unwrap_or(key);
            KNOWN_KEYS
                .iter()
                .find(|known| known.rsplit('.').next() == Some(leaf))
                .map(|k| k.to_string())
        });
    Err(ConfigError::UnknownKey {
        key: key.to_string(),
        suggestion,
    })
}

/// Checks an override, key and value, against [`SETTINGS`] (used when suites are validated and
/// again when a trial's file is written).
pub fn check(key: &str, value: &Value) -> Result<(), ConfigError> {
    check_key(key)?;
    let Some((_, expected)) = SETTINGS.iter().find(|(name, _)| *name == key) else {
        return Ok(());
    };
    if expected.accepts(value) {
        return Ok(());
    }
    Err(ConfigError::WrongValue {
        key: key.to_string(),
        found: shown(value),
        expected: *expected,
    })
}

/// A value as an error shows it: numbers, `true` and `null` as written, strings quoted (control
/// characters escaped, as JSON writes them) and cut at 40 characters.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => {
            let cut: String = text.chars().take(40).collect();
            let more = if cut.len() < text.len() { "…" } else { "" };
            format!("the string {}{more}", Value::from(cut))
        }
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
        other => other.to_string(),
    }
}

/// The host's cufile.json in effect and why: (path, source), or `None` when there is none.
pub fn host_config_path() -> Option<(PathBuf, &'static str)> {
    if let Some(path) = std::env::var_os("CUFILE_ENV_PATH_JSON").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(path), "CUFILE_ENV_PATH_JSON"));
    }
    let etc = PathBuf::from("/etc/cufile.json");
    etc.exists().then_some((etc, "/etc/cufile.json"))
}

/// Parses a cufile.json (JSONC: comments and trailing commas allowed).
pub fn parse(path: &Path, text: &str) -> Result<Map<String, Value>, ConfigError> {
    // Comments as cuFile allows them; nothing looser (a missing comma is an error, not a guess).
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_loose_object_property_names: false,
        ..Default::default()
    };
    let value: Option<Value> =
        jsonc_parser::parse_to_serde_value(text, &options).map_err(|error| {
            ConfigError::Syntax {
                path: path.to_path_buf(),
                line: error.line_display(),
                column: error.column_display(),
                message: error.kind().to_string(),
            }
        })?;
    match value {
        Some(Value::Object(map)) => Ok(map),
        None => Ok(Map::new()),
        Some(_) => Err(ConfigError::NotAnObject {
            path: path.to_path_buf(),
        }),
    }
}

/// The trial's configuration: `base` with `overrides` applied, level-3 statistics on, and the log
/// written to `log_dir`.
pub fn overlay(
    mut base: Map<String, Value>,
    overrides: &std::collections::BTreeMap<String, Value>,
    log_dir: &Path,
) -> Result<Map<String, Value>, ConfigError> {
    for (key, value) in overrides {
        check(key, value)?;
        set(&mut base, key, value.clone());
    }
    // Level 3 feeds both the stats API and gds_stats; an explicit override of it wins.
    if !overrides.contains_key("profile.cufile_stats") {
        set(&mut base, "profile.cufile_stats", Value::from(3));
    }
    set(
        &mut base,
        "logging.dir",
        Value::from(log_dir.display().to_string()),
    );
    Ok(base)
}

/// `base` (else the host's file in effect) overlaid for a trial, written to `dir/cufile.json`;
/// returns its path. A rehearsal's stack names its own `base`.
pub fn write_for_trial(
    base: Option<&Path>,
    overrides: &std::collections::BTreeMap<String, Value>,
    dir: &Path,
) -> Result<PathBuf, ConfigError> {
    let base = match base
        .map(Path::to_path_buf)
        .or_else(|| host_config_path().map(|(path, _)| path))
    {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            parse(&path, &text)?
        }
        None => Map::new(),
    };
    let config = overlay(base, overrides, dir)?;
    let path = dir.join("cufile.json");
    let text = serde_json::to_string_pretty(&Value::Object(config)).unwrap_or_default() + "\n";
    crate::fsutil::write_atomically(&path, text.as_bytes()).map_err(|source| {
        ConfigError::Read {
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

fn set(map: &mut Map<String, Value>, dotted: &str, value: Value) {
    let mut parts = dotted.split('.').peekable();
    let mut node = map;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            node.insert(part.to_string(), value);
            return;
        }
        let entry = node
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        node = entry.as_object_mut().expect("made an object above");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Constructed in the style of NVIDIA's shipped cufile.json: comments, nested sections.
    const HOST: &str = r#"{
    // NOTE : Application can override custom configuration via export CUFILE_ENV_PATH_JSON=<filepath>
    "logging": {
        // "dir": "/home/<xxxx>",
        "level": "ERROR"
    },
    "profile": { "nvtx": false, "cufile_stats": 0 },
    "execution": {
        "max_io_threads": 4, // per process
        "parallel_io": true,
    },
    "properties": { "allow_compat_mode": true, "max_direct_io_size_kb": 16384 }
}"#;

    #[test]
    fn overrides_apply_by_path_and_keep_the_rest() {
        let base = parse(Path::new("/etc/cufile.json"), HOST).unwrap();
        let overrides = BTreeMap::from([
            ("execution.max_io_threads".to_string(), Value::from(8)),
            (
                "properties.allow_compat_mode".to_string(),
                Value::from(false),
            ),
        ]);
        let config = Value::Object(overlay(base, &overrides, Path::new("/trial")).unwrap());
        assert_eq!(config["execution"]["max_io_threads"], 8);
        assert_eq!(config["execution"]["parallel_io"], true);
        assert_eq!(config["properties"]["allow_compat_mode"], false);
        assert_eq!(config["properties"]["max_direct_io_size_kb"], 16384);
        assert_eq!(config["profile"]["cufile_stats"], 3);
        assert_eq!(config["logging"]["dir"], "/trial");
        assert_eq!(config["logging"]["level"], "ERROR");
    }

    #[test]
    fn an_unknown_key_is_rejected_with_the_nearest_one() {
        let overrides = BTreeMap::from([("execution.max_io_thread".to_string(), Value::from(8))]);
        let error = overlay(Map::new(), &overrides, Path::new("/t"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("did you mean `execution.max_io_threads`?"),
            "{error}"
        );
        let error = check_key("execution.allow_compat_mode")
            .unwrap_err()
            .to_string();
        assert!(error.contains("`properties.allow_compat_mode`"), "{error}");
    }

    #[test]
    fn a_malformed_file_is_reported_with_its_line() {
        let text = "{\n  \"logging\": {\n    \"level\": \"ERROR\"\n  \n  \"profile\": {}\n}";
        let error = parse(Path::new("/etc/cufile.json"), text)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("/etc/cufile.json:3:21: Expected comma"),
            "{error}"
        );
        assert!(matches!(
            parse(Path::new("x"), "[1, 2]"),
            Err(ConfigError::NotAnObject { .. })
        ));
    }
}

#[cfg(test)]
mod shipped {
    use super::*;

    /// `/etc/cufile.json` as shipped with CUDA 13.0 (cuFile 1.15.1), copied verbatim from the GPU
    /// test machine.
    const SHIPPED: &str = include_str!("../tests/fixtures/cufile/h200-etc-cufile.json");

    /// Every leaf of `value` with its dotted key.
    fn leaves(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    leaves(&path, value, out);
                }
            }
            _ => out.push((prefix.to_string(), value.clone())),
        }
    }

    #[test]
    fn every_key_of_the_shipped_file_is_known_and_it_overlays() {
        let map = parse(Path::new("/etc/cufile.json"), SHIPPED).unwrap();
        let mut keys = Vec::new();
        leaves("", &Value::Object(map.clone()), &mut keys);
        assert!(keys.len() > 30, "{keys:?}");
        for (key, _) in &keys {
            assert!(
                check_key(key).is_ok(),
                "shipped key `{key}` is not in KNOWN_KEYS"
            );
        }
        let overrides = std::collections::BTreeMap::from([(
            "properties.allow_compat_mode".to_string(),
            Value::from(false),
        )]);
        let config = Value::Object(overlay(map, &overrides, Path::new("/trial")).unwrap());
        assert_eq!(config["properties"]["allow_compat_mode"], false);
        assert_eq!(config["execution"]["max_io_threads"], 4);
        assert_eq!(
            config["properties"]["posix_pool_slab_size_kb"],
            serde_json::json!([4, 1024, 16384])
        );
    }

    /// The kinds in [`SETTINGS`] refuse nothing NVIDIA ships: every value of the shipped file
    /// (mount tables are commented out there) passes the check a suite's override goes through.
    #[test]
    fn every_value_of_the_shipped_file_has_its_kind() {
        let map = parse(Path::new("/etc/cufile.json"), SHIPPED).unwrap();
        let mut found = Vec::new();
        leaves("", &Value::Object(map), &mut found);
        for (key, value) in &found {
            if let Err(error) = check(key, value) {
                panic!("shipped `{key}: {value}` is refused: {error}");
            }
        }
        let table = serde_json::json!({ "/mnt/a": { "rdma_dev_addr_list": ["10.0.0.1"] } });
        assert!(check("fs.lustre.mount_table", &table).is_ok());
        assert!(check("profile.cufile_stats", &Value::from(4)).is_err());
        assert!(check("execution.max_io_threads", &Value::from(1u64 << 32)).is_err());
    }
}
