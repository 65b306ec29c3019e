//! A tool's parameter names and descriptions, read from its JSON Schema text in one pass: no
//! tree of the schema is built, and everything else in it is skipped (an index build reads
//! ten thousand schemas).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Nested schemas deeper than this add little and cost build time.
const MAX_DEPTH: usize = 3;

/// Bytes of names and descriptions kept from one schema, in the order they come: no more of a
/// tool is indexed (`documents::MAX_DOC_BYTES`), and a schema of a million properties would
/// otherwise be a million strings.
pub(super) const MAX_PARAMS_BYTES: usize = 64 << 10;

/// The names and descriptions of the properties of a schema.
#[derive(Debug, Default)]
pub struct Params<'a> {
    pub names: Vec<Cow<'a, str>>,
    pub descriptions: Vec<Cow<'a, str>>,
    /// Bytes of `names` and `descriptions`.
    bytes: usize,
}

impl<'a> Params<'a> {
    /// The properties of `schema` and of its nested schemas (`properties`, `items`), down to
    /// [`MAX_DEPTH`], in place of what this held. Any JSON is read: a part that is not a
    /// schema (a boolean subschema, a description that is not text) adds nothing, and text
    /// that is not JSON adds nothing.
    pub fn read(&mut self, schema: &'a str) {
        self.names.clear();
        self.descriptions.clear();
        self.bytes = 0;
        let mut json = serde_json::Deserializer::from_str(schema);
        let read = Reader {
            params: self,
            depth: 0,
            part: Part::Schema { property: false },
        }
        .deserialize(&mut json)
        .and_then(|()| json.end());
        if read.is_err() {
            self.names.clear();
            self.descriptions.clear();
        }
    }
}

/// What the JSON value being read is.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// A schema; a property's own description counts.
    Schema { property: bool },
    /// A schema's `properties`: parameter names to schemas.
    Properties,
    /// A parameter's name.
    Name,
    /// A parameter's description.
    Description,
}

/// The keys of a schema that the search reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Properties,
    Items,
    Description,
    #[serde(other)]
    Other,
}

struct Reader<'p, 'a> {
    params: &'p mut Params<'a>,
    depth: usize,
    part: Part,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Reader<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'a> Reader<'_, 'a> {
    /// Whether the text read next would be kept: escaped text is copied to be kept.
    fn keeps_text(&self) -> bool {
        matches!(self.part, Part::Name | Part::Description) && self.params.bytes < MAX_PARAMS_BYTES
    }

    fn push(self, text: Cow<'a, str>) {
        if !self.keeps_text() {
            return;
        }
        self.params.bytes += text.len();
        match self.part {
            Part::Name => self.params.names.push(text),
            Part::Description => self.params.descriptions.push(text),
            Part::Schema { .. } | Part::Properties => {}
        }
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Reader<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let Reader {
            params,
            depth,
            part,
        } = self;
        match part {
            Part::Schema { property } => {
                while let Some(key) = map.next_key::<Key>()? {
                    let (part, depth) = match key {
                        Key::Properties if depth <= MAX_DEPTH => (Part::Properties, depth),
                        Key::Items if depth <= MAX_DEPTH => {
                            (Part::Schema { property: false }, depth + 1)
                        }
                        Key::Description if property => (Part::Description, depth),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    map.next_value_seed(Reader {
                        params: &mut *params,
                        depth,
                        part,
                    })?;
                }
            }
            Part::Properties => {
                while map
                    .next_key_seed(Reader {
                        params: &mut *params,
                        depth,
                        part: Part::Name,
                    })?
                    .is_some()
                {
                    map.next_value_seed(Reader {
                        params: &mut *params,
                        depth: depth + 1,
                        part: Part::Schema { property: true },
                    })?;
                }
            }
            Part::Name | Part::Description => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            }
        }
        Ok(())
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<(), E> {
        self.push(Cow::Borrowed(text));
        Ok(())
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        if self.keeps_text() {
            self.push(Cow::Owned(text.to_string()));
        }
        Ok(())
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The reading this module replaces: a tree of the schema, then its properties.
    fn from_tree(
        schema: &Value,
        depth: usize,
        names: &mut Vec<String>,
        descriptions: &mut Vec<String>,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                names.push(name.clone());
                if let Some(description) = property.get("description").and_then(Value::as_str) {
                    descriptions.push(description.to_string());
                }
                from_tree(property, depth + 1, names, descriptions);
            }
        }
        if let Some(items) = schema.get("items") {
            from_tree(items, depth + 1, names, descriptions);
        }
    }

    fn sorted(list: impl IntoIterator<Item = impl ToString>) -> Vec<String> {
        let mut list: Vec<String> = list.into_iter().map(|s| s.to_string()).collect();
        list.sort();
        list
    }

    #[test]
    fn reads_what_a_tree_of_the_schema_holds() {
        let deep = json!({"properties": {"d": {"description": "four", "properties": {"e": {}}}}});
        let schemas = [
            json!({"type": "object", "description": "not a parameter", "properties": {
                "city": {"type": "string", "description": "City \"name\""},
                "days": {"type": "integer"},
                "tags": {"type": "array", "items": {"properties": {"tag": {"description": "a tag"}}}},
                "flag": true,
                "odd": {"description": 3, "properties": [1, 2]},
                "deep": {"properties": {"a": {"properties": {"b": {"properties": {"c": deep}}}}}}
            }}),
            json!({"items": {"items": {"properties": {"x": {"description": "x"}}}}}),
            json!(true),
            json!({"properties": null, "items": null, "description": {"nested": "object"}}),
        ];
        for schema in schemas {
            let (mut names, mut descriptions) = (Vec::new(), Vec::new());
            from_tree(&schema, 0, &mut names, &mut descriptions);
            let text = schema.to_string();
            let mut params = Params::default();
            params.read(&text);
            assert_eq!(sorted(&params.names), sorted(names), "{schema}");
            assert_eq!(
                sorted(&params.descriptions),
                sorted(descriptions),
                "{schema}"
            );
        }
    }

    #[test]
    fn a_schema_keeps_names_and_descriptions_up_to_a_bound() {
        let description = "d".repeat(1000);
        let properties: serde_json::Map<String, Value> = (0..1000)
            .map(|i| (format!("p{i}"), json!({"description": description})))
            .collect();
        let text = json!({"properties": properties}).to_string();
        let mut params = Params::default();
        params.read(&text);
        let kept: usize = params
            .names
            .iter()
            .chain(&params.descriptions)
            .map(|t| t.len())
            .sum();
        assert!(
            (MAX_PARAMS_BYTES..MAX_PARAMS_BYTES + 1004).contains(&kept),
            "{kept}"
        );
        // The first ones, in the schema's order.
        assert_eq!(params.names.first().map(|n| n.as_ref()), Some("p0"));
    }

    #[test]
    fn text_that_is_not_json_has_no_parameters() {
        for text in [
            "",
            "{\"properties\": {\"a\": {}}",
            "{} trailing",
            "not json",
        ] {
            let mut params = Params::default();
            params.read(text);
            assert!(
                params.names.is_empty() && params.descriptions.is_empty(),
                "{text}"
            );
        }
    }
}
