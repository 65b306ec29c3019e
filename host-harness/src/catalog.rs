//! MCP tool catalogs in the `shared/catalogs/*.json` format:
//! `{"servers": [{"name", "description", "tools": [MCP Tool objects]}]}`.
//!
//! The shell registers an MCP tool as `<server>__<tool>`: tool names repeat
//! across servers, model APIs want names of `[A-Za-z0-9_-]`, and a server
//! prefix lets a profile defer a whole server with one pattern.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde::Deserialize;
use serde_json::Value;

use crate::tool::{Origin, SearchText, Tool};

#[derive(Debug, Clone, Deserialize)]
pub struct Catalog {
    pub servers: Vec<Server>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Server {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub category: Option<String>,
    pub tools: Vec<McpTool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct McpTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema", default = "empty_schema")]
    pub input_schema: Value,
    /// Search text beyond the definition: `{"keywords": [...], "examples": [...],
    /// "descriptions": [...]}`, each optional.
    #[serde(rename = "x-lazy-tools", default)]
    pub search_text: Option<SearchText>,
}

fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl Catalog {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the catalog {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing the catalog {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Self> {
        let catalog: Catalog = serde_json::from_str(text)?;
        Ok(catalog)
    }

    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.tools.len()).sum()
    }

    /// Every tool as the shell registers it, with its catalog id
    /// (`server/tool`), in catalog order.
    pub fn tools(&self) -> impl Iterator<Item = (String, Tool)> + '_ {
        self.servers.iter().flat_map(|server| {
            server.tools.iter().map(move |tool| {
                let id = format!("{}/{}", server.name, tool.name);
                let registered = Tool::new(
                    shell_name(&server.name, &tool.name),
                    tool.description.clone(),
                    Origin::Mcp(server.name.clone()),
                )
                .with_parameters(tool.input_schema.clone())
                .with_search_text(tool.search_text.clone());
                (id, registered)
            })
        })
    }
}

/// The name the shell gives tool `tool` of MCP server `server`.
pub fn shell_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!("{}__{}", clean(server), clean(tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_qualified_and_clean() {
        assert_eq!(shell_name("github", "create_issue"), "github__create_issue");
        assert_eq!(
            shell_name("Ant Design Components", "list.all"),
            "Ant-Design-Components__list-all"
        );
    }

    #[test]
    fn parses_the_shared_format() {
        let catalog = Catalog::parse(
            r#"{"servers": [{"name": "s", "description": "d", "tools": [
                {"name": "t", "description": "x", "inputSchema": {"type": "object"}},
                {"name": "u"}]}]}"#,
        )
        .unwrap();
        let tools: Vec<_> = catalog.tools().collect();
        assert_eq!(tools[0].0, "s/t");
        assert_eq!(tools[1].1.name, "s__u");
        assert_eq!(tools[1].1.origin, Origin::Mcp("s".into()));
    }
}
