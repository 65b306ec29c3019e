//! `plugin add` and `plugin remove`, the way the shell's plugin command does
//! them: fetch the bundle (shallow git clone, or a linked folder), read its
//! manifest (`cordis.patch.yml`: `- insert: [{id, name, config}]`), build
//! each inserted plugin's component with cargo, check that it runs with its
//! config, and record it in the profile's `cordis.yml`.

pub mod cargo_build;
pub mod cargo_env;
pub mod git;
pub mod program;
pub mod wasm_target;
pub use crate::source;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use sha2::{Digest, Sha256};

use crate::atomic_write::write_atomic;
use crate::home::DshHome;
use crate::profile::rows::{Layer, PatchLayer, PluginRow};
use crate::profile::{
    PATCH_FILE, Problems, Profile, ProfileError, config_problems, load_patch_file, store,
};
use crate::shell::{InstallError, Shell};
use crate::source::{Source, SourceError, same_git_url};
use crate::terminal::escape;
use crate::wasm_host::cache::CompiledCache;
use crate::wasm_host::{LoadedFrom, WasmHost, hex};
use lazy_tools::suggest::did_you_mean;

/// What `add` did to one plugin row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Replaced,
    /// The same source, revision, component and config were installed.
    Unchanged,
}

#[derive(Debug, Clone)]
pub struct Added {
    pub row: PluginRow,
    pub change: Change,
}

/// Installs every plugin the bundle at `source` inserts into `profile`
/// (creating the profile if needed). Adding the same bundle again rebuilds
/// nothing that did not change and leaves the profile as it was.
pub fn add(
    home: &DshHome,
    profile: &str,
    source: &str,
    progress: &mut dyn Write,
) -> Result<Vec<Added>> {
    let source = Source::parse(source)?;
    let dir = home.profile_dir(profile)?;
    let _lock = home.lock(progress)?;
    remove_stale_staging(home, progress);
    // A broken cordis.yml is never rewritten: the user fixes it first.
    let mut rows = Profile::load_installed(&dir).map_err(|e| invalid(profile, e))?;
    // Nor is it rewritten past a broken cordis.patch.yml: `add` could not see which ids the
    // user's layer inserts, and would list one twice.
    let patch = Profile::load_patch(&dir).map_err(|e| {
        anyhow!("profile `{profile}`'s {PATCH_FILE} has problems; fix them first:\n{e}")
    })?;

    let fetched = fetch(home, &source, progress)?;
    let manifest_path = fetched.dir.join(PATCH_FILE);
    // Not followed: a link could point out of the bundle, at any file of the user's.
    match std::fs::symlink_metadata(&manifest_path) {
        Ok(meta) if meta.is_symlink() => bail!(
            "{source}'s {PATCH_FILE} is a symbolic link; a bundle's manifest must be a file in \
             the bundle"
        ),
        Ok(meta) if meta.is_file() => {}
        _ => bail!(
            "{source} is not a plugin bundle: it has no {PATCH_FILE} (expected `- insert: [{{id, name}}]`)"
        ),
    }
    let shown = match &source {
        Source::Git { url, .. } => PathBuf::from(format!("{url}/{PATCH_FILE}")),
        Source::Link { .. } => manifest_path.clone(),
    };
    let manifest = load_patch_file(&manifest_path, &shown, Layer::Bundle)
        .map_err(|e| anyhow!("the bundle's manifest is not valid:\n{e}"))?;
    if manifest.inserts.is_empty() {
        bail!(
            "the bundle's manifest {} inserts no plugin",
            shown.display()
        );
    }
    // An id the user's layer already inserts would be listed twice.
    for insert in &manifest.inserts {
        if let Some(mine) = patch.inserts.iter().find(|r| r.id == insert.id) {
            bail!(
                "your {PATCH_FILE} already inserts a plugin `{}` at {}; remove that row to \
                 install the bundle's",
                insert.id,
                mine.place
            );
        }
    }
    // An id installed from elsewhere is not taken over: settling would replace its checkout
    // before this bundle is even built, and this profile's row would be replaced without a
    // word. In another profile only another repository's checkout is at stake (a checkout is
    // the home's, one per id; a linked folder has none): a profile that cannot be read is
    // passed over, and `Fetched::settle` still keeps its checkout.
    let mut installed = vec![(profile.to_string(), rows.clone())];
    if let Source::Git { .. } = &source {
        for (name, other) in profile_dirs(home)? {
            if name == profile {
                continue;
            }
            if let Ok(rows) = Profile::load_installed(&other) {
                let git = |r: &PluginRow| {
                    matches!(
                        r.source.as_deref().map(Source::parse),
                        Some(Ok(Source::Git { .. }))
                    )
                };
                installed.push((name, rows.into_iter().filter(git).collect()));
            }
        }
    }
    for insert in &manifest.inserts {
        let found = installed.iter().find_map(|(owner, rows)| {
            rows.iter()
                .find(|r| {
                    r.id == insert.id && !same_source(r.source.as_deref(), &source, &fetched.dir)
                })
                .map(|row| (owner, row))
        });
        if let Some((owner, row)) = found {
            let from = match &row.source {
                Some(recorded) => format!("from {}", escape(recorded)),
                None => "with no recorded source".into(),
            };
            let here = if owner == profile {
                String::new()
            } else {
                format!(" in profile `{owner}`")
            };
            bail!(
                "plugin `{id}` is already installed{here} {from} (at {}), not from this bundle; \
                 to install this one instead, run `host-harness plugin --profile {owner} remove \
                 {id}` first",
                row.place,
                id = insert.id,
            );
        }
    }
    // What this add creates for a plugin not installed here is deleted
    // again if it fails: no row would ever lead `remove` to it.
    let mut created = Vec::new();
    for insert in &manifest.inserts {
        if rows.iter().any(|r| r.id == insert.id) {
            continue;
        }
        for dir in [home.plugin_dir(&insert.id)?, home.build_root(&insert.id)?] {
            if !dir.exists() {
                created.push(dir);
            }
        }
    }
    // And the components it keeps that were not kept before: no row would name them either.
    let mut stored = Vec::new();
    let result = install_fetched(
        home,
        profile,
        &dir,
        Install {
            source: &source,
            fetched,
            manifest: &manifest,
        },
        &mut rows,
        &mut stored,
        progress,
    );
    if result.is_err() {
        for sha256 in &stored {
            forget_component(home, sha256, progress);
        }
        for dir in created.iter().filter(|d| d.exists()) {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                let _ = writeln!(
                    progress,
                    "warning: could not delete {}: {e}",
                    self::shown(dir)
                );
            }
        }
    }
    result
}

/// Deletes the `.staging-*` folders of adds that were interrupted: with the
/// home's lock held, no other add is using one. Best effort.
fn remove_stale_staging(home: &DshHome, progress: &mut dyn Write) {
    let Ok(entries) = std::fs::read_dir(home.plugins_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(".staging-") {
            continue;
        }
        if let Err(e) = std::fs::remove_dir_all(entry.path()) {
            let _ = writeln!(
                progress,
                "warning: could not delete {}: {e}",
                shown(&entry.path())
            );
        }
    }
}

/// What one `add` installs: the bundle fetched from `source`, and its manifest.
struct Install<'a> {
    source: &'a Source,
    fetched: Fetched,
    manifest: &'a PatchLayer,
}

/// The rest of `add`, once the bundle is fetched and checked: builds each
/// plugin it inserts and records them in `rows` and the profile at `dir`.
/// `stored` gets the sha256 of each component it keeps that was not kept before.
fn install_fetched(
    home: &DshHome,
    profile: &str,
    dir: &Path,
    install: Install<'_>,
    rows: &mut Vec<PluginRow>,
    stored: &mut Vec<String>,
    progress: &mut dyn Write,
) -> Result<Vec<Added>> {
    let Install {
        source,
        fetched,
        manifest,
    } = install;
    let first = &manifest.inserts[0];
    let revision = fetched.revision.clone();
    let source_dir = fetched.settle(home, &first.id)?;

    cargo_build::ensure_target(&source_dir, progress)?;
    let cache = home.compiled_cache();
    let mut added = Vec::new();
    for insert in &manifest.inserts {
        let bundle = Bundle {
            source,
            dir: &source_dir,
            revision: revision.clone(),
        };
        let row = build_row(home, bundle, insert, &cache, stored, progress).with_context(|| {
            format!(
                "installing plugin `{}` (package `{}`, inserted at {})",
                insert.id, insert.name, insert.place
            )
        })?;
        let change = match rows.iter_mut().find(|r| r.id == row.id) {
            Some(old) if same_install(old, &row) => Change::Unchanged,
            Some(old) => {
                *old = row.clone();
                Change::Replaced
            }
            None => {
                rows.push(row.clone());
                Change::Added
            }
        };
        added.push(Added { row, change });
    }
    if added.iter().any(|a| a.change != Change::Unchanged) {
        store::write_installed(dir, profile, rows)?;
    }
    store::create_patch_file(dir, profile)?;
    Ok(added)
}

/// Removes plugin `id` from `profile`'s `cordis.yml`, and the files only it
/// used (checkout, build dir, component, precompiled component) when no
/// profile in the home still lists them.
pub fn remove(
    home: &DshHome,
    profile: &str,
    id: &str,
    progress: &mut dyn Write,
) -> Result<PluginRow> {
    let dir = existing_profile_dir(home, profile)?;
    let _lock = home.lock(progress)?;
    let mut rows = Profile::load_installed(&dir).map_err(|e| invalid(profile, e))?;
    // A broken patch file does not stop a remove (it rewrites only cordis.yml), but the user
    // hears that its rows naming the plugin went unchecked.
    let patch = match Profile::load_patch(&dir) {
        Ok(patch) => Some(patch),
        Err(e) => {
            writeln!(
                progress,
                "warning: your {PATCH_FILE} cannot be read, so its rows naming `{}` were not \
                 checked:\n{e}",
                escape(id)
            )?;
            None
        }
    };
    let Some(index) = rows.iter().position(|r| r.id == id) else {
        if let Some(row) = patch
            .as_ref()
            .and_then(|p| p.inserts.iter().find(|r| r.id == id))
        {
            bail!(
                "plugin `{id}` is inserted by your {PATCH_FILE} at {}; remove that row yourself \
                 (host-harness never writes {PATCH_FILE})",
                row.place
            );
        }
        let installed: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        bail!(
            "profile `{profile}` has no plugin `{id}`{}{}",
            did_you_mean(id, installed.iter().copied()),
            if installed.is_empty() {
                String::new()
            } else {
                format!(" (installed: {})", installed.join(", "))
            }
        );
    };
    let removed = rows.remove(index);
    store::write_installed(&dir, profile, &rows)?;
    for change in patch.iter().flat_map(|p| &p.changes).filter(|c| c.id == id) {
        writeln!(
            progress,
            "note: {}: this row of your {PATCH_FILE} still names `{id}`; it changes nothing now",
            change.place
        )?;
    }
    for path in unused_files(home, &removed)? {
        let result = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match result {
            Ok(()) => writeln!(progress, "deleted {}", shown(&path))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => writeln!(progress, "warning: could not delete {}: {e}", shown(&path))?,
        }
    }
    Ok(removed)
}

/// The profile's folder, which must exist.
pub fn existing_profile_dir(home: &DshHome, profile: &str) -> Result<PathBuf> {
    let dir = home.profile_dir(profile)?;
    if !dir.is_dir() {
        bail!(
            "profile `{profile}` does not exist (no folder {}); create it with \
             `host-harness plugin --profile {profile} add <source>`",
            dir.display()
        );
    }
    Ok(dir)
}

/// A profile error as the user reads it.
pub fn invalid(profile: &str, error: ProfileError) -> anyhow::Error {
    match error {
        ProfileError::Invalid(problems) => {
            anyhow!("profile `{profile}` is not valid:\n{problems}")
        }
        other => anyhow::Error::new(other),
    }
}

/// A fetched bundle, before it has its final place.
struct Fetched {
    dir: PathBuf,
    /// The URL a git checkout was fetched from.
    url: Option<String>,
    revision: Option<String>,
    /// A fresh clone waiting for the id that names its folder.
    staging: Option<tempfile::TempDir>,
    /// Whether `dir` is a managed checkout (git) rather than the user's
    /// folder (link).
    managed: bool,
}

impl Fetched {
    /// Moves a git checkout to `plugins/<id>/src` (named by the bundle's
    /// first plugin) and returns where the bundle now is.
    fn settle(self, home: &DshHome, id: &str) -> Result<PathBuf> {
        if !self.managed {
            return Ok(self.dir);
        }
        let target = home.checkout_dir(id)?;
        if self.dir == target {
            return Ok(target);
        }
        // Another repository's checkout (a profile `add` could not read may use it) is not
        // replaced; one whose origin cannot be read is a broken leftover, and is.
        if let Some(origin) = git::origin(&target)
            && !self
                .url
                .as_deref()
                .is_some_and(|url| same_git_url(&origin, url))
        {
            bail!(
                "{} is the checkout of {}, which this add would replace; remove plugin `{id}` \
                 from the profile that installed it, or delete that folder if none does",
                shown(&target),
                escape(&origin)
            );
        }
        if target.exists() {
            std::fs::remove_dir_all(&target)
                .with_context(|| format!("removing the old checkout {}", target.display()))?;
        }
        let parent = target.parent().expect("a checkout has a parent folder");
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        std::fs::rename(&self.dir, &target).with_context(|| {
            format!(
                "moving the checkout {} to {}",
                self.dir.display(),
                target.display()
            )
        })?;
        // The checkout moved out of the staging folder; dropping it deletes
        // the now empty folder.
        drop(self.staging);
        Ok(target)
    }
}

/// The checkout under `plugins/` whose origin is `url`, if any.
fn git_checkout_of(home: &DshHome, url: &str) -> Result<Option<PathBuf>> {
    let plugins = home.plugins_dir();
    let entries = match std::fs::read_dir(&plugins) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", plugins.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", plugins.display()))?;
        let name = entry.file_name();
        // A folder that no plugin id names (`old copy`, a staging folder) holds no checkout
        // of ours: passed over, not an error of this add.
        let Some(dir) = name.to_str().and_then(|id| home.checkout_dir(id).ok()) else {
            continue;
        };
        if git::origin(&dir).is_some_and(|origin| same_git_url(&origin, url)) {
            return Ok(Some(dir));
        }
    }
    Ok(None)
}

fn fetch(home: &DshHome, source: &Source, progress: &mut dyn Write) -> Result<Fetched> {
    match source {
        Source::Git { url, rev } => {
            // An existing checkout of the same URL is updated in place (cargo
            // then rebuilds only what changed).
            let existing = git_checkout_of(home, url)?;
            let (dir, staging) = match existing {
                Some(dir) => (dir, None),
                None => {
                    let parent = home.plugins_dir();
                    std::fs::create_dir_all(&parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                    let staging = tempfile::Builder::new()
                        .prefix(".staging-")
                        .tempdir_in(&parent)
                        .with_context(|| format!("creating a folder in {}", parent.display()))?;
                    (staging.path().join("src"), Some(staging))
                }
            };
            writeln!(
                progress,
                "fetching {}{} (shallow)",
                escape(url),
                rev.as_deref()
                    .map(|r| format!(" at {}", escape(r)))
                    .unwrap_or_default()
            )?;
            let commit = git::checkout(url, rev.as_deref(), &dir)?;
            writeln!(progress, "checked out {}", escape(&commit))?;
            Ok(Fetched {
                dir,
                url: Some(url.clone()),
                revision: Some(commit),
                staging,
                managed: true,
            })
        }
        Source::Link { path } => {
            let dir = std::fs::canonicalize(path)
                .with_context(|| format!("link:{}: no such folder", path.display()))?;
            // The row records the canonical path as a source, which cannot
            // hold one: the next add of the same folder would not match it.
            if dir.to_str().is_none() {
                bail!(
                    "link:{}: the folder's real path {} is not UTF-8, which cargo cannot build \
                     in and a source cannot record; rename the folder",
                    shown(path),
                    shown(&dir)
                );
            }
            // The recorded source must read back (`Source::parse` refuses control and
            // formatting characters), or the next add of this folder would not match it.
            let recorded = Source::Link { path: dir.clone() }.to_string();
            match Source::parse(&recorded) {
                Ok(_) => {}
                Err(SourceError::Unprintable { found, .. }) => bail!(
                    "link:{}: the folder's real path {} holds a control or formatting character \
                     (U+{:04X}), which a source cannot; rename the folder (a link to it does not \
                     help: its real path is what is recorded)",
                    shown(path),
                    shown(&dir),
                    u32::from(found)
                ),
                Err(e) => bail!(
                    "link:{}: the folder's real path {} cannot be recorded as a source: {e}",
                    shown(path),
                    shown(&dir)
                ),
            }
            Ok(Fetched {
                revision: git::head_commit(&dir),
                url: None,
                dir,
                staging: None,
                managed: false,
            })
        }
    }
}

/// A fetched bundle in its place: where it came from, where it is, at which commit.
struct Bundle<'a> {
    source: &'a Source,
    dir: &'a Path,
    revision: Option<String>,
}

/// Builds one inserted plugin and returns its `cordis.yml` row; `stored` gets the sha256 of
/// its component if this kept it first.
fn build_row(
    home: &DshHome,
    bundle: Bundle<'_>,
    insert: &PluginRow,
    cache: &CompiledCache,
    stored: &mut Vec<String>,
    progress: &mut dyn Write,
) -> Result<PluginRow> {
    let Bundle {
        source,
        dir: source_dir,
        revision,
    } = bundle;
    let target_dir = home.build_dir(&insert.id)?;
    let built = cargo_build::build_component(
        &cargo_build::Build {
            source_dir,
            package: &insert.name,
            target_dir: &target_dir,
        },
        progress,
    )?;
    let bytes = crate::bounded::read(&built, crate::bounded::MAX_COMPONENT_BYTES, "a component")
        .with_context(|| format!("reading {}", built.display()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    // Components are kept by content: another profile pinned to another
    // revision keeps its own.
    if !home.component_path(&sha256).exists() {
        stored.push(sha256.clone());
    }
    let component = store_component(home, &sha256, &bytes)?;
    check_component(&component, &sha256, insert, cache, progress)?;
    Ok(PluginRow {
        id: insert.id.clone(),
        name: insert.name.clone(),
        source: Some(match source {
            // Recorded absolute, so the profile means the same from anywhere.
            Source::Link { .. } => Source::Link {
                path: source_dir.to_path_buf(),
            }
            .to_string(),
            git => git.to_string(),
        }),
        revision,
        sha256: Some(sha256),
        component: Some(component.to_string_lossy().into_owned()),
        config: insert.config.clone(),
        place: insert.place.clone(),
        component_place: insert.place.clone(),
    })
}

/// Deletes the component `sha256` from the home and its precompiled entries. Best effort.
fn forget_component(home: &DshHome, sha256: &str, progress: &mut dyn Write) {
    let paths = std::iter::once(home.component_path(sha256)).chain(compiled_entries(home, sha256));
    for path in paths {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let _ = writeln!(progress, "warning: could not delete {}: {e}", shown(&path));
            }
        }
    }
}

/// Loads the kept `component` (precompiling it into `cache`) and checks that the plugin
/// starts with the config `insert` gives it, reported at its place in the bundle's manifest.
fn check_component(
    component: &Path,
    sha256: &str,
    insert: &PluginRow,
    cache: &CompiledCache,
    progress: &mut dyn Write,
) -> Result<()> {
    let (loaded, from) = WasmHost::global()
        .load_cached(component, Some(sha256), cache)
        .map_err(anyhow::Error::from)?;
    if from == LoadedFrom::Compiled {
        writeln!(
            progress,
            "precompiled the component into {}",
            shown(cache.dir())
        )?;
    }
    // The plugin must start with the bundle's config, which is reported at
    // its place in the bundle's manifest.
    let mut shell = Shell::new();
    match shell.install_plugin(&insert.id, &loaded, &insert.config_value()) {
        Ok(()) => {}
        Err(InstallError::Config { errors, .. }) => {
            let problems = match &insert.config {
                Some(config) => Problems(config_problems(config, &errors)).to_string(),
                None => errors
                    .iter()
                    .map(|e| format!("{}: {e}", insert.place))
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            bail!("the plugin rejects the config the bundle gives it:\n{problems}");
        }
        Err(InstallError::Other(e)) => return Err(e.context("the built plugin does not start")),
    }
    Ok(())
}

/// Keeps the component `bytes` (of sha256 `sha256`) in the home and returns
/// its path. A file already there is rewritten when its bytes differ, so
/// that adding the plugin again repairs a damaged one.
fn store_component(home: &DshHome, sha256: &str, bytes: &[u8]) -> Result<PathBuf> {
    let component = home.component_path(sha256);
    let intact = crate::bounded::read(
        &component,
        crate::bounded::MAX_COMPONENT_BYTES,
        "a component",
    )
    .is_ok_and(|kept| hex(&Sha256::digest(&kept)) == sha256);
    if !intact {
        write_atomic(&component, bytes)?;
    }
    Ok(component)
}

/// Whether a row recorded from `recorded` comes from where `source` is:
/// the same git URL (at any revision: a new one is an update), or the same
/// folder (`dir`, `source`'s canonical path, as rows record it).
fn same_source(recorded: Option<&str>, source: &Source, dir: &Path) -> bool {
    match (recorded.map(Source::parse), source) {
        (Some(Ok(Source::Git { url: old, .. })), Source::Git { url, .. }) => {
            same_git_url(&old, url)
        }
        (Some(Ok(Source::Link { path })), Source::Link { .. }) => path == dir,
        _ => false,
    }
}

/// A path as a progress line shows it: a linked folder's, or the home's,
/// may hold characters a terminal obeys.
fn shown(path: &Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

fn same_install(a: &PluginRow, b: &PluginRow) -> bool {
    (&a.name, &a.source, &a.revision, &a.sha256, &a.component)
        == (&b.name, &b.source, &b.revision, &b.sha256, &b.component)
        && a.config_value() == b.config_value()
}

/// The files `removed` used that no profile in the home uses any more. When
/// a profile cannot be read, nothing is deleted: it might use them.
fn unused_files(home: &DshHome, removed: &PluginRow) -> Result<Vec<PathBuf>> {
    let mut others = Vec::new();
    let mut inserted = Vec::new();
    for (_, dir) in profile_dirs(home)? {
        match Profile::load_installed(&dir) {
            Ok(rows) => others.extend(rows),
            Err(_) => return Ok(Vec::new()),
        }
        // The user's own inserts may point at a component in the home.
        match Profile::load_patch(&dir) {
            Ok(patch) => inserted.extend(patch.inserts),
            Err(_) => return Ok(Vec::new()),
        }
    }
    let mut unused = Vec::new();
    if !others.iter().any(|r| r.id == removed.id) {
        unused.push(home.plugin_dir(&removed.id)?);
        unused.push(home.build_root(&removed.id)?);
    }
    // Another profile's row may name the file without its sha256 (edited by
    // hand): by path counts as much as by sha256.
    if let Some(sha256) = &removed.sha256
        && !others
            .iter()
            .chain(&inserted)
            .any(|r| uses_component(r, sha256, &home.component_path(sha256)))
    {
        unused.push(home.component_path(sha256));
        unused.extend(compiled_entries(home, sha256));
    }
    Ok(unused.into_iter().filter(|p| p.exists()).collect())
}

/// The precompiled cache's files of the component `sha256` (one per engine configuration,
/// each with its `.check`).
fn compiled_entries(home: &DshHome, sha256: &str) -> Vec<PathBuf> {
    let prefix = format!("{sha256}-");
    let Ok(entries) = std::fs::read_dir(home.compiled_cache_dir()) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?;
            name.starts_with(&prefix).then_some(path)
        })
        .collect()
}

/// The home's profiles, each one's name and folder (none before the first `add`).
fn profile_dirs(home: &DshHome) -> Result<Vec<(String, PathBuf)>> {
    let profiles = home.profiles_dir();
    let entries = match std::fs::read_dir(&profiles) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", profiles.display())),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", profiles.display()))?;
        // A folder no profile name names (`old copy`) is none of the home's profiles.
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && home.profile_dir(&name).is_ok() {
            dirs.push((name, entry.path()));
        }
    }
    Ok(dirs)
}

/// Whether a row (installed or inserted) uses the component `sha256` (kept at
/// `path`): by its recorded sha256, or by naming that file.
fn uses_component(row: &PluginRow, sha256: &str, path: &Path) -> bool {
    if row.sha256.as_deref() == Some(sha256) {
        return true;
    }
    let Some(named) = row.component_path() else {
        return false;
    };
    match (std::fs::canonicalize(&named), std::fs::canonicalize(path)) {
        (Ok(a), Ok(b)) => a == b,
        // Unresolvable: compare as written.
        _ => named == path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, sha256: char) -> String {
        format!(
            "- {{id: {id}, name: {id}, component: c.wasm, sha256: '{}'}}\n",
            sha256.to_string().repeat(64)
        )
    }

    #[test]
    fn a_damaged_component_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let home = DshHome::new(dir.path());
        let bytes = b"\0asm component";
        let sha256 = hex(&Sha256::digest(bytes));
        // Missing: written.
        let path = store_component(&home, &sha256, bytes).unwrap();
        assert_eq!(path, home.component_path(&sha256));
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // Damaged (cut short, or changed): written again.
        for damaged in [&b"\0asm"[..], b"\0asm c0mponent"] {
            std::fs::write(&path, damaged).unwrap();
            store_component(&home, &sha256, bytes).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), bytes);
        }
        // Intact: left as it is (the same file).
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store_component(&home, &sha256, bytes).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            before
        );
    }

    #[test]
    fn removal_deletes_only_what_no_profile_uses() {
        let dir = tempfile::tempdir().unwrap();
        let home = DshHome::new(dir.path());
        let (a, b) = ('a', 'b');
        let write = |profile: &str, text: &str| {
            let path = home.profile_dir(profile).unwrap();
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("cordis.yml"), text).unwrap();
        };
        let cache = home.compiled_cache_dir();
        std::fs::create_dir_all(&cache).unwrap();
        for path in [
            home.checkout_dir("x").unwrap().join("Cargo.toml"),
            home.build_dir("x").unwrap().join("CACHEDIR.TAG"),
            home.component_path(&a.to_string().repeat(64)),
            home.component_path(&b.to_string().repeat(64)),
            cache.join(format!(
                "{}-0123456789abcdef.cwasm",
                a.to_string().repeat(64)
            )),
            cache.join(format!(
                "{}-0123456789abcdef.cwasm",
                b.to_string().repeat(64)
            )),
        ] {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        // Profile `one` dropped x at revision a; profile `two` has x at b.
        write("one", "[]\n");
        write("two", &row("x", b));
        let removed = Profile::load_installed(&{
            let d = dir.path().join("removed");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cordis.yml"), row("x", a)).unwrap();
            d
        })
        .unwrap()
        .remove(0);
        let mut unused = unused_files(&home, &removed).unwrap();
        unused.sort();
        assert_eq!(
            unused,
            [
                cache.join(format!("{}-0123456789abcdef.cwasm", "a".repeat(64))),
                home.component_path(&"a".repeat(64)),
            ]
        );
        // Once no profile lists x, its checkout and build dir go too.
        write("two", "[]\n");
        let unused = unused_files(&home, &removed).unwrap();
        assert!(unused.contains(&home.plugin_dir("x").unwrap()));
        assert!(unused.contains(&home.build_root("x").unwrap()));
        // A profile that cannot be read might use anything: keep it all.
        write("three", "- id: [\n");
        assert!(unused_files(&home, &removed).unwrap().is_empty());
    }

    #[test]
    fn removal_keeps_a_component_another_profiles_patch_inserts() {
        let dir = tempfile::tempdir().unwrap();
        let home = DshHome::new(dir.path());
        let sha = "a".repeat(64);
        let component = home.component_path(&sha);
        std::fs::create_dir_all(component.parent().unwrap()).unwrap();
        std::fs::write(&component, "").unwrap();
        let profile = |name: &str, installed: &str, patch: &str| {
            let path = home.profile_dir(name).unwrap();
            std::fs::create_dir_all(&path).unwrap();
            std::fs::write(path.join("cordis.yml"), installed).unwrap();
            std::fs::write(path.join(PATCH_FILE), patch).unwrap();
            path
        };
        let one = profile("one", &row("x", 'a'), "");
        let removed = Profile::load_installed(&one).unwrap().remove(0);
        std::fs::write(one.join("cordis.yml"), "[]\n").unwrap();

        // By path: `two` inserts the very file, relative to its folder.
        profile(
            "two",
            "[]\n",
            &format!(
                "- insert:\n    - {{id: mine, name: mine, component: ../../components/{sha}.wasm}}\n"
            ),
        );
        assert!(!unused_files(&home, &removed).unwrap().contains(&component));
        // By its recorded sha256, wherever the path points.
        profile(
            "two",
            "[]\n",
            &format!(
                "- insert:\n    - {{id: mine, name: mine, component: /elsewhere.wasm, sha256: '{sha}'}}\n"
            ),
        );
        assert!(!unused_files(&home, &removed).unwrap().contains(&component));
        // By path in another profile's cordis.yml, with no sha256.
        profile(
            "two",
            &format!(
                "- {{id: other, name: other, component: {}}}\n",
                component.display()
            ),
            "",
        );
        assert!(!unused_files(&home, &removed).unwrap().contains(&component));
        // Once no insert uses it, it goes.
        profile("two", "[]\n", "");
        assert!(unused_files(&home, &removed).unwrap().contains(&component));
    }
}
