//! `host-harness`: run the lazy-tools plugin in an emulated agent shell.

use std::alloc::System;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Result;
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
    Demo(commands::demo::DemoArgs),
    /// Install, list and remove a profile's plugins.
    Plugin(commands::plugin::PluginArgs),
    /// Run agents with a profile's plugins: a scripted session with
    /// `--steps`, else an interactive one where you play the model.
    Session(commands::session::SessionArgs),
    /// Which rule decides a tool's visibility for an agent, in one line.
    Explain(commands::explain::ExplainArgs),
    /// How lazy-tools' search reads a query over a catalog, what it ranks,
    /// and which words earn each tool its place.
    Search(commands::search::SearchArgs),
    /// What tool schemas cost per request, with and without lazy-tools.
    Tokens(commands::tokens::TokensArgs),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(commands::bench::BenchCommand),
}

/// What the harness logs unless `HOST_HARNESS_LOG` says otherwise: its own warnings, not the
/// MCP SDK's. The SDK logs a line for each request a server sends that the client refuses,
/// quoting the id the server chose (any length, as often as it likes); the harness says what
/// a server did wrong itself, once, in bounded words.
const DEFAULT_LOG: &str = "warn,rmcp=off";

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HOST_HARNESS_LOG")
                .unwrap_or_else(|_| DEFAULT_LOG.into()),
        )
        // Log lines quote what servers and plugins send (an MCP server's request id, a
        // plugin's message): every control character is shown escaped, so no colour codes.
        .with_writer(|| host_harness::terminal::Escaping::new(std::io::stderr()))
        .with_ansi(false)
        .init();
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors quote the user's files and arguments: no raw control
            // characters reach the terminal.
            // A closed standard error loses the message, not the exit status (no panic).
            let _ = writeln!(
                std::io::stderr(),
                "error: {}",
                host_harness::terminal::escape_message(&format!("{e:#}"))
            );
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Demo(args) => args.run(),
        Command::Plugin(args) => args.run(),
        Command::Session(args) => args.run(),
        Command::Explain(args) => args.run(),
        Command::Search(args) => args.run(),
        Command::Tokens(args) => args.run(),
        Command::Bench(command) => command.run(Some(GLOBAL)),
    }
}
