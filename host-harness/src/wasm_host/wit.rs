//! Versioned bindings to the `dsh:tool-restriction` WIT package. Each
//! version the host supports has its own module; `PluginBindings` picks the
//! one a component was built against.

pub mod since_v0_1_0;

use anyhow::{Context as _, Result};
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use super::{IntoAnyhow as _, PluginState};
use crate::plugin_api::{ConfigError, PluginCallError, ToolResult, Verdict};
use crate::shell::Tool;

/// The newest contract version; plugins are built against it.
pub const LATEST: &str = "0.1.0";

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    since_v0_1_0::add_to_linker(linker).context("linking dsh:tool-restriction@0.1.0")?;
    Ok(())
}

/// An instantiated plugin, whatever contract version it speaks.
pub enum PluginBindings {
    V0_1_0(since_v0_1_0::RestrictionPlugin),
}

impl PluginBindings {
    pub fn instantiate(
        store: &mut Store<PluginState>,
        component: &Component,
        linker: &Linker<PluginState>,
    ) -> Result<Self> {
        let exports_v0_1_0 = component
            .get_export_index(None, "dsh:tool-restriction/restriction@0.1.0")
            .is_some();
        if exports_v0_1_0 {
            let bindings = since_v0_1_0::RestrictionPlugin::instantiate(store, component, linker)
                .into_anyhow()
                .context("instantiating a dsh:tool-restriction@0.1.0 plugin")?;
            return Ok(Self::V0_1_0(bindings));
        }
        anyhow::bail!(
            "the component does not export dsh:tool-restriction/restriction in a version this \
             host supports (newest: {LATEST})"
        )
    }

    pub fn version(&self) -> &'static str {
        match self {
            Self::V0_1_0(_) => "0.1.0",
        }
    }

    pub fn configure(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
    ) -> Result<Result<(), Vec<ConfigError>>> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::configure(b, store, config),
        }
    }

    pub fn guard_tools(&self, store: &mut Store<PluginState>) -> Result<Vec<Tool>> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::guard_tools(b, store),
        }
    }

    pub fn agent_created(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        parent: Option<&str>,
    ) -> Result<Result<(), PluginCallError>> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::agent_created(b, store, agent, parent),
        }
    }

    pub fn agent_disposed(&self, store: &mut Store<PluginState>, agent: &str) -> Result<()> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::agent_disposed(b, store, agent),
        }
    }

    pub fn registry_changed(
        &self,
        store: &mut Store<PluginState>,
    ) -> Result<Result<(), PluginCallError>> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::registry_changed(b, store),
        }
    }

    pub fn visible_tools(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
    ) -> Result<Result<Vec<String>, PluginCallError>> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::visible_tools(b, store, agent),
        }
    }

    pub fn pre_execute(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Verdict> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::pre_execute(b, store, agent, tool, arguments),
        }
    }

    pub fn execute(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Result<ToolResult, PluginCallError>> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::execute(b, store, agent, tool, arguments),
        }
    }

    pub fn dispose(&self, store: &mut Store<PluginState>) -> Result<()> {
        match self {
            Self::V0_1_0(b) => since_v0_1_0::dispose(b, store),
        }
    }
}
