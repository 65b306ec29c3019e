//! Real MCP servers in the harness: declared in the profile's `mcp.yml`
//! (config), reached through the official SDK (client), their last tool
//! lists kept on disk (cache), started only when needed and run as the
//! shell's tool backend (servers), their results shown as the shell shows
//! them (result).

pub mod cache;
pub mod client;
pub mod config;
pub mod reference;
pub mod result;
pub mod servers;

use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Result;
use serde_json::Value;

pub use cache::{Listing, ListingCache};
pub use config::{MCP_FILE, McpConfig, ServerConfig};
pub use servers::{Event, Interrupt, McpServers, StartReason};

use crate::shell::{GroupLoader, RegistryChange, Shell, ShellCore, Tool, ToolBackend, ToolOutput};

/// The servers, shared between the shell (its backend) and whoever started
/// the session (to look at them, or stop them early).
#[derive(Clone)]
pub struct SharedServers(Arc<Mutex<McpServers>>);

impl SharedServers {
    pub fn lock(&self) -> MutexGuard<'_, McpServers> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for SharedServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedServers")
    }
}

/// The servers that start on demand are the shell's lazy groups: loading
/// one starts its server.
impl GroupLoader for SharedServers {
    fn load(&self, group: &str) -> Result<Vec<Tool>, String> {
        self.lock().load_group(group)
    }
}

impl ToolBackend for SharedServers {
    fn run(&mut self, agent: &str, tool: &Tool, arguments: &Value) -> Option<ToolOutput> {
        self.lock().run(agent, tool, arguments)
    }

    fn sync(&mut self, core: &ShellCore) -> Vec<RegistryChange> {
        self.lock().sync(core)
    }
}

/// Opens `config`'s servers, registers their tools (and groups) in `shell`
/// and makes them its tool backend. Call it before the plugins are
/// installed, as a shell connects its servers before it starts its plugins.
pub fn attach(shell: &mut Shell, config: &McpConfig, cache: ListingCache) -> Result<SharedServers> {
    attach_interruptible(shell, config, cache, Arc::default())
}

/// [`attach`], whose waits for the servers (their first starts among them) `interrupt` ends.
pub fn attach_interruptible(
    shell: &mut Shell,
    config: &McpConfig,
    cache: ListingCache,
    interrupt: Arc<Interrupt>,
) -> Result<SharedServers> {
    let mut servers = McpServers::open_interruptible(config, cache, interrupt)?;
    let mut tools = Vec::new();
    for change in servers.take_changes() {
        match change {
            RegistryChange::Register(tool) => tools.push(tool),
            RegistryChange::Group { name, description } => {
                // The tools' registration below tells every plugin.
                shell.core().set_group(&name, &description);
            }
            RegistryChange::Unregister(_) => {}
        }
    }
    shell.register_tools(tools)?;
    let lazy = servers.lazy_groups();
    let shared = SharedServers(Arc::new(Mutex::new(servers)));
    shell.set_backend(Box::new(shared.clone()));
    if !lazy.is_empty() {
        shell.set_lazy_groups(lazy, Arc::new(shared.clone()))?;
    }
    Ok(shared)
}

/// `text`'s first `max` characters, as they are (an ellipsis marks a cut): what a message
/// quotes of a server's text.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
