//! `host-harness demo`: what lazy-tools does to a real MCP catalog, shown to
//! a person step by step, through the real component.

mod live;

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use super::args::CatalogArg;
use crate::catalog::Catalog;
use crate::script::describe;
use crate::shell::{CallOutcome, Shell, ToolSchema, core_builtins, names};
use crate::tokens::Tokenizer;
use crate::wasm_host::WasmHost;

/// `host-harness demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    #[command(flatten)]
    catalog: CatalogArg,
    /// The same story against real MCP servers from npm (everything,
    /// filesystem, memory), installed into the target dir on first use.
    #[arg(long, conflicts_with = "catalog")]
    live: bool,
}

impl DemoArgs {
    pub fn run(self) -> Result<()> {
        if self.live {
            live::run()
        } else {
            run(&self.catalog.path())
        }
    }
}

pub fn run(path: &Path) -> Result<()> {
    let path = path.to_path_buf();
    let path = path.canonicalize().unwrap_or(path);
    let catalog = Catalog::load(&path)?;
    let mut shell = Shell::new();
    shell.core().set_tokenizer(Some(Tokenizer::O200k));
    shell.register_tools(core_builtins())?;
    shell.register_catalog(&catalog)?;
    let main = shell.create_agent("main", None)?;

    println!(
        "lazy-tools demo: {} MCP tools from {} servers ({}) and {} built-ins\n",
        catalog.tool_count(),
        catalog.servers.len(),
        crate::terminal::escape(&path.display().to_string()),
        core_builtins().len()
    );

    let eager = shell.next_request(&main)?;
    println!(
        "1. Without lazy-tools the model receives {} tools on every request: {}.",
        eager.len(),
        size(&eager)
    );

    let (cold, share) = install_lazy_tools(&mut shell, &main, &eager, &Value::Null)?;
    let deferred = catalog
        .tools()
        .filter(|(_, t)| !cold.iter().any(|shown| shown.name == t.name))
        .count();
    if deferred == 0 {
        // The preset defers only what would cost a request more than its budget.
        println!(
            "2. With lazy-tools (zero-config preset) it receives the same tools and its guard tools: \
             these schemas fit the preset's budget of {} o200k tokens, so nothing is deferred and \
             no search round trip is paid.\n   The rest of the demo needs a catalog over that \
             budget, such as the bundled one (run `demo` without --catalog).",
            lazy_tools::DEFAULT_TOKEN_BUDGET
        );
        return Ok(());
    }
    println!(
        "2. With lazy-tools (zero-config preset: defer everything but the core built-ins) it receives {} tools: {}, {share:.1}% of the tokens.\n   {}",
        cold.len(),
        size(&cold),
        names(&cold)
    );

    let english = search(
        &mut shell,
        &main,
        "find academic papers on arXiv by keyword",
        3,
    )?;
    println!("3. The model searches in English:\n{english}");
    let chinese = search(&mut shell, &main, "查询股票的实时价格", 3)?;
    println!(
        "4. The model searches in Chinese (查询股票的实时价格, \"look up a stock's live price\"):\n{chinese}"
    );

    let visible: Vec<String> = shell
        .next_request(&main)?
        .into_iter()
        .map(|t| t.name)
        .collect();
    let hidden = catalog
        .tools()
        .map(|(_, t)| t.name)
        .find(|name| !visible.contains(name))
        .context("every catalog tool is visible; nothing to deny")?;
    let outcome = shell.call(&main, &hidden, &json!({}))?;
    if !matches!(outcome, CallOutcome::Denied { .. }) {
        bail!("a direct call to the deferred tool `{hidden}` was not denied: {outcome:?}");
    }
    println!(
        "5. The model calls the deferred tool `{hidden}` directly:\n   {}",
        describe(&outcome)
    );

    let next = shell.next_request(&main)?;
    let loaded: Vec<&ToolSchema> = next.iter().filter(|t| !cold.contains(t)).collect();
    println!(
        "6. On the next request the model receives {} tools ({}); newly loaded: {}.",
        next.len(),
        size(&next),
        loaded
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Runs `tool_search` for one query and shows its result, indented.
pub(super) fn search(shell: &mut Shell, agent: &str, query: &str, top_k: u32) -> Result<String> {
    let args = json!({"queries": [query], "top_k": top_k});
    let outcome = shell.call(agent, "tool_search", &args)?;
    let CallOutcome::Completed(output) = outcome else {
        bail!("tool_search did not run: {outcome:?}");
    };
    Ok(format!(
        "   tool_search {args}\n{}",
        output
            .text
            .lines()
            .map(|l| format!("   {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

pub(super) fn tokens(tools: &[ToolSchema]) -> u64 {
    Tokenizer::O200k.count_tools(tools)
}

pub(super) fn size(tools: &[ToolSchema]) -> String {
    let bytes = serde_json::to_string(tools).map(|s| s.len()).unwrap_or(0);
    format!("{} o200k tokens of schemas, {bytes} bytes", tokens(tools))
}

/// Installs lazy-tools with `config` (`null`: the zero-config preset); returns the agent's
/// next request and its share of `eager`'s schema tokens, in percent.
fn install_lazy_tools(
    shell: &mut Shell,
    agent: &str,
    eager: &[ToolSchema],
    config: &Value,
) -> Result<(Vec<ToolSchema>, f64)> {
    let component = WasmHost::global().lazy_tools()?;
    shell
        .install_plugin("lazy-tools", &component, config)
        .with_context(|| match config {
            Value::Null => "installing lazy-tools with the zero-config preset".to_string(),
            config => format!("installing lazy-tools with the config {config}"),
        })?;
    let cold = shell.next_request(agent)?;
    let share = 100.0 * tokens(&cold) as f64 / tokens(eager) as f64;
    Ok((cold, share))
}
