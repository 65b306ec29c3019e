//! `host-harness bench mcp-startup`: how long a session takes from its start
//! to the first model request with the six reference MCP servers, when every
//! server starts with the session (eager, `lazyStart: false`) against lazy
//! start (lazy-tools defers every MCP tool, so none starts). lazy-tools runs
//! in both; the servers' tool lists are cached (a user's second session).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use super::timing::median;
use crate::commands::signals::Ending;
use crate::mcp::reference::{self, Set};
use crate::mcp::{self, Event, Interrupt, ListingCache, McpConfig, ServerConfig};
use crate::shell::{Shell, core_builtins};
use crate::wasm_host::WasmHost;

/// `bench mcp-startup`.
#[derive(clap::Args)]
pub struct Args {
    /// Sessions per mode (alternating).
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

impl Args {
    pub fn run(self) -> Result<()> {
        run(self.runs)
    }
}

const INTERRUPTED: &str = "interrupted: the bench stopped, and stopped its servers";

pub fn run(runs: usize) -> Result<()> {
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    // A signal ends the servers' starts, and the bench before its next session: each
    // session's servers are stopped with what they started (see `signals`).
    let ending = Ending::catch(|| {
        eprintln!(
            "interrupted: the bench stops its servers (a second Ctrl-C stops the harness at once)"
        );
    })
    .context("handling Ctrl-C")?;
    // npm, in the terminal's process group, gets the signal too.
    let dir = ending.outcome(
        reference::install(Set::Six, &reference::default_dir(Set::Six)),
        INTERRUPTED,
    )?;
    let work = tempfile::tempdir()?;
    let files = work.path().canonicalize()?;
    let servers = reference::six(&dir, &files, &files.join("memory.jsonl"));
    let cache = ListingCache::new(files.join("cache"));
    let component = WasmHost::global().lazy_tools()?;
    let interrupt = Arc::<Interrupt>::default();
    ending.watch(Arc::clone(&interrupt));
    let timed = |servers: &[ServerConfig]| {
        let ran = session(servers, &cache, &component, Arc::clone(&interrupt));
        ending.outcome(ran, INTERRUPTED)
    };

    // The first session ever: every server starts once to learn its tools.
    let (first, tools) = timed(&servers)?;
    println!(
        "first session (no cache: every server starts to list its tools): {:.0} ms, {tools} MCP tools",
        ms(first)
    );
    let eager_servers: Vec<ServerConfig> = servers
        .iter()
        .cloned()
        .map(|mut s| {
            s.lazy_start = Some(false);
            s
        })
        .collect();
    let mut eager = Vec::new();
    let mut lazy = Vec::new();
    for _ in 0..runs {
        eager.push(timed(&eager_servers)?.0);
        lazy.push(timed(&servers)?.0);
    }
    println!(
        "session start -> first model request, {} servers, median of {runs}:",
        servers.len()
    );
    for (mode, times) in [
        ("eager (lazyStart: false):", &eager),
        ("lazy  (default):         ", &lazy),
    ] {
        // Medians sort a copy: the runs stay in the order they ran.
        let (min, max) = (times.iter().min(), times.iter().max());
        println!(
            "  {mode} {:>8.1} ms  (min {:.1}, max {:.1})",
            ms(median(times)),
            ms(*min.expect("at least one run")),
            ms(*max.expect("at least one run"))
        );
    }
    Ok(())
}

/// One session to its first request; the time and how many MCP tools it
/// registered. Every server must have started or stayed idle: a failure
/// would make the figures meaningless.
fn session(
    servers: &[ServerConfig],
    cache: &ListingCache,
    component: &crate::wasm_host::PluginComponent,
    interrupt: Arc<Interrupt>,
) -> Result<(Duration, usize)> {
    let started = Instant::now();
    let mut shell = Shell::new();
    shell.register_tools(core_builtins())?;
    let handle = mcp::attach_interruptible(
        &mut shell,
        &McpConfig {
            servers: servers.to_vec(),
        },
        cache.clone(),
        interrupt,
    )?;
    let main = shell.create_agent("main", None)?;
    shell
        .install_plugin("lazy-tools", component, &Value::Null)
        .context("installing lazy-tools")?;
    shell.next_request(&main)?;
    let elapsed = started.elapsed();
    if let Some(failure) = handle.lock().events().iter().find_map(|e| match e {
        Event::StartFailed { server, fault, .. } => Some(format!("{server}: {fault}")),
        _ => None,
    }) {
        bail!("a server failed to start: {failure}");
    }
    let tools = shell
        .core()
        .tools()
        .iter()
        .filter(|t| matches!(t.origin, crate::shell::Origin::Mcp(_)))
        .count();
    Ok((elapsed, tools))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
