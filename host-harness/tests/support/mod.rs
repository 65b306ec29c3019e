//! Shared by the fixture runners.

use std::path::{Path, PathBuf};

/// The fixture folders under `root`, sorted by name.
pub fn fixture_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("reading {}: {e}", root.display()))
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}
