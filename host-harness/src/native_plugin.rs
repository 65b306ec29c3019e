//! lazy-tools linked natively (the plugin crate as an rlib) over the same
//! shell state, as the baseline that WebAssembly figures are compared with.

use std::sync::{Arc, Mutex, MutexGuard};

use lazy_tools::LazyTools;
use lazy_tools::host::{Host, LogLevel};
use lazy_tools::registry::{Origin as PluginOrigin, ToolDef, ToolGroup};

use crate::shell::{Origin, ShellCore};

/// The plugin's `Host` over a shell core, under layer source `id`.
pub struct NativeHost {
    core: Arc<Mutex<ShellCore>>,
    id: String,
}

impl NativeHost {
    pub fn new(core: Arc<Mutex<ShellCore>>, id: &str) -> Self {
        Self {
            core,
            id: id.to_string(),
        }
    }

    fn core(&self) -> MutexGuard<'_, ShellCore> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Host for NativeHost {
    fn registry(&self) -> Vec<ToolDef> {
        self.core()
            .tools()
            .iter()
            .map(|t| ToolDef {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters_json().to_string(),
                origin: match &t.origin {
                    Origin::Builtin => PluginOrigin::Builtin,
                    Origin::Mcp(server) => PluginOrigin::Mcp(server.clone()),
                    Origin::Agent(agent) => PluginOrigin::Agent(agent.clone()),
                },
            })
            .collect()
    }

    fn allowed_tools(&self, agent: &str) -> Result<Vec<String>, String> {
        let core = self.core();
        let tools = core
            .effective(agent, Some(&self.id))
            .map_err(|e| e.to_string())?;
        Ok(tools.into_iter().map(|t| t.name.clone()).collect())
    }

    fn expose(&self, agent: &str, visible: Option<&[String]>) -> Result<(), String> {
        self.core()
            .expose(agent, &self.id, visible.map(<[String]>::to_vec))
            .map_err(|e| e.to_string())
    }

    fn log(&self, _level: LogLevel, message: &str) {
        tracing::debug!(plugin = %self.id, "{message}");
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

    fn tools_generation(&self) -> u64 {
        self.core().generation()
    }

    fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>> {
        let tokenizer = self.core().token_counter()?;
        Some(texts.iter().map(|t| tokenizer.count(t)).collect())
    }
}

/// lazy-tools running natively over `core`.
pub fn native_lazy_tools(core: Arc<Mutex<ShellCore>>, id: &str) -> LazyTools<NativeHost> {
    LazyTools::new(NativeHost::new(core, id))
}
