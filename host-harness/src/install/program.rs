//! The programs `plugin add` runs (git, cargo, rustc, rustup), by absolute
//! path. They run in the bundle's checkout, so a relative PATH entry (`.`,
//! or an empty one, which means the same) would run a `git` or `cargo` the
//! repository ships, before anything of it was checked.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Result, bail};

/// A program, looked up once in PATH's absolute entries.
pub struct Program {
    name: &'static str,
    found: OnceLock<Option<PathBuf>>,
}

pub static GIT: Program = Program::new("git");
pub static CARGO: Program = Program::new("cargo");
pub static RUSTC: Program = Program::new("rustc");
pub static RUSTUP: Program = Program::new("rustup");

impl Program {
    const fn new(name: &'static str) -> Self {
        Self {
            name,
            found: OnceLock::new(),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The program, to run in `dir`. Its children get PATH without its
    /// relative entries too: cargo runs rustc, git runs ssh, all in `dir`.
    pub fn command(&self, dir: &Path) -> Result<Command> {
        let Some(program) = self
            .found
            .get_or_init(|| find(self.name, std::env::var_os("PATH")))
        else {
            bail!(
                "`{0}` was not found in PATH (relative entries such as `.` or an empty one are \
                 skipped: {0} runs in a bundle's folder, which could ship a `{0}` of its own)",
                self.name
            );
        };
        let mut command = Command::new(program);
        command.current_dir(dir);
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", absolute_entries(&path));
        }
        Ok(command)
    }
}

/// The first executable `name` in the absolute entries of `path`. Kept as
/// found, not resolved: rustup's proxies tell which tool they are by it.
fn find(name: &str, path: Option<OsString>) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    std::env::split_paths(&path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(&file))
        .find(|candidate| is_executable(candidate))
}

/// `path` (a PATH value) without its relative entries.
fn absolute_entries(path: &std::ffi::OsStr) -> OsString {
    let absolute = std::env::split_paths(path).filter(|dir| dir.is_absolute());
    // Entries split from a PATH join back: none holds the separator.
    std::env::join_paths(absolute).unwrap_or_default()
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_path_entries_are_never_searched_nor_passed_on() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = bin.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = |entries: &[&Path]| std::env::join_paths(entries).unwrap();
        let absolute = path(&[Path::new(""), Path::new("."), Path::new("bin"), &bin]);
        assert_eq!(find("tool", Some(absolute.clone())), Some(tool));
        assert_eq!(absolute_entries(&absolute), path(&[&bin]));
        assert_eq!(find("tool", Some(path(&[Path::new("")]))), None);
        assert_eq!(find("tool", None), None);
    }
}
