//! What the fuzz targets share: lazy-tools linked natively over a small
//! in-memory host holding a real catalog's tools (the bundled reference MCP
//! servers), every tool authorized for every agent.

use std::cell::Cell;
use std::sync::OnceLock;

use lazy_tools::LazyTools;
use lazy_tools::host::{Host, LogLevel};
use lazy_tools::registry::{LazyGroup, LoadRefusal, Origin, ToolDef, ToolGroup};
use serde_json::Value;

/// How many of the catalog's tools the plugin-level targets register: enough
/// for every rule kind to match something (built-ins, two servers), few
/// enough that a fresh plugin per input stays cheap.
pub const SMALL: usize = 40;

/// The agents every target creates: a root and a child.
pub const AGENTS: [&str; 2] = ["main", "main/worker"];

pub struct FuzzHost {
    tools: Vec<ToolDef>,
    generation: Cell<u64>,
}

impl Host for FuzzHost {
    fn registry(&self) -> Vec<ToolDef> {
        self.tools.clone()
    }

    fn allowed_tools(&self, _agent: &str) -> Result<Vec<String>, String> {
        Ok(self.tools.iter().map(|t| t.name.clone()).collect())
    }

    fn expose(&self, _agent: &str, _visible: Option<&[String]>) -> Result<(), String> {
        self.generation.set(self.generation.get() + 1);
        Ok(())
    }

    fn log(&self, _level: LogLevel, _message: &str) {}

    fn tool_groups(&self) -> Vec<ToolGroup> {
        Vec::new()
    }

    fn count_tokens(&self, _texts: &[String]) -> Option<Vec<u32>> {
        None
    }

    fn tools_generation(&self) -> u64 {
        self.generation.get()
    }

    // Only the plugin's own exposure changes here, which this counter leaves out.
    fn agent_generation(&self, _agent: &str) -> u64 {
        0
    }

    // Every tool is registered up front: no group loads on demand.
    fn lazy_groups(&self) -> Vec<LazyGroup> {
        Vec::new()
    }

    fn load_group(&self, _agent: &str, name: &str) -> Result<Vec<ToolDef>, LoadRefusal> {
        Err(LoadRefusal::Failed(format!("no lazy group `{name}`")))
    }
}

/// The first [`SMALL`] of [`catalog_tools`], read once per process: the
/// registry of the targets that build a plugin per input.
pub fn small_tools() -> Vec<ToolDef> {
    static TOOLS: OnceLock<Vec<ToolDef>> = OnceLock::new();
    TOOLS
        .get_or_init(|| catalog_tools().into_iter().take(SMALL).collect())
        .clone()
}

/// The bundled reference catalog's tools (119, from six MCP servers) plus
/// the core built-ins.
pub fn catalog_tools() -> Vec<ToolDef> {
    let text = include_str!("../../catalogs/reference-servers.json");
    let catalog: Value = serde_json::from_str(text).expect("the bundled catalog is JSON");
    let mut tools: Vec<ToolDef> = ["bash", "read", "write", "edit", "grep", "glob"]
        .iter()
        .map(|name| ToolDef {
            name: (*name).to_string(),
            description: format!("The {name} built-in."),
            parameters: r#"{"type":"object"}"#.to_string(),
            origin: Origin::Builtin,
        })
        .collect();
    for server in catalog["servers"].as_array().expect("servers") {
        let server_name = server["name"].as_str().expect("server name");
        for tool in server["tools"].as_array().expect("tools") {
            let name = tool["name"].as_str().expect("tool name");
            tools.push(ToolDef {
                name: format!("{server_name}__{name}"),
                description: tool["description"].as_str().unwrap_or("").to_string(),
                parameters: tool["inputSchema"].to_string(),
                origin: Origin::Mcp(server_name.to_string()),
            });
        }
    }
    tools
}

/// lazy-tools over the catalog, configured with `config` (JSON text) and
/// told about [`AGENTS`]; `None` when the config is refused.
pub fn plugin(tools: Vec<ToolDef>, config: &str) -> Option<LazyTools<FuzzHost>> {
    let mut plugin = LazyTools::new(FuzzHost {
        tools,
        generation: Cell::new(1),
    });
    plugin.configure(config).ok()?;
    plugin.agent_created(AGENTS[0], None).expect("agent");
    plugin
        .agent_created(AGENTS[1], Some(AGENTS[0]))
        .expect("agent");
    Some(plugin)
}
