//! The reference MCP servers from npm, pinned by the lock files in
//! `tests/mcp-servers/` (three for tests and the live demo; `six/` adds
//! github, puppeteer and playwright for the startup measurement), installed
//! with `npm ci` into a folder of the target dir on first use.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use super::config::{Launch, ServerConfig};

/// Which set of servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// everything, filesystem, memory.
    Three,
    /// The six of `catalogs/reference-servers.json`.
    Six,
}

impl Set {
    fn lock_dir(self) -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-servers");
        match self {
            Set::Three => root,
            Set::Six => root.join("six"),
        }
    }

    fn folder(self) -> &'static str {
        match self {
            Set::Three => "mcp-servers",
            Set::Six => "mcp-servers-six",
        }
    }
}

/// `<target>/mcp-servers` (or `-six`) next to this binary's target dir.
pub fn default_dir(set: Set) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    dir_in(&target, set)
}

/// Where `set` is installed in the target dir `target`.
pub fn dir_in(target: &Path, set: Set) -> PathBuf {
    target.join(set.folder())
}

/// Installs `set` into `dir` with `npm ci` unless the same lock file is
/// installed there already; returns `dir`.
pub fn install(set: Set, dir: &Path) -> Result<PathBuf> {
    let source = set.lock_dir();
    let lock = std::fs::read(source.join("package-lock.json"))
        .with_context(|| format!("reading the lock file in {}", source.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // One install at a time in a folder (two test binaries sharing the target dir, a demo
    // started by hand): two `npm ci` at once would break it. Unlocked when dropped.
    let busy = dir.join(".install-lock");
    let installing = std::fs::File::create(&busy)
        .and_then(|file| file.lock().map(|()| file))
        .with_context(|| format!("locking {}", busy.display()))?;
    let installed = std::fs::read(dir.join("package-lock.json")).ok();
    if installed.as_deref() == Some(&lock[..]) && dir.join("node_modules/.bin").is_dir() {
        return Ok(dir.to_path_buf());
    }
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(source.join(file), dir.join(file))
            .with_context(|| format!("copying {file} into {}", dir.display()))?;
    }
    eprintln!(
        "installing the reference MCP servers: npm ci in {}",
        dir.display()
    );
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        // No browser downloads: the measurement lists tools, it browses nothing.
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .current_dir(dir)
        .status()
        .context("running npm (Node.js and npm must be installed)")?;
    if !status.success() {
        // A half-installed folder must not pass for an installed one.
        let _ = std::fs::remove_file(dir.join("package-lock.json"));
        bail!("npm ci in {} failed ({status})", dir.display());
    }
    drop(installing);
    Ok(dir.to_path_buf())
}

/// A server from `dir`'s `node_modules/.bin`.
pub fn server(dir: &Path, name: &str, bin: &str, args: &[&str]) -> ServerConfig {
    let path = dir.join("node_modules/.bin").join(bin);
    ServerConfig::stdio(name, &path.to_string_lossy(), args)
}

/// everything, filesystem (allowed `files`) and memory (stored in
/// `memory_file`).
pub fn three(dir: &Path, files: &Path, memory_file: &Path) -> Vec<ServerConfig> {
    let mut memory = server(dir, "memory", "mcp-server-memory", &[]);
    if let Launch::Stdio { env, .. } = &mut memory.launch {
        env.insert(
            "MEMORY_FILE_PATH".into(),
            memory_file.to_string_lossy().into_owned(),
        );
    }
    vec![
        server(dir, "everything", "mcp-server-everything", &[]),
        server(
            dir,
            "filesystem",
            "mcp-server-filesystem",
            &[&files.to_string_lossy()],
        ),
        memory,
    ]
}

/// The six servers of `catalogs/reference-servers.json`.
pub fn six(dir: &Path, files: &Path, memory_file: &Path) -> Vec<ServerConfig> {
    let mut servers = three(dir, files, memory_file);
    servers.push(server(dir, "github", "mcp-server-github", &[]));
    servers.push(server(dir, "puppeteer", "mcp-server-puppeteer", &[]));
    servers.push(server(
        dir,
        "playwright",
        "playwright-mcp",
        &["--caps", "all"],
    ));
    servers
}
