//! Glue from the `dsh:tool-restriction` WIT world to [`LazyTools`]: type
//! conversions and one plugin instance per component instance.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::host::{AllowedDelta, Host, LogLevel};
use crate::policy::{Explanation, Rule, ToolState};
use crate::registry::{
    Enrichment, LazyGroup, LoadRefusal, Origin, RegistryDelta, ToolDef, ToolGroup,
};
use crate::tool_table::ToolTable;
use crate::{LazyTools, PluginError, Resolution, ToolResult, Verdict};

wit_bindgen::generate!({
    path: "../wit/since_v0.3.0",
    world: "restriction-plugin",
});

use dsh::tool_restriction::host as wit_host;
use dsh::tool_restriction::types as wit;
use exports::dsh::tool_restriction::restriction::Guest;

struct WitHost;

impl Host for WitHost {
    /// Read as one table when the shell builds tables (a few strings lowered instead of four
    /// per tool); as a list otherwise, or when the table does not hold together.
    fn registry(&self) -> Vec<ToolDef> {
        let listed = || {
            wit_host::registry()
                .into_iter()
                .map(tool_from_wit)
                .collect()
        };
        let Some(table) = wit_host::registry_table() else {
            return listed();
        };
        reserve_heap(table.texts.len());
        match table_from_wit(table).into_tools() {
            Ok(tools) => tools,
            Err(e) => {
                let message = format!(
                    "lazy-tools: the shell's registry-table does not hold together ({e}); \
                     reading its registry list instead"
                );
                self.log(LogLevel::Warn, &message);
                listed()
            }
        }
    }

    fn allowed_tools(&self, agent: &str) -> Result<Vec<String>, String> {
        wit_host::allowed_tools(agent)
    }

    fn expose(&self, agent: &str, visible: Option<&[String]>) -> Result<(), String> {
        wit_host::expose(agent, visible)
    }

    fn log(&self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => wit::LogLevel::Trace,
            LogLevel::Debug => wit::LogLevel::Debug,
            LogLevel::Info => wit::LogLevel::Info,
            LogLevel::Warn => wit::LogLevel::Warn,
            LogLevel::Error => wit::LogLevel::Error,
        };
        wit_host::log(level, message);
    }

    fn tool_groups(&self) -> Vec<ToolGroup> {
        wit_host::tool_groups()
            .into_iter()
            .map(|g| ToolGroup {
                name: g.name,
                description: g.description,
            })
            .collect()
    }

    fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>> {
        wit_host::count_tokens(texts)
    }

    fn tools_generation(&self) -> u64 {
        wit_host::tools_generation()
    }

    fn agent_generation(&self, agent: &str) -> u64 {
        wit_host::agent_generation(agent)
    }

    fn lazy_groups(&self) -> Vec<LazyGroup> {
        wit_host::lazy_groups()
            .into_iter()
            .map(|g| LazyGroup {
                name: g.name,
                description: g.description,
                tool_names: g.tool_names,
            })
            .collect()
    }

    fn load_group(&self, agent: &str, name: &str) -> Result<Vec<ToolDef>, LoadRefusal> {
        wit_host::load_group(agent, name)
            .map(|tools| tools.into_iter().map(tool_from_wit).collect())
            .map_err(|refusal| match refusal {
                wit::LoadRefusal::Denied(reason) => LoadRefusal::Denied(reason),
                wit::LoadRefusal::Failed(reason) => LoadRefusal::Failed(reason),
            })
    }

    fn may_load_group(&self, agent: &str, name: &str) -> bool {
        wit_host::may_load_group(agent, name)
    }

    fn registry_revision(&self) -> Option<u64> {
        Some(wit_host::registry_revision())
    }

    fn metadata_revision(&self) -> Option<u64> {
        wit_host::metadata_revision()
    }

    fn registry_changes(&self, since: u64) -> Option<RegistryDelta> {
        wit_host::registry_changes(since).map(|delta| RegistryDelta {
            revision: delta.revision,
            names: delta.names,
            tools: delta.tools.into_iter().map(tool_from_wit).collect(),
        })
    }

    fn allowed_changes(&self, agent: &str, since: u64) -> Option<AllowedDelta> {
        wit_host::allowed_changes(agent, since).map(|delta| AllowedDelta {
            generation: delta.generation,
            allowed: delta.allowed,
            denied: delta.denied,
        })
    }

    fn tool_enrichment(&self) -> Vec<Enrichment> {
        wit_host::tool_enrichment()
            .into_iter()
            .map(|e| Enrichment {
                tool: e.tool,
                keywords: e.keywords,
                examples: e.examples,
                descriptions: e.descriptions,
            })
            .collect()
    }
}

thread_local! {
    // A component instance is single-threaded and the host never re-enters
    // it from an import, so a RefCell borrow never collides.
    static PLUGIN: RefCell<LazyTools<WitHost>> = RefCell::new(LazyTools::new(WitHost));
}

fn with<R>(f: impl FnOnce(&mut LazyTools<WitHost>) -> R) -> R {
    PLUGIN.with(|plugin| f(&mut plugin.borrow_mut()))
}

struct Component;

impl Guest for Component {
    fn configure(config: String) -> Result<(), Vec<wit::ConfigError>> {
        with(|p| p.configure(&config)).map_err(|errors| {
            errors
                .into_iter()
                .map(|e| wit::ConfigError {
                    pointer: e.pointer,
                    entry: e.entry,
                    message: e.message,
                })
                .collect()
        })
    }

    fn guard_tools() -> Vec<wit::ToolDef> {
        with(|p| p.guard_tools())
            .into_iter()
            .map(tool_to_wit)
            .collect()
    }

    fn agent_created(agent: String, parent: Option<String>) -> Result<(), wit::PluginError> {
        with(|p| p.agent_created(&agent, parent.as_deref())).map_err(error_to_wit)
    }

    fn agent_forked(
        agent: String,
        parent: Option<String>,
        source: String,
    ) -> Result<(), wit::PluginError> {
        with(|p| p.agent_forked(&agent, parent.as_deref(), &source)).map_err(error_to_wit)
    }

    fn agent_disposed(agent: String) {
        with(|p| p.agent_disposed(&agent));
    }

    fn registry_changed() -> Result<(), wit::PluginError> {
        with(|p| p.registry_changed()).map_err(error_to_wit)
    }

    fn visible_tools(agent: String) -> Result<Vec<String>, wit::PluginError> {
        with(|p| p.visible_tools(&agent)).map_err(error_to_wit)
    }

    fn pre_execute(agent: String, tool: String, _arguments: String) -> wit::Verdict {
        match with(|p| p.pre_execute(&agent, &tool)) {
            Verdict::Pass => wit::Verdict::Pass,
            Verdict::Deny(reason) => wit::Verdict::Deny(reason),
        }
    }

    fn execute(
        agent: String,
        tool: String,
        arguments: String,
    ) -> Result<wit::ToolResult, wit::PluginError> {
        with(|p| p.execute(&agent, &tool, &arguments))
            .map(result_to_wit)
            .map_err(error_to_wit)
    }

    fn resolve_call(
        agent: String,
        tool: String,
        arguments: String,
    ) -> Result<wit::CallResolution, wit::PluginError> {
        with(|p| p.resolve_call(&agent, &tool, &arguments))
            .map(|resolution| match resolution {
                Resolution::Direct => wit::CallResolution::Direct,
                Resolution::Forward {
                    tool,
                    arguments,
                    implicitly_loaded,
                } => wit::CallResolution::Forward(wit::ForwardedCall {
                    tool,
                    arguments,
                    implicitly_loaded,
                }),
                Resolution::Reject(result) => wit::CallResolution::Reject(result_to_wit(result)),
            })
            .map_err(error_to_wit)
    }

    fn export_state() -> Result<String, wit::PluginError> {
        with(|p| p.export_state()).map_err(error_to_wit)
    }

    fn restore_state(state: String) -> Result<(), String> {
        with(|p| p.restore_state(&state))
    }

    fn system_prompt(agent: String) -> Result<Option<String>, wit::PluginError> {
        with(|p| p.system_prompt(&agent)).map_err(error_to_wit)
    }

    fn explain(agent: String, tool: String) -> Result<wit::Explanation, wit::PluginError> {
        with(|p| p.explain(&agent, &tool))
            .map(|e| explanation_to_wit(e).0)
            .map_err(error_to_wit)
    }

    fn explain_located(
        agent: String,
        tool: String,
    ) -> Result<wit::LocatedExplanation, wit::PluginError> {
        with(|p| p.explain(&agent, &tool))
            .map(|e| {
                let (explanation, pointer) = explanation_to_wit(e);
                wit::LocatedExplanation {
                    explanation,
                    pointer,
                }
            })
            .map_err(error_to_wit)
    }

    fn dispose() {
        with(|p| p.dispose());
    }
}

export!(Component);

/// The largest heap reserve made so far, in bytes (see [`reserve_heap`]).
static RESERVED: AtomicUsize = AtomicUsize::new(0);

/// Before a table's texts are copied out of it, grows the heap once by what the copies take.
/// The block is freed at once and stays with the allocator (linear memory never shrinks), so
/// the copies come from memory grown whole, which a kernel with transparent huge pages backs
/// 2 MiB at a time, where growth in small steps costs a page fault per 4 KiB (the index build
/// after them reuses the table's space).
///
/// The block is no larger than the copies, which are made while the table is still held, so
/// the memory grows by no more than the load grows it itself, but for free pieces of the heap
/// too small for the block (few at a first load): a memory limit the load fits in is not
/// reached because of it. Only for a table at least twice the largest reserved for before (the
/// first large load, a registry that has doubled since): a shell without deltas sends the whole
/// table on every change, and a heap that already held a load needs no new block.
fn reserve_heap(text_bytes: usize) {
    if text_bytes < RESERVED.load(Ordering::Relaxed).saturating_mul(2) || text_bytes < MIN_RESERVE {
        return;
    }
    let mut block = Vec::<u8>::new();
    if block.try_reserve_exact(text_bytes).is_ok() {
        RESERVED.store(text_bytes, Ordering::Relaxed);
        drop(std::hint::black_box(block));
    }
}

/// Below this (about 3,000 tools) the copies fill about one huge page: a block buys nothing.
const MIN_RESERVE: usize = 2 << 20;

fn table_from_wit(t: wit::ToolTable) -> ToolTable {
    ToolTable {
        texts: t.texts,
        ends: t.ends,
        origins: t.origins.into_iter().map(origin_from_wit).collect(),
        origin_of: t.origin_of,
    }
}

fn origin_from_wit(origin: wit::ToolOrigin) -> Origin {
    match origin {
        wit::ToolOrigin::Builtin => Origin::Builtin,
        wit::ToolOrigin::Mcp(server) => Origin::Mcp(server),
        wit::ToolOrigin::Agent(agent) => Origin::Agent(agent),
    }
}

fn tool_from_wit(t: wit::ToolDef) -> ToolDef {
    ToolDef {
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        origin: origin_from_wit(t.origin),
    }
}

fn tool_to_wit(t: ToolDef) -> wit::ToolDef {
    wit::ToolDef {
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        origin: match t.origin {
            Origin::Builtin => wit::ToolOrigin::Builtin,
            Origin::Mcp(server) => wit::ToolOrigin::Mcp(server),
            Origin::Agent(agent) => wit::ToolOrigin::Agent(agent),
        },
    }
}

fn result_to_wit(
    ToolResult {
        json,
        text,
        is_error,
    }: ToolResult,
) -> wit::ToolResult {
    wit::ToolResult {
        json,
        text,
        is_error,
    }
}

fn error_to_wit(e: PluginError) -> wit::PluginError {
    match e {
        PluginError::NotConfigured => wit::PluginError::NotConfigured,
        PluginError::UnknownAgent(a) => wit::PluginError::UnknownAgent(a),
        PluginError::UnknownTool(t) => wit::PluginError::UnknownTool(t),
        PluginError::Host(m) => wit::PluginError::Host(m),
    }
}

/// The WIT explanation, and the pointer of the entry that decided.
fn explanation_to_wit(e: Explanation) -> (wit::Explanation, Option<String>) {
    let explanation = wit::Explanation {
        state: match e.state {
            ToolState::Visible => wit::ToolState::Visible,
            ToolState::Deferred => wit::ToolState::Deferred,
            ToolState::Unavailable => wit::ToolState::Unavailable,
        },
        rule: match e.rule {
            Rule::Guard => wit::Rule::Guard,
            Rule::AgentScope => wit::Rule::AgentScope,
            Rule::SwitchOff => wit::Rule::SwitchOff,
            Rule::NeverDefer => wit::Rule::NeverDefer,
            Rule::NoDeferEntry => wit::Rule::NoDeferEntry,
            Rule::AlwaysDefer => wit::Rule::AlwaysDefer,
            Rule::DeferEntry => wit::Rule::DeferEntry,
            Rule::Preset => wit::Rule::Preset,
            Rule::Budget => wit::Rule::Budget,
            Rule::NoRule => wit::Rule::NoRule,
            Rule::Activated => wit::Rule::Activated,
            Rule::ParentRestriction => wit::Rule::ParentRestriction,
            Rule::UnknownTool => wit::Rule::UnknownTool,
        },
        summary: e.summary,
    };
    (explanation, e.pointer)
}
