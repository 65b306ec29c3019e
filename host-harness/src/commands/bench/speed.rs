//! `bench search-speed`: how fast lazy-tools builds its index and answers a query over a large
//! registry (generated from real catalogs), inside the component and natively, as medians.

use std::alloc::System;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use lazy_tools::registry::ToolDef;
use lazy_tools::search::SearchIndex;
use serde_json::json;
use stats_alloc::{Region, StatsAlloc};

use super::component::{ComponentSearch, Found, PLUGIN, defer_all};
use super::queries;
use super::timing::median;
use crate::catalog::{Catalog, Server};
use crate::commands::args::{bundled_catalogs, repository_root};
use crate::host_view::catalog_registry;
use crate::shell::{CallOutcome, Shell};
use crate::shell_core::ShellCore;
use crate::wasm_host::{EngineOptions, Limits, WasmHost};
use crate::wasm_host::{PluginComponent, PluginInstance};

/// Queries per timed `tool_search` call: the most one call may carry.
const QUERIES_PER_CALL: usize = lazy_tools::guards::MAX_QUERIES;

pub struct Options {
    pub catalogs: Vec<PathBuf>,
    pub queries: Vec<PathBuf>,
    pub tools: usize,
    pub runs: usize,
    /// Another build of the lazy-tools component to measure.
    pub component: Option<PathBuf>,
    /// A build to compare the full build with, run by run in this process.
    pub baseline: Option<PathBuf>,
}

/// `tools` tools from `catalogs`, deterministically: every server of every catalog in order,
/// then again and again until there are enough (the last copy cut); a server whose name is
/// taken becomes `<server>-2`, `<server>-3`, ...
pub fn generate(catalogs: &[Catalog], tools: usize) -> Result<Catalog> {
    let servers: Vec<&Server> = catalogs
        .iter()
        .flat_map(|c| &c.servers)
        .filter(|s| !s.tools.is_empty())
        .collect();
    if servers.is_empty() {
        bail!("the catalogs have no tools");
    }
    let mut out: Vec<Server> = Vec::new();
    let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut count = 0;
    loop {
        for server in &servers {
            if count == tools {
                return Ok(Catalog::of(out));
            }
            let mut copy = (*server).clone();
            let mut copy_number = 2;
            while !taken.insert(copy.name.clone()) {
                copy.name = format!("{}-{copy_number}", server.name);
                copy_number += 1;
            }
            copy.tools.truncate(tools - count);
            count += copy.tools.len();
            out.push(copy);
        }
    }
}

/// A full build on an engine of its own, to set against the shell's.
struct EngineBuild {
    host: WasmHost,
    component: PluginComponent,
}

impl EngineBuild {
    fn new(options: EngineOptions, component: &Path) -> Result<Self> {
        let host = WasmHost::new(options)?;
        let component = host.load(component)?;
        Ok(Self { host, component })
    }

    /// A fresh plugin's first look at `catalog`, configured with `config` before the tools come
    /// (as the shell's full build is).
    fn full_build(&self, catalog: &Catalog, config: &serde_json::Value) -> Result<Duration> {
        let shell = Shell::new();
        let mut plugin = self.host.instantiate(
            &self.component,
            PLUGIN,
            shell.shared_core(),
            Limits::default(),
        )?;
        configure(&mut plugin, config)?;
        register_unannounced(&mut shell.core(), catalog)?;
        let (result, took) = time(|| plugin.registry_changed());
        result?.map_err(|e| anyhow::anyhow!("registry-changed: {e}"))?;
        Ok(took)
    }
}

/// How long `host` takes to make a fresh instance of `component`.
fn time_instantiation(host: &WasmHost, component: &PluginComponent) -> Result<Duration> {
    let shell = Shell::new();
    let (instance, took) =
        time(|| host.instantiate(component, PLUGIN, shell.shared_core(), Limits::default()));
    instance?;
    Ok(took)
}

/// A figure of the shell's 2 MiB pages, which only Linux has: elsewhere both engines are the
/// same.
fn on_linux(figure: impl FnOnce() -> String) -> String {
    if cfg!(target_os = "linux") {
        figure()
    } else {
        "n/a (not Linux)".to_string()
    }
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// `bench search-speed`.
#[derive(clap::Args)]
pub struct Args {
    /// Catalogs to generate the tools from [default: the bundled
    /// catalogs/livemcpbench.json and catalogs/reference-servers.json].
    #[arg(long = "catalog", value_name = "FILE")]
    catalogs: Vec<PathBuf>,
    /// Query files (JSONL, as `bench search` reads) to draw queries from
    /// [default: bench/zh.jsonl].
    #[arg(long = "queries", value_name = "FILE")]
    queries: Vec<PathBuf>,
    /// How many tools to generate.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Runs per measurement.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// The lazy-tools component to measure inside [default: the one built with this
    /// harness]; another build of it (an older commit's) gives before-and-after figures in
    /// one command.
    #[arg(long, value_name = "FILE")]
    component: Option<PathBuf>,
    /// Another build of the component (a commit's before a change) whose full build is timed
    /// too, alternating with the measured one run by run: on a noisy machine the per-run
    /// ratio of the two is steadier than either figure.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
}

impl Args {
    pub fn run(self, heap: Option<&'static StatsAlloc<System>>) -> Result<()> {
        let or_default = |given: Vec<PathBuf>, default: fn() -> Vec<PathBuf>| {
            if given.is_empty() { default() } else { given }
        };
        let options = Options {
            catalogs: or_default(self.catalogs, bundled_catalogs),
            queries: or_default(self.queries, || {
                vec![repository_root().join("bench/zh.jsonl")]
            }),
            tools: self.tools,
            runs: self.runs,
            component: self.component,
            baseline: self.baseline,
        };
        run(options, heap)
    }
}

pub fn run(options: Options, heap: Option<&'static StatsAlloc<System>>) -> Result<()> {
    if options.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let catalogs = options
        .catalogs
        .iter()
        .map(|p| Catalog::load(p))
        .collect::<Result<Vec<_>>>()?;
    let mut texts = Vec::new();
    for path in &options.queries {
        for query in queries::load(path)? {
            // tool_search refuses it: a query the model could not send is not timed.
            let chars = query.query.chars().count();
            if chars > lazy_tools::guards::MAX_QUERY_CHARS {
                eprintln!(
                    "warning: {}, line {}: the query has {chars} characters, more than \
                     tool_search takes ({}); it is not timed",
                    crate::terminal::escape(&path.display().to_string()),
                    query.line,
                    lazy_tools::guards::MAX_QUERY_CHARS
                );
                continue;
            }
            texts.push(query.query);
        }
    }
    if texts.is_empty() {
        bail!("no query that tool_search takes: nothing to time");
    }
    let catalog = generate(&catalogs, options.tools)?;
    let runs = options.runs;
    println!(
        "lazy-tools search speed: {} tools generated from {} catalogs, {} queries, medians of {runs} runs",
        catalog.tool_count(),
        catalogs.len(),
        texts.len()
    );

    // Natively: the index alone.
    let registry = catalog_registry(&catalog);
    let region = heap.map(Region::new);
    let (index, _) = time(|| SearchIndex::build(&registry));
    // stats_alloc counts a reallocation's growth in `bytes_allocated` already.
    let index_heap = region.map(|r| {
        let change = r.change();
        change
            .bytes_allocated
            .saturating_sub(change.bytes_deallocated)
    });
    let builds: Vec<Duration> = (0..runs)
        .map(|_| time(|| SearchIndex::build(&registry)).1)
        .collect();
    let names: std::collections::HashSet<&str> =
        registry.tools().iter().map(|t| t.name.as_str()).collect();
    let searches: Vec<Duration> = (0..runs.max(texts.len()))
        .map(|i| {
            let query = &texts[i % texts.len()];
            time(|| index.search(query, 5, |name| names.contains(name))).1
        })
        .collect();

    // Inside the component, through the shell.
    let with =
        |catalog: &Catalog| ComponentSearch::with_component(catalog, options.component.as_deref());
    let mut empty = with(&Catalog::of(vec![]))?;
    let mut component = with(&catalog).context("loading the generated catalog into lazy-tools")?;
    let plugin_memory = |c: &mut ComponentSearch| -> Result<usize> {
        Ok(c.shell_mut().plugin_mut(PLUGIN)?.memory_bytes())
    };
    let empty_memory = plugin_memory(&mut empty)?;
    let loaded_memory = plugin_memory(&mut component)?;
    let loaded_grows = component.shell_mut().plugin_mut(PLUGIN)?.memory_grows();
    // What the shell does for a whole fetch (the tools as one WIT table, their schemas as the
    // JSON text it keeps), timed natively: part of registry-changed, not of lazy-tools.
    let host_side: Vec<Duration> = (0..runs)
        .map(|_| {
            let shell = component.shell_mut();
            let core = shell.core();
            time(|| crate::host_view::registry_table(core.tools())).1
        })
        .collect();
    // registry-changed when nothing changed, when one server of JOINING tools joins, and
    // when it leaves again (a server reconnecting): what the plugin fetches and redoes.
    let joining = joining_server(&catalog, JOINING)?;
    let mut unchanged = Vec::with_capacity(runs);
    let mut joins = Vec::with_capacity(runs);
    let mut leaves = Vec::with_capacity(runs);
    let mut joined_memory = 0;
    for _ in 0..runs {
        unchanged.push(registry_changed(&mut component)?);
        {
            let shell = component.shell_mut();
            let mut core = shell.core();
            core.set_group(&joining.servers[0].name, &joining.servers[0].description);
            set_joined(&mut core, &joining, true)?;
        }
        joins.push(registry_changed(&mut component)?);
        joined_memory = plugin_memory(&mut component)?;
        set_joined(&mut component.shell_mut().core(), &joining, false)?;
        leaves.push(registry_changed(&mut component)?);
    }
    // The same join with one agent alive: the plugin refreshes its view (`allowed-tools` of
    // 10,000 names over WIT), the part of a registry change that is per agent, not the index.
    let agent = component.shell_mut().create_agent("main", None)?;
    let mut joins_with_agent = Vec::with_capacity(runs);
    for _ in 0..runs {
        joins_with_agent.push(timed_join(&mut component, &joining)?);
    }
    // The same join with many agents alive (the first one and `ALIVE - 1` more): each view
    // the join reaches is refreshed.
    let mut alive = vec![agent];
    for i in 1..ALIVE {
        alive.push(
            component
                .shell_mut()
                .create_agent(&format!("alive-{i}"), None)?,
        );
    }
    let mut joins_with_agents = Vec::with_capacity(runs);
    for _ in 0..runs {
        joins_with_agents.push(timed_join(&mut component, &joining)?);
    }
    for agent in &alive {
        component.shell_mut().dispose_agent(agent)?;
    }
    // The same join with a catalog of names in the system prompt: the registry's name order
    // follows the change too.
    let mut names_catalog = defer_all();
    names_catalog["catalog"] = "names".into();
    configure(component.shell_mut().plugin_mut(PLUGIN)?, &names_catalog)?;
    let mut joins_with_catalog = Vec::with_capacity(runs);
    for _ in 0..runs {
        joins_with_catalog.push(timed_join(&mut component, &joining)?);
    }
    configure(component.shell_mut().plugin_mut(PLUGIN)?, &defer_all())?;
    // A full build: a fresh plugin's first look at the whole registry (the tools registered
    // after it was installed, so registry-changed fetches and indexes them all). Also under
    // a token budget, where every schema is counted by the shell's tokenizer as well.
    let full_build_of = |component: Option<&Path>, config: &serde_json::Value| {
        let mut fresh = ComponentSearch::with_config(&Catalog::of(vec![]), component, config)?;
        register_unannounced(&mut fresh.shell_mut().core(), &catalog)?;
        registry_changed(&mut fresh)
    };
    let full_build =
        |config: &serde_json::Value| full_build_of(options.component.as_deref(), config);
    let deferred = defer_all();
    let budgeted = serde_json::json!({"deferToolLoading": "auto", "defer": ["Defer(*)"]});
    // The same full build on engines without one of the shell's settings: what the calls'
    // deadline (a check at every loop header and function entry of the plugin) costs it, and
    // what linear memory in 2 MiB pages saves it. And, on the shell's engine, what a fresh
    // instance of the component costs (its data segments copied into its memory).
    let component_path = options
        .component
        .clone()
        .unwrap_or_else(crate::wasm_host::lazy_tools_component_path);
    let shell_host = WasmHost::global();
    let shell_component = shell_host.load(&component_path)?;
    let without_epochs = EngineBuild::new(
        EngineOptions {
            epochs: false,
            ..EngineOptions::SHELL
        },
        &component_path,
    )?;
    let without_huge_pages = EngineBuild::new(
        EngineOptions {
            huge_pages: false,
            ..EngineOptions::SHELL
        },
        &component_path,
    )?;
    let mut reloads = Vec::with_capacity(runs);
    let mut budgeted_reloads = Vec::with_capacity(runs);
    let mut deadline_costs = Vec::with_capacity(runs);
    let mut huge_page_savings = Vec::with_capacity(runs);
    let mut instantiations = Vec::with_capacity(runs);
    let mut copy_on_write_instantiations = Vec::with_capacity(runs);
    for run in 0..runs {
        // Every other run, the engine on 4 KiB pages goes first: what a run's order does to the
        // machine cancels out of the median.
        let four_kib_first = run % 2 == 1;
        let mut on_four_kib = None;
        if four_kib_first {
            on_four_kib = Some(without_huge_pages.full_build(&catalog, &deferred)?);
            copy_on_write_instantiations.push(time_instantiation(
                &without_huge_pages.host,
                &without_huge_pages.component,
            )?);
        }
        let full = full_build(&deferred)?;
        reloads.push(full);
        budgeted_reloads.push(full_build(&budgeted)?);
        deadline_costs.push(full.saturating_sub(without_epochs.full_build(&catalog, &deferred)?));
        instantiations.push(time_instantiation(shell_host, &shell_component)?);
        if !four_kib_first {
            on_four_kib = Some(without_huge_pages.full_build(&catalog, &deferred)?);
            copy_on_write_instantiations.push(time_instantiation(
                &without_huge_pages.host,
                &without_huge_pages.component,
            )?);
        }
        // Signed: a regression shows as a negative saving.
        let on_four_kib = on_four_kib.unwrap_or(full).as_secs_f64();
        huge_page_savings.push((on_four_kib - full.as_secs_f64()) * 1e3);
    }
    // Natively, the index alone: the same server joining and leaving.
    let mut joined_registry = catalog_registry(&catalog);
    let joining_tools: Vec<ToolDef> = catalog_registry(&joining).tools().to_vec();
    let joining_names: Vec<String> = joining_tools.iter().map(|t| t.name.clone()).collect();
    let mut grown = SearchIndex::build(&registry);
    let mut native_joins = Vec::with_capacity(runs);
    for _ in 0..runs {
        joined_registry.apply(&joining_names, joining_tools.clone());
        native_joins.push(time(|| grown.update(&joined_registry, &joining_names)).1);
        joined_registry.apply(&joining_names, Vec::new());
        grown.update(&joined_registry, &joining_names);
    }

    // The search's own share of a call is small next to the call's refresh of ten thousand
    // names, so each run searches ten queries in one call and compares it with a call that
    // loads the same tools by name: the difference over ten is one search.
    let mut with_search = Vec::with_capacity(runs);
    let mut by_name = Vec::with_capacity(runs);
    let mut per_query = Vec::with_capacity(runs);
    for run in 0..runs {
        let batch: Vec<&String> = (0..QUERIES_PER_CALL)
            .map(|i| &texts[(run * QUERIES_PER_CALL + i) % texts.len()])
            .collect();
        let arguments = json!({"queries": batch, "top_k": 5});
        let (found, searched) = timed_call(&mut component, &arguments)?;
        let Found::Ranking(names) = found else {
            bail!("tool_search refused {batch:?}: {found:?}");
        };
        let (_, named) = timed_call(&mut component, &json!({"tool_names": names}))?;
        with_search.push(searched);
        by_name.push(named);
        per_query.push(searched.saturating_sub(named) / QUERIES_PER_CALL as u32);
    }

    let joins_alive_label = format!(
        "registry-changed in the component, the join with {ALIVE} agents alive (every view refreshed)"
    );
    let rows: [(&str, String); 19] = [
        (
            "index build, native (SearchIndex::build)",
            ms(median(&builds)),
        ),
        (
            "index update, native (SearchIndex::update: one server of 20 tools joins)",
            ms(median(&native_joins)),
        ),
        (
            "registry-changed in the component, full (every tool new: fetch all over WIT, index, classify)",
            ms(median(&reloads)),
        ),
        (
            "  of which the shell's side, native (the tools as one WIT table)",
            ms(median(&host_side)),
        ),
        (
            "  of which the calls' deadline (median per-run difference to an engine without epochs)",
            ms(median(&deadline_costs)),
        ),
        (
            "  and what 2 MiB pages save it (median per-run difference to 4 KiB pages)",
            on_linux(|| format!("{:.3} ms", median(&huge_page_savings))),
        ),
        (
            "instantiating the component (a fresh instance, its data segments copied in)",
            ms(median(&instantiations)),
        ),
        (
            "  on 4 KiB pages instead (wasmtime's memory, copy-on-write from the compiled image)",
            on_linux(|| ms(median(&copy_on_write_instantiations))),
        ),
        (
            "registry-changed in the component, full, under a token budget (every schema counted too)",
            ms(median(&budgeted_reloads)),
        ),
        (
            "registry-changed in the component, nothing changed",
            ms(median(&unchanged)),
        ),
        (
            "registry-changed in the component, one server of 20 tools joins (10,000 + 20)",
            ms(median(&joins)),
        ),
        (
            "registry-changed in the component, the same server leaves",
            ms(median(&leaves)),
        ),
        (
            "registry-changed in the component, the join with one agent alive (its view refreshed)",
            ms(median(&joins_with_agent)),
        ),
        (&joins_alive_label, ms(median(&joins_with_agents))),
        (
            "registry-changed in the component, the join with a catalog of names configured",
            ms(median(&joins_with_catalog)),
        ),
        (
            "search, native (SearchIndex::search, top 5)",
            ms(median(&searches)),
        ),
        (
            "tool_search call in the component, 10 queries (shell, WIT, refresh, 10 searches, load)",
            ms(median(&with_search)),
        ),
        (
            "tool_search call in the component, the same tools by exact name (no search)",
            ms(median(&by_name)),
        ),
        (
            "one search inside the component (median per-run difference of the two calls / 10)",
            ms(median(&per_query)),
        ),
    ];
    for (what, figure) in rows {
        println!("{what:<96} {figure:>12}");
    }
    if let Some(baseline) = &options.baseline {
        let path_of = |which: Build| match which {
            Build::Baseline => Some(baseline.as_path()),
            Build::Measured => options.component.as_deref(),
        };
        let compared = alternate(runs, |which| full_build_of(path_of(which), &deferred))?;
        print_compared("registry-changed in the component, full", &compared);
        let compared = alternate(runs, |which| full_build_of(path_of(which), &budgeted))?;
        print_compared("registry-changed, full under a token budget", &compared);
        // The join of one server, on a plugin of each build holding the whole catalog.
        let mut holding = Vec::with_capacity(2);
        for which in [Build::Baseline, Build::Measured] {
            let mut plugin = ComponentSearch::with_component(&catalog, path_of(which))?;
            let server = &joining.servers[0];
            plugin
                .shell_mut()
                .core()
                .set_group(&server.name, &server.description);
            holding.push(plugin);
        }
        let compared = alternate(runs, |which| {
            timed_join(&mut holding[which as usize], &joining)
        })?;
        print_compared(
            "registry-changed in the component, a 20-tool join",
            &compared,
        );
    }
    match index_heap {
        Some(bytes) => println!("{:<96} {:>12}", "index memory, native heap", mb(bytes)),
        None => println!("index memory, native heap: not measured (no counting allocator)"),
    }
    println!(
        "{:<96} {:>12}",
        "component linear memory, empty registry",
        mb(empty_memory)
    );
    println!(
        "{:<96} {:>12}",
        format!(
            "component linear memory with {} tools (registry copy + index + state)",
            catalog.tool_count()
        ),
        mb(loaded_memory)
    );
    println!(
        "{:<96} {:>12}",
        "  the times it grew, from instantiation to the loaded registry", loaded_grows
    );
    println!(
        "{:<96} {:>12}",
        "component linear memory after the last join (index grown in place)",
        mb(joined_memory)
    );
    Ok(())
}

/// Prints what `--baseline` compared: both medians and the median per-run ratio.
fn print_compared(what: &str, compared: &Compared) {
    println!(
        "{:<96} {:>12}",
        format!("{what}: the --baseline component"),
        ms(compared.baseline)
    );
    println!(
        "{:<96} {:>12}",
        format!("{what}: the measured component, alternating with it"),
        ms(compared.measured)
    );
    println!(
        "{:<96} {:>12.3}",
        format!("{what}: median per-run ratio, measured / baseline"),
        compared.ratio
    );
}

/// One of the two builds `--baseline` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Baseline,
    Measured,
}

/// Medians of the two builds' timings, and of their per-run ratio.
#[derive(Debug, PartialEq)]
struct Compared {
    baseline: Duration,
    measured: Duration,
    ratio: f64,
}

/// Times both builds `runs` times with `timed`, in alternating order (so that neither always
/// runs second, after the other warmed the caches or the allocator).
fn alternate(runs: usize, mut timed: impl FnMut(Build) -> Result<Duration>) -> Result<Compared> {
    let (mut baseline, mut measured, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let order = match run % 2 {
            0 => [Build::Baseline, Build::Measured],
            _ => [Build::Measured, Build::Baseline],
        };
        let mut pair = [Duration::ZERO; 2];
        for build in order {
            pair[build as usize] = timed(build)?;
        }
        baseline.push(pair[0]);
        measured.push(pair[1]);
        ratios.push(pair[1].as_secs_f64() / pair[0].as_secs_f64().max(f64::MIN_POSITIVE));
    }
    Ok(Compared {
        baseline: median(&baseline),
        measured: median(&measured),
        ratio: median(&ratios),
    })
}

/// Tools of the server that joins and leaves in the join figures.
pub(super) const JOINING: usize = 20;

/// Agents alive in the join figure with many agents.
const ALIVE: usize = 100;

/// One server of `tools` tools, taken from the first servers of `catalog` under a name of its
/// own, as a server that connects to the shell.
pub(super) fn joining_server(catalog: &Catalog, tools: usize) -> Result<Catalog> {
    let mut server = catalog
        .servers
        .iter()
        .find(|s| !s.tools.is_empty())
        .cloned()
        .context("the catalog has no tools")?;
    let all: Vec<_> = catalog.servers.iter().flat_map(|s| &s.tools).collect();
    server.name = "joining".into();
    server.tools = all
        .iter()
        .take(tools)
        .enumerate()
        .map(|(i, tool)| {
            let mut tool = (*tool).clone();
            tool.name = format!("{}_{i}", tool.name);
            tool
        })
        .collect();
    Ok(Catalog::of(vec![server]))
}

/// Registers the tools of `server` in `core` (`joined`) or removes them: a server connecting
/// or disconnecting, as the join figures measure it.
pub(super) fn set_joined(core: &mut ShellCore, server: &Catalog, joined: bool) -> Result<()> {
    for (_, tool) in server.tools() {
        if joined {
            core.register(tool)?;
        } else {
            core.unregister(&tool.name, None)?;
        }
    }
    Ok(())
}

/// Times the plugin's `registry-changed` for `server` joining, then removes it again, untimed.
fn timed_join(component: &mut ComponentSearch, server: &Catalog) -> Result<Duration> {
    set_joined(&mut component.shell_mut().core(), server, true)?;
    let took = registry_changed(component)?;
    set_joined(&mut component.shell_mut().core(), server, false)?;
    registry_changed(component)?;
    Ok(took)
}

/// Configures `plugin` with `config`, which it must accept.
fn configure(plugin: &mut PluginInstance, config: &serde_json::Value) -> Result<()> {
    if let Err(e) = plugin.configure(&config.to_string())? {
        bail!("the component rejects {config}: {e:?}");
    }
    Ok(())
}

/// Registers `catalog`'s servers and tools in the shell without telling its plugins, so that
/// the `registry-changed` timed next is their first look at them.
pub fn register_unannounced(core: &mut ShellCore, catalog: &Catalog) -> Result<()> {
    for server in &catalog.servers {
        core.set_group(&server.name, &server.description);
    }
    for (_, tool) in catalog.tools() {
        core.register(tool)?;
    }
    Ok(())
}

/// Times the plugin's `registry-changed`.
fn registry_changed(component: &mut ComponentSearch) -> Result<Duration> {
    let plugin = component.shell_mut().plugin_mut(PLUGIN)?;
    let (result, took) = time(|| plugin.registry_changed());
    result?.map_err(|e| anyhow::anyhow!("registry-changed: {e}"))?;
    Ok(took)
}

/// Times one `tool_search` call by a fresh agent (creating the agent is not timed); the
/// ranking holds registered names.
fn timed_call(
    component: &mut ComponentSearch,
    arguments: &serde_json::Value,
) -> Result<(Found, Duration)> {
    let shell = component.shell_mut();
    let agent = shell.create_agent("timed", None)?;
    let (outcome, took) = time(|| shell.call(&agent, "tool_search", arguments));
    shell.dispose_agent(&agent)?;
    let found = match outcome? {
        CallOutcome::Completed(output) if output.is_error => Found::Refused(output.text),
        CallOutcome::Completed(output) => Found::Ranking(
            output.json["matches"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["name"].as_str())
                .map(str::to_string)
                .collect(),
        ),
        other => bail!("tool_search did not run: {other:?}"),
    };
    Ok((found, took))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_comparison_alternates_the_order_and_divides_measured_by_baseline() {
        let mut order = Vec::new();
        // The measured build takes 3 ms and the baseline 2 ms; whichever runs second in a
        // run takes 1 ms more (a machine slowing down): alternation gives each that extra
        // in half of the runs.
        let compared = alternate(4, |build| {
            let second = order.len() % 2 == 1;
            order.push(build);
            let ms = match build {
                Build::Baseline => 2,
                Build::Measured => 3,
            } + u64::from(second);
            Ok(Duration::from_millis(ms))
        })
        .unwrap();
        use Build::{Baseline as B, Measured as M};
        assert_eq!(order, [B, M, M, B, B, M, M, B]);
        // Per run: 4/2, 3/3, 4/2, 3/3; the upper median of the sorted ratios.
        assert_eq!(compared.ratio, 2.0);
        assert_eq!(compared.baseline, Duration::from_millis(3));
        assert_eq!(compared.measured, Duration::from_millis(4));
        assert!(alternate(3, |_| bail!("no component")).is_err());
    }

    #[test]
    fn generated_catalogs_are_deterministic_and_exactly_sized() {
        let catalog = Catalog::parse(
            r#"{"servers": [{"name": "a", "tools": [{"name": "x"}, {"name": "y"}]},
                            {"name": "b", "tools": [{"name": "z"}]}]}"#,
        )
        .unwrap();
        let generated = generate(std::slice::from_ref(&catalog), 5).unwrap();
        let ids: Vec<String> = generated.tools().map(|(id, _)| id).collect();
        assert_eq!(ids, ["a/x", "a/y", "b/z", "a-2/x", "a-2/y"]);
        // The same server in two catalogs is two servers.
        let twice = generate(&[catalog.clone(), catalog], 7).unwrap();
        let servers: Vec<&str> = twice.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(servers, ["a", "b", "a-2", "b-2", "a-3"]);
        assert!(generate(&[Catalog::of(vec![])], 5).is_err());
        assert_eq!(
            median(&[
                Duration::from_millis(3),
                Duration::from_millis(1),
                Duration::from_millis(2)
            ]),
            Duration::from_millis(2)
        );
    }
}
