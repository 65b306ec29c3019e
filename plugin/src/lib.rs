//! lazy-tools: deferred tool loading for agent shells.
//!
//! The logic lives in plain modules that compile and test natively; the
//! `component` module is the thin glue from the WIT contract to them and is
//! only built for `wasm32`.

pub mod catalog;
pub mod config;
pub mod guards;
pub mod host;
pub mod lazy_tools;
pub mod pattern;
pub mod policy;
pub mod registry;
pub mod search;
pub mod state;
pub mod tokens;

#[cfg(target_arch = "wasm32")]
mod component;

pub use lazy_tools::{LazyTools, PluginError, ToolResult, Verdict};
