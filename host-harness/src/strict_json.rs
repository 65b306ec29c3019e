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

/// serde_json's message for `err`, an error reading `text`, with its column counted in
/// characters, as the shell's other messages count it (YAML's, a file that is not UTF-8):
/// serde_json counts bytes, three for each character of a line of Chinese.
pub fn error_in_characters(err: &serde_json::Error, text: &str) -> String {
    match json_error_at(err, text) {
        (message, Some((line, column))) => format!("{message} at line {line} column {column}"),
        (message, None) => message,
    }
}

/// serde_json's message for `err`, an error reading `text`, without its place, and the place:
/// its line and its column in characters, both from 1.
pub fn json_error_at(err: &serde_json::Error, text: &str) -> (String, Option<(usize, usize)>) {
    let message = err.to_string();
    let (line, column) = (err.line(), err.column());
    let place = format!(" at line {line} column {column}");
    let (Some(head), Some(line_text)) = (
        message.strip_suffix(&place),
        text.split('\n').nth(line.saturating_sub(1)),
    ) else {
        return (message, None);
    };
    // serde_json's column is the bytes of the line it has read, which may end inside the
    // character it stopped at: that character counts. At the end of the text it is the bytes
    // of the last line (0 on an empty one), and the place is just past them.
    let read = (column.min(line_text.len())..=line_text.len())
        .find(|&at| line_text.is_char_boundary(at))
        .unwrap_or(line_text.len());
    let at_end = err.classify() == serde_json::error::Category::Eof;
    let characters = line_text[..read].chars().count() + usize::from(at_end);
    (head.to_owned(), Some((line, characters)))
}

/// The first key that one object of `text` (a JSON document a parser has read) names twice,
/// and its byte offset: a scan of the text, so keys nobody reads are checked as written (a
/// struct's reader passes over them as `IgnoredAny`, keeping the last of two equal ones), and
/// nothing else about their values is judged (a `1e400` or a lone surrogate that serde skips).
/// The JS host's `repeatedKey` scans the same way.
pub fn repeated_key(text: &str) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    // A set of keys per open object, `None` per open array. Keys as UTF-16 code units, as
    // JSON's escapes write them: `"\ud800"` and `"\uD800"` are one key, a lone surrogate too.
    let mut open: Vec<Option<std::collections::HashSet<Vec<u16>>>> = Vec::new();
    let mut key_next = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i);
                if key_next && let Some(Some(keys)) = open.last_mut() {
                    let key = code_units(&text[i + 1..end - 1]);
                    if keys.contains(&key) {
                        return Some((i, String::from_utf16_lossy(&key)));
                    }
                    keys.insert(key);
                    key_next = false;
                }
                i = end;
                continue;
            }
            b'{' => {
                open.push(Some(Default::default()));
                key_next = true;
            }
            b'[' => open.push(None),
            b'}' | b']' => {
                open.pop();
                key_next = false;
            }
            b',' => key_next = matches!(open.last(), Some(Some(_))),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The UTF-16 code units a JSON string's text (between its quotes, escapes valid) stands for.
fn code_units(written: &str) -> Vec<u16> {
    let mut units = Vec::with_capacity(written.len());
    let mut chars = written.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            units.extend(c.encode_utf16(&mut [0; 2]).iter());
            continue;
        }
        let unit = match chars.next() {
            Some('b') => 0x08,
            Some('f') => 0x0c,
            Some('n') => 0x0a,
            Some('r') => 0x0d,
            Some('t') => 0x09,
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                u16::from_str_radix(&hex, 16).unwrap_or(0xfffd)
            }
            Some(other) => other as u16,
            None => break,
        };
        units.push(unit);
    }
    units
}

/// The offset just past the string that starts at `start` (a quote) in `bytes`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
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

    /// A column counts characters, as an editor shows them, not serde_json's bytes: after
    /// Chinese text, on the second line, and at a character serde_json read only part of.
    #[test]
    fn a_json_errors_column_counts_characters() {
        let column = |text: &str| {
            let err = serde_json::from_str::<Value>(text).unwrap_err();
            let message = error_in_characters(&err, text);
            let (head, column) = message.rsplit_once(" column ").unwrap();
            assert!(head.starts_with(&err.to_string()[..10]), "{message}");
            column.parse::<usize>().unwrap()
        };
        // `x` is the line's 16th character and its 28th byte.
        let text = "{\"描述\": \"读取文件\", x}";
        assert_eq!(text[..text.find('x').unwrap()].chars().count(), 15);
        assert_eq!(column(text), 16);
        assert_eq!(column("{\"a\": 1,\n \"描述\": \"读取\" x}"), 13);
        // serde_json stops inside `中` (its first byte): the character counts whole.
        assert_eq!(column("{\"a\": 中}"), 7);
        // At the end of the text, the place just past it, as the JS host gives it.
        assert_eq!(column("{\"a\": 1"), 8);
        assert_eq!(column("{\"a\": 1,\n"), 1);
    }

    #[test]
    fn a_repeated_key_is_found_past_strings_that_look_like_structure() {
        let found = repeated_key;
        assert_eq!(found(r#"{"a": "x\"}{[,", "a": 1}"#), Some((17, "a".into())));
        assert_eq!(
            found(r#"{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": "\\"}"#),
            None
        );
        assert_eq!(
            found(r#"[{"k": 1, "k\u00e9": 2, "ké": 3}]"#),
            Some((24, "ké".into()))
        );
        // A lone surrogate, written in two cases: one key, as to the JS host.
        assert_eq!(
            found(r#"{"\ud800": 1, "\uD800": 2}"#),
            Some((14, "\u{fffd}".into()))
        );
        assert_eq!(
            found(r#"{"\ud83d\ude00": 1, "😀": 2}"#),
            Some((20, "😀".into()))
        );
    }

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
