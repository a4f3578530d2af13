//! 64-bit checksums as `0x`-prefixed 16-digit hex in every file people read: JSON numbers above
//! 2^53 are rounded by many JSON tools, and hex is what people compare by eye.

use serde::{Deserialize, Deserializer, Serializer, de};

pub fn format(value: u64) -> String {
    format!("0x{value:016x}")
}

pub fn parse(text: &str) -> Option<u64> {
    u64::from_str_radix(text.strip_prefix("0x")?, 16).ok()
}

/// Bytes from a hex string (two digits per byte), as the Python worker sends cuFile's structs.
pub fn decode_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The JSON Schema of a checksum as these functions write it: `#[schemars(with = "Hex")]` beside
/// `#[serde(with = "hex")]` (and `Option<Hex>` beside `hex::option`).
pub struct Hex;

impl schemars::JsonSchema for Hex {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Hex".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A 64-bit checksum as `0x` and 16 lowercase hex digits.",
            "type": "string",
            "pattern": "^0x[0-9a-f]{16}$"
        })
    }
}

pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format(*value))
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse(&text).ok_or_else(|| {
        de::Error::custom(format!(
            "expected a checksum such as 0x00ff00ff00ff00ff, found `{text}`"
        ))
    })
}

pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => super::serialize(value, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        struct Hex(#[serde(with = "super")] u64);
        Ok(Option::<Hex>::deserialize(deserializer)?.map(|Hex(value)| value))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips() {
        assert_eq!(super::format(0xff), "0x00000000000000ff");
        assert_eq!(super::parse("0x00000000000000ff"), Some(0xff));
        assert_eq!(super::parse("ff"), None);
        assert_eq!(super::decode_bytes("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(super::decode_bytes("0f0"), None);
        assert_eq!(super::decode_bytes("zz"), None);
    }
}
