//! The plugin's cached copy of the shell's tool registry. It is fetched once
//! and again only when the host says the registry changed, never per call.

// Fx: the keys are tool and server names from the shell, and SipHash is the slow part of
// filling these maps with ten thousand tools.
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::keyed_hash::{KeyedMap as HashMap, KeyedSet as HashSet};
use smallvec::SmallVec;

use crate::shown;

/// Where a tool comes from (mirrors the WIT `tool-origin`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    Builtin,
    Mcp(String),
    Agent(String),
}

impl Origin {
    /// How near a definition of this origin is to the agent whose `chain` it is (lowest
    /// first), as the shell resolves a name: its own scope's, then its ancestors' nearest
    /// first, then a global one. `None`: another agent's scope, not on the chain.
    pub fn rank_in(&self, chain: &[&str]) -> Option<usize> {
        match self {
            Origin::Agent(a) => chain.iter().position(|scope| scope == a),
            Origin::Builtin | Origin::Mcp(_) => Some(chain.len()),
        }
    }
}

/// A tool as the registry holds it (mirrors the WIT `tool-def`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments, as JSON text.
    pub parameters: String,
    pub origin: Origin,
}

impl ToolDef {
    /// A fingerprint of what the model is shown: name, description and
    /// parameters. An activation holds it, so a tool whose definition
    /// changes is not shown again without being loaded again. FNV-1a over
    /// the three texts (each followed by a 0xff byte, which UTF-8 never
    /// holds): stable across builds, so a saved state restores in a later
    /// run.
    pub fn fingerprint(&self) -> u64 {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0100_0000_01b3;
        let mut hash = OFFSET;
        for part in [&self.name, &self.description, &self.parameters] {
            for byte in part.bytes().chain([0xff]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(PRIME);
            }
        }
        hash
    }

    /// A key of what the model is shown, for the token-cost cache: the same texts as
    /// [`fingerprint`](Self::fingerprint), hashed with XXH3 eight bytes at a time. A first
    /// fetch of ten thousand tools keys 6 MB of text, which FNV-1a's one multiply per byte
    /// made the largest part of counting their costs. Never saved: it may change between
    /// builds, where the fingerprint may not.
    pub fn schema_key(&self) -> u64 {
        use xxhash_rust::xxh3::xxh3_64_with_seed;
        // Each text seeds the next: the key depends on where each one ends.
        [&self.name, &self.description, &self.parameters]
            .iter()
            .fold(0, |seed, part| xxh3_64_with_seed(part.as_bytes(), seed))
    }
}

/// A group of tools (mirrors the WIT `tool-group`): an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGroup {
    pub name: String,
    pub description: String,
}

/// A group the host can load on demand (mirrors the WIT `lazy-group`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyGroup {
    pub name: String,
    pub description: String,
    /// The tools it will register, as far as the host knows them.
    pub tool_names: Vec<String>,
}

/// Why the host did not load a lazy group (mirrors the WIT `load-refusal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadRefusal {
    /// The asking agent may call none of the group's tools; another agent may still load it.
    Denied(String),
    /// The group could not be loaded, whoever asks.
    Failed(String),
}

impl LoadRefusal {
    /// What the model reads.
    pub fn reason(&self) -> &str {
        match self {
            Self::Denied(reason) | Self::Failed(reason) => reason,
        }
    }
}

/// At most this many keywords, examples and descriptions each of one tool's enrichment.
pub const MAX_ENRICHMENT_ITEMS: usize = 32;
/// Each enrichment text is cut to this many characters (a query's limit).
pub const MAX_ENRICHMENT_CHARS: usize = crate::guards::MAX_QUERY_CHARS;

/// Search text the shell knows for a tool beyond its definition (mirrors the WIT
/// `tool-enrichment`, 0.3.0): keywords, example requests, descriptions in other languages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enrichment {
    pub tool: String,
    pub keywords: Vec<String>,
    pub examples: Vec<String>,
    pub descriptions: Vec<String>,
}

/// Where a name's definitions are in a registry's tools. Almost every name has one, kept
/// inline: a full load of ten thousand names allocated ten thousand one-place vectors.
type Positions = SmallVec<[usize; 1]>;

/// A new [`Registry::groups_revision`].
fn next_groups_revision() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What changed in the shell's registry since a revision (mirrors the WIT `registry-delta`,
/// 0.3.0): every name whose definitions changed, and the definitions each has now (none for a
/// name no longer registered).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryDelta {
    pub revision: u64,
    pub names: Vec<String>,
    pub tools: Vec<ToolDef>,
}

#[derive(Debug, Default)]
pub struct Registry {
    tools: Vec<ToolDef>,
    /// Where each name's definitions are in `tools`.
    by_name: HashMap<String, Positions>,
    /// The described groups as the shell last sent them, and each name's place in that list
    /// (a name sent twice: the last).
    groups: Vec<ToolGroup>,
    group_at: HashMap<String, usize>,
    /// Which groups these are: a value no other set of groups in this process had, taken
    /// whenever they are set or change, so that an index can tell it indexed these same groups
    /// without comparing a thousand descriptions (0: a registry made by `default`, with none).
    groups_revision: u64,
    enrichment: HashMap<String, Enrichment>,
    /// The bytes of text the shell sent, kept as it changes (see [`Registry::sent_bytes`]).
    sent: Sent,
    /// The names that do not show as themselves, by the form the model reads (see
    /// [`Registry::shown_as`]); made at the first lookup after a change, since most
    /// registries have none and most calls name a tool as it is.
    shown_as: OnceLock<HashMap<String, SmallVec<[String; 1]>>>,
}

/// Bytes of text a registry holds, by where they come from.
#[derive(Debug, Default, Clone, Copy)]
struct Sent {
    tools: usize,
    groups: usize,
    enrichment: usize,
}

impl ToolDef {
    /// The bytes of its texts: name, description and schema.
    pub fn sent_bytes(&self) -> usize {
        self.name.len() + self.description.len() + self.parameters.len()
    }
}

impl ToolGroup {
    /// The bytes of its texts: name and description.
    pub fn sent_bytes(&self) -> usize {
        self.name.len() + self.description.len()
    }
}

impl Enrichment {
    /// The bytes of its texts.
    pub fn sent_bytes(&self) -> usize {
        (self
            .keywords
            .iter()
            .chain(&self.examples)
            .chain(&self.descriptions))
        .map(String::len)
        .sum()
    }
}

impl Registry {
    pub fn new(tools: Vec<ToolDef>, groups: Vec<ToolGroup>) -> Self {
        let mut by_name: HashMap<String, Positions> =
            HashMap::with_capacity_and_hasher(tools.len(), Default::default());
        for (i, tool) in tools.iter().enumerate() {
            by_name.entry(tool.name.clone()).or_default().push(i);
        }
        let group_at = groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), i))
            .collect();
        let sent = Sent {
            tools: tools.iter().map(ToolDef::sent_bytes).sum(),
            groups: groups.iter().map(ToolGroup::sent_bytes).sum(),
            enrichment: 0,
        };
        Self {
            tools,
            by_name,
            groups,
            group_at,
            groups_revision: next_groups_revision(),
            enrichment: HashMap::default(),
            sent,
            shown_as: OnceLock::new(),
        }
    }

    /// The bytes of text it holds: every definition's name, description and schema, every
    /// described group's name and description, and the enrichment. An index reads no more
    /// of it than this, so a registry under the index's budget by this count is read whole
    /// without counting each tool.
    pub fn sent_bytes(&self) -> usize {
        self.sent.tools + self.sent.groups + self.sent.enrichment
    }

    /// Replaces the definitions of `names` with `tools` (the tools under other names are
    /// ignored), keeping every other definition where it is.
    pub fn apply(&mut self, names: &[String], tools: Vec<ToolDef>) {
        self.shown_as.take();
        for name in names {
            let Some(mut indices) = self.by_name.remove(name) else {
                continue;
            };
            indices.sort_unstable();
            for &index in indices.iter().rev() {
                self.sent.tools -= self.tools.swap_remove(index).sent_bytes();
                // The last definition moved into the gap.
                if let Some(moved) = self.tools.get(index)
                    && let Some(at) = self.by_name.get_mut(&moved.name)
                {
                    let last = self.tools.len();
                    for i in at.iter_mut().filter(|i| **i == last) {
                        *i = index;
                    }
                }
            }
        }
        let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
        for tool in tools {
            if wanted.contains(tool.name.as_str()) {
                self.by_name
                    .entry(tool.name.clone())
                    .or_default()
                    .push(self.tools.len());
                self.sent.tools += tool.sent_bytes();
                self.tools.push(tool);
            }
        }
        // A name still registered keeps its enrichment: the shell says when that changes
        // (`metadata-revision`), and a tool redefined may keep what it had.
        for name in names
            .iter()
            .filter(|name| !self.by_name.contains_key(*name))
        {
            if let Some(removed) = self.enrichment.remove(name) {
                self.sent.enrichment -= removed.sent_bytes();
            }
        }
    }

    /// The names whose definitions differ in `other` (registered in one only, or otherwise
    /// defined).
    pub fn changed_names(&self, other: &Registry) -> Vec<String> {
        let defs = |registry: &'_ Registry, name: &str| -> Positions {
            registry.by_name.get(name).cloned().unwrap_or_default()
        };
        let mut changed: Vec<String> = Vec::new();
        for (name, mine) in &self.by_name {
            let theirs = defs(other, name);
            let same = mine.len() == theirs.len()
                && mine
                    .iter()
                    .zip(&theirs)
                    .all(|(&a, &b)| self.tools[a] == other.tools[b]);
            if !same {
                changed.push(name.clone());
            }
        }
        changed.extend(
            other
                .by_name
                .keys()
                .filter(|name| !self.by_name.contains_key(*name))
                .cloned(),
        );
        changed
    }

    /// Replaces the described groups; returns the names of those added, removed or described
    /// anew, sorted. A shell that keeps no metadata revision sends every group on every
    /// registry change, most often the same list as before: that is told by comparing the two
    /// lists in order, with no hashing. Otherwise the groups that stay keep their entries.
    pub fn set_groups(&mut self, groups: Vec<ToolGroup>) -> Vec<String> {
        let same = |a: &ToolGroup, b: &ToolGroup| {
            crate::names::same(&a.name, &b.name)
                && crate::names::same(&a.description, &b.description)
        };
        if groups.len() == self.groups.len()
            && groups.iter().zip(&self.groups).all(|(a, b)| same(a, b))
        {
            return Vec::new();
        }
        let mut changed = Vec::new();
        {
            // A name sent twice: the last wins, as in `new`.
            let sent: HashMap<&str, usize> = groups
                .iter()
                .enumerate()
                .map(|(i, g)| (g.name.as_str(), i))
                .collect();
            let old = &self.groups;
            self.group_at.retain(|name, at| {
                let Some(&new) = sent.get(name.as_str()) else {
                    changed.push(name.clone());
                    return false;
                };
                if !crate::names::same(&old[*at].description, &groups[new].description) {
                    changed.push(name.clone());
                }
                *at = new;
                true
            });
            for (&name, &at) in &sent {
                if !self.group_at.contains_key(name) {
                    changed.push(name.to_string());
                    self.group_at.insert(name.to_string(), at);
                }
            }
        }
        self.groups = groups;
        self.sent.groups = self.groups.iter().map(ToolGroup::sent_bytes).sum();
        if !changed.is_empty() {
            self.groups_revision = next_groups_revision();
        }
        changed.sort_unstable();
        changed
    }

    /// Which groups the registry describes (see the field): equal revisions, equal groups.
    pub fn groups_revision(&self) -> u64 {
        self.groups_revision
    }

    /// Replaces the enrichment (see [`Registry::with_enrichment`]); returns the names whose
    /// enrichment changed.
    pub fn set_enrichment(&mut self, enrichment: Vec<Enrichment>) -> Vec<String> {
        let old = std::mem::take(&mut self.enrichment);
        let mut new = std::mem::take(self).with_enrichment(enrichment);
        let mut changed: Vec<String> = new
            .enrichment
            .iter()
            .filter(|(name, entry)| old.get(*name) != Some(entry))
            .map(|(name, _)| name.clone())
            .collect();
        changed.extend(
            old.keys()
                .filter(|name| !new.enrichment.contains_key(*name))
                .cloned(),
        );
        std::mem::swap(self, &mut new);
        changed
    }

    /// The described groups (MCP servers), by name.
    pub fn group(&self, name: &str) -> Option<&ToolGroup> {
        self.group_at.get(name).map(|&at| &self.groups[at])
    }

    /// The registry with the shell's enrichment of its tools (the first entry a tool wins;
    /// entries for names not registered are dropped). Each is sized like a query: at most
    /// [`MAX_ENRICHMENT_ITEMS`] texts of each kind, each cut to [`MAX_ENRICHMENT_CHARS`].
    pub fn with_enrichment(mut self, enrichment: Vec<Enrichment>) -> Self {
        let sized = |texts: Vec<String>| -> Vec<String> {
            texts
                .into_iter()
                .take(MAX_ENRICHMENT_ITEMS)
                .map(|t| match t.char_indices().nth(MAX_ENRICHMENT_CHARS) {
                    Some((at, _)) => t[..at].to_string(),
                    None => t,
                })
                .collect()
        };
        for entry in enrichment {
            let entry = Enrichment {
                keywords: sized(entry.keywords),
                examples: sized(entry.examples),
                descriptions: sized(entry.descriptions),
                ..entry
            };
            if self.by_name.contains_key(&entry.tool) && !self.enrichment.contains_key(&entry.tool)
            {
                self.enrichment.insert(entry.tool.clone(), entry);
            }
        }
        self.sent.enrichment = self.enrichment.values().map(Enrichment::sent_bytes).sum();
        self
    }

    /// What the shell adds to a tool's text for search.
    pub fn enrichment_of(&self, name: &str) -> Option<&Enrichment> {
        self.enrichment.get(name)
    }

    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The definition search indexes under `name`: its first global one (a built-in's or an
    /// MCP server's), else its first. An agent's own-scope tool is never deferred to it; were
    /// it indexed in place of a global tool of its name, every other agent's search would rank
    /// that tool by text those agents may not see.
    pub fn indexed(&self, name: &str) -> Option<&ToolDef> {
        self.by_name
            .get(name)
            .and_then(|defs| self.indexed_of(defs))
    }

    /// The definition search indexes of each name, in no particular order.
    pub fn indexed_definitions(&self) -> impl Iterator<Item = &ToolDef> {
        self.by_name
            .values()
            .filter_map(|defs| self.indexed_of(defs))
    }

    fn indexed_of(&self, defs: &[usize]) -> Option<&ToolDef> {
        let global = |&&at: &&usize| !matches!(self.tools[at].origin, Origin::Agent(_));
        let at = defs.iter().find(global).or(defs.first())?;
        Some(&self.tools[*at])
    }

    /// The described groups, in no particular order.
    pub fn groups(&self) -> impl Iterator<Item = &ToolGroup> {
        self.group_at.values().map(|&at| &self.groups[at])
    }

    /// The group a tool belongs to: its MCP server.
    pub fn group_of(&self, tool: &ToolDef) -> Option<&ToolGroup> {
        match &tool.origin {
            Origin::Mcp(server) => self.group(server),
            Origin::Builtin | Origin::Agent(_) => None,
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// True when `name` is registered in `agent`'s own scope.
    pub fn is_own(&self, name: &str, agent: &str) -> bool {
        self.defs(name)
            .any(|t| matches!(&t.origin, Origin::Agent(a) if a == agent))
    }

    /// The definition the agent of `chain` (itself, then its ancestors, nearest first) sees
    /// under `name`: the nearest scope's, the first registered among equals. Another agent's
    /// only when no scope of the chain nor a global one defines it: a name the shell lets
    /// the agent call is then in a scope whose parent the host did not say.
    pub fn lookup(&self, name: &str, chain: &[&str]) -> Option<&ToolDef> {
        self.defs(name)
            .min_by_key(|t| t.origin.rank_in(chain).unwrap_or(usize::MAX))
    }

    /// Every definition registered under `name`, in registration order.
    pub fn definitions<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a ToolDef> + 'a {
        self.defs(name)
    }

    /// Each registered name with where its definitions are, in registration order, the
    /// names in no particular order.
    pub fn positions_by_name(&self) -> impl Iterator<Item = (&str, &[usize])> {
        self.by_name
            .iter()
            .map(|(name, at)| (name.as_str(), at.as_slice()))
    }

    /// Where `name`'s definitions are in [`Registry::tools`], in registration order.
    pub fn positions(&self, name: &str) -> &[usize] {
        self.by_name.get(name).map_or(&[], |at| at.as_slice())
    }

    fn defs<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a ToolDef> + 'a {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| &self.tools[i])
    }

    /// The registered name that shows as `shown` where the model reads it (one line, trimmed:
    /// [`shown::one_line`]), when it is the only one: a name with a line break, a control
    /// character or whitespace at an end cannot be written back as it is. `None` when no
    /// name, or more than one, shows so.
    pub fn shown_as(&self, shown: &str) -> Option<&str> {
        let names = self.shown_as.get_or_init(|| {
            let mut names: HashMap<String, SmallVec<[String; 1]>> = HashMap::default();
            for name in self.by_name.keys() {
                let line = shown::one_line(name);
                let line = line.trim();
                if line != name {
                    names.entry(line.to_owned()).or_default().push(name.clone());
                }
            }
            names
        });
        match names.get(shown).map(SmallVec::as_slice) {
            Some([name]) => Some(name),
            _ => None,
        }
    }

    /// Registered names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn def(name: u8, scope: u8, text: u8) -> ToolDef {
        ToolDef {
            name: format!("t{name}"),
            description: format!("d{text}"),
            parameters: "{}".into(),
            origin: match scope {
                0 => Origin::Builtin,
                1 => Origin::Mcp("s".into()),
                _ => Origin::Agent(format!("a{scope}")),
            },
        }
    }

    #[test]
    fn a_name_is_found_by_the_line_it_shows_as_until_a_change_removes_it() {
        let named = |name: &str| ToolDef {
            name: name.into(),
            ..def(0, 1, 0)
        };
        let mut registry = Registry::new(vec![named("a\nb"), named("c")], vec![]);
        assert_eq!(registry.shown_as("a b"), Some("a\nb"));
        assert_eq!(registry.shown_as("c"), None, "shown as itself");
        registry.apply(
            &["a\nb".into(), " d\u{202e}".into()],
            vec![named(" d\u{202e}")],
        );
        assert_eq!(registry.shown_as("a b"), None);
        assert_eq!(registry.shown_as("d"), Some(" d\u{202e}"));
    }

    #[test]
    fn setting_the_groups_says_which_were_added_removed_or_described_anew() {
        let group = |name: &str, description: &str| ToolGroup {
            name: name.into(),
            description: description.into(),
        };
        let mut registry = Registry::new(
            Vec::new(),
            vec![
                group("kept", "Same."),
                group("gone", "Old."),
                group("told", "Before."),
            ],
        );
        let mut changed = registry.set_groups(vec![
            group("kept", "Same."),
            group("told", "After, a description longer than eight bytes."),
            group("new", "New."),
        ]);
        changed.sort();
        assert_eq!(changed, ["gone", "new", "told"]);
        assert_eq!(registry.group("gone"), None);
        assert_eq!(
            registry.group("told").map(|g| g.description.as_str()),
            Some("After, a description longer than eight bytes.")
        );
        assert!(
            registry
                .set_groups(registry.groups().cloned().collect())
                .is_empty()
        );
        // The same groups in another order change nothing; of a name sent twice the last
        // counts, whether the list is new or the same as before.
        let mut reversed: Vec<ToolGroup> = registry.groups().cloned().collect();
        reversed.reverse();
        assert!(registry.set_groups(reversed).is_empty());
        let twice = vec![
            group("new", "First."),
            group("kept", "Same."),
            group("new", "Last."),
        ];
        assert_eq!(registry.set_groups(twice.clone()), ["new", "told"]);
        assert!(registry.set_groups(twice).is_empty());
        assert_eq!(
            registry.group("new").map(|g| g.description.as_str()),
            Some("Last.")
        );
        assert_eq!(registry.groups().count(), 2);
    }

    fn defs_by_name(registry: &Registry) -> Vec<(String, Vec<ToolDef>)> {
        let mut names: Vec<String> = registry.names().map(str::to_string).collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let defs = registry.defs(&n).cloned().collect();
                (n, defs)
            })
            .collect()
    }

    #[test]
    fn a_schema_key_tells_where_each_text_ends() {
        let tool = |name: &str, description: &str, parameters: &str| ToolDef {
            name: name.into(),
            description: description.into(),
            parameters: parameters.into(),
            origin: Origin::Builtin,
        };
        let key = |t: ToolDef| t.schema_key();
        assert_eq!(key(tool("ab", "c", "{}")), key(tool("ab", "c", "{}")));
        // The same bytes split differently are a different schema.
        assert_ne!(key(tool("ab", "c", "{}")), key(tool("a", "bc", "{}")));
        assert_ne!(key(tool("a", "b{}", "")), key(tool("a", "b", "{}")));
        // The origin is not shown to the model.
        let mcp = ToolDef {
            origin: Origin::Mcp("s".into()),
            ..tool("ab", "c", "{}")
        };
        assert_eq!(key(mcp), key(tool("ab", "c", "{}")));
    }

    /// What a registry says it holds in bytes follows its groups and enrichment as they
    /// change, as a registry made afresh counts them (an index trusts it to skip counting).
    #[test]
    fn sent_bytes_follow_groups_and_enrichment() {
        let group = |name: &str, description: &str| ToolGroup {
            name: name.into(),
            description: description.into(),
        };
        let tools = vec![def(1, 0, 0), def(2, 1, 0)];
        let tools_bytes: usize = tools.iter().map(ToolDef::sent_bytes).sum();
        let mut registry = Registry::new(tools, vec![group("s", "abc")]);
        assert_eq!(registry.sent_bytes(), tools_bytes + 4);
        registry.set_groups(vec![group("s", "abcdef"), group("t", "")]);
        assert_eq!(registry.sent_bytes(), tools_bytes + 8);
        let enrichment = |tool: &str, keyword: &str| Enrichment {
            tool: tool.into(),
            keywords: vec![keyword.into()],
            examples: vec!["ab".into()],
            descriptions: vec![],
        };
        registry.set_enrichment(vec![enrichment("t1", "xyz"), enrichment("nobody", "q")]);
        assert_eq!(registry.sent_bytes(), tools_bytes + 8 + 5);
        registry.set_enrichment(vec![enrichment("t2", "x")]);
        assert_eq!(registry.sent_bytes(), tools_bytes + 8 + 3);
        // A tool redefined keeps its enrichment; a tool removed loses it.
        let t2 = registry.indexed("t2").unwrap().sent_bytes();
        let redefined = ToolDef {
            description: "redefined".into(),
            ..registry.indexed("t2").unwrap().clone()
        };
        let longer = redefined.sent_bytes() - t2;
        registry.apply(&["t2".to_string()], vec![redefined]);
        assert!(registry.enrichment_of("t2").is_some());
        assert_eq!(registry.sent_bytes(), tools_bytes + longer + 8 + 3);
        let t2 = registry.indexed("t2").unwrap().sent_bytes();
        registry.apply(&["t2".to_string()], vec![]);
        assert!(registry.enrichment_of("t2").is_none());
        assert_eq!(registry.sent_bytes(), tools_bytes + longer - t2 + 8);
    }

    proptest! {
        /// A registry that applies a delta holds what a registry of the shell's new list
        /// holds: the same names, each with the same definitions in the same order.
        #[test]
        fn applying_a_delta_equals_fetching_the_whole_registry(
            before in prop::collection::vec((0u8..12, 0u8..4, 0u8..3), 0..30),
            names in prop::collection::vec(0u8..14, 0..6),
            after in prop::collection::vec((0u8..14, 0u8..4, 0u8..3), 0..10),
        ) {
            let before: Vec<ToolDef> = before.into_iter().map(|(n, s, t)| def(n, s, t)).collect();
            let names: Vec<String> = names.into_iter().map(|n| format!("t{n}")).collect();
            let after: Vec<ToolDef> = after
                .into_iter()
                .map(|(n, s, t)| def(n, s, t))
                .filter(|t| names.contains(&t.name))
                .collect();
            let mut applied = Registry::new(before.clone(), vec![]);
            applied.apply(&names, after.clone());
            let whole: Vec<ToolDef> = before
                .into_iter()
                .filter(|t| !names.contains(&t.name))
                .chain(after)
                .collect();
            let fetched = Registry::new(whole, vec![]);
            prop_assert_eq!(defs_by_name(&applied), defs_by_name(&fetched));
            prop_assert!(applied.changed_names(&fetched).is_empty());
            prop_assert_eq!(applied.sent_bytes(), fetched.sent_bytes());
        }
    }
}
