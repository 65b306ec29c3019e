//! The integration suites, linked into one test binary (wasmtime's
//! `tests/all/` pattern): one link of wasmtime instead of one per suite.
//! The fixture runners (`../cases.rs`, `../profiles.rs`) are binaries of
//! their own, one trial per fixture folder. See `../README.md`.

mod bench_search;
mod bench_session;
#[path = "../support/chain.rs"]
mod chain;
mod common;
mod component_cache;
mod contract_versions;
mod demo;
mod exposure;
mod guests;
mod hostile;
mod install;
mod js_host;
mod mcp;
mod plugin_memory;
mod properties;
mod refresh;
mod tokens;
mod user_inputs;
