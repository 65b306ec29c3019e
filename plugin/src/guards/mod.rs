//! The plugin's own tools ("guards"): their definitions (`schemas`), their
//! arguments and limits (`arguments`), the results and hints the model
//! reads (`results`) and what each one does (`handlers`, over the plugin's
//! state through the [`handlers::Loads`] trait). They live in every agent's
//! own scope, so no rule or restriction can hide them.

use crate::config::Strategy;

mod arguments;
pub(crate) mod handlers;
mod results;
mod schemas;

pub use arguments::{
    DEFAULT_TOP_K, MAX_ARGUMENT_BYTES, MAX_FORWARD_BYTES, MAX_QUERIES, MAX_QUERY_CHARS,
    MAX_TOOL_NAME_CHARS, MAX_TOOL_NAMES, MAX_TOP_K,
};
pub use results::{
    MAX_LISTED_MATCH_BYTES, MAX_LISTED_NAME_BYTES, MAX_LOAD_SCHEMA_BYTES, MAX_SEARCH_SCHEMA_BYTES,
    Match, Schema, Status, ToolTexts, changed_hint, deferred_hint, first_sentence, sentence_end,
};
pub use schemas::definitions;

pub const TOOL_SEARCH: &str = "tool_search";
pub const DEFER_EXECUTE_TOOL: &str = "defer_execute_tool";
/// Loads a group (or some of its tools) and returns their schemas.
pub const LOAD_TOOLS: &str = "load_tools";
/// The forwarder of the `dispatch` strategy: the shell unwraps it.
pub const DEFERRED_TOOL_CALL: &str = "deferred_tool_call";
/// The guard tools `strategy` registers ([`definitions`] makes them): a server's tool that
/// has the name of a guard the strategy does not register is a tool like any other.
pub fn names(strategy: Strategy) -> &'static [&'static str] {
    match strategy {
        Strategy::Inject => &[TOOL_SEARCH, DEFER_EXECUTE_TOOL, LOAD_TOOLS],
        Strategy::Dispatch => &[TOOL_SEARCH, LOAD_TOOLS, DEFERRED_TOOL_CALL],
    }
}

/// Whether `name` is one of the guard tools `strategy` registers.
pub fn is_guard(name: &str, strategy: Strategy) -> bool {
    names(strategy).contains(&name)
}
