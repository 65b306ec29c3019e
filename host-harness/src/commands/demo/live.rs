//! `host-harness demo --live`: the story of `demo`, against real MCP servers
//! (the reference servers everything, filesystem and memory from npm): their
//! tools deferred, searched, loaded and called, and a server the model never
//! needs never started.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::commands::signals::Ending;
use crate::mcp::reference::{self, Set};
use crate::mcp::{self, Event, Interrupt, ListingCache, McpConfig, SharedServers};
use crate::script::describe;
use crate::shell::{CallOutcome, Shell, ToolOutput, ToolSchema, core_builtins, names};
use crate::tokens::Tokenizer;

use super::{install_lazy_tools, search, size, tokens};

/// Prints a line of the demo. Much of it comes from the servers and the plugin (tool names,
/// results, a file's content), so none of it reaches the terminal raw.
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", crate::terminal::escape_message(&format!($($arg)*)))
    };
}

pub fn run() -> Result<()> {
    // Caught from here: a signal ends the servers' starts and calls, and the demo at its next
    // step, which stops the servers with what they started (see `signals`).
    let ending = Ending::catch(|| {
        eprintln!(
            "interrupted: the demo stops its servers (a second Ctrl-C stops the harness at once)"
        );
    })
    .context("handling Ctrl-C")?;
    let interrupt = Arc::<Interrupt>::default();
    ending.watch(Arc::clone(&interrupt));
    let ran = reference::install(Set::Three, &reference::default_dir(Set::Three))
        .and_then(|dir| story(&dir, &ending, interrupt));
    // npm, in the terminal's process group, gets the signal too.
    ending.outcome(ran, INTERRUPTED)
}

const INTERRUPTED: &str = "interrupted: the demo stopped where it was, and stopped its servers";

/// The demo's steps over the servers installed in `dir`.
fn story(dir: &Path, ending: &Ending, interrupt: Arc<Interrupt>) -> Result<()> {
    let work = tempfile::tempdir().context("creating a scratch folder")?;
    let files = work.path().canonicalize()?;
    let cache = ListingCache::new(files.join("cache"));
    let servers = reference::three(dir, &files, &files.join("memory.jsonl"));
    let config = McpConfig { servers };

    say!(
        "lazy-tools live demo: {} real MCP servers from npm ({}), files in {}\n",
        config.servers.len(),
        config
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        files.display()
    );

    // A first session learns the servers' tools (and caches them), as a
    // shell does the first time it sees a server.
    let started = Instant::now();
    {
        let mut shell = Shell::new();
        mcp::attach_interruptible(&mut shell, &config, cache.clone(), Arc::clone(&interrupt))?;
    }
    go_on(ending)?;
    say!(
        "0. First run: each server is started once to learn its tools ({:.0} ms), then stopped; its tools/list is cached.",
        started.elapsed().as_secs_f64() * 1000.0
    );

    let mut shell = Shell::new();
    shell.core().set_tokenizer(Some(Tokenizer::O200k));
    shell.register_tools(core_builtins())?;
    let handle = mcp::attach_interruptible(&mut shell, &config, cache, interrupt)?;
    go_on(ending)?;
    let main = shell.create_agent("main", None)?;
    let eager: Vec<ToolSchema> = shell
        .core()
        .effective(&main, None)?
        .into_iter()
        .map(|t| t.schema())
        .collect();
    say!(
        "1. Without lazy-tools the model would receive {} tools on every request: {}, and every server would run.",
        eager.len(),
        size(&eager)
    );

    // This story is about servers started only when their tools are needed, so it always
    // defers, as a user who wants that writes it: three servers' schemas may fit the
    // zero-config preset's token budget, under which it defers nothing (the plain `demo` says
    // so for such a catalog).
    let plugin_config = json!({"deferToolLoading": true});
    let (cold, share) = install_lazy_tools(&mut shell, &main, &eager, &plugin_config)?;
    let budget = lazy_tools::DEFAULT_TOKEN_BUDGET;
    let why = if tokens(&eager) <= u64::from(budget) {
        format!(
            "these schemas fit the preset's budget of {budget} o200k tokens, under which it would defer nothing"
        )
    } else {
        format!("as the preset would, these schemas being over its budget of {budget} o200k tokens")
    };
    say!(
        "2. With lazy-tools, configured `deferToolLoading: true` ({why}), it receives {} tools: \
         {}, {share:.1}% of the tokens. Servers running: {}.\n   {}",
        cold.len(),
        size(&cold),
        running(&handle),
        names(&cold)
    );

    let direct = shell.call(&main, "filesystem__write_file", &json!({}))?;
    if !matches!(direct, CallOutcome::Denied { .. }) {
        bail!("a direct call to a deferred tool was not denied: {direct:?}");
    }
    say!(
        "3. The model calls the deferred `filesystem__write_file` directly:\n   {}\n   Servers running: {}.",
        describe(&direct),
        running(&handle)
    );

    go_on(ending)?;
    let found = search(&mut shell, &main, "write a file", 1)?;
    say!(
        "4. The model searches:\n{found}\n   Loading started the server: {}.",
        started_servers(&handle)
    );

    let path = files.join("hello.txt");
    go_on(ending)?;
    let wrote = run_tool(
        &mut shell,
        &main,
        "filesystem__write_file",
        json!({"path": path, "content": "written through lazy-tools"}),
    )?;
    say!(
        "5. It writes a file: {}\n   On disk: {:?}",
        first_line(&wrote.text),
        std::fs::read_to_string(&path)?
    );

    go_on(ending)?;
    let found = search(&mut shell, &main, "remember a fact about a person", 1)?;
    say!("6. It searches for memory:\n{found}");
    run_tool(
        &mut shell,
        &main,
        "defer_execute_tool",
        json!({"toolName": "memory__create_entities"}),
    )?;
    run_tool(
        &mut shell,
        &main,
        "memory__create_entities",
        json!({"entities": [{"name": "Ada Lovelace", "entityType": "person", "observations": ["wrote the first program"]}]}),
    )?;
    run_tool(
        &mut shell,
        &main,
        "defer_execute_tool",
        json!({"toolName": "memory__search_nodes"}),
    )?;
    let recalled = run_tool(
        &mut shell,
        &main,
        "memory__search_nodes",
        json!({"query": "Ada"}),
    )?;
    go_on(ending)?;
    say!(
        "7. It stores an entity and recalls it: {}",
        crate::commands::shortened(&recalled.text.replace('\n', " "), 160)
    );

    let next = shell.next_request(&main)?;
    let loaded: Vec<&str> = next
        .iter()
        .filter(|t| !cold.contains(t))
        .map(|t| t.name.as_str())
        .collect();
    say!(
        "8. Its next request carries {} tools ({}); loaded: {}.\n   Servers started: {}; running now: {}.",
        next.len(),
        size(&next),
        loaded.join(", "),
        started_servers(&handle),
        running(&handle)
    );
    Ok(())
}

/// Stops the demo where it is once an ending signal came: its shell and servers are dropped on
/// the way out, which stops the servers' process groups.
fn go_on(ending: &Ending) -> Result<()> {
    ending.outcome(Ok(()), INTERRUPTED)
}

fn run_tool(shell: &mut Shell, agent: &str, tool: &str, args: Value) -> Result<ToolOutput> {
    match shell.call(agent, tool, &args)? {
        CallOutcome::Completed(output) if !output.is_error => Ok(output),
        CallOutcome::Completed(output) => bail!("`{tool}` failed: {}", output.text),
        other => bail!("`{tool}` did not run: {}", describe(&other)),
    }
}

fn running(handle: &SharedServers) -> String {
    let servers = handle.lock();
    let names: Vec<&str> = ["everything", "filesystem", "memory"]
        .into_iter()
        .filter(|s| servers.is_running(s))
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

fn started_servers(handle: &SharedServers) -> String {
    let started: Vec<String> = handle
        .lock()
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::Started { server, why } => Some(format!("{server} ({why:?})")),
            _ => None,
        })
        .collect();
    if started.is_empty() {
        "none".to_string()
    } else {
        started.join(", ")
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
