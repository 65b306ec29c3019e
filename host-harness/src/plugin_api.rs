//! Host-side types for what crosses the plugin boundary. They are the
//! newest contract's own types; older contract versions are remapped onto
//! them (see `wasm_host::wit`), so the shell handles one set whatever
//! version a plugin speaks.

use std::fmt;

pub use crate::wasm_host::wit::since_v0_3_0::wit::{
    CallResolution, ConfigError, Explanation, ForwardedCall, LocatedExplanation,
    PluginError as PluginCallError, Rule, ToolResult, ToolState, Verdict,
};

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}
