//! Bindings to `dsh:tool-restriction@0.3.0`, the newest contract, and the
//! host side of its imports: each delegates to the plugin's `HostView`, so
//! this file only converts between WIT records and the plugin's types.

use anyhow::Result;
use lazy_tools::host::{Host as _, LogLevel};
use lazy_tools::registry::{Enrichment, LoadRefusal, Origin as PluginOrigin, ToolDef, ToolGroup};
use wasmtime::component::{HasSelf, Linker};

use super::super::PluginState;
use crate::tool::{Origin, Tool};

wasmtime::component::bindgen!({
    path: "../wit/since_v0.3.0",
    world: "restriction-plugin",
    // The shell uses these types directly (crate::plugin_api).
    additional_derives: [PartialEq, Eq],
});

pub use dsh::tool_restriction::types as wit;

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    RestrictionPlugin::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |state| state)?;
    Ok(())
}

impl wit::Host for PluginState {}

// The costly imports run under `host_call`: their time is the shell's.
impl dsh::tool_restriction::host::Host for PluginState {
    fn registry(&mut self) -> Vec<wit::ToolDef> {
        self.host_call(|s| s.host().registry().into_iter().map(def_to_wit).collect())
    }

    fn registry_table(&mut self) -> Option<wit::ToolTable> {
        self.host_call(|s| {
            s.host().registry_table().map(|table| wit::ToolTable {
                texts: table.texts,
                ends: table.ends,
                origins: table.origins.into_iter().map(origin_to_wit).collect(),
                origin_of: table.origin_of,
            })
        })
    }

    fn allowed_tools(&mut self, agent: String) -> Result<Vec<String>, String> {
        self.host_call(|s| s.host().allowed_tools(&agent))
    }

    fn restrict(&mut self, agent: String, allow: Option<Vec<String>>) -> Result<(), String> {
        self.host_call(|s| s.host().restrict_owned(&agent, allow))
    }

    fn expose(&mut self, agent: String, visible: Option<Vec<String>>) -> Result<(), String> {
        self.host_call(|s| s.host().expose_owned(&agent, visible))
    }

    fn log(&mut self, level: wit::LogLevel, message: String) {
        let level = match level {
            wit::LogLevel::Trace => LogLevel::Trace,
            wit::LogLevel::Debug => LogLevel::Debug,
            wit::LogLevel::Info => LogLevel::Info,
            wit::LogLevel::Warn => LogLevel::Warn,
            wit::LogLevel::Error => LogLevel::Error,
        };
        self.host().log(level, &message);
    }

    fn tool_groups(&mut self) -> Vec<wit::ToolGroup> {
        self.host()
            .tool_groups()
            .into_iter()
            .map(|ToolGroup { name, description }| wit::ToolGroup { name, description })
            .collect()
    }

    fn tools_generation(&mut self) -> u64 {
        self.host().tools_generation()
    }

    fn agent_generation(&mut self, agent: String) -> u64 {
        self.host().agent_generation(&agent)
    }

    fn count_tokens(&mut self, texts: Vec<String>) -> Option<Vec<u32>> {
        self.host_call(|s| s.host().count_tokens(&texts))
    }

    fn lazy_groups(&mut self) -> Vec<wit::LazyGroup> {
        self.host()
            .lazy_groups()
            .into_iter()
            .map(|g| wit::LazyGroup {
                name: g.name,
                description: g.description,
                tool_names: g.tool_names,
            })
            .collect()
    }

    fn load_group(
        &mut self,
        agent: String,
        name: String,
    ) -> Result<Vec<wit::ToolDef>, wit::LoadRefusal> {
        let loaded = self.host_call(|s| {
            s.host()
                .load_group(&agent, &name)
                .map(|tools| tools.into_iter().map(def_to_wit).collect())
                .map_err(|refusal| match refusal {
                    LoadRefusal::Denied(reason) => wit::LoadRefusal::Denied(reason),
                    LoadRefusal::Failed(reason) => wit::LoadRefusal::Failed(reason),
                })
        });
        // The loader (a server starting) has a timeout of its own: the whole call's bound
        // leaves its time out, not the rest of the import's (the check, the registering).
        let loader = self.host().take_loader_time();
        self.clock.exempt_from_wall(loader);
        loaded
    }

    fn may_load_group(&mut self, agent: String, name: String) -> bool {
        self.host_call(|s| s.host().may_load_group(&agent, &name))
    }

    fn registry_revision(&mut self) -> u64 {
        self.host().registry_revision().unwrap_or_default()
    }

    fn metadata_revision(&mut self) -> Option<u64> {
        self.host().metadata_revision()
    }

    fn registry_changes(&mut self, since: u64) -> Option<wit::RegistryDelta> {
        self.host_call(|s| {
            s.host()
                .registry_changes(since)
                .map(|delta| wit::RegistryDelta {
                    revision: delta.revision,
                    names: delta.names,
                    tools: delta.tools.into_iter().map(def_to_wit).collect(),
                })
        })
    }

    fn allowed_changes(&mut self, agent: String, since: u64) -> Option<wit::AllowedDelta> {
        self.host_call(|s| {
            s.host()
                .allowed_changes(&agent, since)
                .map(|delta| wit::AllowedDelta {
                    generation: delta.generation,
                    allowed: delta.allowed,
                    denied: delta.denied,
                })
        })
    }

    fn tool_enrichment(&mut self) -> Vec<wit::Enrichment> {
        self.host_call(|s| {
            s.host()
                .tool_enrichment()
                .into_iter()
                .map(
                    |Enrichment {
                         tool,
                         keywords,
                         examples,
                         descriptions,
                     }| wit::Enrichment {
                        tool,
                        keywords,
                        examples,
                        descriptions,
                    },
                )
                .collect()
        })
    }
}

/// The plugin's view of a tool as a WIT record (a move, no copy).
fn def_to_wit(tool: ToolDef) -> wit::ToolDef {
    wit::ToolDef {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        origin: origin_to_wit(tool.origin),
    }
}

fn origin_to_wit(origin: PluginOrigin) -> wit::ToolOrigin {
    match origin {
        PluginOrigin::Builtin => wit::ToolOrigin::Builtin,
        PluginOrigin::Mcp(server) => wit::ToolOrigin::Mcp(server),
        PluginOrigin::Agent(agent) => wit::ToolOrigin::Agent(agent),
    }
}

/// A guard tool's definition. Its origin is decided by the host (each agent's
/// own scope), so the plugin's value is ignored.
pub fn tool_from_wit(tool: wit::ToolDef) -> Result<Tool> {
    let parameters = serde_json::from_str(&tool.parameters).map_err(|e| {
        anyhow::anyhow!(
            "the plugin's tool `{}` has parameters that are not JSON: {e}",
            tool.name
        )
    })?;
    Ok(Tool::new(tool.name, tool.description, Origin::Builtin).with_parameters(parameters))
}
