//! The last `tools/list` of each server, kept in `$DSH_HOME/cache/mcp/` by
//! server name and a hash of its launch config, so that a lazy server's
//! tools can be registered (and searched) without starting it.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use super::config::ServerConfig;
use crate::atomic_write::write_atomic;
use crate::catalog::McpTool;

/// Larger files are not trusted as a cache (a real server lists far less).
const MAX_CACHE_BYTES: u64 = 16 * 1024 * 1024;
/// The most tools the harness takes from a server, live or cached.
pub const MAX_TOOLS: usize = 10_000;
/// The most entries of a listing said left out one by one; the rest are counted.
pub const MAX_LEFT_OUT_SAID: usize = 10;
/// The most characters of a tool's name a message quotes.
const NAME_QUOTE_CHARS: usize = 80;

/// Why a listing of `count` tools is more than the harness takes.
pub fn too_many(count: usize) -> Option<String> {
    (count > MAX_TOOLS).then(|| format!("{count} tools; at most {MAX_TOOLS}"))
}

/// The names of a listing's entries so far, by the first entry that had each: an entry that
/// names no tool, or a tool listed before, cannot be one.
#[derive(Default)]
pub struct Names(std::collections::HashMap<String, usize>);

impl Names {
    /// Takes entry `at`'s `name`, or says why it cannot be a tool (`has an empty name`,
    /// `is named ..., as tool N is`).
    pub fn take(&mut self, at: usize, name: &str) -> Result<(), String> {
        if name.is_empty() {
            return Err("has an empty name".into());
        }
        if let Some(first) = self.0.get(name) {
            let name = super::cut(name, NAME_QUOTE_CHARS);
            return Err(format!("is named `{name}`, as tool {first} is"));
        }
        self.0.insert(name.to_string(), at);
        Ok(())
    }
}

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
    /// The entries left out past the first [`MAX_LEFT_OUT_SAID`], counted (a server may list
    /// one name thousands of times).
    #[serde(skip)]
    pub left_out_more: usize,
}

impl Listing {
    /// Why the harness would not take this listing from a server: more than [`MAX_TOOLS`]
    /// tools, or a tool with no name or a name listed before.
    fn refused(&self) -> Option<String> {
        if let Some(why) = too_many(self.tools.len()) {
            return Some(why);
        }
        let mut names = Names::default();
        self.tools.iter().enumerate().find_map(|(at, tool)| {
            let why = names.take(at, &tool.name).err()?;
            Some(format!("tool {at} {why}"))
        })
    }
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
    /// (a broken cache only costs a start). Read from a regular file only:
    /// anything else at its path (a FIFO) would hang the session.
    pub fn get(&self, server: &ServerConfig) -> Option<Listing> {
        let path = self.path(server);
        let text = match crate::bounded::read(&path, MAX_CACHE_BYTES, "a cached MCP listing") {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("ignoring the MCP cache {}: {e}", path.display());
                return None;
            }
        };
        let listing: Listing = match serde_json::from_slice(&text) {
            Ok(listing) => listing,
            Err(e) => {
                tracing::warn!("ignoring the unreadable MCP cache {}: {e}", path.display());
                return None;
            }
        };
        // The harness never writes such a file: it was edited, or written by something else.
        // It would register what a live listing may not (and a huge count makes plugins that
        // index the tools run out of time).
        match listing.refused() {
            Some(why) => {
                tracing::warn!(
                    "ignoring the MCP cache {}: {why}, which the harness does not take from a server; the \
                     server starts to list its tools",
                    path.display()
                );
                None
            }
            None => Some(listing),
        }
    }

    /// Keeps `listing` for `server`'s launch. A listing larger than `get`
    /// reads is refused (and an older one removed, as it no longer says what
    /// the server lists): the caller warns that the server will start with
    /// every session to list its tools.
    pub fn put(&self, server: &ServerConfig, listing: &Listing) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let path = self.path(server);
        let bytes = serde_json::to_vec_pretty(listing)?;
        if bytes.len() as u64 > MAX_CACHE_BYTES {
            let _ = std::fs::remove_file(&path);
            bail!(
                "its listing takes {} bytes, more than the {} MiB a cached listing may; the \
                 server will start with every session to list its tools",
                bytes.len(),
                MAX_CACHE_BYTES >> 20
            );
        }
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
            left_out_more: 0,
        };
        cache.put(&server, &listing).unwrap();
        let kept = Listing {
            left_out: Vec::new(),
            left_out_more: 0,
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

    #[test]
    fn a_listing_too_large_to_read_back_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ListingCache::new(dir.path());
        let server = ServerConfig::stdio("s", "node", &["a.js"]);
        let small = Listing {
            description: "s".into(),
            tools: Vec::new(),
            left_out: Vec::new(),
            left_out_more: 0,
        };
        cache.put(&server, &small).unwrap();
        let large = Listing {
            description: "x".repeat(MAX_CACHE_BYTES as usize),
            ..small
        };
        let err = cache.put(&server, &large).unwrap_err().to_string();
        assert!(
            err.contains("more than the 16 MiB a cached listing may; the server will start"),
            "{err}"
        );
        assert!(
            !cache.path(&server).exists(),
            "the older, smaller listing is stale and must go"
        );
    }

    #[test]
    fn a_fifo_in_the_cache_is_no_listing_and_does_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ListingCache::new(dir.path());
        let server = ServerConfig::stdio("s", "node", &["a.js"]);
        let status = std::process::Command::new("mkfifo")
            .arg(cache.path(&server))
            .status()
            .unwrap();
        assert!(status.success());
        // On a thread: a read that waits for a writer must fail the test, not hang it.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || sender.send(cache.get(&server)));
        let got = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading a FIFO in the cache hung");
        assert_eq!(got, None);
    }
}
