//! The agent shell the harness emulates: a tool registry, agents with their
//! scope chain, restriction layers, a pre-execute waterfall, prompt assembly
//! and restriction plugins running as WebAssembly components.

mod backend;
mod builtins;
mod core;
mod tools;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::Value;

pub use self::backend::{RegistryChange, ToolBackend};
pub use self::builtins::core_builtins;
pub use self::core::{ShellCore, ShellError};
pub use self::tools::{AgentId, Origin, Tool, ToolSchema, names};
use crate::catalog::Catalog;
use crate::plugin_api::{ConfigError, Explanation, Verdict};
use crate::wasm_host::{PluginComponent, PluginInstance, WasmHost};

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

type Hook = Box<dyn Fn(&str, &str, &Value) -> Verdict + Send>;

struct ShellPlugin {
    id: String,
    instance: PluginInstance,
    /// The plugin's own tools, registered in every agent's scope.
    guards: Vec<Tool>,
}

#[derive(Default)]
pub struct Shell {
    core: Arc<Mutex<ShellCore>>,
    plugins: Vec<ShellPlugin>,
    hooks: Vec<(String, Hook)>,
    /// Runs the tools the shell does not run itself (MCP servers').
    backend: Option<Box<dyn ToolBackend>>,
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

    /// Registers tools and tells every plugin once.
    pub fn register_tools(&mut self, tools: impl IntoIterator<Item = Tool>) -> Result<()> {
        {
            let mut core = self.core();
            for tool in tools {
                core.register(tool)?;
            }
        }
        self.notify_registry_changed()
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
        self.notify_registry_changed()
    }

    /// Creates `name` under `parent` and returns its id (`parent/name`).
    pub fn create_agent(&mut self, name: &str, parent: Option<&str>) -> Result<AgentId> {
        let id = match parent {
            Some(parent) => format!("{parent}/{name}"),
            None => name.to_string(),
        };
        self.core().create_agent(&id, parent)?;
        for index in 0..self.plugins.len() {
            self.attach(index, &id, parent)?;
        }
        Ok(id)
    }

    pub fn dispose_agent(&mut self, id: &str) -> Result<()> {
        let removed = self.core().dispose_agent(id)?;
        for plugin in &mut self.plugins {
            for agent in &removed {
                plugin
                    .instance
                    .agent_disposed(agent)
                    .with_context(|| format!("plugin `{}` trapped in agent-disposed", plugin.id))?;
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

    /// A native pre-execute hook, run before the plugins' hooks.
    pub fn add_pre_execute_hook(
        &mut self,
        name: &str,
        hook: impl Fn(&str, &str, &Value) -> Verdict + Send + 'static,
    ) {
        self.hooks.push((name.to_string(), Box::new(hook)));
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
        let mut instance = WasmHost::global().instantiate(component, id, self.core.clone())?;
        let config_json = config.to_string();
        if let Err(errors) = instance
            .configure(&config_json)
            .with_context(|| format!("plugin `{id}` trapped in configure"))?
        {
            return Err(InstallError::Config {
                plugin: id.to_string(),
                errors,
            });
        }
        let guards = instance
            .guard_tools()
            .with_context(|| format!("plugin `{id}` trapped in guard-tools"))?;
        self.plugins.push(ShellPlugin {
            id: id.to_string(),
            instance,
            guards,
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
            self.attach(index, &agent, parent.as_deref())?;
        }
        Ok(())
    }

    /// Gives a running plugin a new config.
    pub fn reconfigure(&mut self, id: &str, config: &Value) -> Result<(), InstallError> {
        let plugin = self.plugin_mut(id)?;
        match plugin
            .configure(&config.to_string())
            .with_context(|| format!("plugin `{id}` trapped in configure"))?
        {
            Ok(()) => Ok(()),
            Err(errors) => Err(InstallError::Config {
                plugin: id.to_string(),
                errors,
            }),
        }
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
        let disposed = plugin.instance.dispose();
        {
            let mut core = self.core();
            core.unregister_owned_by(id);
            core.lift_all(id);
        }
        disposed.with_context(|| format!("plugin `{id}` trapped in dispose"))?;
        self.notify_registry_changed()
    }

    /// Direct access to a plugin instance, for lifecycle tests.
    pub fn plugin_mut(&mut self, id: &str) -> Result<&mut PluginInstance> {
        self.plugins
            .iter_mut()
            .find(|p| p.id == id)
            .map(|p| &mut p.instance)
            .ok_or_else(|| anyhow!("no plugin `{id}` is installed"))
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
        self.require_agent(agent)?;
        self.plugin_mut(id)?
            .explain(agent, tool)
            .with_context(|| format!("plugin `{id}` trapped in explain"))?
            .map_err(|e| anyhow!("plugin `{id}`: {e}"))
    }

    /// What each plugin adds to `agent`'s system prompt, by plugin id.
    pub fn system_prompt(&mut self, agent: &str) -> Result<Vec<(String, String)>> {
        self.require_agent(agent)?;
        let mut texts = Vec::new();
        for plugin in &mut self.plugins {
            let text = plugin
                .instance
                .system_prompt(agent)
                .with_context(|| format!("plugin `{}` trapped in system-prompt", plugin.id))?
                .map_err(|e| anyhow!("plugin `{}`: {e}", plugin.id))?;
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
        self.sync_backend()?;
        let mut views = Vec::with_capacity(self.plugins.len());
        for plugin in &mut self.plugins {
            let view = plugin
                .instance
                .visible_tools(agent)
                .with_context(|| format!("plugin `{}` trapped in visible-tools", plugin.id))?
                .map_err(|e| anyhow!("plugin `{}`: {e}", plugin.id))?;
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
    /// waterfall (native hooks, then plugins; any deny wins), check the
    /// agent's restrictions, then run it.
    ///
    /// Pre-execute runs before the restriction check so that a hook can tell
    /// the model why a hidden tool is refused and what to do instead.
    pub fn call(&mut self, agent: &str, tool: &str, arguments: &Value) -> Result<CallOutcome> {
        let outcome = self.call_checked(agent, tool, arguments)?;
        // A call may have loaded tools (a backend starts their server) or
        // changed a server's tools.
        self.sync_backend()?;
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
    /// applies the registry changes it asks for, telling plugins once.
    pub fn sync_backend(&mut self) -> Result<()> {
        let Some(backend) = self.backend.as_mut() else {
            return Ok(());
        };
        let changes = {
            let core = self.core.lock().unwrap_or_else(|e| e.into_inner());
            backend.sync(&core)
        };
        if changes.is_empty() {
            return Ok(());
        }
        {
            let mut core = self.core();
            for change in changes {
                match change {
                    RegistryChange::Register(tool) => core.register(tool)?,
                    RegistryChange::Unregister(name) => {
                        core.unregister(&name, None)?;
                    }
                    RegistryChange::Group { name, description } => {
                        core.set_group(&name, &description)
                    }
                }
            }
        }
        self.notify_registry_changed()
    }

    fn call_checked(&mut self, agent: &str, tool: &str, arguments: &Value) -> Result<CallOutcome> {
        let resolved = self.core().resolve(agent, tool)?.cloned();
        let Some(resolved) = resolved else {
            return Ok(CallOutcome::Refused(format!("unknown tool `{tool}`")));
        };
        for (name, hook) in &self.hooks {
            if let Verdict::Deny(reason) = hook(agent, tool, arguments) {
                return Ok(CallOutcome::Denied {
                    by: name.clone(),
                    reason,
                });
            }
        }
        let arguments_json = arguments.to_string();
        for plugin in &mut self.plugins {
            let verdict = plugin
                .instance
                .pre_execute(agent, tool, &arguments_json)
                .with_context(|| format!("plugin `{}` trapped in pre-execute", plugin.id))?;
            if let Verdict::Deny(reason) = verdict {
                return Ok(CallOutcome::Denied {
                    by: plugin.id.clone(),
                    reason,
                });
            }
        }
        let allowed = self
            .core()
            .effective(agent, None)?
            .iter()
            .any(|t| t.name == tool);
        if !allowed {
            return Ok(CallOutcome::Refused(format!(
                "tool `{tool}` is not available to agent `{agent}`"
            )));
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
        let plugin = self
            .plugins
            .iter_mut()
            .find(|p| p.id == owner)
            .ok_or_else(|| anyhow!("tool `{tool}` belongs to plugin `{owner}`, which is gone"))?;
        let result = plugin
            .instance
            .execute(agent, tool, &arguments_json)
            .with_context(|| format!("plugin `{owner}` trapped running `{tool}`"))?
            .map_err(|e| anyhow!("plugin `{owner}` refused to run `{tool}`: {e}"))?;
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
    /// the plugin about the agent.
    fn attach(&mut self, index: usize, agent: &str, parent: Option<&str>) -> Result<()> {
        let plugin = &mut self.plugins[index];
        {
            let mut core = self.core.lock().unwrap_or_else(|e| e.into_inner());
            for guard in &plugin.guards {
                let mut tool = guard.clone();
                tool.origin = Origin::Agent(agent.to_string());
                tool.owner = Some(plugin.id.clone());
                core.register(tool)
                    .with_context(|| format!("registering plugin `{}`'s tools", plugin.id))?;
            }
        }
        plugin
            .instance
            .agent_created(agent, parent)
            .with_context(|| format!("plugin `{}` trapped in agent-created", plugin.id))?
            .map_err(|e| anyhow!("plugin `{}` refused agent `{agent}`: {e}", plugin.id))
    }

    fn notify_registry_changed(&mut self) -> Result<()> {
        for plugin in &mut self.plugins {
            plugin
                .instance
                .registry_changed()
                .with_context(|| format!("plugin `{}` trapped in registry-changed", plugin.id))?
                .map_err(|e| anyhow!("plugin `{}`: {e}", plugin.id))?;
        }
        Ok(())
    }
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
