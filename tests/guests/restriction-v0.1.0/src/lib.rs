//! Denies every tool whose name starts with `forbidden_` and hides nothing:
//! just enough of a 0.1.0 plugin to exercise the host's 0.1.0 bindings.

wit_bindgen::generate!({
    path: "../../../wit/since_v0.1.0",
    world: "restriction-plugin",
});

use dsh::tool_restriction::host;
use dsh::tool_restriction::types::{ConfigError, PluginError, ToolDef, ToolResult, Verdict};
use exports::dsh::tool_restriction::restriction::Guest;

struct Plugin;

impl Guest for Plugin {
    fn configure(config: String) -> Result<(), Vec<ConfigError>> {
        match config.trim() {
            "null" | "{}" | "" => Ok(()),
            _ => Err(vec![ConfigError {
                pointer: String::new(),
                entry: None,
                message: "this plugin takes no config".into(),
            }]),
        }
    }

    fn guard_tools() -> Vec<ToolDef> {
        Vec::new()
    }

    fn agent_created(_agent: String, _parent: Option<String>) -> Result<(), PluginError> {
        Ok(())
    }

    fn agent_disposed(_agent: String) {}

    fn registry_changed() -> Result<(), PluginError> {
        Ok(())
    }

    fn visible_tools(agent: String) -> Result<Vec<String>, PluginError> {
        host::allowed_tools(&agent).map_err(PluginError::Host)
    }

    fn pre_execute(_agent: String, tool: String, _arguments: String) -> Verdict {
        if tool.starts_with("forbidden_") {
            Verdict::Deny(format!("`{tool}` is forbidden"))
        } else {
            Verdict::Pass
        }
    }

    fn execute(
        _agent: String,
        tool: String,
        _arguments: String,
    ) -> Result<ToolResult, PluginError> {
        Err(PluginError::UnknownTool(tool))
    }

    fn dispose() {}
}

export!(Plugin);
