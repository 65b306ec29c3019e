//! Bindings to `dsh:tool-restriction@0.3.0`, the newest contract, and the
//! host side of its imports. Older versions reuse its types.

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};

use super::super::PluginState;
use crate::shell::{Origin, Tool};

wasmtime::component::bindgen!({
    path: "../wit/since_v0.3.0",
    world: "restriction-plugin",
    // The shell uses these types directly (crate::plugin_api).
    additional_derives: [PartialEq, Eq],
});

pub use dsh::tool_restriction::types as wit;

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    RestrictionPlugin::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |state| state)?;
    Ok(())
}

impl wit::Host for PluginState {}

// The costly imports run under `host_call`: their time is the shell's.
impl dsh::tool_restriction::host::Host for PluginState {
    fn registry(&mut self) -> Vec<wit::ToolDef> {
        self.host_call(|s| s.shell_registry(tool_to_wit))
    }

    fn allowed_tools(&mut self, agent: String) -> Result<Vec<String>, String> {
        self.host_call(|s| s.shell_allowed_tools(&agent))
    }

    fn restrict(&mut self, agent: String, allow: Option<Vec<String>>) -> Result<(), String> {
        self.host_call(|s| s.shell_restrict(&agent, allow))
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

    fn tools_generation(&mut self) -> u64 {
        self.shell_generation()
    }

    fn count_tokens(&mut self, texts: Vec<String>) -> Option<Vec<u32>> {
        self.host_call(|s| s.shell_count_tokens(&texts))
    }
}

pub fn tool_to_wit(tool: &Tool) -> wit::ToolDef {
    wit::ToolDef {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: tool.parameters_json().to_string(),
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
    Ok(Tool::new(tool.name, tool.description, Origin::Builtin).with_parameters(parameters))
}
