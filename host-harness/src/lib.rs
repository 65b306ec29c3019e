//! host-harness: an agent shell emulator on wasmtime for the lazy-tools
//! plugin, used by its tests, benchmarks and the `host-harness` CLI.

pub mod atomic_write;
pub mod bounded;
pub mod catalog;
pub mod child_process;
pub mod commands;
pub mod home;
pub mod host_view;
pub mod install;
pub mod log_allowance;
pub mod mcp;
pub mod native_plugin;
pub mod peers;
pub mod plugin_api;
pub mod profile;
pub mod script;
pub mod shell;
pub mod shell_core;
pub mod source;
pub mod strict_json;
pub mod terminal;
pub mod tokens;
pub mod tool;
pub mod wasm_host;
pub mod yaml;

#[cfg(test)]
mod module_graph;
