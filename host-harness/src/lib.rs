//! host-harness: an agent shell emulator on wasmtime for the lazy-tools
//! plugin, used by its tests, benchmarks and the `host-harness` CLI.

pub mod catalog;
pub mod plugin_api;
pub mod shell;
pub mod wasm_host;
