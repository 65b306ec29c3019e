//! The last `tools/list` of each server, kept in `$DSH_HOME/cache/mcp/` by
//! server name and a hash of its launch config, so that a lazy server's
//! tools can be registered (and searched) without starting it.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::config::ServerConfig;
use crate::atomic_write::write_atomic;
use crate::catalog::McpTool;

/// Larger files are not trusted as a cache (a real server lists far less).
const MAX_CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// What a server said about itself when it last started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    /// Its instructions, or its name: the group description.
    pub description: String,
    pub tools: Vec<CachedTool>,
    /// The entries of its `tools/list` the shell left out, and why, a line each (a tool with
    /// no name, or a name listed again). Not cached: the cache holds what was kept.
    #[serde(skip)]
    pub left_out: Vec<String>,
}

/// One MCP tool, as `tools/list` gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: serde_json::Value,
}

impl From<CachedTool> for McpTool {
    fn from(tool: CachedTool) -> Self {
        McpTool {
            name: tool.name,
            description: tool.description,
            input_schema: tool.input_schema,
            search_text: None,
        }
    }
}

/// The cache folder.
#[derive(Debug, Clone)]
pub struct ListingCache {
    dir: PathBuf,
}

impl ListingCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `<home>/cache/mcp`.
    pub fn in_home(home: &Path) -> Self {
        Self::new(home.join("cache").join("mcp"))
    }

    pub fn path(&self, server: &ServerConfig) -> PathBuf {
        // The name is checked by the config (letters, digits, `-`, `_`).
        self.dir
            .join(format!("{}-{}.json", server.name, server.launch_hash()))
    }

    /// The cached listing; `None` when there is none or it cannot be read
    /// (a broken cache only costs a start).
    pub fn get(&self, server: &ServerConfig) -> Option<Listing> {
        let path = self.path(server);
        let size = std::fs::metadata(&path).ok()?.len();
        if size > MAX_CACHE_BYTES {
            return None;
        }
        let text = std::fs::read(&path).ok()?;
        match serde_json::from_slice(&text) {
            Ok(listing) => Some(listing),
            Err(e) => {
                tracing::warn!("ignoring the unreadable MCP cache {}: {e}", path.display());
                None
            }
        }
    }

    pub fn put(&self, server: &ServerConfig, listing: &Listing) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let path = self.path(server);
        let bytes = serde_json::to_vec_pretty(listing)?;
        write_atomic(&path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_round_trip_by_launch() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ListingCache::new(dir.path());
        let server = ServerConfig::stdio("s", "node", &["a.js"]);
        assert_eq!(cache.get(&server), None);
        let listing = Listing {
            description: "s".into(),
            tools: vec![CachedTool {
                name: "t".into(),
                description: "d".into(),
                input_schema: serde_json::json!({"type": "object"}),
            }],
            left_out: vec!["tool 1 of its tools/list has an empty name".into()],
        };
        cache.put(&server, &listing).unwrap();
        let kept = Listing {
            left_out: Vec::new(),
            ..listing
        };
        assert_eq!(
            cache.get(&server),
            Some(kept),
            "what was left out is said once"
        );
        let moved = ServerConfig::stdio("s", "node", &["b.js"]);
        assert_eq!(cache.get(&moved), None, "another launch has no listing yet");
        std::fs::write(cache.path(&server), "{").unwrap();
        assert_eq!(cache.get(&server), None, "a broken file is no listing");
    }
}
