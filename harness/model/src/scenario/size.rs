//! Byte sizes and fractions as people write them in scenario files: `4GiB`, `64 KiB`, `4096`, `10%`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

const UNITS: [(&str, u64); 5] = [
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("B", 1),
];

/// A size in bytes. Binary units only: `4GB` is rejected rather than guessed, since GB vs GiB is a
/// 7% difference that would silently skew every throughput figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, schemars::JsonSchema)]
pub struct ByteSize(pub u64);

/// Why a size as written does not parse; each names the text and what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("expected a size such as `4GiB`, `512MiB` or `4096`, found `{0}`")]
    NotASize(String),
    #[error("size `{0}` is too large")]
    TooLarge(String),
    #[error(
        "unknown size unit `{unit}` in `{text}`; expected one of B, KiB, MiB, GiB, TiB{}",
        suggestion.map(|name| format!(" (did you mean `{name}`? decimal units are not accepted)")).unwrap_or_default()
    )]
    UnknownUnit {
        text: String,
        unit: String,
        /// The binary unit the user probably meant (`GiB` for `GB` or `g`).
        suggestion: Option<&'static str>,
    },
}

impl ByteSize {
    pub fn parse(text: &str) -> Result<ByteSize, SizeError> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit() && c != '_')
            .unwrap_or(text.len());
        let (digits, unit) = (&text[..split], text[split..].trim());
        let digits: String = digits.chars().filter(|&c| c != '_').collect();
        if digits.is_empty() {
            return Err(SizeError::NotASize(text.to_string()));
        }
        let number: u64 = digits
            .parse()
            .map_err(|_| SizeError::TooLarge(text.to_string()))?;
        let multiplier = match UNITS.iter().find(|(name, _)| *name == unit) {
            Some((_, multiplier)) => *multiplier,
            None if unit.is_empty() => 1,
            None => return Err(unknown_unit(text, unit)),
        };
        number
            .checked_mul(multiplier)
            .map(ByteSize)
            .ok_or_else(|| SizeError::TooLarge(text.to_string()))
    }
}

fn unknown_unit(text: &str, unit: &str) -> SizeError {
    let suggestion = UNITS
        .iter()
        .find(|(name, _)| {
            name.eq_ignore_ascii_case(unit)
                || name.replace('i', "").eq_ignore_ascii_case(unit)
                || name[..1].eq_ignore_ascii_case(unit)
        })
        .map(|(name, _)| *name);
    SizeError::UnknownUnit {
        text: text.to_string(),
        unit: unit.to_string(),
        suggestion,
    }
}

impl fmt::Display for ByteSize {
    /// The largest binary unit that represents the size exactly, so that names stay reproducible.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match UNITS
            .iter()
            .find(|(_, multiplier)| self.0 != 0 && self.0.is_multiple_of(*multiplier))
        {
            Some((unit, multiplier)) if *multiplier > 1 => {
                write!(f, "{}{unit}", self.0 / multiplier)
            }
            _ => write!(f, "{}", self.0),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as `4GiB`, `512MiB` or a number of bytes")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("size must not be negative, found {v}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ByteSize, E> {
                Err(E::custom(format!(
                    "size must be a whole number of bytes or have a unit, found {v}"
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                if v.trim_start().starts_with('-') {
                    return Err(E::custom(format!("size must not be negative, found `{v}`")));
                }
                ByteSize::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A size that must be greater than zero (file sizes, chunk and task sizes).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct PositiveSize(pub ByteSize);

impl PositiveSize {
    pub fn bytes(self) -> u64 {
        self.0.0
    }
}

impl<'de> Deserialize<'de> for PositiveSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let size = ByteSize::deserialize(deserializer)?;
        if size.0 == 0 {
            return Err(de::Error::custom("size must be greater than zero"));
        }
        Ok(PositiveSize(size))
    }
}

impl fmt::Display for PositiveSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A run time written as humantime reads it: `5m`, `90s`, `1h 30m`; more than zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Budget(pub std::time::Duration);

impl Budget {
    pub fn parse(text: &str) -> Result<Budget, BudgetError> {
        let bad = |why: String| BudgetError {
            text: text.to_string(),
            why,
        };
        let duration = humantime::parse_duration(text.trim()).map_err(|e| bad(e.to_string()))?;
        if duration.is_zero() {
            return Err(bad("it is zero".into()));
        }
        Ok(Budget(duration))
    }
}

#[derive(Debug, thiserror::Error)]
#[error("`{text}` is not a time budget ({why}); write a duration such as `5m`, `90s` or `1h 30m`")]
pub struct BudgetError {
    text: String,
    why: String,
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Budget::parse(&text).map_err(de::Error::custom)
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

/// A fraction written as `10%` or `0.1`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Fraction(pub f64);

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a fraction such as `10%` or `0.1`")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Fraction, E> {
                if (0.0..=1.0).contains(&v) {
                    Ok(Fraction(v))
                } else {
                    Err(E::custom(format!(
                        "expected a fraction between 0 and 1 (or a percentage such as `10%`), found {v}"
                    )))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Fraction, E> {
                self.visit_f64(v as f64)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Fraction, E> {
                self.visit_f64(v as f64)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Fraction, E> {
                let number = v.trim().strip_suffix('%').ok_or_else(|| {
                    E::custom(format!("expected a percentage such as `10%`, found `{v}`"))
                })?;
                let percent: f64 = number.trim().parse().map_err(|_| {
                    E::custom(format!("expected a percentage such as `10%`, found `{v}`"))
                })?;
                self.visit_f64(percent / 100.0)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_units_and_plain_bytes() {
        assert_eq!(ByteSize::parse("4GiB"), Ok(ByteSize(4 << 30)));
        assert_eq!(ByteSize::parse("64 KiB"), Ok(ByteSize(64 << 10)));
        assert_eq!(ByteSize::parse("4096"), Ok(ByteSize(4096)));
        assert_eq!(ByteSize::parse("1_000B"), Ok(ByteSize(1000)));
    }

    #[test]
    fn rejects_decimal_and_unknown_units_with_a_hint() {
        let error = ByteSize::parse("4GB").unwrap_err().to_string();
        assert!(error.contains("did you mean `GiB`"), "{error}");
        let error = ByteSize::parse("4 parsecs").unwrap_err().to_string();
        assert!(error.contains("expected one of B, KiB"), "{error}");
        assert!(ByteSize::parse("GiB").is_err());
        assert!(
            ByteSize::parse("99999999999999TiB")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
    }

    #[test]
    fn displays_the_largest_exact_unit() {
        assert_eq!(ByteSize(4 << 30).to_string(), "4GiB");
        assert_eq!(ByteSize(1536 << 10).to_string(), "1536KiB");
        assert_eq!(ByteSize(4097).to_string(), "4097");
        assert_eq!(ByteSize(0).to_string(), "0");
    }
}
