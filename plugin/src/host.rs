//! What the plugin needs from the shell, as a trait so the logic runs and is
//! tested natively; `component.rs` implements it over the WIT imports.

use crate::registry::ToolDef;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

pub trait Host {
    /// Every registered tool.
    fn registry(&self) -> Vec<ToolDef>;
    /// What `agent` may call under every restriction but this plugin's own.
    fn allowed_tools(&self, agent: &str) -> Result<Vec<String>, String>;
    /// Install (`Some`) or lift (`None`) this plugin's allow set for `agent`.
    fn restrict(&self, agent: &str, allow: Option<&[String]>) -> Result<(), String>;
    fn log(&self, level: LogLevel, message: &str);
}
