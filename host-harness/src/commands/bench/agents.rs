//! `bench agents`: many agents over a large registry. Trees of agents (depth 3) each load a few
//! deferred tools, then make requests; a request is what the shell asks the plugin for before
//! and during one model turn: visible-tools, system-prompt and one pre-execute verdict. Prints
//! the plugin's memory (the component's linear memory), the host's heap, and per-request and
//! per-verdict latency (median, p99, max), inside the component and, as the baseline in the
//! same run, with the same plugin crate linked natively over a shell of its own.

use std::alloc::System;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::json;
use stats_alloc::{Region, StatsAlloc};

use super::speed::{JOINING, generate, joining_server, set_joined};
use crate::catalog::Catalog;
use crate::commands::args::bundled_catalogs;
use crate::native_plugin::native_lazy_tools;
use crate::plugin_api::Verdict;
use crate::shell::{CallOutcome, Shell, core_builtins};
use crate::wasm_host::WasmHost;

const PLUGIN: &str = "lazy-tools";

#[derive(clap::Args)]
pub struct Args {
    /// Agents, in trees of depth 3 (a root, its children, their children).
    #[arg(long, default_value_t = 1_000)]
    agents: usize,
    /// Children per agent above the leaves (each tree: 1 + c + c*c agents).
    #[arg(long, default_value_t = 4)]
    children: usize,
    /// Registered tools, generated from the bundled catalogs.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Deferred tools each agent loads (one `tool_search` call by name).
    #[arg(long, default_value_t = 5)]
    loads: usize,
    /// Requests per agent, made round-robin over the agents.
    #[arg(long, default_value_t = 20)]
    requests: usize,
    /// Catalogs to generate the tools from (default: the bundled ones).
    #[arg(long = "catalog")]
    catalogs: Vec<PathBuf>,
    /// The lazy-tools component to measure [default: the one built with this harness];
    /// another build of it gives before-and-after figures from one binary.
    #[arg(long, value_name = "FILE")]
    component: Option<PathBuf>,
}

/// Latencies of one kind of call.
struct Latencies(Vec<Duration>);

impl Latencies {
    fn new() -> Self {
        Self(Vec::new())
    }

    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let value = f();
        self.0.push(start.elapsed());
        value
    }

    /// (median, p99, max), in microseconds.
    fn summary(&self) -> (f64, f64, f64) {
        let mut sorted = self.0.clone();
        sorted.sort();
        let at = |q: f64| {
            let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
            sorted.get(index).map_or(0.0, |d| d.as_secs_f64() * 1e6)
        };
        (at(0.5), at(0.99), at(1.0))
    }
}

/// How many times a server joins (and leaves) with every agent alive.
const JOIN_RUNS: usize = 5;

/// The agents' ids, parents first: trees of a root, `children` children and their children.
fn agent_tree(agents: usize, children: usize) -> Vec<(String, Option<String>)> {
    let mut out = Vec::with_capacity(agents);
    let mut tree = 0;
    'trees: loop {
        let root = format!("a{tree}");
        out.push((root.clone(), None));
        for c in 0..children {
            if out.len() == agents {
                break 'trees;
            }
            let child = format!("{root}/c{c}");
            out.push((child.clone(), Some(root.clone())));
            for g in 0..children {
                if out.len() == agents {
                    break 'trees;
                }
                out.push((format!("{child}/g{g}"), Some(child.clone())));
            }
        }
        if out.len() == agents {
            break;
        }
        tree += 1;
    }
    out
}

/// The last path segment: `Shell::create_agent` takes a name under a parent.
fn leaf(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

/// The tools agent number `i` loads: `loads` distinct generated tools, spread over the
/// registry.
fn loaded_by(i: usize, loads: usize, names: &[String]) -> Vec<String> {
    (0..loads)
        .map(|k| names[(i * 7_919 + k * 104_729) % names.len()].clone())
        .collect()
}

/// The tool of request `r` by agent `i`: alternately one it loaded (a pass) and one it did
/// not (a deny with the hint).
fn verdict_tool<'a>(i: usize, r: usize, loaded: &'a [String], names: &'a [String]) -> &'a str {
    if r.is_multiple_of(2) {
        &loaded[r / 2 % loaded.len()]
    } else {
        let candidate = &names[(i * 31 + r * 977 + 1) % names.len()];
        if loaded.contains(candidate) {
            &names[(i * 31 + r * 977 + 2) % names.len()]
        } else {
            candidate
        }
    }
}

fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn heap_growth(region: &Region<'_, System>) -> usize {
    let change = region.change();
    change
        .bytes_allocated
        .saturating_sub(change.bytes_deallocated)
}

impl Args {
    pub fn run(self, heap: Option<&'static StatsAlloc<System>>) -> Result<()> {
        if self.agents == 0 || self.loads == 0 || self.requests == 0 || self.children == 0 {
            bail!("--agents, --children, --loads and --requests must be at least 1");
        }
        let catalogs = if self.catalogs.is_empty() {
            bundled_catalogs()
        } else {
            self.catalogs.clone()
        };
        let catalogs = catalogs
            .iter()
            .map(|p| Catalog::load(p))
            .collect::<Result<Vec<_>>>()?;
        let catalog = generate(&catalogs, self.tools)?;
        let names: Vec<String> = catalog.tools().map(|(_, t)| t.name).collect();
        if names.len() < self.loads + 2 {
            bail!("{} tools are too few for {} loads", names.len(), self.loads);
        }
        let agents = agent_tree(self.agents, self.children);
        let loaded: Vec<Vec<String>> = (0..agents.len())
            .map(|i| loaded_by(i, self.loads, &names))
            .collect();
        println!(
            "{} agents (trees of depth 3, {} children each) over {} tools; each loads {} and makes \
             {} requests (visible-tools + system-prompt + one pre-execute verdict)",
            agents.len(),
            self.children,
            names.len() + core_builtins().len(),
            self.loads,
            self.requests
        );

        // Inside the component, through the shell.
        let component = match &self.component {
            Some(path) => WasmHost::global()
                .load(path)
                .with_context(|| format!("loading {}", path.display()))?,
            None => WasmHost::global().lazy_tools()?,
        };
        let region = heap.map(Region::new);
        let setup_started = Instant::now();
        let mut shell = Shell::new();
        shell.register_tools(core_builtins())?;
        shell.register_catalog(&catalog)?;
        shell
            .install_plugin(PLUGIN, &component, &serde_json::Value::Null)
            .context("installing lazy-tools")?;
        let empty_memory = shell.plugin_mut(PLUGIN)?.memory_bytes();
        // Each creation: the shell's, then the plugin's first view of the agent.
        let mut wasm_creates = Latencies::new();
        for (id, parent) in &agents {
            wasm_creates.time(|| shell.create_agent(leaf(id), parent.as_deref()))?;
        }
        let setup = setup_started.elapsed();
        if let Some(quarantine) = shell.quarantined().next() {
            bail!(
                "after creating {} agents: {quarantine} (linear memory {} when installed)",
                agents.len(),
                mb(empty_memory)
            );
        }
        let mut wasm_loads = Latencies::new();
        for ((id, _), tools) in agents.iter().zip(&loaded) {
            let outcome = wasm_loads
                .time(|| shell.call(id, "tool_search", &json!({ "tool_names": tools })))?;
            match outcome {
                CallOutcome::Completed(output) if !output.is_error => {}
                other => bail!("{id}: loading {tools:?} failed: {other:?}"),
            }
        }
        let mut wasm_requests = Latencies::new();
        let mut wasm_verdicts = Latencies::new();
        let mut denied = 0usize;
        for r in 0..self.requests {
            for (i, (id, _)) in agents.iter().enumerate() {
                let tool = verdict_tool(i, r, &loaded[i], &names);
                let plugin = shell.plugin_mut(PLUGIN)?;
                let verdict = wasm_requests.time(|| -> Result<Verdict> {
                    black_box(
                        plugin
                            .visible_tools(id)?
                            .map_err(|e| anyhow::anyhow!("{e}"))?,
                    );
                    black_box(
                        plugin
                            .system_prompt(id)?
                            .map_err(|e| anyhow::anyhow!("{e}"))?,
                    );
                    wasm_verdicts.time(|| plugin.pre_execute(id, tool, "{}"))
                })?;
                let expect_pass = r.is_multiple_of(2);
                match verdict {
                    Verdict::Pass if expect_pass => {}
                    Verdict::Deny(_) if !expect_pass => denied += 1,
                    other => bail!("{id}: `{tool}`: unexpected {other:?}"),
                }
            }
        }
        // A server joining with every agent alive, then leaving (not timed): every agent's
        // view is refreshed.
        let joining = joining_server(&catalog, JOINING)?;
        let mut wasm_joins = Latencies::new();
        for _ in 0..JOIN_RUNS {
            for timed in [true, false] {
                set_joined(&mut shell.core(), &joining, timed)?;
                let plugin = shell.plugin_mut(PLUGIN)?;
                let changed = if timed {
                    wasm_joins.time(|| plugin.registry_changed())
                } else {
                    plugin.registry_changed()
                };
                changed?.map_err(|e| anyhow::anyhow!("registry-changed: {e}"))?;
            }
        }
        let plugin_memory = shell.plugin_mut(PLUGIN)?.memory_bytes();
        let host_heap = region.as_ref().map(heap_growth);
        if shell.quarantined().next().is_some() {
            bail!("lazy-tools was quarantined during the run");
        }

        // The same plugin crate natively, over a shell of its own with the same agents.
        let native_region = heap.map(Region::new);
        let mut native_shell = Shell::new();
        native_shell.register_tools(core_builtins())?;
        native_shell.register_catalog(&catalog)?;
        let mut native = native_lazy_tools(native_shell.shared_core(), "lazy-tools-native");
        native
            .configure("null")
            .map_err(|e| anyhow::anyhow!("native configure: {e:?}"))?;
        let mut native_creates = Latencies::new();
        for (id, parent) in &agents {
            native_creates.time(|| -> Result<()> {
                native_shell.create_agent(leaf(id), parent.as_deref())?;
                Ok(native.agent_created(id, parent.as_deref())?)
            })?;
        }
        let mut native_loads = Latencies::new();
        for ((id, _), tools) in agents.iter().zip(&loaded) {
            let arguments = json!({ "tool_names": tools }).to_string();
            let result = native_loads.time(|| native.execute(id, "tool_search", &arguments))?;
            if result.is_error {
                bail!("{id}: native load failed: {}", result.text);
            }
        }
        let mut native_requests = Latencies::new();
        let mut native_verdicts = Latencies::new();
        for r in 0..self.requests {
            for (i, (id, _)) in agents.iter().enumerate() {
                let tool = verdict_tool(i, r, &loaded[i], &names);
                let verdict = native_requests.time(|| -> Result<lazy_tools::Verdict> {
                    black_box(native.visible_tools(id)?);
                    black_box(native.system_prompt(id)?);
                    Ok(native_verdicts.time(|| native.pre_execute(id, tool)))
                })?;
                if (verdict == lazy_tools::Verdict::Pass) != r.is_multiple_of(2) {
                    bail!("{id}: `{tool}`: the native plugin disagrees: {verdict:?}");
                }
            }
        }
        let mut native_joins = Latencies::new();
        for _ in 0..JOIN_RUNS {
            for timed in [true, false] {
                set_joined(&mut native_shell.core(), &joining, timed)?;
                let changed = if timed {
                    native_joins.time(|| native.registry_changed())
                } else {
                    native.registry_changed()
                };
                changed.map_err(|e| anyhow::anyhow!("native registry-changed: {e}"))?;
            }
        }
        let native_heap = native_region.as_ref().map(heap_growth);

        println!(
            "component setup (install over the registry, create every agent): {:.2} s; \
             {denied} of {} verdicts denied",
            setup.as_secs_f64(),
            wasm_verdicts.0.len()
        );
        println!(
            "{:<44} {:>10} {:>10} {:>10}",
            "latency (us)", "median", "p99", "max"
        );
        for (label, latencies) in [
            ("create an agent, component", &wasm_creates),
            ("create an agent, native", &native_creates),
            ("load 5 tools (tool_search call), component", &wasm_loads),
            ("load 5 tools, native", &native_loads),
            ("request, component", &wasm_requests),
            ("request, native", &native_requests),
            ("pre-execute verdict, component", &wasm_verdicts),
            ("pre-execute verdict, native", &native_verdicts),
            ("a server of 20 tools joins, component", &wasm_joins),
            ("a server of 20 tools joins, native", &native_joins),
        ] {
            let (median, p99, max) = latencies.summary();
            println!("{label:<44} {median:>10.2} {p99:>10.2} {max:>10.1}");
        }
        println!(
            "plugin memory (component linear memory): {} with no agents, {} at the end",
            mb(empty_memory),
            mb(plugin_memory)
        );
        match (host_heap, native_heap) {
            (Some(host), Some(native)) => println!(
                "host heap: {} for the shell with the component and its agents (registry, \
                 agents, layers, plugin instance); {} for the native run (shell + plugin on the \
                 host heap)",
                mb(host),
                mb(native)
            ),
            _ => println!("host heap: not measured (no counting allocator)"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_trees_have_depth_three_and_parents_first() {
        let agents = agent_tree(30, 2);
        assert_eq!(agents.len(), 30);
        assert_eq!(agents[0], ("a0".to_string(), None));
        assert_eq!(agents[1], ("a0/c0".to_string(), Some("a0".to_string())));
        assert_eq!(
            agents[2],
            ("a0/c0/g0".to_string(), Some("a0/c0".to_string()))
        );
        // A tree of 1 + 2 + 4 agents, then the next.
        assert_eq!(agents[7].0, "a1");
        for (i, (id, parent)) in agents.iter().enumerate() {
            assert!(id.split('/').count() <= 3, "{id} is deeper than 3");
            if let Some(parent) = parent {
                assert!(agents[..i].iter().any(|(p, _)| p == parent), "{id}");
            }
        }
    }

    #[test]
    fn each_agent_loads_distinct_tools_and_denied_calls_are_not_loaded() {
        let names: Vec<String> = (0..10_000).map(|i| format!("t{i}")).collect();
        for i in 0..1_000 {
            let loaded = loaded_by(i, 5, &names);
            let mut distinct = loaded.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), 5, "agent {i}: {loaded:?}");
            for r in (1..20).step_by(2) {
                assert!(!loaded.contains(&verdict_tool(i, r, &loaded, &names).to_string()));
            }
        }
    }
}
