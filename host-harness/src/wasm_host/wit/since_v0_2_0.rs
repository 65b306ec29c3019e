//! Bindings to `dsh:tool-restriction@0.2.0`, the newest contract, and the
//! host side of its imports. Older versions reuse its types.

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};

use super::super::PluginState;
use crate::plugin_api::{
    ConfigError, Explanation, PluginCallError, Rule, ToolResult, ToolState, Verdict,
};
use crate::shell::{Origin, Tool};

wasmtime::component::bindgen!({
    path: "../wit/since_v0.2.0",
    world: "restriction-plugin",
});

pub use dsh::tool_restriction::types as wit;

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    RestrictionPlugin::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |state| state)?;
    Ok(())
}

impl wit::Host for PluginState {}

impl dsh::tool_restriction::host::Host for PluginState {
    fn registry(&mut self) -> Vec<wit::ToolDef> {
        self.shell_registry().iter().map(tool_to_wit).collect()
    }

    fn allowed_tools(&mut self, agent: String) -> Result<Vec<String>, String> {
        self.shell_allowed_tools(&agent)
    }

    fn restrict(&mut self, agent: String, allow: Option<Vec<String>>) -> Result<(), String> {
        self.shell_restrict(&agent, allow)
    }

    fn log(&mut self, level: wit::LogLevel, message: String) {
        let level = match level {
            wit::LogLevel::Trace => tracing::Level::TRACE,
            wit::LogLevel::Debug => tracing::Level::DEBUG,
            wit::LogLevel::Info => tracing::Level::INFO,
            wit::LogLevel::Warn => tracing::Level::WARN,
            wit::LogLevel::Error => tracing::Level::ERROR,
        };
        self.record_log(level, message);
    }

    fn tool_groups(&mut self) -> Vec<wit::ToolGroup> {
        self.shell_groups()
            .into_iter()
            .map(|(name, description)| wit::ToolGroup { name, description })
            .collect()
    }

    fn count_tokens(&mut self, texts: Vec<String>) -> Option<Vec<u32>> {
        self.shell_count_tokens(&texts)
    }
}

pub fn tool_to_wit(tool: &Tool) -> wit::ToolDef {
    wit::ToolDef {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: tool.parameters.to_string(),
        origin: match &tool.origin {
            Origin::Builtin => wit::ToolOrigin::Builtin,
            Origin::Mcp(server) => wit::ToolOrigin::Mcp(server.clone()),
            Origin::Agent(agent) => wit::ToolOrigin::Agent(agent.clone()),
        },
    }
}

/// A guard tool's definition. Its origin is decided by the host (each agent's
/// own scope), so the plugin's value is ignored.
pub fn tool_from_wit(tool: wit::ToolDef) -> Result<Tool> {
    let parameters = serde_json::from_str(&tool.parameters).map_err(|e| {
        anyhow::anyhow!(
            "the plugin's tool `{}` has parameters that are not JSON: {e}",
            tool.name
        )
    })?;
    Ok(Tool {
        name: tool.name,
        description: tool.description,
        parameters,
        origin: Origin::Builtin,
        owner: None,
    })
}

pub fn config_errors_from_wit(errors: Vec<wit::ConfigError>) -> Vec<ConfigError> {
    errors
        .into_iter()
        .map(|e| ConfigError {
            pointer: e.pointer,
            entry: e.entry,
            message: e.message,
        })
        .collect()
}

pub fn verdict_from_wit(verdict: wit::Verdict) -> Verdict {
    match verdict {
        wit::Verdict::Pass => Verdict::Pass,
        wit::Verdict::Deny(reason) => Verdict::Deny(reason),
    }
}

pub fn tool_result_from_wit(r: wit::ToolResult) -> ToolResult {
    ToolResult {
        json: r.json,
        text: r.text,
        is_error: r.is_error,
    }
}

pub fn error_from_wit(e: wit::PluginError) -> PluginCallError {
    match e {
        wit::PluginError::NotConfigured => PluginCallError::NotConfigured,
        wit::PluginError::UnknownAgent(a) => PluginCallError::UnknownAgent(a),
        wit::PluginError::UnknownTool(t) => PluginCallError::UnknownTool(t),
        wit::PluginError::Host(m) => PluginCallError::Host(m),
    }
}

pub fn explanation_from_wit(e: wit::Explanation) -> Explanation {
    Explanation {
        state: match e.state {
            wit::ToolState::Visible => ToolState::Visible,
            wit::ToolState::Deferred => ToolState::Deferred,
            wit::ToolState::Unavailable => ToolState::Unavailable,
        },
        rule: match e.rule {
            wit::Rule::Guard => Rule::Guard,
            wit::Rule::AgentScope => Rule::AgentScope,
            wit::Rule::SwitchOff => Rule::SwitchOff,
            wit::Rule::NeverDefer => Rule::NeverDefer,
            wit::Rule::NoDeferEntry => Rule::NoDeferEntry,
            wit::Rule::AlwaysDefer => Rule::AlwaysDefer,
            wit::Rule::DeferEntry => Rule::DeferEntry,
            wit::Rule::Preset => Rule::Preset,
            wit::Rule::Budget => Rule::Budget,
            wit::Rule::NoRule => Rule::NoRule,
            wit::Rule::Activated => Rule::Activated,
            wit::Rule::ParentRestriction => Rule::ParentRestriction,
            wit::Rule::UnknownTool => Rule::UnknownTool,
        },
        summary: e.summary,
    }
}
