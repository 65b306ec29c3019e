//! lazy-tools' `tool_search` as the model calls it: inside the real component on wasmtime,
//! through the shell, with every catalog tool deferred so that all of them compete.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::shell::{CallOutcome, Shell};
use crate::wasm_host::WasmHost;

pub const PLUGIN: &str = "lazy-tools";

pub struct ComponentSearch {
    shell: Shell,
    /// Catalog id by registered name.
    ids: HashMap<String, String>,
    agents_created: usize,
}

/// What one `tool_search` call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// Catalog ids (registered names for tools outside the catalog), in the result's order.
    Ranking(Vec<String>),
    /// An error result, with the text the model would read, or the shell's refusal.
    Refused(String),
}

/// lazy-tools' profile entry in the search benches: every tool deferred.
pub fn defer_all() -> Value {
    json!({"defer": ["Defer(*)"]})
}

impl ComponentSearch {
    /// A shell with `catalog` registered and lazy-tools deferring every tool.
    pub fn new(catalog: &Catalog) -> Result<Self> {
        Self::with_component(catalog, None)
    }

    /// [`ComponentSearch::new`] with the lazy-tools component at `path` (another build of
    /// it, to compare) instead of the one built with this harness.
    pub fn with_component(catalog: &Catalog, path: Option<&Path>) -> Result<Self> {
        Self::with_config(catalog, path, &defer_all())
    }

    /// [`ComponentSearch::with_component`] with lazy-tools configured by `config` (its
    /// profile entry) instead of deferring every tool.
    pub fn with_config(catalog: &Catalog, path: Option<&Path>, config: &Value) -> Result<Self> {
        let mut shell = Shell::new();
        shell.register_catalog(catalog)?;
        let component = match path {
            Some(path) => WasmHost::global()
                .load(path)
                .with_context(|| format!("loading {}", path.display()))?,
            None => WasmHost::global().lazy_tools()?,
        };
        shell
            .install_plugin(PLUGIN, &component, config)
            .context("installing lazy-tools")?;
        let ids = catalog.tools().map(|(id, tool)| (tool.name, id)).collect();
        Ok(Self {
            shell,
            ids,
            agents_created: 0,
        })
    }

    /// One `tool_search` call with `arguments`, by a fresh agent (nothing loaded yet), as the
    /// model would make it.
    pub fn call(&mut self, arguments: &Value) -> Result<Found> {
        let agent = self
            .shell
            .create_agent(&format!("agent-{}", self.agents_created), None)?;
        self.agents_created += 1;
        let outcome = self.shell.call(&agent, "tool_search", arguments);
        self.shell.dispose_agent(&agent)?;
        let output = match outcome? {
            CallOutcome::Completed(output) => output,
            // The shell's refusal (arguments past its bound): the query's, as a plugin's error
            // result is, not the bench's.
            other => return Ok(Found::Refused(format!("the shell did not run it: {other}"))),
        };
        if output.is_error {
            return Ok(Found::Refused(output.text));
        }
        let matches = output.json["matches"]
            .as_array()
            .context("tool_search returned no `matches`")?;
        Ok(Found::Ranking(
            matches
                .iter()
                .filter_map(|m| m["name"].as_str())
                .map(|name| {
                    self.ids
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| name.to_string())
                })
                .collect(),
        ))
    }

    /// `query`'s ranking, `top_k` long at most.
    pub fn search(&mut self, query: &str, top_k: usize) -> Result<Found> {
        self.call(&json!({"queries": [query], "top_k": top_k}))
    }

    pub fn shell_mut(&mut self) -> &mut Shell {
        &mut self.shell
    }
}
