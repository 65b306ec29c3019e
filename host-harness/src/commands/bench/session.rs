//! `host-harness bench session`: what each strategy costs a provider with a
//! prefix cache over one scripted session on a catalog (the bundled one by
//! default): `eager` (no plugin, every tool in the tools array), lazy-tools
//! with `inject` and with `dispatch`. The same session for each: 22 requests
//! of agent `main` with 5 loads spread over them, and a child agent's 3
//! requests (one load) in the middle.
//!
//! Per request it prints the input tokens and the tokens a prefix cache
//! reuses from the previous request: the request is rendered as providers
//! do (the tools array first, then the system prompt, then the messages)
//! and the cached part is the longest common prefix with the previous
//! request's rendering, counted with the o200k tokenizer. It asserts that
//! dispatch sends the same tools array, byte for byte, on every request of
//! an agent.

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::commands::args::CatalogArg;
use crate::shell::{CallOutcome, Shell, core_builtins};
use crate::tokens::Tokenizer;
use crate::wasm_host::WasmHost;

/// Requests of agent `main`; the loads happen at these requests.
const MAIN_REQUESTS: usize = 22;
const LOAD_AT: [usize; 5] = [2, 6, 10, 14, 18];
/// The child agent runs its requests after this request of `main`.
const CHILD_AFTER: usize = 12;
const CHILD_REQUESTS: usize = 3;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    catalog: CatalogArg,
    /// Print one line per request, not only the totals.
    #[arg(long)]
    per_request: bool,
}

impl Args {
    pub fn run(&self) -> Result<()> {
        let path = self.catalog.path();
        let catalog = Catalog::load(&path)?;
        println!(
            "bench session: {} ({} tools), {MAIN_REQUESTS} requests of main with {} loads, a child \
             agent with {CHILD_REQUESTS} requests and 1 load; tokens: o200k; cached = the longest \
             common prefix with the previous request (tools, then system prompt, then messages)",
            crate::terminal::escape(&path.display().to_string()),
            catalog.tool_count(),
            LOAD_AT.len()
        );
        let totals = measure(&catalog)?;
        for (strategy, requests) in &totals {
            if self.per_request {
                println!("\n{}:", strategy.name());
                println!(
                    "{:>3}  {:<12} {:>9} {:>9} {:>9}",
                    "#", "agent", "input", "cached", "uncached"
                );
                for (i, r) in requests.iter().enumerate() {
                    println!(
                        "{:>3}  {:<12} {:>9} {:>9} {:>9}",
                        i + 1,
                        r.agent,
                        r.input,
                        r.cached,
                        r.input - r.cached
                    );
                }
            }
        }
        println!(
            "\n| strategy | requests | input tokens | cached (prefix) | uncached input | tools array changes |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        for (strategy, requests) in &totals {
            let input: u64 = requests.iter().map(|r| r.input).sum();
            let cached: u64 = requests.iter().map(|r| r.cached).sum();
            let changes = requests.iter().filter(|r| r.tools_changed).count();
            println!(
                "| {} | {} | {input} | {cached} | {} | {changes} |",
                strategy.name(),
                requests.len(),
                input - cached
            );
        }
        let uncached = |s: Strategy| uncached(&totals, s);
        let (inject, dispatch) = (uncached(Strategy::Inject), uncached(Strategy::Dispatch));
        println!(
            "\ndispatch / inject uncached input: {:.2} (target: at most 0.50); dispatch's tools \
             array was byte-identical on every request of each agent",
            dispatch as f64 / inject.max(1) as f64
        );
        Ok(())
    }
}

/// Runs the scripted session for each strategy: every request's cost, in
/// order. Fails if dispatch changes an agent's tools array.
pub fn measure(catalog: &Catalog) -> Result<Vec<(Strategy, Vec<RequestCost>)>> {
    let picks = pick_tools(catalog)?;
    [Strategy::Eager, Strategy::Inject, Strategy::Dispatch]
        .into_iter()
        .map(|strategy| Ok((strategy, run_session(catalog, strategy, &picks)?)))
        .collect()
}

/// A strategy's uncached input tokens over the session.
pub fn uncached(totals: &[(Strategy, Vec<RequestCost>)], strategy: Strategy) -> u64 {
    totals
        .iter()
        .find(|(t, _)| *t == strategy)
        .map(|(_, r)| r.iter().map(|r| r.input - r.cached).sum())
        .unwrap_or_default()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Eager,
    Inject,
    Dispatch,
}

impl Strategy {
    fn name(self) -> &'static str {
        match self {
            Self::Eager => "eager",
            Self::Inject => "inject",
            Self::Dispatch => "dispatch",
        }
    }
}

/// One tool to load: its server (group) and shell name.
#[derive(Debug, Clone)]
struct Pick {
    server: String,
    tool: String,
}

/// One tool each of six servers spread over the catalog, among tools whose
/// schema requires nothing (so every strategy's call runs with `{}`).
fn pick_tools(catalog: &Catalog) -> Result<Vec<Pick>> {
    let mut candidates: Vec<Pick> = Vec::new();
    for (_, tool) in catalog.tools() {
        let requires = tool
            .parameters()
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        let crate::shell::Origin::Mcp(server) = &tool.origin else {
            continue;
        };
        if !requires && !candidates.iter().any(|p| &p.server == server) {
            candidates.push(Pick {
                server: server.clone(),
                tool: tool.name.clone(),
            });
        }
    }
    let wanted = LOAD_AT.len() + 1;
    if candidates.len() < wanted {
        bail!("the catalog has fewer than {wanted} servers with a tool that requires no argument");
    }
    let step = candidates.len() / wanted;
    Ok((0..wanted).map(|i| candidates[i * step].clone()).collect())
}

/// One request: its input tokens, the part a prefix cache reuses, and
/// whether the agent's tools array changed since its previous request.
pub struct RequestCost {
    pub agent: &'static str,
    pub input: u64,
    pub cached: u64,
    pub tools_changed: bool,
}

/// A conversation: its messages as the provider receives them.
#[derive(Default)]
struct Conversation {
    messages: Vec<Value>,
}

impl Conversation {
    fn say(&mut self, role: &str, content: impl Into<String>) {
        self.messages
            .push(json!({"role": role, "content": content.into()}));
    }

    fn call(&mut self, shell: &mut Shell, agent: &str, tool: &str, args: Value) -> Result<()> {
        self.messages.push(
            json!({"role": "assistant", "tool_call": {"name": tool, "arguments": args.clone()}}),
        );
        let outcome = shell.call(agent, tool, &args)?;
        let content = match outcome {
            CallOutcome::Completed(out) => out.text,
            CallOutcome::Denied { reason, .. } | CallOutcome::Refused(reason) => {
                bail!("{agent} calling {tool} in the bench session was refused: {reason}")
            }
        };
        self.messages
            .push(json!({"role": "tool", "name": tool, "content": content}));
        Ok(())
    }
}

/// Renders and prices requests, each against the previous one.
struct Meter {
    previous: String,
    tools_by_agent: std::collections::BTreeMap<&'static str, String>,
    costs: Vec<RequestCost>,
    strategy: Strategy,
}

impl Meter {
    fn request(
        &mut self,
        shell: &mut Shell,
        agent: &'static str,
        conv: &Conversation,
    ) -> Result<()> {
        let request = shell.assemble(agent)?;
        let tools = serde_json::to_string(&request.tools)?;
        let text = format!(
            "{tools}\n\n{}\n\n{}",
            request.system_prompt.unwrap_or_default(),
            Value::Array(conv.messages.clone())
        );
        let common = common_prefix(&self.previous, &text);
        let input = u64::from(Tokenizer::O200k.count(&text));
        let cached = u64::from(Tokenizer::O200k.count(&text[..common]));
        let tools_changed = self
            .tools_by_agent
            .insert(agent, tools.clone())
            .is_some_and(|before| before != tools);
        if tools_changed && self.strategy == Strategy::Dispatch {
            bail!("dispatch changed {agent}'s tools array between two requests");
        }
        self.costs.push(RequestCost {
            agent,
            input,
            cached: cached.min(input),
            tools_changed,
        });
        self.previous = text;
        Ok(())
    }
}

/// The byte length of the longest common prefix, on a char boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    let mut end = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(end) {
        end -= 1;
    }
    end
}

fn run_session(catalog: &Catalog, strategy: Strategy, picks: &[Pick]) -> Result<Vec<RequestCost>> {
    let mut shell = Shell::new();
    shell.register_tools(core_builtins())?;
    shell.register_catalog(catalog)?;
    shell.create_agent("main", None)?;
    if strategy != Strategy::Eager {
        let component = WasmHost::global()
            .lazy_tools()
            .context("loading the lazy-tools component")?;
        let config = json!({
            "deferToolLoading": true,
            "catalog": "groups",
            "strategy": strategy.name(),
        });
        shell.install_plugin("lazy-tools", &component, &config)?;
    }
    let mut meter = Meter {
        previous: String::new(),
        tools_by_agent: Default::default(),
        costs: Vec::new(),
        strategy,
    };
    let mut main = Conversation::default();
    main.say(
        "user",
        "Work through today's tasks with the tools you have.",
    );
    let mut loaded = 0;
    for request in 0..MAIN_REQUESTS {
        meter.request(&mut shell, "main", &main)?;
        if LOAD_AT.contains(&request) {
            load(&mut shell, strategy, "main", &mut main, &picks[loaded])?;
        } else if request > 0 && LOAD_AT.contains(&(request - 1)) {
            use_tool(&mut shell, strategy, "main", &mut main, &picks[loaded])?;
            loaded += 1;
        } else {
            main.say("assistant", format!("Step {request} is done; next."));
            main.say("user", "Go on.");
        }
        if request == CHILD_AFTER {
            let id = shell.create_agent("helper", Some("main"))?;
            debug_assert_eq!(id, "main/helper");
            let mut child = Conversation::default();
            child.say("user", "Help with one task.");
            for child_request in 0..CHILD_REQUESTS {
                meter.request(&mut shell, "main/helper", &child)?;
                match child_request {
                    0 => load(
                        &mut shell,
                        strategy,
                        "main/helper",
                        &mut child,
                        &picks[LOAD_AT.len()],
                    )?,
                    1 => use_tool(
                        &mut shell,
                        strategy,
                        "main/helper",
                        &mut child,
                        &picks[LOAD_AT.len()],
                    )?,
                    _ => child.say("assistant", "Done."),
                }
            }
            main.say("user", "The helper is done.");
        }
    }
    Ok(meter.costs)
}

/// The model loads a tool: `load_tools` (dispatch) or `tool_search` by name
/// (inject); with every tool visible (eager) it reads the tool's docs.
fn load(
    shell: &mut Shell,
    strategy: Strategy,
    agent: &str,
    conv: &mut Conversation,
    pick: &Pick,
) -> Result<()> {
    match strategy {
        Strategy::Eager => {
            conv.say("assistant", format!("I will use {}.", pick.tool));
            Ok(())
        }
        Strategy::Inject => conv.call(
            shell,
            agent,
            "tool_search",
            json!({"tool_names": [pick.tool]}),
        ),
        Strategy::Dispatch => conv.call(
            shell,
            agent,
            "load_tools",
            json!({"group_id": pick.server, "tool_names": [pick.tool]}),
        ),
    }
}

/// The model calls the tool it loaded: through the forwarder (dispatch) or
/// directly.
fn use_tool(
    shell: &mut Shell,
    strategy: Strategy,
    agent: &str,
    conv: &mut Conversation,
    pick: &Pick,
) -> Result<()> {
    match strategy {
        Strategy::Dispatch => conv.call(
            shell,
            agent,
            "deferred_tool_call",
            json!({"tool_name": pick.tool, "arguments": {}}),
        ),
        Strategy::Eager | Strategy::Inject => conv.call(shell, agent, &pick.tool, json!({})),
    }
}
