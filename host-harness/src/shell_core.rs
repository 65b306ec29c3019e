//! The shell's state: the tool registry, the agent tree and the restriction
//! layers, with the rules that combine them.
//!
//! Every agent sees its own scope, its ancestors' scopes and the global
//! scope. A restriction layer on an agent masks what that agent inherits,
//! never its own scope; layers intersect along the chain, so an agent never
//! sees what its parent cannot.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::tool::{AgentId, Tool};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    #[error("unknown agent `{0}`")]
    UnknownAgent(String),
    #[error("agent `{0}` already exists")]
    AgentExists(String),
    #[error("invalid agent name `{0}`: use letters, digits, `-` and `_`")]
    InvalidAgentName(String),
    #[error(
        "agent `{id}` is {depth} agents deep; a chain holds at most {MAX_AGENT_DEPTH} (`main` is 1)"
    )]
    AgentTooDeep { id: String, depth: usize },
    #[error("agent id `{id}` is {bytes} bytes long; an id holds at most {MAX_AGENT_ID_BYTES}")]
    AgentIdTooLong { id: String, bytes: usize },
    #[error(
        "invalid tool name `{}`: a tool's name is 1 to {MAX_TOOL_NAME_CHARS} characters without whitespace, control characters, bidirectional controls or invisible characters",
        crate::terminal::escape(.0)
    )]
    InvalidToolName(String),
    #[error("a tool named `{name}` is already registered in {scope}")]
    DuplicateTool { name: String, scope: String },
    #[error("the name `{name}` is taken by {by}: a tool cannot take another's name")]
    NameTaken { name: String, by: String },
    #[error("no tool named `{name}` is registered in {scope}")]
    NoSuchTool { name: String, scope: String },
    #[error("cannot restrict `{agent}`: unknown tool {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))]
    UnknownToolsInRestriction { agent: String, names: Vec<String> },
}

/// The longest tool name: the longest the plugin's guard tools take back.
pub const MAX_TOOL_NAME_CHARS: usize = lazy_tools::guards::MAX_TOOL_NAME_CHARS;

/// Whether `name` can name a tool: a model writes it back to call the tool, and the plugin's
/// guard tools take it back, so it is 1 to 256 characters without whitespace, control
/// characters, bidirectional controls or characters that display as nothing (a name that
/// reads as another; [`crate::terminal::is_name_char`]). Punctuation stays:
/// shells differ in what they allow (`.`, `/`), and patterns take it literally.
pub fn check_tool_name(name: &str) -> Result<(), ShellError> {
    let fits = !name.is_empty()
        && name.chars().count() <= MAX_TOOL_NAME_CHARS
        && name.chars().all(crate::terminal::is_name_char);
    if fits {
        Ok(())
    } else {
        Err(ShellError::InvalidToolName(name.to_owned()))
    }
}

/// The deepest agent chain (`main` is 1, `main/worker` 2). Shells nest sub-agents a few
/// levels; a chain this deep is a runaway spawn loop or a hostile id, and every request of
/// an agent walks its chain.
pub const MAX_AGENT_DEPTH: usize = 64;
/// The longest agent id, in bytes: 64 names of 15 characters fit. An id is copied into
/// every message about its agent, to the plugin and back.
pub const MAX_AGENT_ID_BYTES: usize = 1024;

/// Whether `id` is within [`MAX_AGENT_DEPTH`] and [`MAX_AGENT_ID_BYTES`]; checked where
/// agents are created, and where a user's path is read before any of it is created.
pub fn check_agent_id(id: &str) -> Result<(), ShellError> {
    let depth = id.bytes().filter(|&b| b == b'/').count() + 1;
    if depth > MAX_AGENT_DEPTH {
        return Err(ShellError::AgentTooDeep {
            id: shortened(id),
            depth,
        });
    }
    if id.len() > MAX_AGENT_ID_BYTES {
        return Err(ShellError::AgentIdTooLong {
            id: shortened(id),
            bytes: id.len(),
        });
    }
    Ok(())
}

/// The start of a refused id, escaped: the message names it without carrying all of it.
fn shortened(id: &str) -> String {
    const SHOWN: usize = 40;
    match id.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", crate::terminal::escape(&id[..cut])),
        None => crate::terminal::escape(id).into_owned(),
    }
}

/// Counts a text's tokens with the model's tokenizer. The core only keeps one
/// for plugins to ask (`host.count-tokens`), so it takes any counter rather
/// than depending on a tokenizer.
pub trait TokenCounter: fmt::Debug + Send + Sync {
    fn count(&self, text: &str) -> u32;
    /// Does the counter's one-time setup (loading a vocabulary), so that it does not
    /// happen inside the first plugin call that counts, on that call's time.
    fn warm_up(&self) {}
}

/// Loads a lazy group's tools on demand (WIT 0.3.0 `host.load-group`): an
/// MCP server started on first use, a script's loader. The core registers
/// what it returns.
pub trait GroupLoader: fmt::Debug + Send + Sync {
    fn load(&self, group: &str) -> Result<Vec<Tool>, String>;
}

/// A group the shell can load on demand, as it declares it to plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyGroupDecl {
    pub name: String,
    pub description: String,
    /// The tools it will register, as far as the shell knows them.
    pub tool_names: Vec<String>,
}

#[derive(Debug, Clone)]
struct Agent {
    parent: Option<AgentId>,
    /// The generation at which this agent was created, or a restriction on
    /// it or a tool of its own scope last changed (both reach its
    /// descendants too).
    changed_at: u64,
    /// Per plugin, the generation at which its exposure layer on this agent
    /// last changed (it reaches this agent only).
    exposed_at: BTreeMap<String, u64>,
}

/// Where each name is registered: the scopes holding a tool of that name
/// (`None`: the global scope), each with the tool's position in the registry,
/// so that checking or finding a name costs the same with fifty tools or
/// fifty thousand.
#[derive(Debug, Default)]
struct NameIndex {
    holders: HashMap<String, Vec<(Option<AgentId>, usize)>>,
}

impl NameIndex {
    /// `tool` was appended to the registry at position `at`.
    fn insert(&mut self, tool: &Tool, at: usize) {
        self.holders
            .entry(tool.name.clone())
            .or_default()
            .push((tool.origin.scope().map(str::to_string), at));
    }

    /// The registry removed `tool` from position `at`: the tools after it
    /// moved down one.
    fn removed(&mut self, tool: &Tool, at: usize) {
        if let Some(holders) = self.holders.get_mut(&tool.name) {
            holders.retain(|(_, position)| *position != at);
            if holders.is_empty() {
                self.holders.remove(&tool.name);
            }
        }
        for (_, position) in self.holders.values_mut().flatten() {
            if *position > at {
                *position -= 1;
            }
        }
    }

    /// Indexes `tools` anew, after the registry dropped several at once.
    fn rebuild(&mut self, tools: &[Tool]) {
        self.holders.clear();
        for (at, tool) in tools.iter().enumerate() {
            self.insert(tool, at);
        }
    }

    /// Whether some scope holds a tool named `name`.
    fn contains(&self, name: &str) -> bool {
        self.holders.contains_key(name)
    }

    /// Whether `scope` holds a tool named `name`.
    fn contains_in(&self, name: &str, scope: Option<&str>) -> bool {
        self.position(name, scope).is_some()
    }

    /// The registry position of the tool named `name` in `scope`.
    fn position(&self, name: &str, scope: Option<&str>) -> Option<usize> {
        self.holders
            .get(name)?
            .iter()
            .find(|(holder, _)| holder.as_deref() == scope)
            .map(|&(_, at)| at)
    }

    /// The registry positions of every tool named `name`, in any scope.
    fn positions(&self, name: &str) -> impl Iterator<Item = usize> + '_ {
        self.holders
            .get(name)
            .into_iter()
            .flatten()
            .map(|&(_, at)| at)
    }
}

/// How many registry changes the shell remembers for `host.registry-changes`;
/// a plugin further behind fetches the whole registry.
pub const MAX_REGISTRY_LOG: usize = 4096;

/// One tool registered or removed: the registry revision it made, the
/// generation it was made at (always after the bump, so a change made after
/// an agent generation was read is stamped above it), and the name.
#[derive(Debug, Clone)]
struct LoggedChange {
    revision: u64,
    generation: u64,
    name: String,
}

/// What changed for one agent since one of its generations, when only tools
/// registered or removed reached it (WIT 0.3.0 `host.allowed-changes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedChanges {
    /// The agent's generation now.
    pub generation: u64,
    /// Changed names the agent may call now.
    pub allowed: Vec<String>,
    /// Changed names it may not call now (or that left the registry).
    pub denied: Vec<String>,
}

#[derive(Debug, Default)]
pub struct ShellCore {
    tools: Vec<Tool>,
    /// Kept in step with `tools` by every method that adds or removes one.
    names: NameIndex,
    /// MCP servers (and other groups) by name, with their descriptions.
    groups: BTreeMap<String, String>,
    /// The model's tokenizer, when the shell counts tokens.
    tokenizer: Option<Arc<dyn TokenCounter>>,
    /// Bumped on every change to what some agent may call (see
    /// `host.tools-generation`).
    generation: u64,
    /// The generation at which a global tool was last registered or removed.
    tools_changed_at: u64,
    /// The generation at which a source's layers were lifted from every agent
    /// at once: it reaches every agent, but names no tool.
    layers_lifted_at: u64,
    /// Bumped once for every tool registered or removed (WIT 0.3.0
    /// `host.registry-revision`).
    registry_revision: u64,
    /// Bumped whenever what `groups`, `lazy_groups` or the tools' search text
    /// say can have changed (WIT 0.3.0 `host.metadata-revision`).
    metadata_revision: u64,
    /// The last [`MAX_REGISTRY_LOG`] registry changes, oldest first: what
    /// `host.registry-changes` and `host.allowed-changes` answer from.
    registry_log: VecDeque<LoggedChange>,
    /// The generation of the newest change dropped from the log: an agent
    /// generation before it is too far behind for `allowed-changes`.
    log_forgotten_at: u64,
    agents: BTreeMap<AgentId, Agent>,
    /// Per agent, per source (a plugin id, `profile`, ...): the allow set.
    /// Inherited: it masks what the agent and its descendants may call.
    restrictions: BTreeMap<AgentId, BTreeMap<String, BTreeSet<String>>>,
    /// Per agent, per plugin: the exposure layer (WIT 0.3.0 `host.expose`).
    /// It masks what that agent alone sees and may call; descendants do not
    /// inherit it, so a child may load what its chain authorizes.
    exposures: BTreeMap<AgentId, BTreeMap<String, BTreeSet<String>>>,
    /// Groups loaded on demand, by name, and how often each was loaded.
    lazy_groups: BTreeMap<String, (LazyGroupDecl, u32)>,
    /// The names each lazy group's loads registered: once loaded, a group is judged by
    /// the tools it has, not only by the ones it declared.
    lazy_loaded: BTreeMap<String, BTreeSet<String>>,
    loader: Option<Arc<dyn GroupLoader>>,
    /// Set when a plugin's `load-group` registered tools: the shell tells
    /// every plugin once the call is over.
    loaded_outside: bool,
    /// How many times a method walked the whole registry: tests check that
    /// per-name work goes through `names` instead.
    #[cfg(test)]
    scans: std::cell::Cell<usize>,
}

impl ShellCore {
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Every tool, for a walk over the whole registry (counted in tests).
    fn scan(&self) -> std::slice::Iter<'_, Tool> {
        #[cfg(test)]
        self.scans.set(self.scans.get() + 1);
        self.tools.iter()
    }

    /// Declares a group (an MCP server) with its description; whether that changed anything.
    pub fn set_group(&mut self, name: &str, description: &str) -> bool {
        let before = self
            .groups
            .insert(name.to_string(), description.to_string());
        let changed = before.as_deref() != Some(description);
        self.metadata_revision += u64::from(changed);
        changed
    }

    pub fn groups(&self) -> impl Iterator<Item = (&str, &str)> {
        self.groups.iter().map(|(n, d)| (n.as_str(), d.as_str()))
    }

    /// Declares a lazy group and the loader that loads every lazy group.
    pub fn declare_lazy_group(&mut self, decl: LazyGroupDecl) {
        self.lazy_groups.insert(decl.name.clone(), (decl, 0));
        self.metadata_revision += 1;
    }

    pub fn set_group_loader(&mut self, loader: Arc<dyn GroupLoader>) {
        self.loader = Some(loader);
    }

    pub fn lazy_groups(&self) -> impl Iterator<Item = &LazyGroupDecl> {
        self.lazy_groups.values().map(|(decl, _)| decl)
    }

    /// How many times lazy group `name` was loaded (`None`: no such group).
    pub fn lazy_group_loads(&self, name: &str) -> Option<u32> {
        self.lazy_groups.get(name).map(|(_, n)| *n)
    }

    /// The loader for lazy group `name`, counting the load; an error when
    /// there is no such group or no loader.
    pub fn begin_group_load(&mut self, name: &str) -> Result<Arc<dyn GroupLoader>, String> {
        let Some((_, loads)) = self.lazy_groups.get_mut(name) else {
            return Err(format!("the shell has no lazy group `{name}`"));
        };
        *loads += 1;
        self.loader
            .clone()
            .ok_or_else(|| format!("the shell cannot load group `{name}`: it has no loader"))
    }

    /// Records that lazy group `name`'s load registered `tools`.
    pub fn note_group_loaded<'a>(&mut self, name: &str, tools: impl IntoIterator<Item = &'a str>) {
        (self.lazy_loaded.entry(name.to_string()).or_default())
            .extend(tools.into_iter().map(str::to_string));
    }

    /// Whether `agent` may load lazy group `name`: the restrictions along its chain (but
    /// `plugin`'s own layer on it) allow one of the tools the group declares or (once
    /// loaded) registered. Exposure
    /// layers are left out: they are what a model sees, which their plugins keep once the
    /// tools are registered. An unknown group is not judged here: loading it fails.
    pub fn may_load_group(
        &self,
        agent: &str,
        plugin: &str,
        name: &str,
    ) -> Result<bool, ShellError> {
        let chain = self.chain(agent)?;
        let Some((group, _)) = self.lazy_groups.get(name) else {
            return Ok(true);
        };
        let mut layers = self.restriction_layers(&chain, plugin);
        let loaded = self.lazy_loaded.get(name).into_iter().flatten();
        let names: BTreeSet<&String> = group.tool_names.iter().chain(loaded).collect();
        if names.is_empty() {
            // Nothing to judge by. A restriction lists registered names only, so it denies
            // whatever the group will register; a chain without one allows it.
            return Ok(layers.next().is_none());
        }
        let layers: Vec<&BTreeSet<String>> = layers.collect();
        Ok(names
            .iter()
            .any(|tool| layers.iter().all(|allow| allow.contains(*tool))))
    }

    /// The allow sets that mask a global tool for the agent at the end of `chain`, but
    /// `plugin`'s own on that agent.
    fn restriction_layers<'a>(
        &'a self,
        chain: &'a [&str],
        plugin: &'a str,
    ) -> impl Iterator<Item = &'a BTreeSet<String>> + 'a {
        let agent = chain.last().copied();
        chain.iter().flat_map(move |&scope| {
            let layers = self.restrictions.get(scope).into_iter().flatten();
            layers
                .filter(move |(source, _)| !(Some(scope) == agent && source.as_str() == plugin))
                .map(|(_, allow)| allow)
        })
    }

    /// Registers a tool a lazy group's load returned, or gives the one of that name and
    /// origin (registered from a cached listing) the definition the live server has.
    pub fn register_loaded(&mut self, tool: Tool) -> Result<(), ShellError> {
        if self.define(tool)? {
            self.loaded_outside = true;
        }
        Ok(())
    }

    /// Registers `tool`, or, when its scope already holds a tool of its name from the same
    /// origin and owner, gives that tool this definition in place (its place in the prompt
    /// kept). Nothing changes when it holds this very definition. Returns whether the
    /// registry changed. Backends define their tools so: a lazy load may have registered
    /// what their next sync registers again.
    pub fn define(&mut self, tool: Tool) -> Result<bool, ShellError> {
        let scope = tool.origin.scope().map(str::to_owned);
        let Some(at) = self.names.position(&tool.name, scope.as_deref()) else {
            self.register(tool)?;
            return Ok(true);
        };
        let held = &self.tools[at];
        if held.origin != tool.origin || held.owner != tool.owner {
            // Someone else's name: `register` says whose.
            self.register(tool)?;
            return Ok(true);
        }
        if *held == tool {
            return Ok(false);
        }
        let searched = held.search_text.is_some() || tool.search_text.is_some();
        self.tools_changed(scope.as_deref());
        self.registry_logged(&tool.name);
        self.metadata_revision += u64::from(searched);
        self.tools[at] = tool;
        Ok(true)
    }

    /// Whether a lazy load registered tools since the last call (and clears it).
    pub fn take_loaded_outside(&mut self) -> bool {
        std::mem::take(&mut self.loaded_outside)
    }

    /// Sets the model's tokenizer, ready to count: o200k's vocabulary took 980 ms to load in
    /// a debug build, which inside a plugin's first `count-tokens` went past the call's whole
    /// bound (500 ms) and got the plugin stopped.
    pub fn set_tokenizer<C: TokenCounter + 'static>(&mut self, tokenizer: Option<C>) {
        if let Some(tokenizer) = &tokenizer {
            tokenizer.warm_up();
        }
        self.tokenizer = tokenizer.map(|t| Arc::new(t) as Arc<dyn TokenCounter>);
    }

    /// The model's tokenizer, as a handle that outlives a lock on the core.
    pub fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        self.tokenizer.clone()
    }

    /// Changes whenever a tool, an agent or a restriction changes.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Changes whenever what `agent` may call, as [`Self::effective`]
    /// answers it to `plugin`, can have changed: tools registered or
    /// removed, a restriction on the agent or an ancestor, another plugin's
    /// exposure layer on the agent. `plugin`'s own exposure layer and
    /// changes that reach only other agents leave it as it is (WIT 0.3.0
    /// `host.agent-generation`). An unknown agent gets [`Self::generation`].
    pub fn agent_generation(&self, agent: &str, plugin: &str) -> u64 {
        let Some(found) = self.agents.get(agent) else {
            return self.generation;
        };
        self.tools_changed_at
            .max(self.layers_changed_at(found, plugin))
    }

    /// The newest generation at which something other than a global tool
    /// registration reached `agent`: its creation, a restriction on it or an
    /// ancestor, a tool of its chain's scopes, another plugin's exposure on
    /// it, layers lifted everywhere.
    fn layers_changed_at(&self, agent: &Agent, plugin: &str) -> u64 {
        let exposed = agent
            .exposed_at
            .iter()
            .filter(|(source, _)| source.as_str() != plugin)
            .map(|(_, at)| *at);
        let mut latest = self.layers_lifted_at.max(exposed.max().unwrap_or(0));
        let mut at = Some(agent);
        while let Some(scope) = at {
            latest = latest.max(scope.changed_at);
            at = scope.parent.as_deref().and_then(|p| self.agents.get(p));
        }
        latest
    }

    /// What changed for `agent`, as [`Self::effective`] answers it to
    /// `plugin`, since its generation `since` (one [`Self::agent_generation`]
    /// gave): the names registered or removed since, split by whether the
    /// agent may call each now. `None` when something else reached the agent
    /// since (a restriction, a tool of its chain's scopes, another plugin's
    /// exposure), when the log no longer reaches back, or for an unknown
    /// agent or a generation ahead (WIT 0.3.0 `host.allowed-changes`).
    pub fn allowed_changes(&self, agent: &str, plugin: &str, since: u64) -> Option<AllowedChanges> {
        let found = self.agents.get(agent)?;
        let layers_changed_at = self.layers_changed_at(found, plugin);
        let generation = self.tools_changed_at.max(layers_changed_at);
        if since > generation || layers_changed_at > since || self.log_forgotten_at > since {
            return None;
        }
        // The agent's scope first, then its ancestors'.
        let mut chain = self.chain(agent).ok()?;
        chain.reverse();
        // Every change made after `since` was read is stamped above it; older ones that
        // are too (changes that reached only other agents) are answered as exactly.
        let first = self
            .registry_log
            .partition_point(|change| change.generation <= since);
        let mut seen: HashSet<&str> = HashSet::new();
        let mut changes = AllowedChanges {
            generation,
            ..AllowedChanges::default()
        };
        for change in self.registry_log.range(first..) {
            if !seen.insert(&change.name) {
                continue;
            }
            let list = if self.allows(&chain, Some(plugin), &change.name) {
                &mut changes.allowed
            } else {
                &mut changes.denied
            };
            list.push(change.name.clone());
        }
        Some(changes)
    }

    /// Whether [`Self::effective`] for the agent of `chain` (itself first, then
    /// its ancestors), ignoring `plugin`'s layers on it, holds `name`, without
    /// walking the registry: the nearest scope of the chain that holds the name
    /// (or the global scope), then every layer below that scope.
    fn allows(&self, chain: &[&str], plugin: Option<&str>, name: &str) -> bool {
        // Nearest first: the layers of the scopes nearer than the holder mask the name.
        for (depth, &scope) in chain.iter().enumerate() {
            if self.names.contains_in(name, Some(scope)) {
                return true;
            }
            let own = depth == 0;
            let restrictions = self.restrictions.get(scope).into_iter().flatten();
            let exposures = own
                .then(|| self.exposures.get(scope))
                .flatten()
                .into_iter()
                .flatten();
            for (source, allow) in restrictions.chain(exposures) {
                let ignored = own && plugin == Some(source.as_str());
                if !ignored && !allow.contains(name) {
                    return false;
                }
            }
        }
        self.names.contains_in(name, None)
    }

    /// A tool of `scope` was registered or removed: a global one reaches
    /// every agent, an agent's own-scope tool that agent and its subtree.
    fn tools_changed(&mut self, scope: Option<&str>) {
        self.generation += 1;
        match scope.and_then(|agent| self.agents.get_mut(agent)) {
            Some(agent) => agent.changed_at = self.generation,
            None => self.tools_changed_at = self.generation,
        }
    }

    /// A tool named `name` was registered or removed: a new registry revision.
    /// Stamped with the generation now: callers bump it first.
    fn registry_logged(&mut self, name: &str) {
        self.registry_revision += 1;
        self.registry_log.push_back(LoggedChange {
            revision: self.registry_revision,
            generation: self.generation,
            name: name.to_string(),
        });
        if self.registry_log.len() > MAX_REGISTRY_LOG
            && let Some(dropped) = self.registry_log.pop_front()
        {
            self.log_forgotten_at = dropped.generation;
        }
    }

    /// The revision of the groups, lazy groups and search text (WIT 0.3.0
    /// `host.metadata-revision`).
    pub fn metadata_revision(&self) -> u64 {
        self.metadata_revision
    }

    /// The registry's revision (WIT 0.3.0 `host.registry-revision`).
    pub fn registry_revision(&self) -> u64 {
        self.registry_revision
    }

    /// The names registered or removed since revision `since`, each once
    /// with its tools now in registry order, and the revision now; `None`
    /// when the log no longer reaches back to `since` or `since` is ahead
    /// (WIT 0.3.0 `host.registry-changes`).
    pub fn registry_changes(&self, since: u64) -> Option<(u64, Vec<String>, Vec<&Tool>)> {
        if since > self.registry_revision {
            return None;
        }
        let first = self
            .registry_log
            .partition_point(|change| change.revision <= since);
        let reaches_back = match self.registry_log.front() {
            Some(oldest) => oldest.revision <= since + 1,
            None => since == self.registry_revision,
        };
        if !reaches_back {
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for change in self.registry_log.range(first..) {
            if seen.insert(&change.name) {
                names.push(change.name.clone());
            }
        }
        // One pass in registry order; a name's length rules most tools out before any
        // hashing (hashing ten thousand names would cost more than the answer).
        let bit = |name: &str| {
            let len = name.len().min(255);
            (len / 64, 1u64 << (len % 64))
        };
        let mut lengths = [0u64; 4];
        for name in &seen {
            let (word, mask) = bit(name);
            lengths[word] |= mask;
        }
        let tools = if seen.is_empty() {
            Vec::new()
        } else {
            self.scan()
                .filter(|t| {
                    let (word, mask) = bit(&t.name);
                    lengths[word] & mask != 0 && seen.contains(t.name.as_str())
                })
                .collect()
        };
        Some((self.registry_revision, names, tools))
    }

    fn layer_changed(&mut self, kind: Layer, agent: &str, source: &str) {
        self.generation += 1;
        let generation = self.generation;
        if let Some(found) = self.agents.get_mut(agent) {
            match kind {
                Layer::Restriction => found.changed_at = generation,
                Layer::Exposure => {
                    found.exposed_at.insert(source.to_string(), generation);
                }
            }
        }
    }

    pub fn register(&mut self, tool: Tool) -> Result<(), ShellError> {
        check_tool_name(&tool.name)?;
        if let Some(agent) = tool.origin.scope() {
            self.require_agent(agent)?;
        }
        // A name has one owner (the shell, or one plugin) in every scope: a
        // plugin's guard tool could otherwise stand in for a tool the agent's
        // chain denies, since no restriction masks an agent's own scope.
        let taken = self
            .names
            .positions(&tool.name)
            .map(|at| &self.tools[at])
            .find(|t| t.owner != tool.owner);
        if let Some(taken) = taken {
            return Err(ShellError::NameTaken {
                name: tool.name,
                by: match &taken.owner {
                    Some(owner) => format!("plugin `{owner}`"),
                    None => format!("a {} tool", taken.origin),
                },
            });
        }
        if self.names.contains_in(&tool.name, tool.origin.scope()) {
            return Err(ShellError::DuplicateTool {
                name: tool.name,
                scope: scope_name(tool.origin.scope()),
            });
        }
        self.names.insert(&tool, self.tools.len());
        self.tools_changed(tool.origin.scope());
        self.registry_logged(&tool.name);
        self.metadata_revision += u64::from(tool.search_text.is_some());
        self.tools.push(tool);
        Ok(())
    }

    /// Removes the tool `name` from `scope` (`None`: the global scope).
    pub fn unregister(&mut self, name: &str, scope: Option<&str>) -> Result<Tool, ShellError> {
        let index = self
            .names
            .position(name, scope)
            .ok_or_else(|| ShellError::NoSuchTool {
                name: name.to_string(),
                scope: scope_name(scope),
            })?;
        self.tools_changed(scope);
        let tool = self.tools.remove(index);
        self.names.removed(&tool, index);
        self.registry_logged(&tool.name);
        self.metadata_revision += u64::from(tool.search_text.is_some());
        Ok(tool)
    }

    /// Removes every tool a plugin owns; returns how many.
    pub fn unregister_owned_by(&mut self, owner: &str) -> usize {
        let before = self.tools.len();
        let mut removed: Vec<String> = Vec::new();
        let mut searched = false;
        self.tools.retain(|t| {
            let keep = t.owner.as_deref() != Some(owner);
            if !keep {
                removed.push(t.name.clone());
                searched |= t.search_text.is_some();
            }
            keep
        });
        self.metadata_revision += u64::from(searched);
        if !removed.is_empty() {
            self.names.rebuild(&self.tools);
        }
        self.tools_changed(None);
        for name in &removed {
            self.registry_logged(name);
        }
        before - self.tools.len()
    }

    pub fn create_agent(&mut self, id: &str, parent: Option<&str>) -> Result<(), ShellError> {
        check_agent_id(id)?;
        // An id is its parent's id and one name more: `main/a/b` made under `main` would be
        // a child of an agent that does not exist.
        let (above, name) = match id.rsplit_once('/') {
            Some((above, name)) => (Some(above), name),
            None => (None, id),
        };
        if name.is_empty()
            || above != parent
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ShellError::InvalidAgentName(id.to_string()));
        }
        if self.agents.contains_key(id) {
            return Err(ShellError::AgentExists(id.to_string()));
        }
        if let Some(parent) = parent {
            self.require_agent(parent)?;
        }
        self.generation += 1;
        self.agents.insert(
            id.to_string(),
            Agent {
                parent: parent.map(str::to_string),
                changed_at: self.generation,
                exposed_at: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// Removes an agent with its descendants, their scopes and restrictions.
    /// Returns the removed agents, deepest first.
    pub fn dispose_agent(&mut self, id: &str) -> Result<Vec<AgentId>, ShellError> {
        self.require_agent(id)?;
        let mut removed: Vec<AgentId> = self
            .agents
            .keys()
            .filter(|a| self.is_descendant_or_self(a, id))
            .cloned()
            .collect();
        removed.sort_by_key(|a| std::cmp::Reverse(self.chain(a).map(|c| c.len()).unwrap_or(0)));
        for agent in &removed {
            self.agents.remove(agent);
            // Its own-scope tools go with it; they reached only its subtree,
            // which goes too.
            self.generation += 1;
            self.restrictions.remove(agent);
            self.exposures.remove(agent);
            let mut gone: Vec<String> = Vec::new();
            let mut searched = false;
            self.tools.retain(|t| {
                let keep = t.origin.scope() != Some(agent.as_str());
                if !keep {
                    gone.push(t.name.clone());
                    searched |= t.search_text.is_some();
                }
                keep
            });
            self.metadata_revision += u64::from(searched);
            if !gone.is_empty() {
                self.names.rebuild(&self.tools);
            }
            for name in &gone {
                self.registry_logged(name);
            }
        }
        Ok(removed)
    }

    pub fn agents(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.agents
            .iter()
            .map(|(id, a)| (id.as_str(), a.parent.as_deref()))
    }

    pub fn has_agent(&self, id: &str) -> bool {
        self.agents.contains_key(id)
    }

    /// The agents from the root down to `id`: the id's prefixes that end before a `/`
    /// (an id is its parent's and one name more, and an agent's ancestors live as long as
    /// it does), read in one pass rather than found one parent at a time.
    pub fn chain(&self, id: &str) -> Result<Vec<&str>, ShellError> {
        let (key, _) = self
            .agents
            .get_key_value(id)
            .ok_or_else(|| ShellError::UnknownAgent(id.into()))?;
        let ends = key.match_indices('/').map(|(at, _)| at);
        Ok(ends.chain([key.len()]).map(|end| &key[..end]).collect())
    }

    /// Installs (`Some`) or lifts (`None`) the layer `source` on `agent`.
    pub fn restrict(
        &mut self,
        agent: &str,
        source: &str,
        allow: Option<Vec<String>>,
    ) -> Result<(), ShellError> {
        self.install_layer(Layer::Restriction, agent, source, allow)
    }

    /// Installs (`Some`) or lifts (`None`) the exposure layer of `source` on
    /// `agent`: like a restriction on `agent`, but not inherited.
    pub fn expose(
        &mut self,
        agent: &str,
        source: &str,
        visible: Option<Vec<String>>,
    ) -> Result<(), ShellError> {
        self.install_layer(Layer::Exposure, agent, source, visible)
    }

    fn install_layer(
        &mut self,
        kind: Layer,
        agent: &str,
        source: &str,
        allow: Option<Vec<String>>,
    ) -> Result<(), ShellError> {
        self.require_agent(agent)?;
        let layers = match kind {
            Layer::Restriction => &mut self.restrictions,
            Layer::Exposure => &mut self.exposures,
        };
        let Some(allow) = allow else {
            if let Some(layers) = layers.get_mut(agent) {
                layers.remove(source);
            }
            self.layer_changed(kind, agent, source);
            return Ok(());
        };
        let unknown: Vec<String> = allow
            .iter()
            .filter(|name| !self.names.contains(name))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(ShellError::UnknownToolsInRestriction {
                agent: agent.to_string(),
                names: unknown,
            });
        }
        let layers = match kind {
            Layer::Restriction => &mut self.restrictions,
            Layer::Exposure => &mut self.exposures,
        };
        layers
            .entry(agent.to_string())
            .or_default()
            .insert(source.to_string(), allow.into_iter().collect());
        self.layer_changed(kind, agent, source);
        Ok(())
    }

    /// Lifts every layer `source` installed, on every agent.
    pub fn lift_all(&mut self, source: &str) {
        for layers in self
            .restrictions
            .values_mut()
            .chain(self.exposures.values_mut())
        {
            layers.remove(source);
        }
        // Every agent may have had one.
        self.generation += 1;
        self.layers_lifted_at = self.generation;
    }

    pub fn restriction(&self, agent: &str, source: &str) -> Option<&BTreeSet<String>> {
        self.restrictions.get(agent)?.get(source)
    }

    pub fn exposure(&self, agent: &str, source: &str) -> Option<&BTreeSet<String>> {
        self.exposures.get(agent)?.get(source)
    }

    /// The tools `agent` may see and call, in prompt order: global tools in
    /// registration order, then each scope from the root down. Restrictions
    /// apply along the chain; exposure layers only on `agent` itself.
    /// `ignore` names one source whose layers on `agent` itself are left out
    /// (a plugin asking what the agent could have without its own layer).
    pub fn effective(&self, agent: &str, ignore: Option<&str>) -> Result<Vec<&Tool>, ShellError> {
        let chain = self.chain(agent)?;
        // One walk of the registry sorts the scoped tools into the chain's scopes (a scope
        // of the chain is found by its length: each is longer than its parent); a walk per
        // scope made a deep chain cost its depth times the registry.
        let mut visible: IndexMap<&str, &Tool> = IndexMap::new();
        let mut scoped: Vec<Vec<&Tool>> = vec![Vec::new(); chain.len()];
        for tool in self.scan() {
            let Some(scope) = tool.origin.scope() else {
                visible.insert(&tool.name, tool);
                continue;
            };
            if let Ok(depth) = chain.binary_search_by_key(&scope.len(), |s| s.len())
                && chain[depth] == scope
            {
                scoped[depth].push(tool);
            }
        }
        for (scope, tools) in chain.into_iter().zip(scoped) {
            let restrictions = self.restrictions.get(scope).into_iter().flatten();
            let exposures = (scope == agent)
                .then(|| self.exposures.get(scope))
                .flatten()
                .into_iter()
                .flatten();
            {
                for (source, allow) in restrictions.chain(exposures) {
                    if scope == agent && ignore == Some(source.as_str()) {
                        continue;
                    }
                    visible.retain(|name, _| allow.contains(*name));
                }
            }
            for tool in tools {
                // A nearer scope shadows a farther tool of the same name.
                visible.shift_remove(tool.name.as_str());
                visible.insert(&tool.name, tool);
            }
        }
        Ok(visible.into_values().collect())
    }

    /// Whether `agent` may call `name`: [`Self::effective`] holds it, answered
    /// for the one name, without walking the registry (a call checks this).
    pub fn may_call(&self, agent: &str, name: &str) -> Result<bool, ShellError> {
        let mut chain = self.chain(agent)?;
        chain.reverse();
        Ok(self.allows(&chain, None, name))
    }

    /// The tool `agent` would reach under `name`, ignoring restrictions:
    /// its own scope first, then its ancestors', then the global scope.
    pub fn resolve(&self, agent: &str, name: &str) -> Result<Option<&Tool>, ShellError> {
        let chain = self.chain(agent)?;
        // The name index says where each scope's tool of that name is.
        Ok(chain
            .iter()
            .rev()
            .map(|scope| Some(*scope))
            .chain([None])
            .find_map(|scope| self.names.position(name, scope))
            .map(|at| &self.tools[at]))
    }

    fn agent(&self, id: &str) -> Result<&Agent, ShellError> {
        self.agents
            .get(id)
            .ok_or_else(|| ShellError::UnknownAgent(id.to_string()))
    }

    fn require_agent(&self, id: &str) -> Result<(), ShellError> {
        self.agent(id).map(|_| ())
    }

    fn is_descendant_or_self(&self, candidate: &str, ancestor: &str) -> bool {
        self.chain(candidate)
            .map(|chain| chain.contains(&ancestor))
            .unwrap_or(false)
    }
}

/// The two kinds of layer a source installs on an agent.
#[derive(Debug, Clone, Copy)]
enum Layer {
    /// Inherited by the agent's descendants.
    Restriction,
    /// The agent's alone.
    Exposure,
}

fn scope_name(scope: Option<&str>) -> String {
    match scope {
        Some(agent) => format!("the scope of agent `{agent}`"),
        None => "the global scope".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Origin;

    fn names(tools: Vec<&Tool>) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn core() -> ShellCore {
        let mut core = ShellCore::default();
        for name in ["read", "bash", "gh_issue"] {
            core.register(Tool::new(name, "", Origin::Builtin)).unwrap();
        }
        core.create_agent("main", None).unwrap();
        core.create_agent("main/worker", Some("main")).unwrap();
        core
    }

    /// A lazy group that declares no tools is refused to a restricted chain (a restriction
    /// names registered tools only); once loaded, it is judged by the tools it registered.
    #[test]
    fn a_loaded_lazy_group_is_judged_by_the_tools_it_registered() {
        let mut core = core();
        core.declare_lazy_group(LazyGroupDecl {
            name: "db".into(),
            description: String::new(),
            tool_names: Vec::new(),
        });
        let may = |core: &ShellCore| core.may_load_group("main/worker", "lazy-tools", "db");
        assert!(may(&core).unwrap());
        core.restrict("main", "parent", Some(vec!["read".into()]))
            .unwrap();
        assert!(!may(&core).unwrap());
        core.register_loaded(Tool::new("db__query", "", Origin::Mcp("db".into())))
            .unwrap();
        core.note_group_loaded("db", ["db__query"]);
        assert!(!may(&core).unwrap());
        core.restrict("main", "parent", Some(vec!["db__query".into()]))
            .unwrap();
        assert!(may(&core).unwrap());
    }

    /// A counter whose setup is slow (a vocabulary to load) is set up when the shell takes it,
    /// not in the first plugin call that counts.
    #[test]
    fn a_tokenizer_is_ready_when_the_shell_takes_it() {
        #[derive(Debug, Default)]
        struct Counter(std::sync::atomic::AtomicBool);
        impl TokenCounter for Counter {
            fn count(&self, _: &str) -> u32 {
                assert!(
                    self.0.load(std::sync::atomic::Ordering::SeqCst),
                    "counted cold"
                );
                1
            }
            fn warm_up(&self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let mut core = core();
        core.set_tokenizer(Some(Counter::default()));
        assert_eq!(core.token_counter().unwrap().count("a"), 1);
    }

    #[test]
    fn registry_changes_name_what_changed_since_a_revision_while_the_log_reaches_back() {
        let mut core = core();
        let start = core.registry_revision();
        assert_eq!(start, 3);
        let (revision, changed, tools) = core.registry_changes(start).unwrap();
        assert_eq!((revision, changed.len(), tools.len()), (3, 0, 0));
        core.register(Tool::new("mine", "", Origin::Agent("main".into())))
            .unwrap();
        core.register(Tool::new("mine", "", Origin::Builtin))
            .unwrap();
        core.unregister("bash", None).unwrap();
        let (revision, changed, tools) = core.registry_changes(start).unwrap();
        assert_eq!(revision, 6);
        assert_eq!(changed, ["mine", "bash"]);
        // Both scopes' definitions, in registry order; none for `bash`.
        assert_eq!(names(tools), ["mine", "mine"]);
        assert_eq!(core.registry_changes(5).unwrap().1, ["bash"]);
        // A revision ahead of the shell's, or one the log no longer reaches.
        assert!(core.registry_changes(7).is_none());
        for i in 0..MAX_REGISTRY_LOG {
            core.register(Tool::new(format!("t{i}"), "", Origin::Builtin))
                .unwrap();
        }
        assert!(core.registry_changes(start).is_none());
        let now = core.registry_revision();
        assert_eq!(
            core.registry_changes(now - 1).unwrap().1,
            [format!("t{}", MAX_REGISTRY_LOG - 1)]
        );
        // Tools leaving with their agent are changes too.
        core.dispose_agent("main").unwrap();
        assert_eq!(core.registry_changes(now).unwrap().1, ["mine"]);
    }

    #[test]
    fn restrictions_mask_inherited_tools_only() {
        let mut core = core();
        core.register(Tool::new("mine", "", Origin::Agent("main".into())))
            .unwrap();
        core.restrict("main", "p", Some(vec!["read".into()]))
            .unwrap();
        assert_eq!(
            names(core.effective("main", None).unwrap()),
            ["read", "mine"]
        );
        assert_eq!(
            names(core.effective("main", Some("p")).unwrap()),
            ["read", "bash", "gh_issue", "mine"]
        );
    }

    #[test]
    fn restrictions_intersect_along_the_chain() {
        let mut core = core();
        core.restrict("main", "profile", Some(vec!["read".into(), "bash".into()]))
            .unwrap();
        core.restrict(
            "main/worker",
            "p",
            Some(vec!["bash".into(), "gh_issue".into()]),
        )
        .unwrap();
        assert_eq!(
            names(core.effective("main/worker", None).unwrap()),
            ["bash"]
        );
        // Ignoring the worker's own layer never reaches past its parent's.
        assert_eq!(
            names(core.effective("main/worker", Some("p")).unwrap()),
            ["read", "bash"]
        );
    }

    #[test]
    fn exposure_layers_are_not_inherited() {
        let mut core = core();
        core.expose("main", "p", Some(vec!["read".into()])).unwrap();
        assert_eq!(names(core.effective("main", None).unwrap()), ["read"]);
        assert_eq!(
            names(core.effective("main", Some("p")).unwrap()),
            ["read", "bash", "gh_issue"]
        );
        // The child sees what its chain authorizes, not what main exposes.
        assert_eq!(
            names(core.effective("main/worker", None).unwrap()),
            ["read", "bash", "gh_issue"]
        );
        // A restriction on main is still inherited.
        core.restrict("main", "q", Some(vec!["read".into(), "bash".into()]))
            .unwrap();
        assert_eq!(
            names(core.effective("main/worker", None).unwrap()),
            ["read", "bash"]
        );
        core.lift_all("p");
        assert!(core.exposure("main", "p").is_none());
    }

    #[test]
    fn restricting_with_an_unknown_name_is_an_error() {
        let mut core = core();
        let err = core
            .restrict("main", "p", Some(vec!["read".into(), "nope".into()]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot restrict `main`: unknown tool `nope`"
        );
        assert!(core.restriction("main", "p").is_none());
    }

    #[test]
    fn a_tool_name_the_model_could_not_call_is_refused() {
        let mut core = core();
        let longest = "x".repeat(MAX_TOOL_NAME_CHARS);
        let too_long = format!("{longest}x");
        // An invisible character would make a name print as another's (`echo` and `echo`).
        for name in [
            "",
            "a b",
            "tab\t",
            "t\u{1b}[2J",
            "a\u{202e}b",
            "echo\u{200b}",
            "e\u{ad}cho",
            "echo\u{206a}",
            "echo\u{fe00}",
            &too_long,
        ] {
            assert_eq!(
                core.register(Tool::new(name, "d", Origin::Builtin)),
                Err(ShellError::InvalidToolName(name.into())),
                "{name:?}"
            );
        }
        for name in [
            longest.as_str(),
            "gh-issue_2",
            "get.forecast",
            "a?c",
            "名前",
        ] {
            assert_eq!(core.register(Tool::new(name, "d", Origin::Builtin)), Ok(()));
        }
        let shown = ShellError::InvalidToolName("t\u{1b}[2J".into()).to_string();
        assert!(
            shown.starts_with("invalid tool name `t\\u{1b}[2J`"),
            "{shown}"
        );
    }

    #[test]
    fn an_agent_id_is_its_parents_and_one_name_more() {
        let mut core = core();
        for (id, parent) in [
            ("main/a/b", Some("main")),
            ("main/x/../y", Some("main")),
            ("main/a", None),
            ("a", Some("main")),
            ("main/", Some("main")),
        ] {
            assert_eq!(
                core.create_agent(id, parent),
                Err(ShellError::InvalidAgentName(id.into())),
                "{id} under {parent:?}"
            );
        }
        core.create_agent("main/a", Some("main")).unwrap();
        core.create_agent("main/a/b", Some("main/a")).unwrap();
    }

    #[test]
    fn disposing_an_agent_removes_its_subtree() {
        let mut core = core();
        core.register(Tool::new("w", "", Origin::Agent("main/worker".into())))
            .unwrap();
        let removed = core.dispose_agent("main").unwrap();
        assert_eq!(removed, ["main/worker", "main"]);
        assert!(!core.tools().iter().any(|t| t.name == "w"));
    }

    /// One change to the registry, over a few names, scopes and owners so
    /// that names collide often.
    #[derive(Debug, Clone)]
    enum Change {
        Register {
            name: u8,
            scope: Option<u8>,
            owner: Option<u8>,
        },
        Unregister {
            name: u8,
            scope: Option<u8>,
        },
        UnregisterOwnedBy(u8),
        Dispose(u8),
        Create(u8),
    }

    fn change() -> impl proptest::strategy::Strategy<Value = Change> {
        use proptest::prelude::*;
        let name = 0u8..5;
        let scope = proptest::option::of(0u8..2);
        prop_oneof![
            4 => (name.clone(), scope.clone(), proptest::option::of(0u8..2))
                .prop_map(|(name, scope, owner)| Change::Register { name, scope, owner }),
            2 => (name, scope).prop_map(|(name, scope)| Change::Unregister { name, scope }),
            1 => (0u8..2).prop_map(Change::UnregisterOwnedBy),
            1 => (0u8..2).prop_map(Change::Dispose),
            1 => (0u8..2).prop_map(Change::Create),
        ]
    }

    proptest::proptest! {
        /// The name index answers what a scan of the registry would, after
        /// any sequence of registrations and removals.
        #[test]
        fn the_name_index_agrees_with_a_scan(changes in proptest::collection::vec(change(), 1..40)) {
            let agent = |i: u8| format!("root/a{i}");
            let tool_name = |i: u8| format!("t{i}");
            let mut core = ShellCore::default();
            core.create_agent("root", None).unwrap();
            for i in 0..2 {
                core.create_agent(&agent(i), Some("root")).unwrap();
            }
            for change in changes {
                match change {
                    Change::Register { name, scope, owner } => {
                        let scope = scope.map(agent);
                        let owner = owner.map(|o| format!("plugin{o}"));
                        // Refused: the same name in the same scope, or the
                        // name held anywhere by another owner.
                        let duplicate = core.tools().iter().any(|t| {
                            t.name == tool_name(name)
                                && (t.origin.scope() == scope.as_deref() || t.owner != owner)
                        });
                        let origin = scope.clone().map_or(Origin::Builtin, Origin::Agent);
                        let mut tool = Tool::new(tool_name(name), "", origin);
                        tool.owner = owner;
                        let result = core.register(tool);
                        let known_scope = scope.as_deref().is_none_or(|s| core.has_agent(s));
                        proptest::prop_assert_eq!(
                            result.is_err(),
                            duplicate || !known_scope,
                            "{:?}", result
                        );
                    }
                    Change::Unregister { name, scope } => {
                        let scope = scope.map(agent);
                        let present = core.tools().iter().any(|t| {
                            t.name == tool_name(name) && t.origin.scope() == scope.as_deref()
                        });
                        let result = core.unregister(&tool_name(name), scope.as_deref());
                        proptest::prop_assert_eq!(result.is_ok(), present);
                    }
                    Change::UnregisterOwnedBy(owner) => {
                        core.unregister_owned_by(&format!("plugin{owner}"));
                    }
                    Change::Dispose(i) => {
                        let _ = core.dispose_agent(&agent(i));
                    }
                    Change::Create(i) => {
                        let _ = core.create_agent(&agent(i), Some("root"));
                    }
                }
                for name in (0..5).map(tool_name) {
                    let registered = core.tools().iter().any(|t| t.name == name);
                    let accepted = core.restrict("root", "p", Some(vec![name.clone()])).is_ok();
                    proptest::prop_assert_eq!(accepted, registered, "restricting to {}", name);
                }
            }
        }
    }

    /// `agent_generation` against the answer it stands for.
    mod agent_generations {
        use super::*;

        #[test]
        fn an_agents_generation_moves_only_for_changes_that_reach_it() {
            let mut core = core();
            core.create_agent("other", None).unwrap();
            let at = |core: &ShellCore| core.agent_generation("main/worker", "p");
            let start = at(&core);
            // The asking plugin's own layer, and layers on agents it does not reach.
            core.expose("main/worker", "p", Some(vec!["read".into()]))
                .unwrap();
            core.expose("main", "q", Some(vec!["read".into()])).unwrap();
            core.restrict("other", "q", Some(vec!["read".into()]))
                .unwrap();
            core.create_agent("main/sibling", Some("main")).unwrap();
            core.register(Tool::new(
                "sibling_only",
                "",
                Origin::Agent("main/sibling".into()),
            ))
            .unwrap();
            core.dispose_agent("main/sibling").unwrap();
            assert_eq!(at(&core), start);
            // Another plugin's exposure on it, a restriction on an ancestor, a tool.
            let mut seen = start;
            core.expose("main/worker", "q", Some(vec!["bash".into()]))
                .unwrap();
            assert!(at(&core) > seen);
            seen = at(&core);
            core.restrict("main", "profile", Some(vec!["read".into()]))
                .unwrap();
            assert!(at(&core) > seen);
            seen = at(&core);
            core.register(Tool::new("grep", "", Origin::Builtin))
                .unwrap();
            assert!(at(&core) > seen);
            seen = at(&core);
            core.register(Tool::new("mine", "", Origin::Agent("main".into())))
                .unwrap();
            assert!(at(&core) > seen);
            assert_eq!(core.agent_generation("nobody", "p"), core.generation());
        }

        #[derive(Debug, Clone)]
        enum Change {
            Register {
                name: usize,
                scope: Option<usize>,
            },
            Unregister {
                name: usize,
                scope: Option<usize>,
            },
            LiftAll {
                source: usize,
            },
            Restrict {
                agent: usize,
                source: usize,
                allow: Option<Vec<usize>>,
            },
            Expose {
                agent: usize,
                source: usize,
                allow: Option<Vec<usize>>,
            },
            Dispose {
                agent: usize,
            },
            Create {
                agent: usize,
            },
        }

        const TOOL_NAMES: [&str; 5] = ["read", "bash", "t0", "t1", "t2"];
        const AGENTS: [(&str, Option<&str>); 4] = [
            ("main", None),
            ("main/a", Some("main")),
            ("main/a/b", Some("main/a")),
            ("side", None),
        ];
        const SOURCES: [&str; 3] = ["p", "q", "profile"];

        fn change() -> impl proptest::strategy::Strategy<Value = Change> {
            use proptest::prelude::*;
            let allow = proptest::option::of(proptest::collection::vec(0..TOOL_NAMES.len(), 0..4));
            prop_oneof![
                (0..TOOL_NAMES.len(), proptest::option::of(0..AGENTS.len()))
                    .prop_map(|(name, scope)| Change::Register { name, scope }),
                (0..TOOL_NAMES.len(), proptest::option::of(0..AGENTS.len()))
                    .prop_map(|(name, scope)| Change::Unregister { name, scope }),
                (0..SOURCES.len()).prop_map(|source| Change::LiftAll { source }),
                (0..AGENTS.len(), 0..SOURCES.len(), allow.clone()).prop_map(
                    |(agent, source, allow)| Change::Restrict {
                        agent,
                        source,
                        allow
                    }
                ),
                (0..AGENTS.len(), 0..SOURCES.len(), allow).prop_map(|(agent, source, allow)| {
                    Change::Expose {
                        agent,
                        source,
                        allow,
                    }
                }),
                (0..AGENTS.len()).prop_map(|agent| Change::Dispose { agent }),
                (0..AGENTS.len()).prop_map(|agent| Change::Create { agent }),
            ]
        }

        fn apply(core: &mut ShellCore, change: &Change) {
            let names = |list: &Option<Vec<usize>>| {
                list.as_ref()
                    .map(|l| l.iter().map(|&i| TOOL_NAMES[i].to_string()).collect())
            };
            // Refused changes (an unknown agent, a taken name) change nothing.
            let _ = match change {
                Change::Register { name, scope } => {
                    let origin = match scope {
                        Some(a) => Origin::Agent(AGENTS[*a].0.into()),
                        None => Origin::Builtin,
                    };
                    core.register(Tool::new(TOOL_NAMES[*name], "", origin))
                        .map(|_| ())
                }
                Change::Unregister { name, scope } => core
                    .unregister(TOOL_NAMES[*name], scope.map(|a| AGENTS[a].0))
                    .map(|_| ()),
                Change::LiftAll { source } => {
                    core.lift_all(SOURCES[*source]);
                    Ok(())
                }
                Change::Restrict {
                    agent,
                    source,
                    allow,
                } => core.restrict(AGENTS[*agent].0, SOURCES[*source], names(allow)),
                Change::Expose {
                    agent,
                    source,
                    allow,
                } => core.expose(AGENTS[*agent].0, SOURCES[*source], names(allow)),
                Change::Dispose { agent } => core.dispose_agent(AGENTS[*agent].0).map(|_| ()),
                Change::Create { agent } => {
                    let (id, parent) = AGENTS[*agent];
                    core.create_agent(id, parent)
                }
            };
        }

        fn answers(core: &ShellCore) -> Vec<Option<(u64, Vec<String>)>> {
            AGENTS
                .iter()
                .map(|(id, _)| {
                    let tools = core.effective(id, Some("p")).ok()?;
                    let names = tools.iter().map(|t| t.name.clone()).collect();
                    Some((core.agent_generation(id, "p"), names))
                })
                .collect()
        }

        /// A shell with every agent of [`AGENTS`] and no tools.
        fn with_agents() -> ShellCore {
            let mut core = ShellCore::default();
            for (id, parent) in AGENTS {
                core.create_agent(id, parent).unwrap();
            }
            core
        }

        proptest::proptest! {
            /// What a plugin may skip on an unchanged generation really is
            /// unchanged: the same generation never hides a different answer.
            #[test]
            fn an_unchanged_agent_generation_means_an_unchanged_answer(
                changes in proptest::collection::vec(change(), 1..40)
            ) {
                let mut core = with_agents();
                let mut before = answers(&core);
                for change in &changes {
                    apply(&mut core, change);
                    let after = answers(&core);
                    for (was, now) in before.iter().zip(&after) {
                        if let (Some((g0, tools0)), Some((g1, tools1))) = (was, now)
                            && g0 == g1
                        {
                            proptest::prop_assert_eq!(tools0, tools1, "after {:?}", change);
                        }
                    }
                    before = after;
                }
            }

            /// What the shell answers for one name agrees with the whole registry
            /// after any changes: whether a call may go (the agent's whole tool
            /// list, every layer counted, holds the name) and which tool it
            /// reaches (the nearest scope's: the agent's own, its ancestors' up to
            /// the root, then the global one).
            #[test]
            fn one_name_is_answered_as_the_whole_registry_says(
                changes in proptest::collection::vec(change(), 1..40)
            ) {
                let mut core = with_agents();
                for change in &changes {
                    apply(&mut core, change);
                    for (id, _) in AGENTS {
                        let (Ok(tools), Ok(chain)) = (core.effective(id, None), core.chain(id)) else {
                            proptest::prop_assert!(core.may_call(id, TOOL_NAMES[0]).is_err());
                            continue;
                        };
                        for name in TOOL_NAMES {
                            let held = tools.iter().any(|t| t.name == *name);
                            proptest::prop_assert_eq!(
                                core.may_call(id, name).unwrap(), held,
                                "{} may call {}? after {:?}", id, name, change
                            );
                            let held_by = |scope: Option<&str>| {
                                core.tools().iter().find(|t| t.name == *name && t.origin.scope() == scope)
                            };
                            let nearest = chain
                                .iter()
                                .rev()
                                .find_map(|scope| held_by(Some(scope)))
                                .or_else(|| held_by(None));
                            proptest::prop_assert_eq!(
                                core.resolve(id, name).unwrap(), nearest,
                                "{} resolving {} after {:?}", id, name, change
                            );
                        }
                    }
                }
            }

            /// A view kept by `allowed-changes` deltas (a whole fetch only when
            /// the shell cannot say) is always the shell's whole answer, and a
            /// global registration alone never needs the whole answer.
            #[test]
            fn a_view_refreshed_by_deltas_is_the_whole_answer(
                changes in proptest::collection::vec(change(), 1..40)
            ) {
                let mut core = with_agents();
                let whole = |core: &ShellCore, id: &str| -> Option<(u64, BTreeSet<String>)> {
                    let tools = core.effective(id, Some("p")).ok()?;
                    let names = tools.iter().map(|t| t.name.clone()).collect();
                    Some((core.agent_generation(id, "p"), names))
                };
                let mut views: Vec<Option<(u64, BTreeSet<String>)>> =
                    AGENTS.iter().map(|(id, _)| whole(&core, id)).collect();
                for change in &changes {
                    apply(&mut core, change);
                    let global_tool = matches!(
                        change,
                        Change::Register { scope: None, .. } | Change::Unregister { scope: None, .. }
                    );
                    for ((id, _), view) in AGENTS.iter().zip(views.iter_mut()) {
                        let delta = view
                            .as_ref()
                            .and_then(|(since, _)| core.allowed_changes(id, "p", *since));
                        match (delta, view.as_mut()) {
                            (Some(delta), Some((generation, names))) => {
                                *generation = delta.generation;
                                names.extend(delta.allowed);
                                for name in &delta.denied {
                                    names.remove(name);
                                }
                            }
                            (_, was) => {
                                proptest::prop_assert!(
                                    !(global_tool && was.is_some() && core.has_agent(id)),
                                    "{} needed a whole fetch after {:?}", id, change
                                );
                                *view = whole(&core, id);
                            }
                        }
                        proptest::prop_assert_eq!(&*view, &whole(&core, id), "{} after {:?}", id, change);
                    }
                }
            }
        }
    }

    /// Resolving asks the name index which scope holds the name: one walk for
    /// the tool, wherever in the chain it is, and none for an unknown name.
    #[test]
    fn finding_registering_and_removing_a_name_never_walk_the_registry() {
        let mut core = core();
        core.register(Tool::new("global", "", Origin::Builtin))
            .unwrap();
        core.register(Tool::new("mine", "", Origin::Agent("main".into())))
            .unwrap();
        core.create_agent("other", None).unwrap();
        core.scans.set(0);
        for (name, found) in [("global", true), ("mine", true), ("unknown", false)] {
            let tool = core.resolve("main/worker", name).unwrap();
            assert_eq!(tool.map(|t| t.name.as_str()), found.then_some(name));
        }
        // A name held elsewhere is checked for its owner through the index too.
        let mut taken = Tool::new("global", "", Origin::Agent("main/worker".into()));
        taken.owner = Some("p".into());
        assert!(matches!(
            core.register(taken),
            Err(ShellError::NameTaken { .. })
        ));
        core.register(Tool::new("mine", "", Origin::Builtin))
            .unwrap();
        core.unregister("global", None).unwrap();
        // The positions after a removed tool moved down with it.
        assert_eq!(
            core.resolve("main/worker", "mine")
                .unwrap()
                .and_then(|t| t.origin.scope()),
            Some("main")
        );
        assert_eq!(
            core.resolve("other", "mine")
                .unwrap()
                .map(|t| t.origin.scope()),
            Some(None)
        );
        assert_eq!(core.scans.get(), 0);
    }

    /// Restricting checks each allowed name against the name index: at
    /// 50,000 tools a scan per name made each load take seconds.
    #[test]
    fn restricting_looks_names_up_without_walking_the_registry() {
        let mut core = core();
        let names: Vec<String> = (0..2_000).map(|i| format!("t{i}")).collect();
        for name in &names {
            core.register(Tool::new(name, "", Origin::Builtin)).unwrap();
        }
        core.scans.set(0);
        core.restrict("main", "p", Some(names.clone())).unwrap();
        core.expose("main/worker", "p", Some(names)).unwrap();
        assert_eq!(core.scans.get(), 0);
        // The count is real: computing a view walks the registry.
        core.effective("main", None).unwrap();
        assert!(core.scans.get() > 0);
    }

    /// A chain as deep as an id may be: one walk of the registry for the agent's tools,
    /// in the same order a walk per scope gave (a walk per scope made every request of an
    /// agent cost its depth times the registry).
    #[test]
    fn an_agents_tools_take_one_walk_of_the_registry_however_deep_it_is() {
        let mut core = core();
        let mut id = "main".to_string();
        for depth in 2..=MAX_AGENT_DEPTH {
            let child = format!("{id}/a{depth}");
            core.create_agent(&child, Some(&id)).unwrap();
            core.register(Tool::new("own", "", Origin::Agent(child.clone())))
                .unwrap();
            core.register(Tool::new(
                format!("t{depth}"),
                "",
                Origin::Agent(child.clone()),
            ))
            .unwrap();
            id = child;
        }
        // A sibling's tools are in the registry, not in the chain.
        core.register(Tool::new("theirs", "", Origin::Agent("main/worker".into())))
            .unwrap();
        assert_eq!(core.chain(&id).unwrap().len(), MAX_AGENT_DEPTH);
        core.scans.set(0);
        let tools = core.effective(&id, None).unwrap();
        assert_eq!(core.scans.get(), 1);
        let scoped: Vec<String> = (2..=MAX_AGENT_DEPTH).map(|d| format!("t{d}")).collect();
        let mut expected = vec!["read", "bash", "gh_issue"];
        expected.extend(scoped.iter().map(String::as_str));
        // The nearest scope's `own` shadows the others, in its scope's place.
        expected.insert(expected.len() - 1, "own");
        assert_eq!(names(tools), expected);
        assert_eq!(
            core.chain(&id).unwrap()[..3],
            ["main", "main/a2", "main/a2/a3"]
        );
    }

    /// Ids are refused past the depth and length a real shell never reaches, before
    /// anything is created, with the start of the id and the limit.
    #[test]
    fn agent_ids_are_refused_past_a_depth_and_a_length() {
        let mut core = core();
        let mut id = "main".to_string();
        for _ in 2..=MAX_AGENT_DEPTH {
            let child = format!("{id}/a");
            core.create_agent(&child, Some(&id)).unwrap();
            id = child;
        }
        let deeper = format!("{id}/a");
        let err = core.create_agent(&deeper, Some(&id)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "agent `{}…` is 65 agents deep; a chain holds at most 64 (`main` is 1)",
                &deeper[..40]
            )
        );
        assert!(!core.has_agent(&deeper));
        let long = format!("main/{}", "x".repeat(MAX_AGENT_ID_BYTES));
        let err = core.create_agent(&long, Some("main")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "agent id `main/{}…` is 1029 bytes long; an id holds at most 1024",
                "x".repeat(35)
            )
        );
        let fits = format!("main/{}", "x".repeat(MAX_AGENT_ID_BYTES - 5));
        core.create_agent(&fits, Some("main")).unwrap();
        // A hostile id is shown escaped.
        let hostile = format!("main/\u{1b}]0;x{}", "/a".repeat(MAX_AGENT_DEPTH));
        let shown = check_agent_id(&hostile).unwrap_err().to_string();
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
    }

    /// A lazy group loads for an agent whose chain allows one of its declared tools; the
    /// asking plugin's own layer on the agent does not count, an ancestor's restriction
    /// does, and a group that declares no tools loads only for an unrestricted chain.
    #[test]
    fn a_lazy_group_loads_for_an_agent_whose_restrictions_allow_one_of_its_tools() {
        let mut core = core();
        let declare = |core: &mut ShellCore, name: &str, tools: &[&str]| {
            core.declare_lazy_group(LazyGroupDecl {
                name: name.into(),
                description: String::new(),
                tool_names: tools.iter().map(|t| t.to_string()).collect(),
            })
        };
        declare(&mut core, "gh", &["gh_issue", "gh_pr"]);
        declare(&mut core, "unlisted", &[]);
        let may = |core: &ShellCore, agent: &str, group: &str| {
            core.may_load_group(agent, "lazy-tools", group).unwrap()
        };
        assert!(may(&core, "main/worker", "gh"));
        assert!(may(&core, "main/worker", "unlisted"));
        // The plugin's own layer on the agent is what the load changes.
        core.restrict("main/worker", "lazy-tools", Some(vec!["read".into()]))
            .unwrap();
        assert!(may(&core, "main/worker", "gh"));
        assert!(may(&core, "main/worker", "unlisted"));
        // Another source's layer, on the agent or on its parent, counts.
        core.restrict("main", "parent", Some(vec!["read".into()]))
            .unwrap();
        assert!(!may(&core, "main/worker", "gh"));
        assert!(!may(&core, "main", "gh"));
        assert!(!may(&core, "main/worker", "unlisted"));
        core.restrict("main", "parent", Some(vec!["gh_issue".into()]))
            .unwrap();
        assert!(may(&core, "main/worker", "gh"));
        core.restrict("main/worker", "policy", Some(vec!["bash".into()]))
            .unwrap();
        assert!(!may(&core, "main/worker", "gh"));
        assert!(may(&core, "main", "gh"));
        // An unknown group is for the load to report; an unknown agent is an error.
        assert!(may(&core, "main/worker", "nope"));
        assert!(core.may_load_group("ghost", "lazy-tools", "gh").is_err());
    }

    /// `define` gives a tool of the same origin its new definition in place, changes
    /// nothing for the same definition, and never takes another origin's name.
    #[test]
    fn define_replaces_a_tool_of_its_origin_in_place_and_no_other() {
        let mut core = core();
        let mcp = |description: &str| Tool::new("fx__echo", description, Origin::Mcp("fx".into()));
        assert!(core.define(mcp("old")).unwrap());
        core.register(Tool::new("after", "", Origin::Builtin))
            .unwrap();
        let revision = core.registry_revision();
        assert!(!core.define(mcp("old")).unwrap());
        assert_eq!(core.registry_revision(), revision);
        assert!(core.define(mcp("new")).unwrap());
        assert_eq!(core.registry_revision(), revision + 1);
        let order: Vec<&str> = core.scan().map(|t| t.name.as_str()).collect();
        assert_eq!(order, ["read", "bash", "gh_issue", "fx__echo", "after"]);
        assert_eq!(
            core.resolve("main", "fx__echo")
                .unwrap()
                .unwrap()
                .description,
            "new"
        );
        let builtin = Tool::new("fx__echo", "", Origin::Builtin);
        assert!(core.define(builtin).is_err());
    }
}
