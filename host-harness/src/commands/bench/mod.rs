//! `host-harness bench ...`: benchmarks that print figures.

pub mod agents;
mod component;
pub mod load;
pub mod mcp_startup;
pub mod metrics;
pub mod profile_read;
pub mod queries;
pub mod search;
pub mod speed;
pub mod timing;

use std::alloc::System;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;
use stats_alloc::StatsAlloc;

pub use component::{ComponentSearch, Found};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Many agents over a large registry: 1,000 agents (trees of depth 3) over 10,000 tools,
    /// each loading 5 tools and making 20 requests; plugin and host memory, request and
    /// verdict latency (median, p99), inside the component and natively.
    Agents(agents::Args),
    /// Loading a component from the precompiled cache against compiling it.
    Load {
        /// The component (default: the lazy-tools component this binary was
        /// built with).
        #[arg(long)]
        component: Option<PathBuf>,
        /// Loads from the cache to time.
        #[arg(long, default_value_t = 200)]
        runs: usize,
        /// Compilations to time (each takes seconds).
        #[arg(long, default_value_t = 5)]
        compile_runs: usize,
    },
    /// Reading a large profile (a config of many keys) against parsing its
    /// YAML with no places or checks.
    Profile {
        /// Keys in the generated config (124,000 is about 2 MB).
        #[arg(long, default_value_t = 124_000)]
        keys: usize,
        /// Reads to time.
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Pre-execute verdict latency across the WASM boundary vs native.
    Verdict {
        /// The catalog to register (default: the bundled one).
        #[arg(long)]
        catalog: Option<PathBuf>,
    },
    /// Search quality: lazy-tools (inside the component) and three peers on one catalog and
    /// one query file: hit@1, hit@5, recall@5, MRR@5, overall and per query kind.
    Search {
        /// A catalog in the `catalogs/*.json` format.
        #[arg(long)]
        catalog: PathBuf,
        /// JSONL: {"query": "...", "gold": ["server/tool", ...], "kind": "..."}.
        #[arg(long)]
        queries: PathBuf,
        #[arg(long, value_enum, default_value = "table")]
        format: search::Format,
    },
    /// Search speed over a large registry generated from catalogs: index build and one search,
    /// inside the component and natively, as medians; and the index's memory.
    SearchSpeed {
        /// Catalogs to generate the tools from (default: the bundled ones).
        #[arg(long = "catalog")]
        catalogs: Vec<PathBuf>,
        /// Query files to draw queries from (default: bench/zh.jsonl).
        #[arg(long = "queries")]
        queries: Vec<PathBuf>,
        /// How many tools to generate.
        #[arg(long, default_value_t = 10_000)]
        tools: usize,
        /// Runs per measurement.
        #[arg(long, default_value_t = 50)]
        runs: usize,
    },
    /// Time from session start to the first model request with the six
    /// reference MCP servers from npm, every server started with the
    /// session (eager) against lazy start; lazy-tools installed in both.
    McpStartup {
        /// Sessions per mode (alternating).
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
}

/// Runs a benchmark; `heap` is the process's counting allocator, if it has one, for memory
/// figures.
pub fn run(command: BenchCommand, heap: Option<&'static StatsAlloc<System>>) -> Result<()> {
    match command {
        BenchCommand::Agents(args) => args.run(heap),
        BenchCommand::Load {
            component,
            runs,
            compile_runs,
        } => load::load(
            &component.unwrap_or_else(crate::wasm_host::lazy_tools_component_path),
            runs,
            compile_runs,
        ),
        BenchCommand::Profile { keys, runs } => profile_read::run(keys, runs),
        BenchCommand::McpStartup { runs } => mcp_startup::run(runs),
        BenchCommand::Verdict { catalog } => {
            super::bench_verdict::run(&catalog.unwrap_or_else(super::demo::bundled_catalog))
        }
        BenchCommand::Search {
            catalog,
            queries,
            format,
        } => search::run(&catalog, &queries, format),
        BenchCommand::SearchSpeed {
            catalogs,
            queries,
            tools,
            runs,
        } => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let catalogs = if catalogs.is_empty() {
                vec![
                    root.join("catalogs/livemcpbench.json"),
                    root.join("catalogs/reference-servers.json"),
                ]
            } else {
                catalogs
            };
            let queries = if queries.is_empty() {
                vec![root.join("bench/zh.jsonl")]
            } else {
                queries
            };
            speed::run(
                speed::Options {
                    catalogs,
                    queries,
                    tools,
                    runs,
                },
                heap,
            )
        }
    }
}
