//! `host-harness`: run the lazy-tools plugin in an emulated agent shell.

use std::path::PathBuf;
use std::process::ExitCode;

use std::alloc::System;

use clap::{Parser, Subcommand};
use host_harness::commands;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

// Counts heap bytes, so `bench search-speed` can state the index's memory.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Parser)]
#[command(
    name = "host-harness",
    version,
    about = "An agent shell emulator for the lazy-tools plugin"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what lazy-tools does to a real MCP catalog, step by step.
    Demo {
        /// The catalog to load (default: the bundled one).
        #[arg(long)]
        catalog: Option<PathBuf>,
    },
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(commands::bench::BenchCommand),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HOST_HARNESS_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo { catalog } => commands::demo::run(catalog.as_deref()),
        Command::Bench(command) => commands::bench::run(command, Some(GLOBAL)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
