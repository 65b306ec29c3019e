//! JSON values read from a user's files and input as they were written, or refused: a
//! `serde_json::Value` read directly keeps the last of two equal keys and reads an integer past
//! 64 bits as the nearest float, and neither says so. Any serde format reads through these
//! (a steps file's YAML, the session's typed arguments). A catalog's schemas, which machines
//! write, are read with [`JsonValue`]: its keys checked, its numbers as they come (a bound of
//! `3.4e38` is a float, and the parser cannot tell it from an integer so written).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::terminal::escape;

/// The JSON number for `v`, a number the parser read as a float; an error when it is past the
/// 64-bit integers (a parser reads a larger integer as the nearest float, so it would reach the
/// tool rounded) or has no JSON form (infinities, NaN).
pub fn number_from_f64(v: f64) -> Result<Number, String> {
    // 2^64 and -2^63: the u64 and i64 ends. At -2^63 itself only an integer past i64::MIN,
    // rounded, arrives here (i64::MIN is read as an integer).
    if v.fract() == 0.0 && (v >= 2f64.powi(64) || v <= -(2f64.powi(63))) {
        return Err(format!(
            "the number {v:e} is past the 64-bit integers; an integer so large would be read \
             rounded, so such numbers are refused: write it in quotes to pass it as text"
        ));
    }
    Number::from_f64(v).ok_or_else(|| format!("the number {v} has no JSON form"))
}

/// A JSON value read strictly: no key twice in an object, no number past the 64-bit integers.
#[derive(Debug, Clone, PartialEq)]
pub struct StrictValue(pub Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StrictVisitor { numbers: true }
            .value(deserializer)
            .map(StrictValue)
    }
}

/// A JSON value with no key twice in an object; numbers as the parser reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonValue(pub Value);

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StrictVisitor { numbers: false }
            .value(deserializer)
            .map(JsonValue)
    }
}

/// A JSON document read only to refuse an object that names a key twice, anywhere in it,
/// keys nobody reads too: building nothing, so a catalog of hundreds of megabytes is checked
/// in its own size. (A struct's reader refuses a repeated field, but the keys it passes over
/// are read as `IgnoredAny`, where the last of two equal ones is kept without a word.)
pub struct NoRepeatedKeys;

impl<'de> Deserialize<'de> for NoRepeatedKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KeysVisitor)
    }
}

struct KeysVisitor;

impl<'de> Visitor<'de> for KeysVisitor {
    type Value = NoRepeatedKeys;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }

    fn visit_f64<E>(self, _: f64) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }

    fn visit_str<E>(self, _: &str) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NoRepeatedKeys, A::Error> {
        while seq.next_element::<NoRepeatedKeys>()?.is_some() {}
        Ok(NoRepeatedKeys)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoRepeatedKeys, A::Error> {
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(key) = keys.replace(key) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}`",
                    escape(&key)
                )));
            }
            map.next_value::<NoRepeatedKeys>()?;
        }
        Ok(NoRepeatedKeys)
    }
}

/// For `#[serde(deserialize_with)]` on a `Value` field.
pub fn value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    StrictValue::deserialize(deserializer).map(|StrictValue(v)| v)
}

/// For `#[serde(default, deserialize_with)]` on an `Option<Value>` field.
pub fn optional_value<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Ok(Option::<StrictValue>::deserialize(deserializer)?.map(|StrictValue(v)| v))
}

struct StrictVisitor {
    /// Whether numbers past the 64-bit integers are refused.
    numbers: bool,
}

impl StrictVisitor {
    fn value<'de, D: Deserializer<'de>>(&self, deserializer: D) -> Result<Value, D::Error> {
        let visitor = StrictVisitor {
            numbers: self.numbers,
        };
        deserializer.deserialize_any(visitor)
    }
}

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.value(deserializer)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if !self.numbers {
            return Number::from_f64(v)
                .map(Value::Number)
                .ok_or_else(|| E::custom(format!("the number {v} has no JSON form")));
        }
        number_from_f64(v).map(Value::Number).map_err(E::custom)
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed(&self))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let item = map.next_value_seed(Seed(&self))?;
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}`",
                    escape(&key)
                )));
            }
            object.insert(key, item);
        }
        Ok(Value::Object(object))
    }
}

/// Reads a nested value as its parent is read.
struct Seed<'a>(&'a StrictVisitor);

impl<'de> de::DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.0.value(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(json: &str) -> Result<Value, String> {
        serde_json::from_str::<StrictValue>(json)
            .map(|StrictValue(v)| v)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_value_written_plainly_reads_as_serde_json_reads_it() {
        let json = r#"{"a": [1, -2, 2.5, 18446744073709551615, -9223372036854775808, 1e19, null, true, "x"], "b": {}}"#;
        assert_eq!(
            strict(json).unwrap(),
            serde_json::from_str::<Value>(json).unwrap()
        );
    }

    #[test]
    fn a_key_written_twice_is_refused_not_overwritten() {
        let err = strict(r#"{"properties": {"a": 1}, "properties": {"b": 2}}"#).unwrap_err();
        assert!(
            err.starts_with("duplicate key `properties` at line 1"),
            "{err}"
        );
        // Nested objects too, and equal keys in different objects are fine.
        assert!(strict(r#"{"a": {"x": 1, "x": 2}}"#).is_err());
        assert!(strict(r#"{"a": {"x": 1}, "b": {"x": 2}}"#).is_ok());
    }

    #[test]
    fn an_integer_past_64_bits_is_refused_not_rounded() {
        for json in [
            "123456789012345678901234567890",
            "18446744073709551616",
            "-9223372036854775809",
            "-99999999999999999999",
            "1e300",
        ] {
            let err = strict(json).unwrap_err();
            assert!(err.contains("is past the 64-bit integers"), "{json}: {err}");
        }
        // The ends themselves, and floats within them, are read.
        assert!(strict("18446744073709551615").is_ok());
        assert!(strict("-9223372036854775808").is_ok());
        assert!(strict("1.5e18").is_ok());
    }

    /// A catalog's schema may bound a number by a large float (`3.4e38`, a float32's range):
    /// read as written, its keys still checked.
    #[test]
    fn json_values_keep_large_numbers_and_refuse_repeated_keys() {
        let json =
            r#"{"maximum": 3.4028234663852886e38, "minimum": -9.223372036854776e18, "n": [1e300]}"#;
        let JsonValue(read) = serde_json::from_str(json).unwrap();
        assert_eq!(read, serde_json::from_str::<Value>(json).unwrap());
        assert!(serde_json::from_str::<JsonValue>(r#"{"a": {"x": 1, "x": 2}}"#).is_err());
    }
}
