//! The profile's MCP servers as the shell's tool backend: their tools in
//! the registry (from the cache when a server has not started), each server
//! started when it is first needed, calls sent to it, and its faults turned
//! into error results that name it.
//!
//! When a server starts:
//! - `lazyStart: false`: when the session starts;
//! - otherwise when some agent may call one of its tools (lazy-tools has
//!   loaded it, or nothing defers it) or the model calls one;
//! - a server never seen before (no cached listing for its launch) is
//!   started when the session starts, to learn its tools.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::join_all;
use serde_json::{Value, json};

use super::cache::{Listing, ListingCache};
use super::client::{Connection, Fault};
use super::config::{McpConfig, ServerConfig};
use super::result::render;
use crate::catalog::ShellNames;
use crate::shell::{
    LazyGroupDecl, Origin, RegistryChange, ShellCore, Tool, ToolBackend, ToolOutput,
};

/// The first wait before a failed server may start again; it doubles with
/// each failure in a row, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long the command after servers' `list_changed` waits for their new listings, at most;
/// a slower one is registered by a later command, when it has come.
const RELIST_WAIT: Duration = Duration::from_secs(1);
/// How long session end waits for the servers to stop (each stops in
/// parallel within about a second).
const STOP_ALL: Duration = Duration::from_secs(5);

/// Set from another thread (the one a session's Ctrl-C or SIGTERM reaches): the servers' calls
/// and starts stop waiting at once, with [`Fault::Interrupted`], instead of up to their
/// timeouts (a minute for a call by default), so that the session ends promptly and stops
/// its servers itself. It stays set: the session is ending.
#[derive(Debug, Default)]
pub struct Interrupt {
    set: AtomicBool,
    woken: tokio::sync::Notify,
}

impl Interrupt {
    pub fn set(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.woken.notify_waiters();
    }

    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        let woken = self.woken.notified();
        tokio::pin!(woken);
        // Registered before the flag is read: a `set` in between still wakes it.
        woken.as_mut().enable();
        if !self.is_set() {
            woken.await;
        }
    }
}

/// What happened to a server, in order (for tests and the CLI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Started {
        server: String,
        why: StartReason,
    },
    StartFailed {
        server: String,
        fault: String,
        /// Whether tools it listed before (this run, or a cached listing) stay registered.
        kept_tools: bool,
    },
    Failed {
        server: String,
        fault: String,
    },
    ToolsChanged {
        server: String,
    },
    /// Entries of its `tools/list` the shell left out (`Listing::left_out`); its other tools
    /// are in the session.
    ToolsLeftOut {
        server: String,
        why: Vec<String>,
        /// Entries left out past those in `why`, counted.
        more: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StartReason {
    /// `lazyStart: false`.
    Eager,
    /// Its tools were not known yet.
    Unknown,
    /// An agent may call one of its tools.
    Visible,
    /// The model called one of its tools.
    Called,
    /// A plugin loaded its group (`host.load-group`).
    Loaded,
}

enum State {
    /// Not started: its tools come from the cache.
    Idle,
    Running(Connection),
    Failed {
        fault: Fault,
        retry_at: Instant,
    },
}

struct Server {
    config: ServerConfig,
    state: State,
    /// The listing whose tools are registered.
    listing: Option<Listing>,
    /// Failures in a row (reset by a successful start).
    failures: u32,
}

/// The servers and their tools.
pub struct McpServers {
    runtime: tokio::runtime::Runtime,
    cache: ListingCache,
    servers: Vec<Server>,
    /// Registered tool name -> the server's tool as registered.
    tools: HashMap<String, ServerTool>,
    /// Registry changes waiting for the next sync.
    pending: Vec<RegistryChange>,
    /// The shell's generation at the last look for newly visible tools.
    seen_generation: Option<u64>,
    first_backoff: Duration,
    events: Vec<Event>,
    interrupt: Arc<Interrupt>,
}

/// A registered tool of a server: which server, its name there, and its definition as the
/// shell registered it.
#[derive(Debug, Clone)]
struct ServerTool {
    server: usize,
    name: String,
    definition: Tool,
}

impl McpServers {
    /// Reads the cache and starts the servers that must start now (eager
    /// ones and ones never seen), in parallel. Their tools are in
    /// [`McpServers::take_changes`].
    pub fn open(config: &McpConfig, cache: ListingCache) -> anyhow::Result<Self> {
        Self::open_interruptible(config, cache, Arc::default())
    }

    /// [`McpServers::open`], whose waits (the first starts among them) `interrupt` ends.
    pub fn open_interruptible(
        config: &McpConfig,
        cache: ListingCache,
        interrupt: Arc<Interrupt>,
    ) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp")
            .enable_all()
            .build()?;
        let mut servers = Self {
            runtime,
            cache,
            servers: Vec::new(),
            tools: HashMap::new(),
            pending: Vec::new(),
            seen_generation: None,
            first_backoff: FIRST_BACKOFF,
            events: Vec::new(),
            interrupt,
        };
        let mut now = Vec::new();
        for (index, config) in config.servers.iter().enumerate() {
            let cached = servers.cache.get(config);
            let why = match (&cached, config.lazy_start) {
                (_, Some(false)) => Some(StartReason::Eager),
                (None, _) => Some(StartReason::Unknown),
                (Some(_), _) => None,
            };
            servers.servers.push(Server {
                config: config.clone(),
                state: State::Idle,
                listing: None,
                failures: 0,
            });
            if let Some(listing) = cached {
                servers.register(index, listing);
            }
            if let Some(why) = why {
                now.push((index, why));
            }
        }
        servers.start_all(&now);
        Ok(servers)
    }

    /// Waits `first` (doubling) before restarting a failed server.
    pub fn set_first_backoff(&mut self, first: Duration) {
        self.first_backoff = first;
    }

    /// The registry changes not yet applied (for the session's start).
    pub fn take_changes(&mut self) -> Vec<RegistryChange> {
        std::mem::take(&mut self.pending)
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Whether `server` is running now.
    pub fn is_running(&self, server: &str) -> bool {
        self.servers
            .iter()
            .any(|s| s.config.name == server && matches!(s.state, State::Running(_)))
    }

    /// The process ids of the running stdio servers.
    pub fn pids(&self) -> Vec<u32> {
        self.servers
            .iter()
            .filter_map(|s| match &s.state {
                State::Running(connection) => connection.pid(),
                _ => None,
            })
            .collect()
    }

    /// Stops every server and waits for the processes to exit.
    pub fn stop_all(&mut self) {
        let running: Vec<Connection> = self
            .servers
            .iter_mut()
            .filter_map(|s| match std::mem::replace(&mut s.state, State::Idle) {
                State::Running(connection) => Some(connection),
                other => {
                    s.state = other;
                    None
                }
            })
            .collect();
        if running.is_empty() {
            return;
        }
        let stopping = join_all(running.into_iter().map(Connection::stop));
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(STOP_ALL, stopping).await });
    }

    /// Starts the servers at `which` in parallel and records the outcomes.
    fn start_all(&mut self, which: &[(usize, StartReason)]) {
        if which.is_empty() {
            return;
        }
        let configs: Vec<ServerConfig> = which
            .iter()
            .map(|(i, _)| self.servers[*i].config.clone())
            .collect();
        // Interrupted, the starts are dropped, which stops what they spawned.
        let starts = join_all(
            configs
                .iter()
                .map(|config| async move { Connection::start(config).await }),
        );
        let results = until_interrupted(&self.runtime, &self.interrupt, starts)
            .unwrap_or_else(|| which.iter().map(|_| Err(Fault::Interrupted)).collect());
        for ((index, why), result) in which.iter().zip(results) {
            self.started(*index, *why, result);
        }
    }

    fn started(
        &mut self,
        index: usize,
        why: StartReason,
        result: Result<(Connection, Listing), Fault>,
    ) {
        let name = self.servers[index].config.name.clone();
        match result {
            Ok((connection, listing)) => {
                self.events.push(Event::Started {
                    server: name.clone(),
                    why,
                });
                let server = &mut self.servers[index];
                server.state = State::Running(connection);
                server.failures = 0;
                if let Err(e) = self.cache.put(&server.config, &listing) {
                    tracing::warn!("MCP server `{name}`: not cached: {e:#}");
                }
                self.register(index, listing);
            }
            Err(fault) => {
                self.events.push(Event::StartFailed {
                    server: name,
                    fault: fault.to_string(),
                    kept_tools: self.servers[index].listing.is_some(),
                });
                self.fail(index, fault);
            }
        }
    }

    /// Marks server `index` failed; the next start waits for the backoff.
    fn fail(&mut self, index: usize, fault: Fault) {
        let server = &mut self.servers[index];
        server.failures += 1;
        let wait = self
            .first_backoff
            .saturating_mul(1 << (server.failures - 1).min(16))
            .min(MAX_BACKOFF);
        let old = std::mem::replace(
            &mut server.state,
            State::Failed {
                fault: fault.clone(),
                retry_at: Instant::now() + wait,
            },
        );
        if let State::Running(connection) = old {
            self.events.push(Event::Failed {
                server: server.config.name.clone(),
                fault: fault.to_string(),
            });
            self.runtime.block_on(connection.stop());
        }
    }

    /// Registers `listing` as server `index`'s tools: only what changed
    /// against what is registered (a tool whose schema or description
    /// changed is registered anew).
    fn register(&mut self, index: usize, listing: Listing) {
        let server = &mut self.servers[index];
        let name = server.config.name.clone();
        // A relist that leaves out what the last one did says nothing new.
        let said = server.listing.as_ref().is_some_and(|last| {
            (&last.left_out, last.left_out_more) == (&listing.left_out, listing.left_out_more)
        });
        if !listing.left_out.is_empty() && !said {
            self.events.push(Event::ToolsLeftOut {
                server: name.clone(),
                why: listing.left_out.clone(),
                more: listing.left_out_more,
            });
        }
        let old: BTreeMap<String, Tool> = server
            .listing
            .as_ref()
            .map(|l| tools_of(&name, l).collect())
            .unwrap_or_default();
        let new: BTreeMap<String, Tool> = tools_of(&name, &listing).collect();
        if server.listing.is_some() && old != new {
            self.events.push(Event::ToolsChanged {
                server: name.clone(),
            });
        }
        if server.listing.as_ref().map(|l| &l.description) != Some(&listing.description) {
            self.pending.push(RegistryChange::Group {
                name: name.clone(),
                description: listing.description.clone(),
            });
        }
        for (tool, registered) in &old {
            if new.get(tool) != Some(registered) {
                self.pending.push(RegistryChange::Unregister(tool.clone()));
                self.tools.remove(tool);
            }
        }
        for (tool, registering) in &new {
            if old.get(tool) != Some(registering) {
                self.pending
                    .push(RegistryChange::Register(registering.clone()));
            }
        }
        for ((registered, definition), tool) in tools_of(&name, &listing).zip(&listing.tools) {
            let server_tool = ServerTool {
                server: index,
                name: tool.name.clone(),
                definition,
            };
            self.tools.insert(registered, server_tool);
        }
        server.listing = Some(listing);
    }

    /// The servers that start on demand and have not started, as lazy
    /// groups: their description and tool names from the cached listing.
    pub fn lazy_groups(&self) -> Vec<LazyGroupDecl> {
        self.servers
            .iter()
            .filter(|s| s.config.lazy_start != Some(false) && matches!(s.state, State::Idle))
            .map(|s| {
                let name = &s.config.name;
                LazyGroupDecl {
                    name: name.clone(),
                    description: s
                        .listing
                        .as_ref()
                        .map(|l| l.description.clone())
                        .unwrap_or_default(),
                    tool_names: s
                        .listing
                        .as_ref()
                        .map(|l| tools_of(name, l).map(|(n, _)| n).collect())
                        .unwrap_or_default(),
                }
            })
            .collect()
    }

    /// Loads lazy group `name`: starts its server (a no-op when it runs)
    /// and returns its tools. A changed listing reaches the registry at the
    /// next sync, as any server's does.
    pub fn load_group(&mut self, name: &str) -> Result<Vec<Tool>, String> {
        let index = self
            .servers
            .iter()
            .position(|s| s.config.name == name)
            .ok_or_else(|| format!("no MCP server `{name}`"))?;
        self.ensure_running(index, StartReason::Loaded)
            .map_err(|fault| format!("MCP server `{name}`: {fault}"))?;
        Ok(self.servers[index]
            .listing
            .as_ref()
            .map(|l| tools_of(name, l).map(|(_, t)| t).collect())
            .unwrap_or_default())
    }

    /// Makes sure server `index` runs: starts it when idle, or when failed
    /// and its backoff has passed.
    fn ensure_running(&mut self, index: usize, why: StartReason) -> Result<(), Fault> {
        match &self.servers[index].state {
            State::Running(_) => return Ok(()),
            State::Failed { fault, retry_at } if Instant::now() < *retry_at => {
                let wait = retry_at.saturating_duration_since(Instant::now());
                return Err(Fault::Broken(format!(
                    "{fault}; it may be restarted in {:.1} s",
                    wait.as_secs_f64()
                )));
            }
            _ => {}
        }
        self.start_all(&[(index, why)]);
        match &self.servers[index].state {
            State::Running(_) => Ok(()),
            State::Failed { fault, .. } => Err(fault.clone()),
            State::Idle => unreachable!("a start leaves the server running or failed"),
        }
    }

    /// Notices servers that died or changed their tools while idle. A change is listed on a
    /// task of its own, and a command waits at most [`RELIST_WAIT`] for the relists it began,
    /// all together: a server that answers slowly, or says its tools changed without end,
    /// would otherwise hold up every command, the built-ins' too.
    fn watch_running(&mut self) {
        let mut began = false;
        for index in 0..self.servers.len() {
            let State::Running(connection) = &self.servers[index].state else {
                continue;
            };
            if let Some(fault) = connection.fault() {
                self.fail(index, fault);
                continue;
            }
            began |= self.begin_relist(index);
        }
        let deadline = Instant::now() + if began { RELIST_WAIT } else { Duration::ZERO };
        for index in 0..self.servers.len() {
            let Self {
                runtime,
                interrupt,
                servers,
                ..
            } = &mut *self;
            let State::Running(connection) = &mut servers[index].state else {
                continue;
            };
            if !connection.relisting() {
                continue;
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            let Some(relisted) =
                until_interrupted(runtime, interrupt, connection.relisted_within(wait))
            else {
                // The session is ending: its servers' tools no longer matter.
                return;
            };
            match relisted {
                None => {}
                Some(Ok(listing)) => {
                    let server = &self.servers[index];
                    if let Err(e) = self.cache.put(&server.config, &listing) {
                        tracing::warn!("MCP server `{}`: not cached: {e:#}", server.config.name);
                    }
                    self.register(index, listing);
                    // A change said while that relist ran is listed now, for a later command.
                    self.begin_relist(index);
                }
                Some(Err(fault)) => self.fail(index, fault),
            }
        }
    }

    /// Begins listing server `index`'s tools again if it said they changed and no relist is
    /// under way; whether it began one.
    fn begin_relist(&mut self, index: usize) -> bool {
        let Self {
            runtime, servers, ..
        } = self;
        let server = &mut servers[index];
        let State::Running(connection) = &mut server.state else {
            return false;
        };
        if connection.relisting() || !connection.take_tools_changed() {
            return false;
        }
        let description = server
            .listing
            .as_ref()
            .map(|l| l.description.clone())
            .unwrap_or_else(|| server.config.name.clone());
        connection.start_relist(runtime.handle(), description, server.config.call_timeout);
        true
    }

    /// Starts idle servers one of whose tools some agent may call now.
    fn start_visible(&mut self, core: &ShellCore) {
        if self.seen_generation == Some(core.generation()) {
            return;
        }
        self.seen_generation = Some(core.generation());
        let idle: HashSet<usize> = (0..self.servers.len())
            .filter(|i| matches!(self.servers[*i].state, State::Idle))
            .collect();
        if idle.is_empty() {
            return;
        }
        let mut wanted = HashSet::new();
        let agents: Vec<String> = core.agents().map(|(a, _)| a.to_string()).collect();
        for agent in agents {
            let Ok(tools) = core.effective(&agent, None) else {
                continue;
            };
            for tool in tools {
                if let Some(ServerTool { server: index, .. }) = self.tools.get(&tool.name)
                    && idle.contains(index)
                    && tool.origin == Origin::Mcp(self.servers[*index].config.name.clone())
                {
                    wanted.insert(*index);
                }
            }
        }
        let mut wanted: Vec<(usize, StartReason)> = wanted
            .into_iter()
            .map(|i| (i, StartReason::Visible))
            .collect();
        wanted.sort();
        self.start_all(&wanted);
    }

    fn error(&self, index: usize, tool: &str, what: String) -> ToolOutput {
        let server = &self.servers[index].config.name;
        let text = format!("MCP server `{server}` could not run `{tool}`: {what}");
        ToolOutput {
            json: json!({"error": {"server": server, "tool": tool, "message": what}}),
            text,
            is_error: true,
        }
    }
}

impl ToolBackend for McpServers {
    fn run(&mut self, _agent: &str, tool: &Tool, arguments: &Value) -> Option<ToolOutput> {
        let ServerTool {
            server: index,
            name: mcp_name,
            ..
        } = self.tools.get(&tool.name)?.clone();
        if tool.origin != Origin::Mcp(self.servers[index].config.name.clone()) {
            return None;
        }
        if let Err(fault) = self.ensure_running(index, StartReason::Called) {
            return Some(self.error(index, &mcp_name, fault.to_string()));
        }
        // Starting may have changed the tools, and a running server may have listed them
        // anew since the shell last synced: the live tool is what runs, and the call was
        // written for the definition the model read. A changed one is not run (the next sync
        // registers it, and a loaded tool lapses with its definition).
        match self.tools.get(&tool.name) {
            Some(live) if live.server == index && live.definition.same_definition(tool) => {}
            Some(live) if live.server == index => {
                return Some(
                    self.error(
                        index,
                        &mcp_name,
                        "its definition changed since it was listed (the server started or listed \
                     its tools anew): not run; look at the tool again before calling it"
                            .into(),
                    ),
                );
            }
            _ => {
                return Some(
                    self.error(
                        index,
                        &mcp_name,
                        "the server no longer offers this tool (its tools changed when it started)"
                            .into(),
                    ),
                );
            }
        }
        let mcp_name = self.tools[&tool.name].name.clone();
        let config = &self.servers[index].config;
        let timeout = config.call_timeout;
        let State::Running(connection) = &self.servers[index].state else {
            unreachable!("ensure_running succeeded");
        };
        let Some(outcome) = until_interrupted(
            &self.runtime,
            &self.interrupt,
            connection.call(&mcp_name, arguments, timeout),
        ) else {
            // The server is not at fault: it stays running until the session stops it.
            return Some(self.error(index, &mcp_name, Fault::Interrupted.to_string()));
        };
        Some(match outcome {
            Ok(Ok(result)) => render(&result),
            Ok(Err(message)) => self.error(
                index,
                &mcp_name,
                format!("the server answered with an error: {message}"),
            ),
            Err(fault) => {
                let output = self.error(index, &mcp_name, fault.to_string());
                self.fail(index, fault);
                output
            }
        })
    }

    fn sync(&mut self, core: &ShellCore) -> Vec<RegistryChange> {
        self.watch_running();
        self.start_visible(core);
        std::mem::take(&mut self.pending)
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Server `name`'s tools as the shell registers them, in the listing's order.
fn tools_of<'a>(name: &'a str, listing: &'a Listing) -> impl Iterator<Item = (String, Tool)> + 'a {
    let mut names = ShellNames::default();
    listing.tools.iter().map(move |tool| {
        let registered = Tool::new(
            names.name(name, &tool.name),
            tool.description.clone(),
            Origin::Mcp(name.to_string()),
        )
        .with_parameters(tool.input_schema.clone());
        (registered.name.clone(), registered)
    })
}

/// Runs `future` on `runtime` to its end, or until `interrupt` is set: `None` then.
fn until_interrupted<F: Future>(
    runtime: &tokio::runtime::Runtime,
    interrupt: &Interrupt,
    future: F,
) -> Option<F::Output> {
    if interrupt.is_set() {
        return None;
    }
    runtime.block_on(async {
        tokio::select! {
            output = future => Some(output),
            () = interrupt.wait() => None,
        }
    })
}
