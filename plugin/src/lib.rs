//! lazy-tools: deferred tool loading for agent shells.
//!
//! The logic lives in plain modules that compile and test natively; the
//! `component` module is the thin glue from the WIT contract to them and is
//! only built for `wasm32`.
//!
//! The public API is what a host linking the plugin natively needs (the
//! harness's baseline and benchmarks): [`LazyTools`] over a [`host::Host`],
//! the registry types, the search index, the guard tools' limits, token
//! estimates, the one "did you mean" and the one set of bidirectional
//! controls. Everything else is the crate's own, so the compiler finds what
//! nothing uses.

mod catalog;
mod config;
mod copy_log;
mod groups;
pub mod guards;
pub mod host;
mod json_size;
pub mod keyed_hash;
mod lazy_tools;
mod name_facts;
mod names;
mod outcome;
mod pattern;
mod policy;
pub mod registry;
mod saved_state;
pub mod search;
mod shown;
mod state;
pub mod suggest;
mod swar;
pub mod tokens;
pub mod tool_table;

#[cfg(target_arch = "wasm32")]
mod component;

pub use config::ConfigError;
pub use config::{DEFAULT_TOKEN_BUDGET, Strategy};
pub use lazy_tools::{LazyTools, PluginError, Resolution, ToolResult, Verdict};
pub use policy::{Explanation, PRECEDENCE, Rule, ToolState};
pub use saved_state::MAX_STATE_BYTES;
pub use shown::is_bidi_control;
