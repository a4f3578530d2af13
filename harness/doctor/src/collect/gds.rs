//! libcufile (where the worker looked, what it found, `cuFileDriverOpen` and the driver's
//! properties, all asked in a worker process), the nvidia-fs module, and the cufile.json in effect.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::read_text;
use crate::facts::{
    ConfigFacts, ConfigStatus, CufileFacts, CufileLibrary, DriverOpen, Fact, NvfsFacts, SETTINGS,
    UnknownKey,
};
use crate::{CufileProbe, DoctorOptions};
use gds_model::cufile_config::{self, ConfigError, KNOWN_KEYS};
use gds_model::protocol::{CufileProbeDepth, DriverProbe};

pub(super) fn cufile(opts: &DoctorOptions) -> CufileFacts {
    let probe = match opts.cufile_probe {
        CufileProbe::LoadOnly => gds_runner::job::probe::host().cufile.clone(),
        CufileProbe::OpenDriver => {
            gds_runner::job::probe::probe(false, false, CufileProbeDepth::OpenDriver).cufile
        }
    };
    match probe {
        Some(probe) => facts_of(&probe),
        None => CufileFacts {
            searched: Vec::new(),
            library: Fact::Unknown("not probed".into()),
            driver_open: Fact::Unknown("not attempted".into()),
        },
    }
}

/// The worker's account of libcufile as the doctor's facts.
pub fn facts_of(probe: &gds_model::protocol::CufileProbe) -> CufileFacts {
    CufileFacts {
        searched: probe.searched.clone(),
        library: match &probe.library {
            Ok(library) => Fact::Known(CufileLibrary {
                path: library.path.display().to_string(),
                version: library.version.clone(),
                entry_points: probe.entry_points.clone(),
            }),
            Err(why) => Fact::Unknown(why.0.clone()),
        },
        driver_open: match &probe.driver {
            DriverProbe::NotAttempted(why) => Fact::Unknown(why.clone()),
            DriverProbe::Opened { properties } => Fact::Known(DriverOpen::Opened {
                properties: Fact::from_result(properties.clone()),
            }),
            DriverProbe::Failed { error } => Fact::Known(DriverOpen::Failed {
                error: error.clone(),
            }),
        },
    }
}

pub(super) fn nvidia_fs() -> NvfsFacts {
    let rw_stats = "/sys/module/nvidia_fs/parameters/rw_stats_enabled";
    NvfsFacts {
        module_loaded: gds_runner::host::gds().nvidia_fs_loaded,
        proc_present: Path::new("/proc/driver/nvidia-fs").exists(),
        version: read_text("/proc/driver/nvidia-fs/version").known().cloned(),
        rw_stats_enabled: match read_text(rw_stats) {
            Fact::Known(value) => match value.as_str() {
                "1" | "Y" | "y" => Fact::Known(true),
                "0" | "N" | "n" => Fact::Known(false),
                other => Fact::Unknown(format!("{rw_stats} reads `{other}`")),
            },
            Fact::Unknown(why) => Fact::Unknown(why),
        },
        modules: match read_text("/proc/driver/nvidia-fs/modules") {
            Fact::Known(text) => Fact::Known(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
            Fact::Unknown(why) => Fact::Unknown(why),
        },
    }
}

/// The host's cufile.json in effect, read and judged.
pub fn config_facts() -> ConfigFacts {
    let env_set = std::env::var_os("CUFILE_ENV_PATH_JSON").is_some_and(|p| !p.is_empty());
    let Some((path, source)) = cufile_config::host_config_path() else {
        return parse_config(
            None,
            "none: CUFILE_ENV_PATH_JSON is unset and /etc/cufile.json does not exist, so cuFile uses its built-in defaults",
            None,
        );
    };
    let why = match source {
        "CUFILE_ENV_PATH_JSON" => "named by CUFILE_ENV_PATH_JSON".to_string(),
        _ if !env_set => "the default, since CUFILE_ENV_PATH_JSON is unset".to_string(),
        other => other.to_string(),
    };
    parse_config(Some(&path), &why, Some(std::fs::read_to_string(&path)))
}

/// Judges a cufile.json's text: its syntax (JSONC, as cuFile reads it), the settings that
/// matter and the keys NVIDIA does not document.
pub fn parse_config(
    path: Option<&Path>,
    why: &str,
    text: Option<std::io::Result<String>>,
) -> ConfigFacts {
    let mut facts = ConfigFacts {
        path: path.map(|p| p.display().to_string()),
        why: why.to_string(),
        status: ConfigStatus::Absent,
        settings: BTreeMap::new(),
        unknown_keys: Vec::new(),
    };
    let (Some(path), Some(text)) = (path, text) else {
        return facts;
    };
    let text = match text {
        Ok(text) => text,
        Err(error) => {
            facts.status = ConfigStatus::Unreadable {
                error: error.to_string(),
            };
            return facts;
        }
    };
    let map = match cufile_config::parse(path, &text) {
        Ok(map) => map,
        Err(ConfigError::Syntax {
            line,
            column,
            message,
            ..
        }) => {
            facts.status = ConfigStatus::Syntax {
                line,
                column,
                message,
            };
            return facts;
        }
        Err(ConfigError::NotAnObject { .. }) => {
            facts.status = ConfigStatus::NotAnObject;
            return facts;
        }
        Err(other) => {
            facts.status = ConfigStatus::Unreadable {
                error: other.to_string(),
            };
            return facts;
        }
    };
    facts.status = ConfigStatus::Parsed;
    for (key, _) in SETTINGS {
        if let Some(value) = lookup(&map, key) {
            facts.settings.insert(key.to_string(), value.clone());
        }
    }
    unknown_keys("", &map, &mut facts.unknown_keys);
    facts
}

fn lookup<'a>(map: &'a Map<String, Value>, dotted: &str) -> Option<&'a Value> {
    let mut parts = dotted.split('.');
    let mut value = map.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// Leaves that are not documented keys; a documented key's value is never looked into (mount
/// tables are maps of the user's own names).
fn unknown_keys(prefix: &str, map: &Map<String, Value>, out: &mut Vec<UnknownKey>) {
    for (key, value) in map {
        let path = match prefix {
            "" => key.clone(),
            _ => format!("{prefix}.{key}"),
        };
        if KNOWN_KEYS.contains(&path.as_str()) {
            continue;
        }
        let is_section = KNOWN_KEYS
            .iter()
            .any(|known| known.starts_with(&format!("{path}.")));
        match value {
            Value::Object(inner) if is_section => unknown_keys(&path, inner, out),
            _ => out.push(UnknownKey {
                suggestion: cufile_config::check_key(&path)
                    .err()
                    .and_then(|error| match error {
                        ConfigError::UnknownKey { suggestion, .. } => suggestion,
                        _ => None,
                    }),
                key: path,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_and_unknown_keys() {
        let text = r#"{
            // a comment, as cuFile allows
            "properties": { "allow_compat_mode": false, "use_pci_p2pdma": true, "alow_compat": 1 },
            "execution": { "max_io_threads": 8 },
            "fs": { "lustre": { "mount_table": { "/lustre/a": { "mgs": "x" } } } },
            "extra": { "thing": 1 }
        }"#;
        let facts = parse_config(
            Some(Path::new("/etc/cufile.json")),
            "test",
            Some(Ok(text.into())),
        );
        assert_eq!(facts.status, ConfigStatus::Parsed);
        assert_eq!(facts.settings["properties.allow_compat_mode"], false);
        assert_eq!(facts.settings["execution.max_io_threads"], 8);
        assert!(!facts.settings.contains_key("profile.cufile_stats"));
        let keys: Vec<&str> = facts.unknown_keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, vec!["extra", "properties.alow_compat"]);
        assert_eq!(
            facts.unknown_keys[1].suggestion.as_deref(),
            Some("properties.allow_compat_mode")
        );
    }

    #[test]
    fn a_syntax_error_is_a_fact_with_its_position() {
        let text = "{\n  \"logging\": {\n    \"level\": \"ERROR\"\n  \n  \"profile\": {}\n}";
        let facts = parse_config(
            Some(Path::new("/etc/cufile.json")),
            "t",
            Some(Ok(text.into())),
        );
        assert!(
            matches!(
                facts.status,
                ConfigStatus::Syntax {
                    line: 3,
                    column: 21,
                    ..
                }
            ),
            "{:?}",
            facts.status
        );
        let none = parse_config(None, "none", None);
        assert_eq!(none.status, ConfigStatus::Absent);
    }
}
