//! Arguments that several commands take, with one meaning everywhere.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::home::DshHome;

/// `--profile <NAME>`: which profile of `$DSH_HOME` a command works on.
#[derive(clap::Args, Debug, Clone)]
pub struct ProfileArg {
    /// The profile: the folder `$DSH_HOME/profiles/<NAME>` (`DSH_HOME`
    /// defaults to `~/.dsh`), holding its plugins (`cordis.yml`), your patch
    /// (`cordis.patch.yml`) and MCP servers (`mcp.yml`).
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub profile: String,
}

impl ProfileArg {
    /// The profile's folder (which may not exist yet).
    pub fn dir(&self, home: &DshHome) -> Result<PathBuf> {
        home.profile_dir(&self.profile)
    }
}

/// `--catalog <FILE>`: the MCP catalog whose tools the shell registers.
#[derive(clap::Args, Debug, Clone)]
pub struct CatalogArg {
    /// An MCP tool catalog (the `catalogs/*.json` format: servers with their
    /// `tools/list`) whose tools the shell registers as `<server>__<tool>`
    /// [default: the bundled catalogs/livemcpbench.json, 527 tools].
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

impl CatalogArg {
    /// The catalog given, else the bundled one.
    pub fn path(&self) -> PathBuf {
        self.catalog.clone().unwrap_or_else(bundled_catalog)
    }
}

/// The catalog used when none is given: 70 real MCP servers, 527 tools.
pub fn bundled_catalog() -> PathBuf {
    repository_root().join(BUNDLED_CATALOGS[0])
}

/// Every bundled catalog: the one above, and the `tools/list` of six npm reference servers.
/// The benchmarks that generate a large registry draw on both.
pub fn bundled_catalogs() -> Vec<PathBuf> {
    let root = repository_root();
    BUNDLED_CATALOGS
        .iter()
        .map(|path| root.join(path))
        .collect()
}

const BUNDLED_CATALOGS: [&str; 2] = [
    "catalogs/livemcpbench.json",
    "catalogs/reference-servers.json",
];

/// The checkout this binary was built from (bundled catalogs and query sets live there).
pub fn repository_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
