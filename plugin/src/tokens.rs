//! What a tool's schema costs in a request, counted by the host's tokenizer
//! or, when the host has none, estimated on the safe side.

use rustc_hash::{FxHashMap, FxHashSet};

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
    by_fingerprint: FxHashMap<u64, u32>,
}

impl TokenCosts {
    /// Counts every tool whose schema has not been counted yet.
    pub fn ensure<'a>(&mut self, tools: impl IntoIterator<Item = &'a ToolDef>, host: &impl Host) {
        // A set, not a scan of the list: a first fetch of ten thousand tools is ten thousand
        // new fingerprints.
        let mut pending: FxHashSet<u64> = FxHashSet::default();
        let (keys, texts): (Vec<u64>, Vec<String>) = tools
            .into_iter()
            .filter_map(|tool| {
                let key = tool.fingerprint();
                (!self.by_fingerprint.contains_key(&key) && pending.insert(key))
                    .then(|| (key, schema_text(tool)))
            })
            .unzip();
        if keys.is_empty() {
            return;
        }
        let counts = host
            .count_tokens(&texts)
            .filter(|counts| counts.len() == texts.len());
        let counts = counts.unwrap_or_else(|| texts.iter().map(|t| estimate_tokens(t)).collect());
        self.by_fingerprint.extend(keys.into_iter().zip(counts));
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
    use std::cell::RefCell;

    use super::*;
    use crate::host::LogLevel;
    use crate::registry::{LazyGroup, Origin, ToolGroup};

    /// A shell whose tokenizer counts a text's bytes and remembers what it was asked.
    #[derive(Default)]
    struct CountingHost {
        asked: RefCell<Vec<Vec<String>>>,
    }

    impl Host for CountingHost {
        fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>> {
            self.asked.borrow_mut().push(texts.to_vec());
            Some(texts.iter().map(|t| t.len() as u32).collect())
        }
        fn registry(&self) -> Vec<ToolDef> {
            unreachable!("costs never fetch the registry")
        }
        fn allowed_tools(&self, _: &str) -> Result<Vec<String>, String> {
            unreachable!("costs never ask")
        }
        fn expose(&self, _: &str, _: Option<&[String]>) -> Result<(), String> {
            unreachable!("costs never expose")
        }
        fn log(&self, _: LogLevel, _: &str) {}
        fn tool_groups(&self) -> Vec<ToolGroup> {
            Vec::new()
        }
        fn tools_generation(&self) -> u64 {
            0
        }
        fn agent_generation(&self, _: &str) -> u64 {
            0
        }
        fn lazy_groups(&self) -> Vec<LazyGroup> {
            Vec::new()
        }
        fn load_group(&self, _: &str) -> Result<Vec<ToolDef>, String> {
            unreachable!("costs never load")
        }
    }

    fn def(name: &str, description: &str, origin: Origin) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: description.into(),
            parameters: r#"{"type":"object"}"#.into(),
            origin,
        }
    }

    #[test]
    fn each_schema_is_counted_once_in_one_call_and_never_again() {
        let host = CountingHost::default();
        let mut costs = TokenCosts::default();
        let a = def("a", "first", Origin::Builtin);
        // The same definition from another scope: the same schema, counted once.
        let a_again = def("a", "first", Origin::Agent("x".into()));
        let b = def("b", "second tool", Origin::Builtin);
        let c = def("c", "third", Origin::Mcp("s".into()));
        costs.ensure([&a, &b, &a_again, &c], &host);
        assert_eq!(
            *host.asked.borrow(),
            vec![vec![schema_text(&a), schema_text(&b), schema_text(&c)]]
        );
        let d = def("d", "fourth", Origin::Builtin);
        costs.ensure([&c, &d, &a], &host);
        costs.ensure([&a, &b], &host);
        assert_eq!(host.asked.borrow().len(), 2, "only d was new");
        assert_eq!(host.asked.borrow()[1], vec![schema_text(&d)]);
        for tool in [&a, &a_again, &b, &c, &d] {
            assert_eq!(costs.cost(tool), schema_text(tool).len() as u32);
        }
    }

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
