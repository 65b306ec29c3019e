//! `host-harness`: run the lazy-tools plugin in an emulated agent shell.

use std::alloc::System;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use host_harness::commands;
use host_harness::home::DshHome;
use host_harness::tokens::Tokenizer;
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
        #[arg(long, conflicts_with = "live")]
        catalog: Option<PathBuf>,
        /// The same story against real MCP servers from npm (everything,
        /// filesystem, memory), installed into the target dir on first use.
        #[arg(long)]
        live: bool,
    },
    /// Install, list and remove a profile's plugins (in $DSH_HOME, default
    /// ~/.dsh).
    Plugin {
        /// The profile: $DSH_HOME/profiles/<name>.
        #[arg(long, default_value = "default")]
        profile: String,
        #[command(subcommand)]
        command: commands::plugin::PluginCommand,
    },
    /// Run agents with a profile's plugins: a scripted session with
    /// `--steps`, else an interactive one where you play the model.
    Session {
        #[arg(long, default_value = "default")]
        profile: String,
        /// An MCP catalog whose tools the shell registers (besides the
        /// servers of the profile's mcp.yml).
        #[arg(long)]
        catalog: Option<PathBuf>,
        /// A steps file (the format of tests/cases/*/case.yml).
        #[arg(long)]
        steps: Option<PathBuf>,
        #[command(flatten)]
        state: commands::session::StateArgs,
    },
    /// Which rule decides a tool's visibility for an agent, in one line.
    Explain {
        #[arg(long, default_value = "default")]
        profile: String,
        /// The agent, by path (`main/worker`); missing agents are created.
        #[arg(long)]
        agent: Option<String>,
        /// The MCP catalog whose tools the shell registers (default: the
        /// bundled one).
        #[arg(long)]
        catalog: Option<PathBuf>,
        tool: String,
    },
    /// What tool schemas cost per request, with and without lazy-tools.
    Tokens {
        #[arg(long)]
        catalog: PathBuf,
        /// A profile whose lazy-tools config to use: a folder, or the name of
        /// one in $DSH_HOME/profiles (default: no config, the preset).
        #[arg(long)]
        profile: Option<String>,
        /// Overrides the config's `catalog` mode.
        #[arg(long, value_enum)]
        catalog_mode: Option<commands::tokens::CatalogMode>,
        /// How many deferred tools to load for the third figure.
        #[arg(long, default_value_t = 5)]
        activate: usize,
        #[arg(long, value_enum, default_value_t = Tokenizer::O200k)]
        tokenizer: Tokenizer,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(commands::bench::BenchCommand),
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
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors quote the user's files and arguments: no raw control
            // characters reach the terminal.
            eprintln!(
                "error: {}",
                host_harness::terminal::escape_message(&format!("{e:#}"))
            );
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Demo { live: true, .. } => commands::demo_live::run(),
        Command::Demo { catalog, .. } => commands::demo::run(catalog.as_deref()),
        Command::Plugin { profile, command } => {
            commands::plugin::run(&DshHome::from_env()?, &profile, command)
        }
        Command::Session {
            profile,
            catalog,
            steps,
            state,
        } => state.run(
            &DshHome::from_env()?,
            &profile,
            catalog.as_deref(),
            steps.as_deref(),
        ),
        Command::Explain {
            profile,
            agent,
            catalog,
            tool,
        } => commands::explain::run(
            &DshHome::from_env()?,
            &profile,
            agent.as_deref(),
            Some(&catalog.unwrap_or_else(commands::demo::bundled_catalog)),
            &tool,
            &mut std::io::stdout().lock(),
        ),
        Command::Tokens {
            catalog,
            profile,
            catalog_mode,
            activate,
            tokenizer,
            format,
        } => {
            let dir = match profile {
                Some(profile) if Path::new(&profile).is_dir() => Some(PathBuf::from(profile)),
                Some(name) => Some(DshHome::from_env()?.profile_dir(&name)?),
                None => None,
            };
            let config = host_harness::profile::plugin_config(dir.as_deref(), "lazy-tools")?;
            commands::tokens::run(
                &catalog,
                &config,
                catalog_mode,
                activate,
                tokenizer,
                format == Format::Json,
            )
        }
        Command::Bench(command) => commands::bench::run(command, Some(GLOBAL)),
    }
}
