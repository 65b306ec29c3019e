//! What the plugin's exports answer the host with, independent of WIT: the
//! host's misuse, the pre-execute verdict, a guard tool's result and a
//! call's resolution.

use serde::Serialize;
use serde_json::json;

/// Misuse by the host (mirrors the WIT `plugin-error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("lazy-tools is not configured yet")]
    NotConfigured,
    #[error("unknown agent `{0}`")]
    UnknownAgent(String),
    #[error("`{0}` is not a lazy-tools tool")]
    UnknownTool(String),
    #[error("the host refused: {0}")]
    Host(String),
}

/// The answer of the pre-execute hook (mirrors the WIT `verdict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Deny(String),
}

/// The result of a guard tool (mirrors the WIT `tool-result`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub json: String,
    pub text: String,
    pub is_error: bool,
}

impl ToolResult {
    pub(crate) fn ok(value: &impl Serialize, text: String) -> Self {
        Self {
            json: serde_json::to_string(value)
                .unwrap_or_else(|e| json!({"error": e.to_string()}).to_string()),
            text,
            is_error: false,
        }
    }

    /// An error result. Its message is one line: it may quote what the model wrote (a name,
    /// a key serde found unknown), which must not forge a line of its own.
    pub(crate) fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        let message = match crate::shown::one_line(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(line) => line,
        };
        Self {
            json: json!({ "error": message }).to_string(),
            text: message,
            is_error: true,
        }
    }

    /// An error result with structured details next to the message.
    pub(crate) fn error_with(value: &impl Serialize, text: String) -> Self {
        Self {
            is_error: true,
            ..Self::ok(value, text)
        }
    }
}

/// What the shell must run for one tool call (mirrors the WIT
/// `call-resolution`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Not forwarded: run it as called.
    Direct,
    /// The forwarder's real tool and arguments (JSON text).
    Forward {
        tool: String,
        arguments: String,
        implicitly_loaded: bool,
    },
    /// The envelope cannot be resolved: the model reads this result.
    Reject(ToolResult),
}
