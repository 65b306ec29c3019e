//! Bindings to `dsh:tool-restriction@0.1.0`. Its types are the newest
//! version's (remapped with `with`), so conversions are written once; its
//! host imports are a subset of the newest ones and delegate to them.

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};

use super::super::PluginState;
use super::since_v0_3_0::{self as latest, wit};

wasmtime::component::bindgen!({
    path: "../wit/since_v0.1.0",
    world: "restriction-plugin",
    with: {
        "dsh:tool-restriction/types@0.1.0": latest::dsh::tool_restriction::types,
    },
});

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    RestrictionPlugin::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |state| state)?;
    Ok(())
}

impl dsh::tool_restriction::host::Host for PluginState {
    fn registry(&mut self) -> Vec<wit::ToolDef> {
        latest::dsh::tool_restriction::host::Host::registry(self)
    }

    fn allowed_tools(&mut self, agent: String) -> Result<Vec<String>, String> {
        latest::dsh::tool_restriction::host::Host::allowed_tools(self, agent)
    }

    fn restrict(&mut self, agent: String, allow: Option<Vec<String>>) -> Result<(), String> {
        latest::dsh::tool_restriction::host::Host::restrict(self, agent, allow)
    }

    fn log(&mut self, level: wit::LogLevel, message: String) {
        latest::dsh::tool_restriction::host::Host::log(self, level, message)
    }
}
