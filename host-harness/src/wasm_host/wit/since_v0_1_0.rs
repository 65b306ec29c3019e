//! Bindings to `dsh:tool-restriction@0.1.0` and the host side of its imports.

use anyhow::Result;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

use super::super::PluginState;
use crate::plugin_api::{ConfigError, PluginCallError, ToolResult, Verdict};
use crate::shell::{Origin, Tool};

wasmtime::component::bindgen!({
    path: "../wit/since_v0.1.0",
    world: "restriction-plugin",
});

use dsh::tool_restriction::types as wit;
use exports::dsh::tool_restriction::restriction::Guest;

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
}

fn guest(b: &RestrictionPlugin) -> &Guest {
    b.dsh_tool_restriction_restriction()
}

pub fn configure(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
    config: &str,
) -> Result<Result<(), Vec<ConfigError>>> {
    Ok(guest(b).call_configure(store, config)?.map_err(|errors| {
        errors
            .into_iter()
            .map(|e| ConfigError {
                pointer: e.pointer,
                entry: e.entry,
                message: e.message,
            })
            .collect()
    }))
}

pub fn guard_tools(b: &RestrictionPlugin, store: &mut Store<PluginState>) -> Result<Vec<Tool>> {
    guest(b)
        .call_guard_tools(store)?
        .into_iter()
        .map(tool_from_wit)
        .collect()
}

pub fn agent_created(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
    agent: &str,
    parent: Option<&str>,
) -> Result<Result<(), PluginCallError>> {
    Ok(guest(b)
        .call_agent_created(store, &agent.to_owned(), parent.map(str::to_owned).as_ref())?
        .map_err(error_from_wit))
}

pub fn agent_disposed(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
    agent: &str,
) -> Result<()> {
    Ok(guest(b).call_agent_disposed(store, &agent.to_owned())?)
}

pub fn registry_changed(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
) -> Result<Result<(), PluginCallError>> {
    Ok(guest(b)
        .call_registry_changed(store)?
        .map_err(error_from_wit))
}

pub fn visible_tools(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
    agent: &str,
) -> Result<Result<Vec<String>, PluginCallError>> {
    Ok(guest(b)
        .call_visible_tools(store, &agent.to_owned())?
        .map_err(error_from_wit))
}

pub fn pre_execute(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
    agent: &str,
    tool: &str,
    arguments: &str,
) -> Result<Verdict> {
    Ok(
        match guest(b).call_pre_execute(store, &agent.to_owned(), tool, arguments)? {
            wit::Verdict::Pass => Verdict::Pass,
            wit::Verdict::Deny(reason) => Verdict::Deny(reason),
        },
    )
}

pub fn execute(
    b: &RestrictionPlugin,
    store: &mut Store<PluginState>,
    agent: &str,
    tool: &str,
    arguments: &str,
) -> Result<Result<ToolResult, PluginCallError>> {
    Ok(guest(b)
        .call_execute(store, &agent.to_owned(), tool, arguments)?
        .map(|r| ToolResult {
            json: r.json,
            text: r.text,
            is_error: r.is_error,
        })
        .map_err(error_from_wit))
}

pub fn dispose(b: &RestrictionPlugin, store: &mut Store<PluginState>) -> Result<()> {
    Ok(guest(b).call_dispose(store)?)
}

fn tool_to_wit(tool: &Tool) -> wit::ToolDef {
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
fn tool_from_wit(tool: wit::ToolDef) -> Result<Tool> {
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

fn error_from_wit(e: wit::PluginError) -> PluginCallError {
    match e {
        wit::PluginError::NotConfigured => PluginCallError::NotConfigured,
        wit::PluginError::UnknownAgent(a) => PluginCallError::UnknownAgent(a),
        wit::PluginError::UnknownTool(t) => PluginCallError::UnknownTool(t),
        wit::PluginError::Host(m) => PluginCallError::Host(m),
    }
}
