//! What a tool's schema costs in a request, counted by the host's tokenizer
//! or, when the host has none, estimated on the safe side.

use crate::keyed_hash::{KeyedMap, KeyedSet};
use smallvec::SmallVec;

use crate::host::Host;
use crate::registry::{Origin, Registry, ToolDef};
use crate::swar::{self, HIGH};

/// The text a tool adds to a request: compact JSON
/// `{"name","description","input_schema"}`, the form the Anthropic and MCP
/// APIs send. The host hands parameters over as compact JSON already, so
/// they are inserted as given.
pub fn schema_text(tool: &ToolDef) -> String {
    let parameters = parameters_text(tool);
    // Written in place, not with `format!`: a first fetch renders ten thousand schemas, and
    // in the component the formatting machinery was half of rendering them.
    let mut text = Vec::with_capacity(
        tool.name.len() + tool.description.len() + parameters.len() + FRAME_LEN + 8,
    );
    let [open, description, schema, close] = FRAME;
    text.extend_from_slice(open.as_bytes());
    // Writing to a vector cannot fail.
    let _ = serde_json::to_writer(&mut text, &tool.name);
    text.extend_from_slice(description.as_bytes());
    let _ = serde_json::to_writer(&mut text, &tool.description);
    text.extend_from_slice(schema.as_bytes());
    text.extend_from_slice(parameters.as_bytes());
    text.extend_from_slice(close.as_bytes());
    // Only UTF-8 was written.
    String::from_utf8(text).unwrap_or_default()
}

/// What [`schema_text`] writes around the tool's name, description and parameters; the
/// estimate from a tool's parts counts the same bytes.
const FRAME: [&str; 4] = ["{\"name\":", ",\"description\":", ",\"input_schema\":", "}"];
const FRAME_LEN: usize = FRAME[0].len() + FRAME[1].len() + FRAME[2].len() + FRAME[3].len();

/// The tool's parameters as its schema text holds them: an empty schema for none.
fn parameters_text(tool: &ToolDef) -> &str {
    if tool.parameters.trim().is_empty() {
        "{}"
    } else {
        tool.parameters.as_str()
    }
}

/// A token estimate for hosts that cannot count: one token per 2 ASCII
/// bytes plus 1.5 per other character, rounded up. On the 600 real MCP
/// schemas of the bundled catalogs, o200k and cl100k spend at least 2.46
/// ASCII bytes per token (enum-heavy schemas; 4 to 4.5 on plain English) and
/// at most about one token per CJK character, so the estimate is never
/// below the exact count there and about 2x above it on average: without a
/// counter, budgets trip early rather than late.
pub fn estimate_tokens(text: &str) -> u32 {
    estimate(TextSize::of(text))
}

/// [`estimate_tokens`] of [`schema_text`], from the tool's parts: a host without a counter
/// is not handed the texts, so they are not written (a first fetch of ten thousand tools
/// wrote 6 MB of text to estimate it).
pub fn estimate_schema_tokens(tool: &ToolDef) -> u32 {
    let mut size = TextSize {
        ascii: FRAME_LEN as u64,
        other: 0,
    };
    size.add(TextSize::of_json_string(&tool.name));
    size.add(TextSize::of_json_string(&tool.description));
    size.add(TextSize::of(parameters_text(tool)));
    estimate(size)
}

fn estimate(size: TextSize) -> u32 {
    let tokens = size.ascii.div_ceil(2) + (size.other * 3).div_ceil(2);
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// A text's ASCII characters and its other characters.
#[derive(Debug, Clone, Copy)]
struct TextSize {
    ascii: u64,
    other: u64,
}

impl TextSize {
    /// Counted by bytes, eight at a time: in UTF-8 each character that is not ASCII has one
    /// lead byte, 0xC0 or above, and continuation bytes below it.
    fn of(text: &str) -> Self {
        let mut size = Self { ascii: 0, other: 0 };
        let (chunks, rest) = text.as_bytes().as_chunks::<8>();
        for chunk in chunks {
            size.add(Self::of_chunk(u64::from_le_bytes(*chunk)));
        }
        for &b in rest {
            size.add_byte(b, u64::from(b < 0x80));
        }
        size
    }

    /// The size of `text` written as a JSON string the way `serde_json` writes it: quoted,
    /// `"` and `\` escaped, control characters as `\n`-style or `\u00XX` escapes, and
    /// everything else as it is.
    fn of_json_string(text: &str) -> Self {
        let mut size = Self { ascii: 2, other: 0 };
        let (chunks, rest) = text.as_bytes().as_chunks::<8>();
        for chunk in chunks {
            let word = u64::from_le_bytes(*chunk);
            if needs_escape(word) {
                for &b in chunk {
                    size.add_byte(b, escaped_len(b));
                }
            } else {
                size.add(Self::of_chunk(word));
            }
        }
        for &b in rest {
            size.add_byte(b, escaped_len(b));
        }
        size
    }

    /// Eight bytes' ASCII bytes and lead bytes (both of the top two bits set).
    fn of_chunk(chunk: u64) -> Self {
        Self {
            ascii: u64::from(8 - (chunk & HIGH).count_ones()),
            other: u64::from((chunk & (chunk << 1) & HIGH).count_ones()),
        }
    }

    /// One byte, written as `ascii` ASCII bytes.
    fn add_byte(&mut self, b: u8, ascii: u64) {
        self.ascii += ascii;
        self.other += u64::from(b >= 0xC0);
    }

    fn add(&mut self, other: Self) {
        self.ascii += other.ascii;
        self.other += other.other;
    }
}

/// Whether eight bytes hold one that a JSON string escapes: below 0x20, `"` or `\`. (Tested
/// all three without branching: most chunks hold none.)
fn needs_escape(chunk: u64) -> bool {
    swar::any_below(chunk, 0x20) | swar::holds(chunk, b'"') | swar::holds(chunk, b'\\')
}

/// How many ASCII bytes `b` is written as inside a JSON string (0: part of a character that
/// is not ASCII, which is written as it is).
fn escaped_len(b: u8) -> u64 {
    match b {
        b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0C | b'\r' => 2,
        0x00..=0x1F => 6,
        0x20..=0x7F => 1,
        _ => 0,
    }
}

/// Token costs of tool schemas, keyed by the tool's [`schema_key`](ToolDef::schema_key)
/// (a hash of what the schema text is made of), so a registry change only counts the
/// schemas that are new.
#[derive(Debug, Default)]
pub struct TokenCosts {
    by_schema: KeyedMap<u64, u32>,
    /// The cost of each registered definition, by name and origin. Every agent refresh under
    /// a budget reads the cost of every tool the agent may call: a schema key hashes the
    /// tool's whole text, so it is taken once per registry change, not once per agent.
    by_tool: KeyedMap<String, SmallVec<[(Origin, u32); 1]>>,
}

impl TokenCosts {
    /// Counts the schemas of `changed`'s definitions in `registry` (`None`: of every tool)
    /// that have not been counted yet, and records each definition's cost.
    pub fn update(&mut self, registry: &Registry, changed: Option<&[String]>, host: &impl Host) {
        let tools: Vec<&ToolDef> = match changed {
            Some(names) => {
                // A name can be in the list twice (changed and enriched): recorded once.
                let mut seen: KeyedSet<&str> = KeyedSet::default();
                names
                    .iter()
                    .filter(|name| seen.insert(name.as_str()))
                    .flat_map(|name| {
                        self.by_tool.remove(name);
                        registry.definitions(name)
                    })
                    .collect()
            }
            None => {
                self.by_tool.clear();
                self.by_tool.reserve(registry.tools().len());
                registry.tools().iter().collect()
            }
        };
        if tools.is_empty() {
            return;
        }
        // A host without a counter says so for an empty list as well (WIT `count-tokens`).
        // Then each schema is estimated from its tool's parts, never written, and not keyed:
        // an estimate reads the tool's text once, as its key would.
        let costs: Vec<u32> = if host.count_tokens(&[]).is_some() {
            let keys: Vec<u64> = tools.iter().map(|tool| tool.schema_key()).collect();
            self.count(&tools, &keys, host);
            keys.iter().map(|key| self.by_schema[key]).collect()
        } else {
            tools
                .iter()
                .map(|tool| estimate_schema_tokens(tool))
                .collect()
        };
        if changed.is_some() {
            // `definitions` gave each name's definitions in registration order.
            for (tool, cost) in tools.into_iter().zip(costs) {
                self.by_tool
                    .entry(tool.name.clone())
                    .or_default()
                    .push((tool.origin.clone(), cost));
            }
            return;
        }
        // Each name's definitions in registration order, not the registry's (which a removal
        // reorders, moving its last tool into the gap): `cost` takes a scope's first
        // definition of a name, the one `Registry::lookup` picks. `tools` is the registry's
        // list, so a definition's cost is at its index.
        for (name, positions) in registry.positions_by_name() {
            let defs = positions
                .iter()
                .map(|&at| (tools[at].origin.clone(), costs[at]));
            self.by_tool.insert(name.to_owned(), defs.collect());
        }
    }

    /// Forgets the definitions' costs (no budget needs them); counted schemas are kept.
    pub fn forget_tools(&mut self) {
        self.by_tool = KeyedMap::default();
    }

    /// Counts each of `tools` (schema keys `keys`) whose schema has not been counted yet.
    fn count(&mut self, tools: &[&ToolDef], keys: &[u64], host: &impl Host) {
        // A set, not a scan of the list: a first fetch of ten thousand tools is ten thousand
        // new keys.
        let mut pending: KeyedSet<u64> = KeyedSet::default();
        let (new, texts): (Vec<u64>, Vec<String>) = tools
            .iter()
            .zip(keys)
            .filter(|&(_, &key)| !self.by_schema.contains_key(&key) && pending.insert(key))
            .map(|(tool, &key)| (key, schema_text(tool)))
            .unzip();
        if new.is_empty() {
            return;
        }
        let counts = host
            .count_tokens(&texts)
            .filter(|counts| counts.len() == texts.len());
        let counts = counts.unwrap_or_else(|| texts.iter().map(|t| estimate_tokens(t)).collect());
        self.by_schema.extend(new.into_iter().zip(counts));
    }

    /// The cost of `tool`: its definition's in the registry as last updated; for any other,
    /// its schema's once counted, an estimate otherwise.
    pub fn cost(&self, tool: &ToolDef) -> u32 {
        let recorded = self.by_tool.get(&tool.name).and_then(|defs| {
            defs.iter()
                .find(|(origin, _)| *origin == tool.origin)
                .map(|&(_, cost)| cost)
        });
        recorded.unwrap_or_else(|| {
            // Without a counter nothing is keyed: no key to hash the tool's text for.
            (!self.by_schema.is_empty())
                .then(|| self.by_schema.get(&tool.schema_key()).copied())
                .flatten()
                .unwrap_or_else(|| estimate_schema_tokens(tool))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::host::LogLevel;
    use crate::registry::{LazyGroup, LoadRefusal, Origin, ToolGroup};

    /// A shell whose tokenizer counts a text's bytes and remembers the texts it was asked to
    /// count; with `counts` false, a shell without a tokenizer.
    struct CountingHost {
        counts: bool,
        asked: RefCell<Vec<Vec<String>>>,
    }

    impl Default for CountingHost {
        fn default() -> Self {
            Self {
                counts: true,
                asked: RefCell::default(),
            }
        }
    }

    impl Host for CountingHost {
        fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>> {
            // Asking with no texts only learns whether the host counts.
            if !texts.is_empty() {
                self.asked.borrow_mut().push(texts.to_vec());
            }
            self.counts
                .then(|| texts.iter().map(|t| t.len() as u32).collect())
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
        fn load_group(&self, _: &str, _: &str) -> Result<Vec<ToolDef>, LoadRefusal> {
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
    fn each_schema_is_counted_once_and_each_definition_costs_its_own() {
        let host = CountingHost::default();
        let mut costs = TokenCosts::default();
        let a = def("a", "first", Origin::Builtin);
        // The same definition in an agent's scope: the same schema, counted once.
        let a_scoped = def("a", "first", Origin::Agent("x".into()));
        let b = def("b", "second tool", Origin::Builtin);
        let c = def("c", "third", Origin::Mcp("s".into()));
        let mut registry = Registry::new(
            vec![a.clone(), b.clone(), a_scoped.clone(), c.clone()],
            vec![],
        );
        costs.update(&registry, None, &host);
        assert_eq!(
            *host.asked.borrow(),
            vec![vec![schema_text(&a), schema_text(&b), schema_text(&c)]]
        );
        for tool in [&a, &a_scoped, &b, &c] {
            assert_eq!(costs.cost(tool), schema_text(tool).len() as u32);
        }
        // c changes, d joins, b leaves: only the new schemas are counted, and each name
        // costs what its definition now costs.
        let c_longer = def(
            "c",
            "third, now with a longer description",
            Origin::Mcp("s".into()),
        );
        let d = def("d", "fourth", Origin::Builtin);
        let changed = ["b".to_string(), "c".to_string(), "d".to_string()];
        registry.apply(&changed, vec![c_longer.clone(), d.clone()]);
        costs.update(&registry, Some(&changed), &host);
        assert_eq!(
            host.asked.borrow()[1],
            vec![schema_text(&c_longer), schema_text(&d)]
        );
        for tool in [&a, &a_scoped, &c_longer, &d] {
            assert_eq!(costs.cost(tool), schema_text(tool).len() as u32);
        }
        // A name listed twice is recorded once.
        let twice = ["d".to_string(), "d".to_string()];
        costs.update(&registry, Some(&twice), &host);
        assert_eq!(costs.by_tool["d"].len(), 1);
        // c back as it was: counted before, so not asked again.
        registry.apply(&["c".to_string()], vec![c.clone()]);
        costs.update(&registry, Some(&["c".to_string()]), &host);
        assert_eq!(host.asked.borrow().len(), 2);
        assert_eq!(costs.cost(&c), schema_text(&c).len() as u32);
    }

    /// A name defined twice in one scope (the contract allows it) costs its first registered
    /// definition's schema, the one a load uses, when every cost is counted afresh too, after
    /// a removal moved the second ahead of it in the registry's list.
    #[test]
    fn a_name_defined_twice_costs_its_first_definition_when_all_are_counted() {
        let host = CountingHost::default();
        let mut registry = Registry::new(
            vec![
                def("gone", "Goes.", Origin::Builtin),
                def("dup", "Short.", Origin::Builtin),
                def("dup", "A much, much longer description.", Origin::Builtin),
            ],
            vec![],
        );
        let gone = ["gone".to_string()];
        registry.apply(&gone, vec![]);
        let used = registry.lookup("dup", &["main"]).unwrap();
        assert_eq!(used.description, "Short.");
        let own = schema_text(used).len() as u32;
        for changed in [None, Some(&["dup".to_string()][..])] {
            let mut costs = TokenCosts::default();
            costs.update(&registry, changed, &host);
            assert_eq!(costs.cost(used), own, "{changed:?}");
        }
    }

    #[test]
    fn a_tool_outside_the_registry_costs_its_counted_schema_or_an_estimate() {
        let host = CountingHost::default();
        let mut costs = TokenCosts::default();
        let a = def("a", "first", Origin::Builtin);
        costs.update(&Registry::new(vec![a.clone()], vec![]), None, &host);
        // The same name from another origin, with the same text: the counted schema.
        let elsewhere = def("a", "first", Origin::Mcp("other".into()));
        assert_eq!(costs.cost(&elsewhere), schema_text(&a).len() as u32);
        let unknown = def("z", "never registered", Origin::Builtin);
        assert_eq!(
            costs.cost(&unknown),
            estimate_tokens(&schema_text(&unknown))
        );
    }

    #[test]
    fn a_host_without_a_counter_is_not_handed_the_texts_and_each_schema_is_estimated() {
        let host = CountingHost {
            counts: false,
            asked: RefCell::default(),
        };
        let mut costs = TokenCosts::default();
        let tools = [
            def("a", "first \"quoted\"\n", Origin::Builtin),
            def("b", "股票价格", Origin::Mcp("s".into())),
        ];
        costs.update(&Registry::new(tools.to_vec(), vec![]), None, &host);
        assert!(host.asked.borrow().is_empty());
        for tool in &tools {
            assert_eq!(costs.cost(tool), estimate_tokens(&schema_text(tool)));
        }
    }

    proptest::proptest! {
        #[test]
        fn a_schema_estimated_from_its_parts_is_the_estimate_of_its_text(
            // Runs of plain text, counted eight bytes at a time, between bytes that are not.
            name in "([a-z_]{0,9}[\"\\\\\x00-\x1f\x7fé股]){0,3}",
            description in "([a-zA-Z .]{0,12}[a \"\\\\\x00-\x1f\x7fé股€😀\u{2028}]){0,6}",
            parameters in "(\\{\"type\":\"object\"\\}|[ \t\n\u{3000}]{0,3}|([ a-z]{0,9}[\"é股]){0,3})",
        ) {
            let tool = ToolDef {
                name,
                description,
                parameters,
                origin: Origin::Builtin,
            };
            proptest::prop_assert_eq!(
                estimate_schema_tokens(&tool),
                estimate_tokens(&schema_text(&tool))
            );
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
