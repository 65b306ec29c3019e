//! Host-side types for what crosses the plugin boundary. They are the
//! newest contract's own types; older contract versions are remapped onto
//! them (see `wasm_host::wit`), so the shell handles one set whatever
//! version a plugin speaks.

use std::fmt;

pub use crate::wasm_host::wit::since_v0_3_0::wit::{
    CallResolution, ConfigError, Explanation, ForwardedCall, LocatedExplanation,
    PluginError as PluginCallError, Rule, ToolResult, ToolState, Verdict,
};

/// A plugin's `plugin-error` as a person reads it (the generated `Display` shows the variant
/// as Rust writes it: `PluginError::UnknownAgent("main")`).
pub fn describe_plugin_error(error: &PluginCallError) -> String {
    match error {
        PluginCallError::NotConfigured => "the plugin is not configured yet".into(),
        PluginCallError::UnknownAgent(agent) => format!("it does not know agent `{agent}`"),
        PluginCallError::UnknownTool(tool) => format!("`{tool}` is not one of its tools"),
        PluginCallError::Host(why) => format!("the shell refused it: {why}"),
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}
