//! Host-side types for what crosses the plugin boundary, independent of the
//! contract version a plugin speaks.

use std::fmt;

/// A pre-execute answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Deny(String),
}

/// The result of a plugin's own tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub json: String,
    pub text: String,
    pub is_error: bool,
}

/// One problem the plugin found in its config, at a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub pointer: String,
    pub entry: Option<String>,
    pub message: String,
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

/// A plugin refused a call from the host (the host misused it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginCallError {
    #[error("the plugin is not configured")]
    NotConfigured,
    #[error("the plugin does not know agent `{0}`")]
    UnknownAgent(String),
    #[error("`{0}` is not one of the plugin's tools")]
    UnknownTool(String),
    #[error("the plugin says the host refused: {0}")]
    Host(String),
}

/// Where a tool stands for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    Visible,
    Deferred,
    Unavailable,
}

/// The kind of rule that decided a tool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Guard,
    AgentScope,
    SwitchOff,
    NeverDefer,
    NoDeferEntry,
    AlwaysDefer,
    DeferEntry,
    Preset,
    Budget,
    NoRule,
    Activated,
    ParentRestriction,
    UnknownTool,
}

/// Why a tool is in its state, for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub state: ToolState,
    pub rule: Rule,
    pub summary: String,
}
