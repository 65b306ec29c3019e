//! The hook through which the shell runs tools it does not run itself (an
//! MCP server's), and through which their source changes the registry.

use serde_json::Value;

use super::{Tool, ToolOutput};
use crate::shell_core::ShellCore;

/// A change to the global registry a backend asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum RegistryChange {
    Register(Tool),
    Unregister(String),
    /// Declares or redescribes a group (an MCP server).
    Group {
        name: String,
        description: String,
    },
}

/// Runs tools after the shell's checks, and keeps their part of the registry.
pub trait ToolBackend: Send {
    /// Runs `tool` for `agent` once the pre-execute waterfall and the
    /// restriction check have passed; `None` when it is not this backend's.
    fn run(&mut self, agent: &str, tool: &Tool, arguments: &Value) -> Option<ToolOutput>;

    /// Called before each request and after each call, with the shell's
    /// state (what each agent may call now): the registry changes to apply.
    fn sync(&mut self, core: &ShellCore) -> Vec<RegistryChange>;
}
