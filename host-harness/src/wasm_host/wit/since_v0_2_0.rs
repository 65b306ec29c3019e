//! Bindings to `dsh:tool-restriction@0.2.0`. Its types are the newest
//! version's (remapped with `with`), so conversions are written once; its
//! host imports are a subset of the newest ones and delegate to them.

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};

use super::super::PluginState;
use super::since_v0_3_0::{self as latest, wit};

wasmtime::component::bindgen!({
    path: "../wit/since_v0.2.0",
    world: "restriction-plugin",
    with: {
        "dsh:tool-restriction/types@0.2.0": latest::dsh::tool_restriction::types,
    },
});

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    RestrictionPlugin::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |state| state)?;
    Ok(())
}

use latest::dsh::tool_restriction::host::Host as Latest;

impl dsh::tool_restriction::host::Host for PluginState {
    fn registry(&mut self) -> Vec<wit::ToolDef> {
        Latest::registry(self)
    }

    fn allowed_tools(&mut self, agent: String) -> Result<Vec<String>, String> {
        Latest::allowed_tools(self, agent)
    }

    fn restrict(&mut self, agent: String, allow: Option<Vec<String>>) -> Result<(), String> {
        Latest::restrict(self, agent, allow)
    }

    fn log(&mut self, level: wit::LogLevel, message: String) {
        Latest::log(self, level, message)
    }

    fn tool_groups(&mut self) -> Vec<wit::ToolGroup> {
        Latest::tool_groups(self)
    }

    fn count_tokens(&mut self, texts: Vec<String>) -> Option<Vec<u32>> {
        Latest::count_tokens(self, texts)
    }

    fn tools_generation(&mut self) -> u64 {
        Latest::tools_generation(self)
    }
}
