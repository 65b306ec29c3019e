//! `host-harness bench ...`: benchmarks that print medians.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCommand {}

pub fn run(command: BenchCommand) -> Result<()> {
    match command {}
}
