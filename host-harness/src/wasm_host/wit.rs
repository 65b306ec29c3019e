//! Versioned bindings to the `dsh:tool-restriction` WIT package. Each
//! version the host supports has its own module; `PluginBindings` picks the
//! one a component was built against. Older versions share the newest
//! version's types, so every call converts its values the same way.

pub mod since_v0_1_0;
pub mod since_v0_2_0;
pub mod since_v0_3_0;

use anyhow::{Context as _, Result, bail};
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use super::{IntoAnyhow as _, PluginState};
use since_v0_3_0 as latest;
use since_v0_3_0::wit::{
    CallResolution, ConfigError, Explanation, LocatedExplanation, PluginError,
    PluginError as PluginCallError, ToolResult, Verdict,
};

/// Every contract version this host supports, newest first.
pub const SUPPORTED: &[&str] = &["0.3.0", "0.2.0", "0.1.0"];

pub fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    since_v0_3_0::add_to_linker(linker).context("linking dsh:tool-restriction@0.3.0")?;
    since_v0_2_0::add_to_linker(linker).context("linking dsh:tool-restriction@0.2.0")?;
    since_v0_1_0::add_to_linker(linker).context("linking dsh:tool-restriction@0.1.0")?;
    Ok(())
}

/// An instantiated plugin, whatever contract version it speaks.
pub enum PluginBindings {
    V0_1_0(since_v0_1_0::RestrictionPlugin),
    V0_2_0(since_v0_2_0::RestrictionPlugin),
    V0_3_0(since_v0_3_0::RestrictionPlugin),
}

/// Runs `$body` with `$guest` bound to the plugin's exported interface,
/// whichever version it is: the versions share types, so the body is one.
macro_rules! with_guest {
    ($bindings:expr, $guest:ident => $body:expr) => {
        match $bindings {
            PluginBindings::V0_1_0(b) => {
                let $guest = b.dsh_tool_restriction_restriction();
                $body
            }
            PluginBindings::V0_2_0(b) => {
                let $guest = b.dsh_tool_restriction_restriction();
                $body
            }
            PluginBindings::V0_3_0(b) => {
                let $guest = b.dsh_tool_restriction_restriction();
                $body
            }
        }
    };
}

impl PluginBindings {
    pub fn instantiate(
        store: &mut Store<PluginState>,
        component: &Component,
        linker: &Linker<PluginState>,
    ) -> Result<Self> {
        let exports = |version: &str| {
            component
                .get_export_index(None, format!("dsh:tool-restriction/restriction@{version}"))
                .is_some()
        };
        if exports("0.3.0") {
            let bindings = since_v0_3_0::RestrictionPlugin::instantiate(store, component, linker)
                .into_anyhow()
                .context("instantiating a dsh:tool-restriction@0.3.0 plugin")?;
            return Ok(Self::V0_3_0(bindings));
        }
        if exports("0.2.0") {
            let bindings = since_v0_2_0::RestrictionPlugin::instantiate(store, component, linker)
                .into_anyhow()
                .context("instantiating a dsh:tool-restriction@0.2.0 plugin")?;
            return Ok(Self::V0_2_0(bindings));
        }
        if exports("0.1.0") {
            let bindings = since_v0_1_0::RestrictionPlugin::instantiate(store, component, linker)
                .into_anyhow()
                .context("instantiating a dsh:tool-restriction@0.1.0 plugin")?;
            return Ok(Self::V0_1_0(bindings));
        }
        bail!(
            "the component does not export dsh:tool-restriction/restriction in a version this \
             host supports ({})",
            SUPPORTED.join(", ")
        )
    }

    pub fn version(&self) -> &'static str {
        match self {
            Self::V0_1_0(_) => "0.1.0",
            Self::V0_2_0(_) => "0.2.0",
            Self::V0_3_0(_) => "0.3.0",
        }
    }

    pub fn configure(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
    ) -> Result<Result<(), Vec<ConfigError>>> {
        Ok(with_guest!(self, g => g.call_configure(&mut *store, config))?)
    }

    /// The guard tools as the plugin wrote them: the caller measures them before it parses
    /// their parameters ([`latest::tool_from_wit`]), which costs many times their size.
    pub fn guard_tools(&self, store: &mut Store<PluginState>) -> Result<Vec<latest::wit::ToolDef>> {
        Ok(with_guest!(self, g => g.call_guard_tools(&mut *store))?)
    }

    pub fn agent_created(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        parent: Option<&str>,
    ) -> Result<Result<(), PluginError>> {
        let (agent, parent) = (agent.to_owned(), parent.map(str::to_owned));
        Ok(with_guest!(self, g => g.call_agent_created(&mut *store, &agent, parent.as_ref()))?)
    }

    /// A fork: 0.3.0 plugins start it with `source`'s loaded tools; older
    /// ones hear of a new agent (they know no forks).
    pub fn agent_forked(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        parent: Option<&str>,
        source: &str,
    ) -> Result<Result<(), PluginCallError>> {
        match self {
            Self::V0_3_0(b) => Ok(b.dsh_tool_restriction_restriction().call_agent_forked(
                store,
                &agent.to_owned(),
                parent.map(str::to_owned).as_ref(),
                &source.to_owned(),
            )?),
            Self::V0_1_0(_) | Self::V0_2_0(_) => self.agent_created(store, agent, parent),
        }
    }

    pub fn agent_disposed(&self, store: &mut Store<PluginState>, agent: &str) -> Result<()> {
        let agent = agent.to_owned();
        Ok(with_guest!(self, g => g.call_agent_disposed(&mut *store, &agent))?)
    }

    pub fn registry_changed(
        &self,
        store: &mut Store<PluginState>,
    ) -> Result<Result<(), PluginError>> {
        Ok(with_guest!(self, g => g.call_registry_changed(&mut *store))?)
    }

    pub fn visible_tools(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
    ) -> Result<Result<Vec<String>, PluginError>> {
        let agent = agent.to_owned();
        Ok(with_guest!(self, g => g.call_visible_tools(&mut *store, &agent))?)
    }

    pub fn pre_execute(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Verdict> {
        let agent = agent.to_owned();
        Ok(with_guest!(self, g => g.call_pre_execute(&mut *store, &agent, tool, arguments))?)
    }

    pub fn execute(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Result<ToolResult, PluginError>> {
        let agent = agent.to_owned();
        Ok(with_guest!(self, g => g.call_execute(&mut *store, &agent, tool, arguments))?)
    }

    /// The plugin's system-prompt text; 0.1.0 plugins have none.
    pub fn system_prompt(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
    ) -> Result<Result<Option<String>, PluginError>> {
        match self {
            Self::V0_1_0(_) => Ok(Ok(None)),
            Self::V0_2_0(b) => Ok(b
                .dsh_tool_restriction_restriction()
                .call_system_prompt(store, &agent.to_owned())?),
            Self::V0_3_0(b) => Ok(b
                .dsh_tool_restriction_restriction()
                .call_system_prompt(store, &agent.to_owned())?),
        }
    }

    /// Why a tool is in its state; 0.1.0 plugins cannot say.
    pub fn explain(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
    ) -> Result<Result<Explanation, PluginError>> {
        match self {
            Self::V0_1_0(_) => {
                bail!("the plugin speaks dsh:tool-restriction@0.1.0, which has no explain")
            }
            Self::V0_2_0(b) => Ok(b.dsh_tool_restriction_restriction().call_explain(
                store,
                &agent.to_owned(),
                tool,
            )?),
            Self::V0_3_0(b) => Ok(b.dsh_tool_restriction_restriction().call_explain(
                store,
                &agent.to_owned(),
                tool,
            )?),
        }
    }

    /// `explain` with the pointer of the deciding config entry; before
    /// 0.3.0 a plugin cannot say which entry, so the pointer is `None`.
    pub fn explain_located(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
    ) -> Result<Result<LocatedExplanation, PluginCallError>> {
        match self {
            Self::V0_3_0(b) => Ok(b.dsh_tool_restriction_restriction().call_explain_located(
                store,
                &agent.to_owned(),
                tool,
            )?),
            Self::V0_1_0(_) | Self::V0_2_0(_) => {
                Ok(self
                    .explain(store, agent, tool)?
                    .map(|explanation| LocatedExplanation {
                        explanation,
                        pointer: None,
                    }))
            }
        }
    }

    /// Unwraps a forwarded call (0.3.0); older plugins have no forwarder,
    /// so every call is `direct`.
    pub fn resolve_call(
        &self,
        store: &mut Store<PluginState>,
        agent: &str,
        tool: &str,
        arguments: &str,
    ) -> Result<Result<CallResolution, PluginCallError>> {
        match self {
            Self::V0_3_0(b) => Ok(b.dsh_tool_restriction_restriction().call_resolve_call(
                store,
                &agent.to_owned(),
                tool,
                arguments,
            )?),
            Self::V0_1_0(_) | Self::V0_2_0(_) => Ok(Ok(CallResolution::Direct)),
        }
    }

    /// The plugin's load state (0.3.0); older plugins have none to save.
    pub fn export_state(
        &self,
        store: &mut Store<PluginState>,
    ) -> Result<Option<Result<String, PluginCallError>>> {
        match self {
            Self::V0_3_0(b) => Ok(Some(
                b.dsh_tool_restriction_restriction()
                    .call_export_state(store)?,
            )),
            Self::V0_1_0(_) | Self::V0_2_0(_) => Ok(None),
        }
    }

    pub fn restore_state(
        &self,
        store: &mut Store<PluginState>,
        state: &str,
    ) -> Result<Result<(), String>> {
        match self {
            Self::V0_3_0(b) => Ok(b
                .dsh_tool_restriction_restriction()
                .call_restore_state(store, state)?),
            Self::V0_1_0(_) | Self::V0_2_0(_) => Ok(Err(format!(
                "the plugin speaks dsh:tool-restriction@{}, which cannot restore a state",
                self.version()
            ))),
        }
    }

    pub fn dispose(&self, store: &mut Store<PluginState>) -> Result<()> {
        Ok(with_guest!(self, g => g.call_dispose(&mut *store))?)
    }
}
