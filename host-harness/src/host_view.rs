//! What one plugin sees of the shell: the plugin's `Host` trait over a shell
//! core, under the plugin's restriction source. The native baseline uses it
//! as is; a component's WIT imports delegate to it, so the six host
//! operations are written once for both.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use lazy_tools::host::{AllowedDelta, Host, LogLevel};
use lazy_tools::registry::{
    Enrichment, LazyGroup, LoadRefusal, Origin as PluginOrigin, Registry, RegistryDelta, ToolDef,
    ToolGroup,
};
use lazy_tools::tool_table::ToolTable;

use crate::catalog::Catalog;
use crate::log_allowance::{HeldBack, LogAllowance};
use crate::shell_core::ShellCore;
use crate::tool::{Origin, Tool};

/// How many of a plugin's log lines are kept (they also go to `tracing`).
pub const KEPT_LOG_LINES: usize = 256;
/// The most text one `count-tokens` call counts, all texts together: the schemas of a
/// registry of 10,000 real tools (about 6 MB) fit five times over.
pub const MAX_COUNTED_BYTES: usize = 32 << 20;

/// The shell core as plugin `plugin_id` sees it.
pub struct HostView {
    core: Arc<Mutex<ShellCore>>,
    plugin_id: String,
    logs: Mutex<LogRing>,
    /// What the plugin call in progress may still write to the shell's log: the shell opens
    /// and closes it around each call; each line is charged to it. The plugin's own, so a
    /// line takes no lock of the shell's.
    log_allowance: Mutex<LogAllowance>,
    /// Time the group loader ran (a server may start), in nanoseconds, since it was last
    /// taken: it has a timeout of its own, so a plugin call's whole-time bound leaves it out.
    loader_nanos: std::sync::atomic::AtomicU64,
}

impl HostView {
    pub fn new(core: Arc<Mutex<ShellCore>>, plugin_id: &str) -> Self {
        Self {
            core,
            plugin_id: plugin_id.to_string(),
            logs: Mutex::new(LogRing::new(KEPT_LOG_LINES)),
            log_allowance: Mutex::new(LogAllowance::default()),
            loader_nanos: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub fn plugin_id(&self) -> &str {
        &self.plugin_id
    }

    /// How long the group loader ran since this was last asked (and resets it).
    pub fn take_loader_time(&self) -> std::time::Duration {
        let nanos = self
            .loader_nanos
            .swap(0, std::sync::atomic::Ordering::Relaxed);
        std::time::Duration::from_nanos(nanos)
    }

    /// Gives the plugin call that starts now a fresh log allowance.
    pub fn open_log_allowance(&self) {
        lock(&self.log_allowance).open();
    }

    /// Ends the call's log allowance: what it held back, if anything.
    pub fn close_log_allowance(&self) -> Option<HeldBack> {
        lock(&self.log_allowance).close()
    }

    /// The plugin's last log lines, oldest first (at most [`KEPT_LOG_LINES`]).
    pub fn recent_logs(&self) -> Vec<(LogLevel, String)> {
        lock(&self.logs).lines().cloned().collect()
    }

    /// Installs an inherited allow set (the `restrict` import of contracts
    /// 0.1.0 and 0.2.0), from a set the WIT import already owns.
    pub fn restrict_owned(&self, agent: &str, allow: Option<Vec<String>>) -> Result<(), String> {
        lock(&self.core)
            .restrict(agent, &self.plugin_id, allow)
            .map_err(|e| e.to_string())
    }

    /// [`Host::expose`] with a set the caller already owns.
    pub fn expose_owned(&self, agent: &str, visible: Option<Vec<String>>) -> Result<(), String> {
        lock(&self.core)
            .expose(agent, &self.plugin_id, visible)
            .map_err(|e| e.to_string())
    }

    /// The registry as one table (WIT 0.3.0 `registry-table`), written under the lock.
    pub fn registry_table(&self) -> Option<ToolTable> {
        registry_table(self.core().tools())
    }

    fn core(&self) -> MutexGuard<'_, ShellCore> {
        lock(&self.core)
    }
}

impl Host for HostView {
    fn registry(&self) -> Vec<ToolDef> {
        // Converted under the lock, without copying the shell's tools first:
        // plugins fetch the whole registry after every change.
        self.core().tools().iter().map(tool_def).collect()
    }

    fn allowed_tools(&self, agent: &str) -> Result<Vec<String>, String> {
        let core = self.core();
        let tools = core
            .effective(agent, Some(&self.plugin_id))
            .map_err(|e| e.to_string())?;
        Ok(tools.into_iter().map(|t| t.name.clone()).collect())
    }

    fn expose(&self, agent: &str, visible: Option<&[String]>) -> Result<(), String> {
        self.expose_owned(agent, visible.map(<[String]>::to_vec))
    }

    fn log(&self, level: LogLevel, message: &str) {
        let plugin = &self.plugin_id;
        let line = log_line(message);
        // One line, shown as text: a plugin's message cannot forge log lines or move the
        // terminal's cursor.
        let shown = crate::terminal::escape(&line);
        // Past the call's allowance a line is only kept in the ring; the shell says how
        // much was held back once the call is over.
        if lock(&self.log_allowance).admit(shown.len()) {
            match level {
                LogLevel::Error => tracing::error!(plugin = %plugin, "{shown}"),
                LogLevel::Warn => tracing::warn!(plugin = %plugin, "{shown}"),
                LogLevel::Info => tracing::info!(plugin = %plugin, "{shown}"),
                LogLevel::Debug => tracing::debug!(plugin = %plugin, "{shown}"),
                LogLevel::Trace => tracing::trace!(plugin = %plugin, "{shown}"),
            }
        }
        lock(&self.logs).push(level, line.into_owned());
    }

    fn tool_groups(&self) -> Vec<ToolGroup> {
        self.core()
            .groups()
            .map(|(name, description)| ToolGroup {
                name: name.to_string(),
                description: description.to_string(),
            })
            .collect()
    }

    fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>> {
        // The handle outlives the lock: counting does not hold the shell.
        let counter = self.core().token_counter()?;
        // Counting runs in the host, where no deadline of the plugin's stops it: a plugin
        // that asks for more than the bound gets no counts, and estimates.
        if texts.iter().map(String::len).sum::<usize>() > MAX_COUNTED_BYTES {
            return None;
        }
        Some(texts.iter().map(|t| counter.count(t)).collect())
    }

    fn tools_generation(&self) -> u64 {
        self.core().generation()
    }

    fn agent_generation(&self, agent: &str) -> u64 {
        self.core().agent_generation(agent, &self.plugin_id)
    }

    fn lazy_groups(&self) -> Vec<LazyGroup> {
        self.core()
            .lazy_groups()
            .map(|g| LazyGroup {
                name: g.name.clone(),
                description: g.description.clone(),
                tool_names: g.tool_names.clone(),
            })
            .collect()
    }

    fn load_group(&self, agent: &str, name: &str) -> Result<Vec<ToolDef>, LoadRefusal> {
        let loader = {
            let mut core = self.core();
            // Deferral is not authorization: an agent starts no server it may use nothing of.
            match core.may_load_group(agent, &self.plugin_id, name) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(LoadRefusal::Denied(format!(
                        "agent `{agent}` may call none of the tools of group `{name}`, so the \
                         shell did not load it"
                    )));
                }
                Err(e) => return Err(LoadRefusal::Denied(e.to_string())),
            }
            core.begin_group_load(name).map_err(LoadRefusal::Failed)?
        };
        // The loader runs without the shell's lock (it may start a server).
        let started = std::time::Instant::now();
        let loaded = loader.load(name);
        let spent = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.loader_nanos
            .fetch_add(spent, std::sync::atomic::Ordering::Relaxed);
        let tools = loaded.map_err(LoadRefusal::Failed)?;
        let mut core = self.core();
        for tool in &tools {
            core.register_loaded(tool.clone())
                .map_err(|e| LoadRefusal::Failed(format!("group `{name}`: {e}")))?;
        }
        core.note_group_loaded(name, tools.iter().map(|t| t.name.as_str()));
        tracing::info!(plugin = %self.plugin_id, group = %name, tools = tools.len(), "lazy group loaded");
        Ok(tools.iter().map(tool_def).collect())
    }

    fn may_load_group(&self, agent: &str, name: &str) -> bool {
        (self.core())
            .may_load_group(agent, &self.plugin_id, name)
            .unwrap_or(false)
    }

    fn registry_revision(&self) -> Option<u64> {
        Some(self.core().registry_revision())
    }

    fn metadata_revision(&self) -> Option<u64> {
        Some(self.core().metadata_revision())
    }

    fn registry_changes(&self, since: u64) -> Option<RegistryDelta> {
        let core = self.core();
        let (revision, names, tools) = core.registry_changes(since)?;
        Some(RegistryDelta {
            revision,
            names,
            tools: tools.into_iter().map(tool_def).collect(),
        })
    }

    fn allowed_changes(&self, agent: &str, since: u64) -> Option<AllowedDelta> {
        let changes = self.core().allowed_changes(agent, &self.plugin_id, since)?;
        Some(AllowedDelta {
            generation: changes.generation,
            allowed: changes.allowed,
            denied: changes.denied,
        })
    }

    fn tool_enrichment(&self) -> Vec<Enrichment> {
        self.core().tools().iter().filter_map(enrichment).collect()
    }
}

/// `tools` as one table (WIT 0.3.0 `registry-table`), written from the shell's own tools:
/// each text is copied once, into the table's. `None` when the texts pass 4 GiB, which a
/// table cannot address.
pub fn registry_table(tools: &[Tool]) -> Option<ToolTable> {
    ToolTable::of(
        tools,
        |t| {
            let texts = [t.name.as_str(), t.description.as_str(), t.parameters_json()];
            (texts, &t.origin)
        },
        plugin_origin,
    )
    .ok()
}

/// The registry the plugin receives when the shell registers every tool of `catalog`: the
/// tools as the shell names them, a group per server, and the tools' `x-lazy-tools` search
/// text. For running the plugin's index natively over a catalog, without a shell.
pub fn catalog_registry(catalog: &Catalog) -> Registry {
    let tools: Vec<Tool> = catalog.tools().map(|(_, tool)| tool).collect();
    let groups = catalog
        .servers
        .iter()
        .map(|server| ToolGroup {
            name: server.name.clone(),
            description: server.description.clone(),
        })
        .collect();
    Registry::new(tools.iter().map(tool_def).collect(), groups)
        .with_enrichment(tools.iter().filter_map(enrichment).collect())
}

/// A shell tool's search text as the plugin receives it (WIT 0.3.0 `tool-enrichment`).
pub fn enrichment(tool: &Tool) -> Option<Enrichment> {
    let text = tool.search_text.as_ref()?;
    Some(Enrichment {
        tool: tool.name.clone(),
        keywords: text.keywords.clone(),
        examples: text.examples.clone(),
        descriptions: text.descriptions.clone(),
    })
}

/// A shell tool as the plugin receives it.
pub fn tool_def(tool: &Tool) -> ToolDef {
    ToolDef {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: tool.parameters_json().to_string(),
        origin: plugin_origin(&tool.origin),
    }
}

fn plugin_origin(origin: &Origin) -> PluginOrigin {
    match origin {
        Origin::Builtin => PluginOrigin::Builtin,
        Origin::Mcp(server) => PluginOrigin::Mcp(server.clone()),
        Origin::Agent(agent) => PluginOrigin::Agent(agent.clone()),
    }
}

/// A panic while a lock is held leaves the data consistent (every change is
/// one call), so a poisoned lock is used as is.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The most of one log message that is kept or shown: the ring holds a fixed number of lines,
/// and a plugin's message may be as large as its memory.
pub const MAX_LOG_LINE_BYTES: usize = 4096;

/// `message` within [`MAX_LOG_LINE_BYTES`], saying how much was cut.
fn log_line(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_LOG_LINE_BYTES {
        return message.into();
    }
    let end = message.floor_char_boundary(MAX_LOG_LINE_BYTES);
    format!(
        "{}... ({} more bytes cut)",
        &message[..end],
        message.len() - end
    )
    .into()
}

/// The last `capacity` log lines: a plugin that logs on every call must not
/// grow the shell's memory for ever.
#[derive(Debug)]
struct LogRing {
    lines: VecDeque<(LogLevel, String)>,
    capacity: usize,
}

impl LogRing {
    fn new(capacity: usize) -> Self {
        Self {
            lines: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    fn push(&mut self, level: LogLevel, message: String) {
        if self.capacity == 0 {
            return;
        }
        if self.lines.len() == self.capacity {
            self.lines.pop_front();
        }
        self.lines.push_back((level, message));
    }

    fn lines(&self) -> impl Iterator<Item = &(LogLevel, String)> {
        self.lines.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_table_reads_back_as_the_registry_list() {
        let mut core = ShellCore::default();
        core.create_agent("main", None).unwrap();
        let tools = [
            Tool::new("read_file", "Reads a file.", Origin::Builtin),
            Tool::new(
                "github__create_issue",
                "Opens an issue.",
                Origin::Mcp("github".into()),
            ),
            Tool::new("github__list_issues", "", Origin::Mcp("github".into())),
            Tool::new(
                "股票__行情",
                "查询股票行情。\"quoted\"",
                Origin::Mcp("股票".into()),
            )
            .with_parameters(serde_json::json!({"properties": {"代码": {"type": "string"}}})),
            Tool::new(
                "scratch",
                "An agent's own tool.",
                Origin::Agent("main".into()),
            ),
        ];
        for tool in tools {
            core.register(tool).unwrap();
        }
        let view = HostView::new(Arc::new(Mutex::new(core)), "p");
        let table = view.registry_table().unwrap();
        // One origin per distinct origin: built-in, two servers, one agent's scope.
        assert_eq!(table.origins.len(), 4);
        assert_eq!(table.into_tools().unwrap(), view.registry());
    }

    /// A plugin's `count-tokens` is counted up to a bound, all its texts together, and gets no
    /// counts past it: a plugin could pass 128 MiB in one call, which the host counted with no
    /// deadline to stop it.
    #[test]
    fn token_counts_are_asked_for_within_a_bound() {
        #[derive(Debug)]
        struct Bytes;
        impl crate::shell_core::TokenCounter for Bytes {
            fn count(&self, text: &str) -> u32 {
                text.len() as u32
            }
        }
        let mut core = ShellCore::default();
        core.set_tokenizer(Some(Bytes));
        let view = HostView::new(Arc::new(Mutex::new(core)), "p");
        let half = "a".repeat(MAX_COUNTED_BYTES / 2);
        assert_eq!(view.count_tokens(&[]), Some(Vec::new()));
        let within = [half.clone(), half.clone()];
        assert_eq!(view.count_tokens(&within).map(|c| c.len()), Some(2));
        assert_eq!(view.count_tokens(&[half.clone(), half, "a".into()]), None);
    }

    #[test]
    fn the_log_keeps_only_the_last_lines_in_order() {
        let view = HostView::new(Arc::default(), "p");
        let total = KEPT_LOG_LINES + 10;
        for i in 0..total {
            view.log(LogLevel::Info, &format!("line {i}"));
        }
        let kept = view.recent_logs();
        let expected: Vec<String> = (10..total).map(|i| format!("line {i}")).collect();
        let messages: Vec<String> = kept.into_iter().map(|(_, m)| m).collect();
        assert_eq!(messages, expected);
    }

    #[test]
    fn a_huge_log_message_is_kept_cut_on_a_character_boundary() {
        let view = HostView::new(Arc::default(), "p");
        // Three-byte characters, so the limit falls inside one.
        let huge = "語".repeat(1 << 20);
        for _ in 0..KEPT_LOG_LINES {
            view.log(LogLevel::Trace, &huge);
        }
        let kept = view.recent_logs();
        assert_eq!(kept.len(), KEPT_LOG_LINES);
        let (_, line) = &kept[0];
        let head = "語".repeat(MAX_LOG_LINE_BYTES / 3);
        assert_eq!(
            *line,
            format!("{head}... ({} more bytes cut)", huge.len() - head.len())
        );
    }
}
