//! The shell's home folder (`$DSH_HOME`, default `~/.dsh`) and where each
//! thing lives in it.
//!
//! ```text
//! profiles/<name>/cordis.yml        installed plugins (rewritten by `plugin add/remove`)
//! profiles/<name>/cordis.patch.yml  the user's layer on top (never written by the harness)
//! plugins/<id>/src                  a git plugin's checkout
//! build/<id>/target                 its cargo target dir
//! components/<sha256>.wasm          built components, by content
//! cache/components/                 precompiled components (see wasm_host::cache)
//! cache.key                         the secret their entries are signed with
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

/// The home folder.
#[derive(Debug, Clone)]
pub struct DshHome {
    root: PathBuf,
}

impl DshHome {
    /// The home at `root`, made absolute: paths recorded in profiles and
    /// handed to cargo (which runs in a bundle's folder) must not depend on
    /// the folder the harness was started in.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            root: std::path::absolute(&root).unwrap_or(root),
        }
    }

    /// `$DSH_HOME`, or `~/.dsh`.
    pub fn from_env() -> Result<Self> {
        if let Some(root) = std::env::var_os("DSH_HOME").filter(|v| !v.is_empty()) {
            return Self::checked(Path::new(&root), "DSH_HOME");
        }
        let home = std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .context("neither DSH_HOME nor HOME is set: set DSH_HOME to the shell's home folder")?;
        Self::checked(&Path::new(&home).join(".dsh"), "HOME")
    }

    /// The home at `root` (from the variable `var`), refused when it cannot
    /// be made absolute or is not UTF-8: cargo takes only UTF-8 paths, and
    /// profiles record paths as text.
    fn checked(root: &Path, var: &str) -> Result<Self> {
        let shown = || crate::terminal::escape(&root.to_string_lossy()).into_owned();
        let absolute = std::path::absolute(root).with_context(|| {
            format!(
                "the shell's home {} (from {var}) cannot be made absolute",
                shown()
            )
        })?;
        if absolute.to_str().is_none() {
            bail!(
                "the shell's home {} (from {var}) is not UTF-8: plugins cannot be built or \
                 recorded there; set DSH_HOME to a folder whose path is UTF-8",
                crate::terminal::escape(&absolute.to_string_lossy())
            );
        }
        Ok(Self { root: absolute })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of profile `name`; the name must be a plain folder name.
    pub fn profile_dir(&self, name: &str) -> Result<PathBuf> {
        check_name("profile", name)?;
        Ok(self.root.join("profiles").join(name))
    }

    pub fn profiles_dir(&self) -> PathBuf {
        self.root.join("profiles")
    }

    /// Where a git plugin `id` is checked out.
    pub fn checkout_dir(&self, id: &str) -> Result<PathBuf> {
        check_name("plugin id", id)?;
        Ok(self.root.join("plugins").join(id).join("src"))
    }

    /// The plugins' folders; fresh git clones wait here (in a `.staging-*`
    /// folder) until the bundle says which plugin they hold.
    pub fn plugins_dir(&self) -> PathBuf {
        self.root.join("plugins")
    }

    /// Everything kept for plugin `id` (its checkout).
    pub fn plugin_dir(&self, id: &str) -> Result<PathBuf> {
        check_name("plugin id", id)?;
        Ok(self.root.join("plugins").join(id))
    }

    /// Everything built for plugin `id`.
    pub fn build_root(&self, id: &str) -> Result<PathBuf> {
        check_name("plugin id", id)?;
        Ok(self.root.join("build").join(id))
    }

    /// Cargo's target dir for plugin `id`: kept between installs so that
    /// adding the same plugin again does not rebuild its dependencies.
    pub fn build_dir(&self, id: &str) -> Result<PathBuf> {
        Ok(self.build_root(id)?.join("target"))
    }

    /// Built components by sha256, so that profiles pinned to different
    /// revisions of one plugin do not overwrite each other's component.
    pub fn components_dir(&self) -> PathBuf {
        self.root.join("components")
    }

    pub fn component_path(&self, sha256: &str) -> PathBuf {
        self.components_dir().join(format!("{sha256}.wasm"))
    }

    /// Precompiled components.
    pub fn compiled_cache_dir(&self) -> PathBuf {
        self.root.join("cache").join("components")
    }

    /// The secret the precompiled cache's entries are signed with: outside
    /// the cache, owner-only.
    pub fn cache_key_path(&self) -> PathBuf {
        self.root.join("cache.key")
    }

    /// The precompiled cache, signed with this home's key.
    pub fn compiled_cache(&self) -> crate::wasm_host::cache::CompiledCache {
        crate::wasm_host::cache::CompiledCache::new(
            self.compiled_cache_dir(),
            self.cache_key_path(),
        )
    }

    /// Takes the home's lock until the guard is dropped: `plugin add` and
    /// `remove` share checkouts and build dirs, so two at once would race.
    /// When another holds it, says so on `progress` once, then waits.
    pub fn lock(&self, progress: &mut dyn std::io::Write) -> Result<HomeLock> {
        std::fs::create_dir_all(&self.root)
            .with_context(|| format!("creating {}", self.root.display()))?;
        let path = self.root.join(".lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                // Best effort: the wait is the same without the note.
                let _ = writeln!(
                    progress,
                    "waiting for another plugin add or remove (lock {})",
                    crate::terminal::escape(&path.display().to_string())
                );
                file.lock()
                    .with_context(|| format!("locking {}", path.display()))?;
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        Ok(HomeLock { _file: file })
    }
}

/// Holds the home's lock; released when dropped (closing the file).
pub struct HomeLock {
    _file: File,
}

/// Profile names and plugin ids become folder names: letters, digits, `-`,
/// `_` and `.`, not starting with `.`.
pub fn check_name(what: &str, name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        bail!(
            "invalid {what} `{}`: use letters, digits, `-`, `_` and `.`, not starting with `.` \
             (it names a folder)",
            crate::terminal::escape(name)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_leave_their_folder() {
        let home = DshHome::new("/h");
        assert_eq!(
            home.profile_dir("work").unwrap(),
            Path::new("/h/profiles/work")
        );
        for bad in ["", ".", "..", "../x", "a/b", ".hidden", "a b"] {
            let err = home.profile_dir(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid profile"), "{bad:?}: {err}");
        }
        let err = home.profile_dir(".").unwrap_err().to_string();
        assert!(
            err.ends_with("not starting with `.` (it names a folder)"),
            "{err}"
        );
        assert!(home.checkout_dir("lazy-tools").is_ok());
        assert!(home.build_dir("x/../../etc").is_err());
    }

    #[test]
    fn a_relative_home_is_made_absolute() {
        let home = DshHome::new("rel/home");
        assert!(home.root().is_absolute(), "{}", home.root().display());
        assert_eq!(
            home.root(),
            std::env::current_dir().unwrap().join("rel/home")
        );
    }
}
