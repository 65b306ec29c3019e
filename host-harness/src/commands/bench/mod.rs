//! `host-harness bench ...`: benchmarks that print figures.

pub mod agents;
mod component;
pub mod load;
pub mod mcp_startup;
pub mod metrics;
pub mod profile_read;
pub mod queries;
pub mod search;
pub mod session;
pub mod speed;
pub mod timing;
pub mod verdict;

use std::alloc::System;

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
    Load(load::Args),
    /// Reading a large profile (a config of many keys) against parsing its
    /// YAML with no places or checks.
    Profile(profile_read::Args),
    /// Pre-execute verdict latency across the WASM boundary vs native.
    Verdict(verdict::Args),
    /// Search quality: lazy-tools (inside the component) and three peers on one catalog and
    /// one query file: hit@1, hit@5, recall@5, MRR@5, overall and per query kind.
    Search(search::Args),
    /// Search speed over a large registry generated from catalogs: index build and one search,
    /// inside the component and natively, as medians; and the index's memory.
    SearchSpeed(speed::Args),
    /// Time from session start to the first model request with the six
    /// reference MCP servers from npm, every server started with the
    /// session (eager) against lazy start; lazy-tools installed in both.
    McpStartup(mcp_startup::Args),
    /// What eager, inject and dispatch cost a prefix-caching provider over
    /// one scripted session (input, cached and uncached tokens).
    Session(session::Args),
}

impl BenchCommand {
    /// Runs the benchmark; `heap` is the process's counting allocator, if it has one, for
    /// memory figures.
    pub fn run(self, heap: Option<&'static StatsAlloc<System>>) -> Result<()> {
        match self {
            BenchCommand::Agents(args) => args.run(heap),
            BenchCommand::Load(args) => args.run(),
            BenchCommand::Profile(args) => args.run(),
            BenchCommand::Verdict(args) => args.run(),
            BenchCommand::Search(args) => args.run(),
            BenchCommand::SearchSpeed(args) => args.run(heap),
            BenchCommand::McpStartup(args) => args.run(),
            BenchCommand::Session(args) => args.run(),
        }
    }
}
