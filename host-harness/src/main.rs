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
    /// What tool schemas cost per request, with and without lazy-tools.
    Tokens {
        #[arg(long)]
        catalog: PathBuf,
        /// A profile folder whose lazy-tools config to use (default: none).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Overrides the config's `catalog` mode.
        #[arg(long, value_enum)]
        catalog_mode: Option<commands::tokens::CatalogMode>,
        /// How many deferred tools to load for the third figure.
        #[arg(long, default_value_t = 5)]
        activate: usize,
        #[arg(long, value_enum, default_value_t = host_harness::tokens::Tokenizer::O200k)]
        tokenizer: host_harness::tokens::Tokenizer,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Json,
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
        Command::Tokens {
            catalog,
            profile,
            catalog_mode,
            activate,
            tokenizer,
            format,
        } => host_harness::profile::plugin_config(profile.as_deref(), "lazy-tools").and_then(
            |config| {
                commands::tokens::run(
                    &catalog,
                    &config,
                    catalog_mode,
                    activate,
                    tokenizer,
                    format == Format::Json,
                )
            },
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
