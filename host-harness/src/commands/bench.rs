//! `host-harness bench ...`: benchmarks that print medians.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::{bench_verdict, demo};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Pre-execute verdict latency across the WASM boundary vs native.
    Verdict {
        /// The catalog to register (default: the bundled one).
        #[arg(long)]
        catalog: Option<PathBuf>,
    },
}

pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Verdict { catalog } => {
            bench_verdict::run(&catalog.unwrap_or_else(demo::bundled_catalog))
        }
    }
}
