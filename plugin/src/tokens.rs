//! What a tool's schema costs in a request, counted by the host's tokenizer
//! or, when the host has none, estimated on the safe side.

use std::collections::HashMap;

use crate::host::Host;
use crate::registry::ToolDef;

/// The text a tool adds to a request: compact JSON
/// `{"name","description","input_schema"}`, the form the Anthropic and MCP
/// APIs send. The host hands parameters over as compact JSON already, so
/// they are inserted as given.
pub fn schema_text(tool: &ToolDef) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let parameters = if tool.parameters.trim().is_empty() {
        "{}"
    } else {
        tool.parameters.as_str()
    };
    format!(
        "{{\"name\":{},\"description\":{},\"input_schema\":{}}}",
        quote(&tool.name),
        quote(&tool.description),
        parameters
    )
}

/// A token estimate for hosts that cannot count: one token per 2 ASCII
/// bytes plus 1.5 per other character, rounded up. On the 600 real MCP
/// schemas of the bundled catalogs, o200k and cl100k spend at least 2.46
/// ASCII bytes per token (enum-heavy schemas; 4 to 4.5 on plain English) and
/// at most about one token per CJK character, so the estimate is never
/// below the exact count there and about 2x above it on average: without a
/// counter, budgets trip early rather than late.
pub fn estimate_tokens(text: &str) -> u32 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    let tokens = ascii.div_ceil(2) + (other * 3).div_ceil(2);
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// Token costs of tool schemas, keyed by a fingerprint of the tool's
/// definition (what the schema text is made of), so a registry change only
/// counts the schemas that are new.
#[derive(Debug, Default)]
pub struct TokenCosts {
    by_fingerprint: HashMap<u64, u32>,
}

impl TokenCosts {
    /// Counts every tool whose schema has not been counted yet.
    pub fn ensure<'a>(&mut self, tools: impl IntoIterator<Item = &'a ToolDef>, host: &impl Host) {
        let mut missing: Vec<(u64, String)> = Vec::new();
        for tool in tools {
            let key = tool.fingerprint();
            if !self.by_fingerprint.contains_key(&key) && !missing.iter().any(|(k, _)| *k == key) {
                missing.push((key, schema_text(tool)));
            }
        }
        if missing.is_empty() {
            return;
        }
        let texts: Vec<String> = missing.iter().map(|(_, t)| t.clone()).collect();
        let counts = host
            .count_tokens(&texts)
            .filter(|counts| counts.len() == texts.len());
        let counts = counts.unwrap_or_else(|| texts.iter().map(|t| estimate_tokens(t)).collect());
        for ((key, _), count) in missing.into_iter().zip(counts) {
            self.by_fingerprint.insert(key, count);
        }
    }

    /// The cost of `tool`, once counted; an estimate otherwise.
    pub fn cost(&self, tool: &ToolDef) -> u32 {
        self.by_fingerprint
            .get(&tool.fingerprint())
            .copied()
            .unwrap_or_else(|| estimate_tokens(&schema_text(tool)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Origin;

    #[test]
    fn schema_text_is_compact_json_in_api_field_order() {
        let tool = ToolDef {
            name: "read".into(),
            description: "Read \"a\" file".into(),
            parameters: r#"{"type":"object"}"#.into(),
            origin: Origin::Builtin,
        };
        assert_eq!(
            schema_text(&tool),
            r#"{"name":"read","description":"Read \"a\" file","input_schema":{"type":"object"}}"#
        );
    }

    #[test]
    fn estimate_counts_ascii_by_halves_and_other_characters_heavier() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 2);
        assert_eq!(estimate_tokens("abcd"), 2);
        assert_eq!(estimate_tokens("股票"), 3);
    }
}
