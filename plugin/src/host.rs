//! What the plugin needs from the shell, as a trait so the logic runs and is
//! tested natively; `component.rs` implements it over the WIT imports.

use crate::registry::{Enrichment, LazyGroup, LoadRefusal, RegistryDelta, ToolDef, ToolGroup};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// What changed for one agent since one of its generations, when only tools
/// registered or removed reached it (WIT 0.3.0 `allowed-delta`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedDelta {
    /// The agent's generation now: ask from it next time.
    pub generation: u64,
    /// Names registered or removed since that the agent may call now.
    pub allowed: Vec<String>,
    /// Names registered or removed since that it may not call now.
    pub denied: Vec<String>,
}

pub trait Host {
    /// Every registered tool.
    fn registry(&self) -> Vec<ToolDef>;
    /// What `agent` may call under every restriction but this plugin's own
    /// layer on it: what its chain and other plugins authorize.
    fn allowed_tools(&self, agent: &str) -> Result<Vec<String>, String>;
    /// Install (`Some`) or lift (`None`) this plugin's exposure layer for
    /// `agent`: what its model sees and may call, never inherited by its
    /// descendants (WIT 0.3.0 `host.expose`).
    fn expose(&self, agent: &str, visible: Option<&[String]>) -> Result<(), String>;
    fn log(&self, level: LogLevel, message: &str);
    /// The groups (MCP servers) that tools' origins name.
    fn tool_groups(&self) -> Vec<ToolGroup>;
    /// Token counts of `texts` with the model's tokenizer; `None` when the
    /// host has no counter, which an empty `texts` also learns.
    fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>>;
    /// Changes whenever what some agent may call can have changed.
    fn tools_generation(&self) -> u64;
    /// Changes whenever what `agent` may call, as [`Host::allowed_tools`]
    /// answers it, can have changed; not when this plugin installs its own
    /// exposure layer, nor for changes that reach only other agents (WIT
    /// 0.3.0 `host.agent-generation`).
    fn agent_generation(&self, agent: &str) -> u64;
    /// The groups the host loads on demand (WIT 0.3.0 `host.lazy-groups`).
    fn lazy_groups(&self) -> Vec<LazyGroup>;
    /// Loads lazy group `name` for `agent`: the host registers its tools and returns
    /// them, or says why it did not (WIT 0.3.0 `host.load-group`); it refuses an agent
    /// that may call none of them.
    fn load_group(&self, agent: &str, name: &str) -> Result<Vec<ToolDef>, LoadRefusal>;
    /// Whether [`Host::load_group`] would load lazy group `name` for `agent` rather than
    /// refuse it as denied; it loads nothing (WIT 0.3.0 `host.may-load-group`). By default
    /// every agent may, and a refusal comes when it asks.
    fn may_load_group(&self, _agent: &str, _name: &str) -> bool {
        true
    }
    /// Extra search text for registered tools (WIT 0.3.0 `host.tool-enrichment`); none by
    /// default.
    fn tool_enrichment(&self) -> Vec<Enrichment> {
        Vec::new()
    }
    /// The registry's revision now, to ask [`Host::registry_changes`] from (WIT 0.3.0
    /// `host.registry-revision`); `None` when the host does not track changes.
    fn registry_revision(&self) -> Option<u64> {
        None
    }
    /// What changed in the registry since revision `since` (WIT 0.3.0
    /// `host.registry-changes`); `None` when the host cannot say, and the whole registry is
    /// fetched instead.
    fn registry_changes(&self, _since: u64) -> Option<RegistryDelta> {
        None
    }
    /// Changes whenever [`Host::tool_groups`], [`Host::lazy_groups`] or
    /// [`Host::tool_enrichment`] can answer otherwise (WIT 0.3.0 `host.metadata-revision`);
    /// `None` when the host keeps no such counter, and all three are fetched on every
    /// registry change.
    fn metadata_revision(&self) -> Option<u64> {
        None
    }
    /// What changed for `agent` since its generation `since` (one
    /// [`Host::agent_generation`] or an earlier delta gave), when only tools registered or
    /// removed reached it (WIT 0.3.0 `host.allowed-changes`); `None` when the host cannot
    /// say, and [`Host::allowed_tools`] is asked instead.
    fn allowed_changes(&self, _agent: &str, _since: u64) -> Option<AllowedDelta> {
        None
    }
}
