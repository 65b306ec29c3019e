//! The agent shell the harness emulates: a tool registry, agents with their
//! scope chain, restriction layers, a pre-execute waterfall, prompt assembly
//! and restriction plugins running as WebAssembly components.

mod backend;
mod builtins;
mod validate;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context as _, Result, anyhow, bail};
use indexmap::IndexMap;
use serde_json::Value;

pub use self::backend::{RegistryChange, ToolBackend};
pub use self::builtins::core_builtins;
// The core and the tool types live below the shell (plugins see the core
// through `host_view`); they are re-exported where the shell's users look.
use crate::catalog::Catalog;
use crate::plugin_api::{
    CallResolution, ConfigError, Explanation, LocatedExplanation, Verdict, describe_plugin_error,
};
pub use crate::shell_core::{GroupLoader, LazyGroupDecl, ShellCore, ShellError};
pub use crate::tool::{AgentId, Origin, Tool, ToolSchema, names};
use crate::wasm_host::{LimitExceeded, Limits, PluginComponent, PluginInstance, WasmHost};

/// The most a call's arguments may hold, as JSON text. A model's reply is far smaller; a
/// bigger one would be refused by the shell's model API anyway, and handed to the plugins'
/// pre-execute hooks it can exhaust their memory or their deadline, which would quarantine
/// them and lift their restrictions.
pub const MAX_ARGUMENT_BYTES: usize = 8 << 20;

/// What became of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// A pre-execute hook refused it.
    Denied { by: String, reason: String },
    /// The shell refused it: no such tool, or a restriction hides it.
    Refused(String),
    /// The tool ran.
    Completed(ToolOutput),
}

impl std::fmt::Display for CallOutcome {
    /// The outcome as the model would read it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Denied { by, reason } => write!(f, "denied by {by}: {reason}"),
            Self::Refused(reason) => write!(f, "refused: {reason}"),
            Self::Completed(output) if output.is_error => write!(f, "error: {}", output.text),
            Self::Completed(output) => write!(f, "ok: {}", output.text),
        }
    }
}

/// What the model receives on a request, as far as tools go.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub tools: Vec<ToolSchema>,
    /// Text plugins add to the system prompt.
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub json: Value,
    pub text: String,
    pub is_error: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("plugin `{plugin}` rejected its config:\n{}", errors.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Config {
        plugin: String,
        errors: Vec<ConfigError>,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

struct ShellPlugin {
    id: String,
    run: PluginRun,
}

/// A plugin running, or why it stopped.
enum PluginRun {
    Live(Box<LivePlugin>),
    /// It trapped or ran out of time or memory: it is no longer called, and nothing it
    /// installed is in force. Its instance is dropped with the store that holds its linear
    /// memory (up to the memory limit, for as long as the shell runs otherwise).
    Quarantined(Quarantine),
}

struct LivePlugin {
    instance: PluginInstance,
    /// What it was installed from, so a resume can start it afresh.
    component: PluginComponent,
    config: Value,
    /// The plugin's own tools, registered in every agent's scope.
    guards: Vec<Tool>,
}

impl ShellPlugin {
    fn quarantined(&self) -> Option<&Quarantine> {
        match &self.run {
            PluginRun::Live(_) => None,
            PluginRun::Quarantined(q) => Some(q),
        }
    }

    fn is_live(&self) -> bool {
        self.quarantined().is_none()
    }

    /// The running plugin, or why it stopped.
    fn running(&mut self) -> Result<&mut LivePlugin> {
        match &mut self.run {
            PluginRun::Live(live) => Ok(live),
            PluginRun::Quarantined(q) => bail!("{q}"),
        }
    }

    /// Its instance, or why there is none.
    fn instance(&mut self) -> Result<&mut PluginInstance> {
        Ok(&mut self.running()?.instance)
    }

    /// Calls into the plugin (`during`: the export) under a fresh log allowance; why it
    /// cannot once it is quarantined.
    fn call<T>(&mut self, during: &str, run: impl FnOnce(&mut PluginInstance) -> T) -> Result<T> {
        let live = match &mut self.run {
            PluginRun::Live(live) => live,
            PluginRun::Quarantined(q) => bail!("{q}"),
        };
        Ok(within_log_allowance(
            &mut live.instance,
            &self.id,
            during,
            run,
        ))
    }

    /// [`call`](Self::call) where a quarantined plugin is skipped: `None` then.
    fn call_live<T>(
        &mut self,
        during: &str,
        run: impl FnOnce(&mut PluginInstance) -> T,
    ) -> Option<T> {
        self.call(during, run).ok()
    }
}

/// Runs `run`, one call into plugin `plugin` (`during`: the export), under a fresh log
/// allowance, then says in one line what the allowance held back: a plugin's log cannot
/// flood the shell's, nor be cut without a word.
fn within_log_allowance<T>(
    instance: &mut PluginInstance,
    plugin: &str,
    during: &str,
    run: impl FnOnce(&mut PluginInstance) -> T,
) -> T {
    let (out, held_back) = instance.with_log_allowance(run);
    if let Some(held_back) = held_back {
        tracing::warn!(plugin = %plugin, "in {during}: {held_back}");
    }
    out
}

/// Why the shell stopped calling a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    pub plugin: String,
    /// The export that failed (`visible-tools`, ...).
    pub during: String,
    /// What went wrong: out of time, out of memory, or the trap's message.
    pub reason: String,
}

impl std::fmt::Display for Quarantine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "plugin `{}` is disabled: it failed in {} ({}); its restrictions and tools are lifted",
            self.plugin, self.during, self.reason
        )
    }
}

/// The plugins that answered a registry change with an error value (not a failure: they stay
/// installed). The change is in force and every live plugin was told of it; a caller that
/// must know whether it was applied looks for this type (`anyhow::Error::is`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the registry change is in force and every plugin was told of it, but {}",
    refusals.iter().map(|(plugin, error)| format!("plugin `{plugin}` could not take it in (registry-changed): {error}")).collect::<Vec<_>>().join("; ")
)]
pub struct RegistryChangeErrors {
    /// Per plugin (install order), what it answered.
    pub refusals: Vec<(String, String)>,
}

/// `result`, with a registry change's [`RegistryChangeErrors`] logged instead of returned:
/// where the caller's own result (a request's tools, a call's outcome, a resolution) must
/// not be lost for a change that was applied.
fn logging_refusals(result: Result<()>) -> Result<()> {
    match result {
        Err(e) if e.is::<RegistryChangeErrors>() => {
            tracing::warn!("{e}");
            Ok(())
        }
        other => other,
    }
}

/// What a plugin call's failure was, for people: a limit it hit, or its trap.
fn failure_reason(error: &anyhow::Error) -> String {
    if let Some(limit) = error
        .chain()
        .find_map(|e| e.downcast_ref::<LimitExceeded>())
    {
        return limit.to_string();
    }
    if let Some(trap) = error
        .chain()
        .find_map(|e| e.downcast_ref::<wasmtime::Trap>())
    {
        return format!("trap: {trap}");
    }
    format!("{error:#}")
}

#[derive(Default)]
pub struct Shell {
    core: Arc<Mutex<ShellCore>>,
    plugins: Vec<ShellPlugin>,
    limits: Limits,
    /// Runs the tools the shell does not run itself (MCP servers').
    backend: Option<Box<dyn ToolBackend>>,
    /// How many times the plugins were told the registry changed.
    registry_notices: u64,
}

impl Shell {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shell's state, shared with plugins (for native baselines).
    pub fn shared_core(&self) -> Arc<Mutex<ShellCore>> {
        self.core.clone()
    }

    /// Read access to the shell's state. Never hold it across a call into a
    /// plugin: the plugin's imports take the same lock.
    pub fn core(&self) -> MutexGuard<'_, ShellCore> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The time and memory limits of plugins installed from now on.
    pub fn set_plugin_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// How many times the plugins were told the registry changed (each time, every plugin):
    /// a notice costs lazy-tools an index update, a full build if much changed.
    pub fn registry_notices(&self) -> u64 {
        self.registry_notices
    }

    /// The plugins the shell stopped calling, and why.
    pub fn quarantined(&self) -> impl Iterator<Item = &Quarantine> {
        self.plugins.iter().filter_map(ShellPlugin::quarantined)
    }

    /// Registers tools and tells every plugin once. Plugins that answer with an error value
    /// do not undo the change: they come back as [`RegistryChangeErrors`], after every
    /// plugin was told.
    pub fn register_tools(&mut self, tools: impl IntoIterator<Item = Tool>) -> Result<()> {
        {
            let mut core = self.core();
            for tool in tools {
                core.register(tool)?;
            }
        }
        Ok(self.notify_registry_changed()?)
    }

    /// Registers a catalog's MCP servers (with their descriptions) and tools.
    pub fn register_catalog(&mut self, catalog: &Catalog) -> Result<()> {
        {
            let mut core = self.core();
            for server in &catalog.servers {
                core.set_group(&server.name, &server.description);
            }
        }
        self.register_tools(catalog.tools().map(|(_, tool)| tool))
    }

    pub fn unregister_tools(&mut self, names: &[&str], scope: Option<&str>) -> Result<()> {
        {
            let mut core = self.core();
            for name in names {
                core.unregister(name, scope)?;
            }
        }
        Ok(self.notify_registry_changed()?)
    }

    /// Creates `name` under `parent` and returns its id (`parent/name`).
    pub fn create_agent(&mut self, name: &str, parent: Option<&str>) -> Result<AgentId> {
        let id = match parent {
            Some(parent) => format!("{parent}/{name}"),
            None => name.to_string(),
        };
        self.core().create_agent(&id, parent)?;
        for index in 0..self.plugins.len() {
            if let Err(failure) = self.attach(index, &id, parent)? {
                self.quarantine(index, "agent-created", &failure);
            }
        }
        Ok(id)
    }

    /// Creates `name` under `parent` as a fork of `source` (it continues
    /// `source`'s conversation) and returns its id. Plugins that know forks
    /// start it with what `source` loaded; a fresh child starts cold.
    pub fn fork_agent(
        &mut self,
        name: &str,
        parent: Option<&str>,
        source: &str,
    ) -> Result<AgentId> {
        self.require_agent(source)?;
        let id = match parent {
            Some(parent) => format!("{parent}/{name}"),
            None => name.to_string(),
        };
        self.core().create_agent(&id, parent)?;
        for index in 0..self.plugins.len() {
            // A quarantined plugin is never called again, as `attach` says.
            if !self.plugins[index].is_live() {
                continue;
            }
            self.register_guards(index, &id)?;
            let plugin = &mut self.plugins[index];
            match plugin.call("agent-forked", |instance| {
                instance.agent_forked(&id, parent, source)
            })? {
                Ok(forked) => forked.map_err(|e| {
                    anyhow!(
                        "plugin `{}` refused fork `{id}`: {}",
                        plugin.id,
                        describe_plugin_error(&e)
                    )
                })?,
                Err(failure) => self.quarantine(index, "agent-forked", &failure),
            }
        }
        Ok(id)
    }

    pub fn dispose_agent(&mut self, id: &str) -> Result<()> {
        let removed = self.core().dispose_agent(id)?;
        for index in 0..self.plugins.len() {
            for agent in &removed {
                let Some(disposed) = self.plugins[index]
                    .call_live("agent-disposed", |instance| instance.agent_disposed(agent))
                else {
                    break;
                };
                if let Err(failure) = disposed {
                    self.quarantine(index, "agent-disposed", &failure);
                }
            }
        }
        Ok(())
    }

    /// Installs a restriction layer on `agent` from `source` (a parent
    /// restricting its child, the profile, another plugin).
    pub fn restrict(
        &mut self,
        agent: &str,
        source: &str,
        allow: Option<Vec<String>>,
    ) -> Result<()> {
        self.core().restrict(agent, source, allow)?;
        Ok(())
    }

    /// Instantiates and configures a plugin, registers its guard tools in
    /// every agent's scope and tells it about every agent, parents first.
    pub fn install_plugin(
        &mut self,
        id: &str,
        component: &PluginComponent,
        config: &Value,
    ) -> Result<(), InstallError> {
        if self.plugins.iter().any(|p| p.id == id) {
            return Err(anyhow!("a plugin with id `{id}` is already installed").into());
        }
        let mut instance =
            WasmHost::global().instantiate(component, id, self.core.clone(), self.limits)?;
        let config_json = config.to_string();
        let failed = |during: &str, e: &anyhow::Error| {
            anyhow!("plugin `{id}` failed in {during}: {}", failure_reason(e))
        };
        if let Err(errors) = within_log_allowance(&mut instance, id, "configure", |instance| {
            instance.configure(&config_json)
        })
        .map_err(|e| failed("configure", &e))?
        {
            return Err(InstallError::Config {
                plugin: id.to_string(),
                errors,
            });
        }
        let guards = within_log_allowance(&mut instance, id, "guard-tools", |instance| {
            instance.guard_tools()
        })
        .map_err(|e| failed("guard-tools", &e))?;
        self.check_guard_names(id, &guards)?;
        self.plugins.push(ShellPlugin {
            id: id.to_string(),
            run: PluginRun::Live(Box::new(LivePlugin {
                instance,
                component: component.clone(),
                config: config.clone(),
                guards,
            })),
        });
        let index = self.plugins.len() - 1;
        let mut agents: Vec<(AgentId, Option<AgentId>)> = self
            .core()
            .agents()
            .map(|(a, p)| (a.to_string(), p.map(str::to_string)))
            .collect();
        // Parents before children: an id's depth is its number of slashes.
        agents.sort_by_key(|(a, _)| a.matches('/').count());
        for (agent, parent) in agents {
            let attached = match self.attach(index, &agent, parent.as_deref()) {
                Ok(Ok(())) => Ok(()),
                Ok(Err(failure)) => Err(failed("agent-created", &failure)),
                Err(e) => Err(e),
            };
            if let Err(e) = attached {
                // Nothing of a plugin that did not start stays behind.
                let plugin = self.plugins.remove(index);
                let mut core = self.core();
                core.unregister_owned_by(&plugin.id);
                core.lift_all(&plugin.id);
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// A plugin's guard tools may not take a name the shell or another
    /// plugin already uses: an agent would reach them instead of the real
    /// tool, even where its chain denies that tool.
    fn check_guard_names(&self, id: &str, guards: &[Tool]) -> Result<(), InstallError> {
        let core = self.core();
        let mut seen = HashSet::new();
        for guard in guards {
            if !seen.insert(guard.name.as_str()) {
                return Err(anyhow!(
                    "plugin `{id}` declares its tool `{}` twice",
                    guard.name.escape_debug()
                )
                .into());
            }
            if let Some(taken) = core.tools().iter().find(|t| t.name == guard.name) {
                let by = match &taken.owner {
                    Some(owner) => format!("a tool of plugin `{owner}`"),
                    None => format!("a {} tool", taken.origin),
                };
                return Err(anyhow!(
                    "plugin `{id}` declares a tool `{}`, but that name is already {by}: a \
                     plugin cannot take another tool's name",
                    guard.name.escape_debug()
                )
                .into());
            }
        }
        Ok(())
    }

    /// Stops calling plugin `index` after it failed in `during`: logs why,
    /// lifts every allow set it installed and removes its tools, so every
    /// agent gets what the rest of its chain authorizes (a plugin only ever
    /// hides, so dropping it cannot widen past that).
    fn quarantine(&mut self, index: usize, during: &str, failure: &anyhow::Error) {
        let plugin = &mut self.plugins[index];
        if !plugin.is_live() {
            return;
        }
        let quarantine = Quarantine {
            plugin: plugin.id.clone(),
            during: during.to_string(),
            reason: failure_reason(failure),
        };
        tracing::error!("{quarantine}");
        // The instance goes now, with its memory.
        plugin.run = PluginRun::Quarantined(quarantine);
        let id = plugin.id.clone();
        {
            let mut core = self.core();
            core.unregister_owned_by(&id);
            core.lift_all(&id);
        }
        // Its guard tools left the registry: the others hear of it (a
        // failure there quarantines that one too, and so on, once each).
        self.notify_registry_changed_quietly();
    }

    /// Gives a running plugin a new config.
    pub fn reconfigure(&mut self, id: &str, config: &Value) -> Result<(), InstallError> {
        let index = self.live_index(id)?;
        let configured = self.plugins[index].call("configure", |instance| {
            instance.configure(&config.to_string())
        })?;
        match configured {
            Ok(Ok(())) => {
                self.plugins[index].running()?.config = config.clone();
                Ok(())
            }
            Ok(Err(errors)) => Err(InstallError::Config {
                plugin: id.to_string(),
                errors,
            }),
            Err(failure) => {
                self.quarantine(index, "configure", &failure);
                Err(anyhow!(
                    "plugin `{id}` failed in configure and is disabled: {}",
                    failure_reason(&failure)
                )
                .into())
            }
        }
    }

    /// The index of plugin `id`, if it is installed and not quarantined.
    fn live_index(&self, id: &str) -> Result<usize> {
        let index = self
            .plugins
            .iter()
            .position(|p| p.id == id)
            .ok_or_else(|| anyhow!("no plugin `{id}` is installed"))?;
        if let Some(q) = self.plugins[index].quarantined() {
            bail!("{q}");
        }
        Ok(index)
    }

    /// Disposes a plugin and removes everything it left: its guard tools and
    /// any restriction layer it did not lift itself.
    pub fn dispose_plugin(&mut self, id: &str) -> Result<()> {
        let index = self
            .plugins
            .iter()
            .position(|p| p.id == id)
            .ok_or_else(|| anyhow!("no plugin `{id}` is installed"))?;
        let mut plugin = self.plugins.remove(index);
        // A quarantined plugin is not called again.
        let disposed = plugin
            .call_live("dispose", PluginInstance::dispose)
            .unwrap_or(Ok(()));
        {
            let mut core = self.core();
            core.unregister_owned_by(id);
            core.lift_all(id);
        }
        disposed.with_context(|| format!("plugin `{id}` trapped in dispose"))?;
        Ok(self.notify_registry_changed()?)
    }

    /// Declares lazy groups and the loader that loads them (WIT 0.3.0
    /// `host.lazy-groups` / `host.load-group`); plugins hear of them with the
    /// registry.
    pub fn set_lazy_groups(
        &mut self,
        groups: Vec<LazyGroupDecl>,
        loader: Arc<dyn GroupLoader>,
    ) -> Result<()> {
        {
            let mut core = self.core();
            for group in groups {
                core.declare_lazy_group(group);
            }
            core.set_group_loader(loader);
        }
        Ok(self.notify_registry_changed()?)
    }

    /// Plugin `id`'s load state (WIT 0.3.0 `export-state`), to resume later.
    pub fn export_state(&mut self, id: &str) -> Result<String> {
        let index = self.live_index(id)?;
        match self.plugins[index].call("export-state", PluginInstance::export_state)? {
            Ok(Some(Ok(state))) if state.len() > lazy_tools::MAX_STATE_BYTES => bail!(
                "plugin `{id}` exported a state of {} bytes, more than the {} a shell restores: \
                 not saved",
                state.len(),
                lazy_tools::MAX_STATE_BYTES
            ),
            Ok(Some(state)) => {
                state.map_err(|e| anyhow!("plugin `{id}`: {}", describe_plugin_error(&e)))
            }
            Ok(None) => bail!(
                "plugin `{id}` speaks dsh:tool-restriction@{}, which cannot save its state",
                self.plugins[index].instance()?.contract_version()
            ),
            Err(failure) => {
                self.quarantine(index, "export-state", &failure);
                bail!(
                    "plugin `{id}` failed in export-state and is disabled: {}",
                    failure_reason(&failure)
                )
            }
        }
    }

    /// Gives plugin `id` a state saved by an earlier run.
    pub fn restore_state(&mut self, id: &str, state: &str) -> Result<()> {
        let index = self.live_index(id)?;
        match self.plugins[index].call("restore-state", |instance| instance.restore_state(state))? {
            Ok(restored) => restored.map_err(|e| anyhow!("plugin `{id}` cannot restore: {e}")),
            Err(failure) => {
                self.quarantine(index, "restore-state", &failure);
                bail!(
                    "plugin `{id}` failed in restore-state and is disabled: {}",
                    failure_reason(&failure)
                )
            }
        }
    }

    /// A new run of plugin `id` over the same shell: its state is saved,
    /// it is removed and installed afresh (with `config`, or the one it
    /// had), and the state restored, as a resumed session does.
    pub fn resume_plugin(&mut self, id: &str, config: Option<&Value>) -> Result<()> {
        let state = self.export_state(id)?;
        let index = self.live_index(id)?;
        let live = self.plugins[index].running()?;
        let component = live.component.clone();
        let old = live.config.clone();
        let config = config.cloned().unwrap_or_else(|| old.clone());
        self.dispose_plugin(id)?;
        if let Err(refused) = self.install_plugin(id, &component, &config) {
            // The plugin as it was, with what it had loaded: a new config it refuses loses
            // nothing (the session's save still finds the plugin and its loads).
            self.install_plugin(id, &component, &old)
                .map_err(anyhow::Error::from)
                .and_then(|()| self.restore_state(id, &state))
                .with_context(|| {
                    format!("{refused}; and plugin `{id}` could not start again as it was")
                })?;
            return Err(refused.into());
        }
        self.restore_state(id, &state)
    }

    /// Direct access to a plugin instance, for lifecycle tests. A quarantined plugin has
    /// none: the error says why.
    pub fn plugin_mut(&mut self, id: &str) -> Result<&mut PluginInstance> {
        self.plugins
            .iter_mut()
            .find(|p| p.id == id)
            .ok_or_else(|| anyhow!("no plugin `{id}` is installed"))?
            .instance()
    }

    pub fn plugin_ids(&self) -> impl Iterator<Item = &str> {
        self.plugins.iter().map(|p| p.id.as_str())
    }

    /// Fails with [`ShellError::UnknownAgent`] when `agent` does not exist.
    pub fn require_agent(&self, agent: &str) -> Result<()> {
        if !self.core().has_agent(agent) {
            bail!(ShellError::UnknownAgent(agent.to_string()));
        }
        Ok(())
    }

    /// Why plugin `id` shows, defers or hides `tool` for `agent`.
    pub fn explain(&mut self, id: &str, agent: &str, tool: &str) -> Result<Explanation> {
        Ok(self.explain_located(id, agent, tool)?.explanation)
    }

    /// [`explain`](Self::explain), with the JSON pointer of the plugin's
    /// config entry that decided, when one did.
    pub fn explain_located(
        &mut self,
        id: &str,
        agent: &str,
        tool: &str,
    ) -> Result<LocatedExplanation> {
        self.require_agent(agent)?;
        let index = self.live_index(id)?;
        let version = self.plugins[index].instance()?.contract_version();
        if version == "0.1.0" {
            bail!("plugin `{id}` speaks dsh:tool-restriction@{version}, which has no explain");
        }
        match self.plugins[index]
            .call("explain", |instance| instance.explain_located(agent, tool))?
        {
            Ok(explained) => {
                explained.map_err(|e| anyhow!("plugin `{id}`: {}", describe_plugin_error(&e)))
            }
            Err(failure) => {
                self.quarantine(index, "explain", &failure);
                bail!(
                    "plugin `{id}` failed in explain and is disabled: {}",
                    failure_reason(&failure)
                )
            }
        }
    }

    /// What each plugin adds to `agent`'s system prompt, by plugin id.
    pub fn system_prompt(&mut self, agent: &str) -> Result<Vec<(String, String)>> {
        self.require_agent(agent)?;
        let mut texts = Vec::new();
        for index in 0..self.plugins.len() {
            let plugin = &mut self.plugins[index];
            let Some(text) =
                plugin.call_live("system-prompt", |instance| instance.system_prompt(agent))
            else {
                continue;
            };
            let text = match text {
                Ok(text) => text.map_err(|e| {
                    anyhow!("plugin `{}`: {}", plugin.id, describe_plugin_error(&e))
                })?,
                Err(failure) => {
                    self.quarantine(index, "system-prompt", &failure);
                    continue;
                }
            };
            if let Some(text) = text {
                texts.push((plugin.id.clone(), text));
            }
        }
        Ok(texts)
    }

    /// Prompt assembly: the ordered tools the model receives on `agent`'s
    /// next request, and the system-prompt text plugins add (each plugin's
    /// text in install order, separated by a blank line).
    pub fn assemble(&mut self, agent: &str) -> Result<Request> {
        let tools = self.next_request(agent)?;
        let texts: Vec<String> = self
            .system_prompt(agent)?
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        Ok(Request {
            tools,
            system_prompt: (!texts.is_empty()).then(|| texts.join("\n\n")),
        })
    }

    /// The ordered tools the model receives on `agent`'s next request. Each
    /// plugin is asked first (it may update its allow set); the result is
    /// what the agent may call, filtered by every plugin's view.
    pub fn next_request(&mut self, agent: &str) -> Result<Vec<ToolSchema>> {
        logging_refusals(self.sync_backend())?;
        let mut views = Vec::with_capacity(self.plugins.len());
        for index in 0..self.plugins.len() {
            let plugin = &mut self.plugins[index];
            let Some(view) =
                plugin.call_live("visible-tools", |instance| instance.visible_tools(agent))
            else {
                continue;
            };
            let view = match view {
                Ok(view) => view.map_err(|e| {
                    anyhow!("plugin `{}`: {}", plugin.id, describe_plugin_error(&e))
                })?,
                Err(failure) => {
                    self.quarantine(index, "visible-tools", &failure);
                    continue;
                }
            };
            // A set: with thousands of tools a list scan per tool is quadratic.
            views.push(view.into_iter().collect::<HashSet<String>>());
        }
        let core = self.core();
        Ok(core
            .effective(agent, None)?
            .into_iter()
            .filter(|t| views.iter().all(|view| view.contains(t.name.as_str())))
            .map(Tool::schema)
            .collect())
    }

    /// Calls a tool as the model would: resolve it, run the pre-execute
    /// waterfall (the plugins in install order; any deny wins), check the
    /// agent's restrictions, then run it.
    ///
    /// Pre-execute runs before the restriction check so that a hook can tell
    /// the model why a hidden tool is refused and what to do instead.
    pub fn call(&mut self, agent: &str, tool: &str, arguments: &Value) -> Result<CallOutcome> {
        let outcome = self.call_checked(agent, tool, arguments);
        // A guard tool may have loaded a lazy group (lazy-tools' `load_tools`): every plugin
        // hears of its tools now, not at some later call, whether or not the call went well.
        if self.core().take_loaded_outside() {
            logging_refusals(self.notify_registry_changed().map_err(Into::into))?;
        }
        let outcome = outcome?;
        // A call may have loaded tools (a backend starts their server) or
        // changed a server's tools.
        logging_refusals(self.sync_backend())?;
        Ok(outcome)
    }

    /// Sets the backend that runs tools the shell does not run itself.
    pub fn set_backend(&mut self, backend: Box<dyn ToolBackend>) {
        self.backend = Some(backend);
    }

    pub fn backend_mut(&mut self) -> Option<&mut (dyn ToolBackend + 'static)> {
        self.backend.as_deref_mut()
    }

    /// Lets the backend look at the shell (what each agent may call now) and
    /// applies the registry changes it asks for, telling plugins once: of those, and of what a
    /// plugin's lazy load registered outside a call (in `visible-tools`, say) since the last
    /// notice.
    pub fn sync_backend(&mut self) -> Result<()> {
        let loaded = self.core().take_loaded_outside();
        let changes = match self.backend.as_mut() {
            Some(backend) => {
                let core = self.core.lock().unwrap_or_else(|e| e.into_inner());
                backend.sync(&core)
            }
            None => Vec::new(),
        };
        if changes.is_empty() {
            return match loaded {
                true => Ok(self.notify_registry_changed()?),
                false => Ok(()),
            };
        }
        // The batch's last word on each name: a tool removed and registered again is a new
        // definition, which a lazy load may already have registered. Every change is
        // applied; one that fails does not stop the rest.
        let mut last: IndexMap<String, Option<Tool>> = IndexMap::new();
        let mut failed = Vec::new();
        // Whether the batch changed anything: a lazy load registers what its server lists, and
        // the backend then hands the same tools back, which the call that loaded them told.
        let mut changed = false;
        {
            let mut core = self.core();
            for change in changes {
                match change {
                    RegistryChange::Register(tool) => {
                        last.insert(tool.name.clone(), Some(tool));
                    }
                    RegistryChange::Unregister(name) => {
                        last.insert(name, None);
                    }
                    RegistryChange::Group { name, description } => {
                        changed |= core.set_group(&name, &description);
                    }
                }
            }
            for (name, tool) in last {
                let applied = match tool {
                    Some(tool) => core.define(tool),
                    None => match core.unregister(&name, None) {
                        Err(ShellError::NoSuchTool { .. }) => Ok(false),
                        removed => removed.map(|_| true),
                    },
                };
                match applied {
                    Ok(applied) => changed |= applied,
                    Err(e) => failed.push(e.to_string()),
                }
            }
        }
        if !changed && !loaded && failed.is_empty() {
            return Ok(());
        }
        let told = self.notify_registry_changed();
        if !failed.is_empty() {
            let refused = told.err().map(|e| format!("; {e}")).unwrap_or_default();
            bail!("the tool backend's changes: {}{refused}", failed.join("; "));
        }
        Ok(told?)
    }

    /// Asks the plugin that owns `tool` to resolve the call (WIT 0.3.0
    /// `resolve-call`): a forwarded call comes back as the real tool and
    /// arguments, so everything after sees only those.
    fn resolve_forwarded(
        &mut self,
        agent: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Resolved> {
        let owner = self
            .core()
            .resolve(agent, tool)?
            .and_then(|t| t.owner.clone());
        let Some(index) = owner.and_then(|owner| {
            self.plugins
                .iter()
                .position(|p| p.id == owner && p.is_live())
        }) else {
            return Ok(Resolved::Direct);
        };
        let resolution = self.plugins[index].call("resolve-call", |instance| {
            instance.resolve_call(agent, tool, &arguments.to_string())
        })?;
        // A lazy group the plugin loaded registered tools: every plugin hears.
        if self.core().take_loaded_outside() {
            logging_refusals(self.notify_registry_changed().map_err(Into::into))?;
        }
        let plugin = &self.plugins[index].id;
        Ok(match resolution {
            Ok(Ok(CallResolution::Direct)) => Resolved::Direct,
            Ok(Ok(CallResolution::Forward(call))) => {
                let Ok(real) = serde_json::from_str(&call.arguments) else {
                    bail!("plugin `{plugin}` forwarded `{tool}` with arguments that are not JSON");
                };
                tracing::info!(agent, envelope = tool, tool = %call.tool, implicitly_loaded = call.implicitly_loaded, "forwarded call");
                Resolved::Forward {
                    tool: call.tool,
                    arguments: real,
                }
            }
            Ok(Ok(CallResolution::Reject(result))) => {
                let json = serde_json::from_str(&result.json).with_context(|| {
                    format!("plugin `{plugin}` rejected `{tool}` with a result that is not JSON")
                })?;
                Resolved::Done(CallOutcome::Completed(ToolOutput {
                    json,
                    text: result.text,
                    is_error: result.is_error,
                }))
            }
            Ok(Err(e)) => bail!(
                "plugin `{plugin}` could not resolve `{tool}`: {}",
                describe_plugin_error(&e)
            ),
            Err(failure) => {
                let reason = failure_reason(&failure);
                let plugin = plugin.clone();
                self.quarantine(index, "resolve-call", &failure);
                Resolved::Done(CallOutcome::Refused(format!(
                    "tool `{tool}` failed: its plugin `{plugin}` is disabled ({reason})"
                )))
            }
        })
    }

    fn call_checked(&mut self, agent: &str, tool: &str, arguments: &Value) -> Result<CallOutcome> {
        // A direct call goes on with what it was given; only a forwarded one owns new values.
        let forward;
        let (tool, arguments, forwarded) = match self.resolve_forwarded(agent, tool, arguments)? {
            Resolved::Direct => (tool, arguments, false),
            Resolved::Forward { tool, arguments } => {
                forward = (tool, arguments);
                (forward.0.as_str(), &forward.1, true)
            }
            Resolved::Done(outcome) => return Ok(outcome),
        };
        if self.core().resolve(agent, tool)?.is_none() {
            return Ok(CallOutcome::Refused(format!("unknown tool `{tool}`")));
        }
        let arguments_json = arguments.to_string();
        if arguments_json.len() > MAX_ARGUMENT_BYTES {
            return Ok(CallOutcome::Refused(format!(
                "the arguments of `{tool}` are {} bytes of JSON; at most {} MiB",
                arguments_json.len(),
                MAX_ARGUMENT_BYTES >> 20
            )));
        }
        for index in 0..self.plugins.len() {
            let plugin = &mut self.plugins[index];
            let Some(verdict) = plugin.call_live("pre-execute", |instance| {
                instance.pre_execute(agent, tool, &arguments_json)
            }) else {
                continue;
            };
            match verdict {
                Ok(Verdict::Deny(reason)) => {
                    return Ok(CallOutcome::Denied {
                        by: plugin.id.clone(),
                        reason,
                    });
                }
                Ok(Verdict::Pass) => {}
                // Its verdict is gone with it; the restriction check below
                // still holds the rest of the chain.
                Err(failure) => self.quarantine(index, "pre-execute", &failure),
            }
        }
        // A quarantined plugin's tools are gone: resolve again.
        let Some(resolved) = self.core().resolve(agent, tool)?.cloned() else {
            return Ok(CallOutcome::Refused(format!("unknown tool `{tool}`")));
        };
        if !self.core().may_call(agent, tool)? {
            return Ok(CallOutcome::Refused(format!(
                "tool `{tool}` is not available to agent `{agent}`"
            )));
        }
        if forwarded && let Some(invalid) = validate::check(&resolved, arguments) {
            return Ok(CallOutcome::Completed(invalid));
        }
        let Some(owner) = resolved.owner.as_deref() else {
            let ran = self
                .backend
                .as_mut()
                .and_then(|backend| backend.run(agent, &resolved, arguments));
            return Ok(CallOutcome::Completed(
                ran.unwrap_or_else(|| emulated_run(&resolved, arguments)),
            ));
        };
        let index = self
            .plugins
            .iter()
            .position(|p| p.id == owner && p.is_live())
            .ok_or_else(|| anyhow!("tool `{tool}` belongs to plugin `{owner}`, which is gone"))?;
        let executed = self.plugins[index].call("execute", |instance| {
            instance.execute(agent, tool, &arguments_json)
        })?;
        let result = match executed {
            Ok(result) => result.map_err(|e| {
                anyhow!(
                    "plugin `{owner}` refused to run `{tool}`: {}",
                    describe_plugin_error(&e)
                )
            })?,
            Err(failure) => {
                let reason = failure_reason(&failure);
                self.quarantine(index, "execute", &failure);
                return Ok(CallOutcome::Refused(format!(
                    "tool `{tool}` failed: its plugin `{owner}` is disabled ({reason})"
                )));
            }
        };
        let json = serde_json::from_str(&result.json).with_context(|| {
            format!("plugin `{owner}` returned a result for `{tool}` that is not JSON")
        })?;
        Ok(CallOutcome::Completed(ToolOutput {
            json,
            text: result.text,
            is_error: result.is_error,
        }))
    }

    /// Registers plugin `index`'s guard tools in `agent`'s scope and tells
    /// the plugin about the agent. The inner error is the plugin's failure
    /// (a trap, out of time or memory), for the caller to contain.
    fn attach(
        &mut self,
        index: usize,
        agent: &str,
        parent: Option<&str>,
    ) -> Result<Result<(), anyhow::Error>> {
        if !self.plugins[index].is_live() {
            return Ok(Ok(()));
        }
        self.register_guards(index, agent)?;
        let plugin = &mut self.plugins[index];
        match plugin.call("agent-created", |instance| {
            instance.agent_created(agent, parent)
        })? {
            Ok(created) => {
                created.map_err(|e| {
                    anyhow!(
                        "plugin `{}` refused agent `{agent}`: {}",
                        plugin.id,
                        describe_plugin_error(&e)
                    )
                })?;
                Ok(Ok(()))
            }
            Err(failure) => Ok(Err(failure)),
        }
    }

    /// Registers plugin `index`'s guard tools in `agent`'s own scope.
    fn register_guards(&mut self, index: usize, agent: &str) -> Result<()> {
        let plugin = &self.plugins[index];
        let PluginRun::Live(live) = &plugin.run else {
            return Ok(());
        };
        let mut core = self.core.lock().unwrap_or_else(|e| e.into_inner());
        for guard in &live.guards {
            let mut tool = guard.clone();
            tool.origin = Origin::Agent(agent.to_string());
            tool.owner = Some(plugin.id.clone());
            core.register(tool)
                .with_context(|| format!("registering plugin `{}`'s tools", plugin.id))?;
        }
        Ok(())
    }

    /// Tells every live plugin that the registry changed. An error value from one does not
    /// stop the others hearing of it (their search index would go stale): all of them are
    /// told, then the error values come back together.
    fn notify_registry_changed(&mut self) -> Result<(), RegistryChangeErrors> {
        // What lazy loads registered so far is told with the rest: no second notice for it.
        self.core().take_loaded_outside();
        self.registry_notices += 1;
        let mut refusals = Vec::new();
        for index in 0..self.plugins.len() {
            let plugin = &mut self.plugins[index];
            let Some(changed) =
                plugin.call_live("registry-changed", PluginInstance::registry_changed)
            else {
                continue;
            };
            match changed {
                Ok(Ok(())) => {}
                Ok(Err(e)) => refusals.push((plugin.id.clone(), describe_plugin_error(&e))),
                Err(failure) => self.quarantine(index, "registry-changed", &failure),
            }
        }
        if refusals.is_empty() {
            Ok(())
        } else {
            Err(RegistryChangeErrors { refusals })
        }
    }

    /// [`notify_registry_changed`](Self::notify_registry_changed) where a
    /// plugin's error value can only be logged.
    fn notify_registry_changed_quietly(&mut self) {
        if let Err(e) = self.notify_registry_changed() {
            tracing::warn!("{e}");
        }
    }
}

/// What `resolve-call` made of a call.
enum Resolved {
    Direct,
    Forward {
        tool: String,
        arguments: Value,
    },
    /// Nothing runs: the plugin answered (a rejected envelope) or failed.
    Done(CallOutcome),
}

/// Without a backend for it (built-ins, catalog tools), a call that passes
/// every check completes with a record of what would have run.
fn emulated_run(tool: &Tool, arguments: &Value) -> ToolOutput {
    ToolOutput {
        json: serde_json::json!({"emulated": true, "tool": tool.name, "arguments": arguments}),
        text: format!("(harness) {} ran with {arguments}", tool.name),
        is_error: false,
    }
}
