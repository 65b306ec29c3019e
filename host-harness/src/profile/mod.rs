//! A profile: the plugins the shell runs and their config, in two files of
//! `$DSH_HOME/profiles/<name>/`, the way dsh keeps them:
//!
//! - `cordis.yml`: the installed plugins, one row each (`id`, `name`,
//!   `config`, and what `plugin add` recorded: `source`, `revision`,
//!   `sha256`, `component`). The harness rewrites it on `plugin add/remove`.
//! - `cordis.patch.yml`: the user's layer on top, never written by the
//!   harness. A row `- id: <id>` replaces that plugin's `config` and/or sets
//!   `disabled: true`; `- insert: [...]` adds plugin rows of its own.
//!
//! Every problem is reported at its file, line and column, including the
//! plugin's own config errors, which are shown in whichever file the config
//! came from.

pub mod activate;
pub mod rows;
pub mod store;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::plugin_api::ConfigError;
use crate::terminal::escape;
use crate::yaml::{LocatedValue, Place};
use lazy_tools::suggest::did_you_mean;
use rows::{Layer, PatchLayer, PluginRow};

/// The installed plugins.
pub const INSTALLED_FILE: &str = "cordis.yml";
/// The user's layer (and, in a bundle, its manifest).
pub const PATCH_FILE: &str = "cordis.patch.yml";

/// One problem, where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub place: Place,
    pub message: String,
}

impl Problem {
    pub fn new(place: Place, message: impl Into<String>) -> Self {
        Self {
            place,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Messages quote the user's files (keys, ids, values): one line,
        // nothing a terminal would obey.
        write!(f, "{}: {}", self.place, escape(&self.message))
    }
}

/// Problems, one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", lines(.0))]
pub struct Problems(pub Vec<Problem>);

fn lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profile's files say something wrong; nothing was changed.
    #[error(transparent)]
    Invalid(#[from] Problems),
    // Not `source`: the message says the cause already, and a chain printed whole would say
    // it twice.
    #[error("reading {}: {cause}", escape(&path.display().to_string()))]
    Unreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl ProfileError {
    /// This error and `other`, both said: every file's problems at once, so that fixing one
    /// file does not reveal the next file's.
    pub fn and(self, other: ProfileError) -> ProfileError {
        let mut problems = self.into_problems();
        problems.extend(other.into_problems());
        Problems(problems).into()
    }

    fn into_problems(self) -> Vec<Problem> {
        match self {
            ProfileError::Invalid(problems) => problems.0,
            ProfileError::Unreadable { path, cause } => vec![Problem::new(
                Place::whole(&path),
                format!("cannot be read: {cause}"),
            )],
        }
    }
}

/// How many patch rows naming no plugin are warned about one by one, each
/// with a "did you mean".
const LISTED_MISSES: usize = 20;

/// A plugin as the shell runs it: its row with the user's patch applied.
#[derive(Debug, Clone)]
pub struct EffectivePlugin {
    /// The row, with `config` replaced when the patch layer replaces it.
    pub row: PluginRow,
    pub disabled: bool,
    /// Whether the row itself comes from the user's `insert`.
    pub inserted_by_patch: bool,
}

/// A profile's two files, parsed.
#[derive(Debug, Clone)]
pub struct Profile {
    pub dir: PathBuf,
    pub installed: Vec<PluginRow>,
    pub patch: PatchLayer,
}

impl Profile {
    /// Reads both files (a missing file has no rows) and reports every
    /// problem of both.
    pub fn load(dir: &Path) -> Result<Self, ProfileError> {
        let installed = Self::load_installed(dir);
        let patch = Self::load_patch(dir);
        match (installed, patch) {
            (Ok(installed), Ok(patch)) => Ok(Self {
                dir: dir.to_path_buf(),
                installed,
                patch,
            }),
            (Err(a), Err(b)) => Err(a.and(b)),
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    }

    /// The rows of `cordis.yml`.
    pub fn load_installed(dir: &Path) -> Result<Vec<PluginRow>, ProfileError> {
        let path = dir.join(INSTALLED_FILE);
        let Some(doc) = read_yaml(&path, &path)? else {
            return Ok(Vec::new());
        };
        let mut problems = Vec::new();
        let rows = rows::installed_rows(&doc, &mut problems);
        problems.extend(duplicate_ids(rows.iter()));
        if problems.is_empty() {
            Ok(rows)
        } else {
            Err(Problems(problems).into())
        }
    }

    /// The user's `cordis.patch.yml`.
    pub fn load_patch(dir: &Path) -> Result<PatchLayer, ProfileError> {
        let path = dir.join(PATCH_FILE);
        load_patch_file(&path, &path, Layer::UserPatch)
    }

    /// The plugins the shell runs, in order: the installed rows, then the
    /// patch's inserts, each with the patch's changes applied. The second
    /// list holds warnings: patch rows that change no plugin.
    pub fn plugins(&self) -> Result<(Vec<EffectivePlugin>, Vec<Problem>), Problems> {
        let mut plugins: Vec<EffectivePlugin> = self
            .installed
            .iter()
            .map(|row| EffectivePlugin {
                row: row.clone(),
                disabled: false,
                inserted_by_patch: false,
            })
            .chain(self.patch.inserts.iter().map(|row| EffectivePlugin {
                row: row.clone(),
                disabled: false,
                inserted_by_patch: true,
            }))
            .collect();
        let problems = duplicate_ids(plugins.iter().map(|p| &p.row));
        if !problems.is_empty() {
            return Err(Problems(problems));
        }
        // By id (unique, checked above): a patch of many rows costs a lookup per row.
        let index: HashMap<&str, usize> = self
            .installed
            .iter()
            .chain(&self.patch.inserts)
            .enumerate()
            .map(|(i, row)| (row.id.as_str(), i))
            .collect();
        let mut warnings = Vec::new();
        let mut misses = Vec::new();
        // Later rows win: the patch is a layer applied in order.
        for change in &self.patch.changes {
            let Some(&i) = index.get(change.id.as_str()) else {
                misses.push(change);
                continue;
            };
            let plugin = &mut plugins[i];
            if let Some(config) = &change.config {
                plugin.row.config = Some(config.clone());
            }
            if let Some(disabled) = change.disabled {
                plugin.disabled = disabled;
            }
        }
        // A "did you mean" weighs every id: only the first few rows get one,
        // and the rest are counted, not listed.
        for (n, change) in misses.iter().enumerate().take(LISTED_MISSES + 1) {
            let rest = match n {
                LISTED_MISSES => match misses.len() - n - 1 {
                    0 => String::new(),
                    more => format!("; nor do {more} more rows after it (not listed)"),
                },
                // In file order, so that of two as close the same one is named every time.
                _ => did_you_mean(&change.id, plugins.iter().map(|p| p.row.id.as_str())),
            };
            warnings.push(Problem::new(
                change.place.clone(),
                format!(
                    "no plugin `{}` is installed, so this row changes nothing{rest}",
                    change.id
                ),
            ));
        }
        Ok((plugins, warnings))
    }
}

/// A patch layer file: the user's, or a bundle's manifest. Problems name
/// the file as `shown` (a bundle's manifest by its source, not by a
/// temporary checkout).
pub fn load_patch_file(
    path: &Path,
    shown: &Path,
    layer: Layer,
) -> Result<PatchLayer, ProfileError> {
    let Some(doc) = read_yaml(path, shown)? else {
        return Ok(PatchLayer::default());
    };
    let mut problems = Vec::new();
    let patch = rows::patch_rows(&doc, layer, &mut problems);
    problems.extend(duplicate_ids(patch.inserts.iter()));
    if problems.is_empty() {
        Ok(patch)
    } else {
        Err(Problems(problems).into())
    }
}

/// A YAML file with its places, named `shown` in messages; `None` when it
/// does not exist.
fn read_yaml(path: &Path, shown: &Path) -> Result<Option<LocatedValue>, ProfileError> {
    let text = match crate::yaml::read_bounded(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(cause) => {
            return Err(ProfileError::Unreadable {
                path: path.to_path_buf(),
                cause,
            });
        }
    };
    LocatedValue::parse(shown, &text)
        .map(Some)
        .map_err(|e| Problems(vec![Problem::new(e.place, e.message)]).into())
}

fn duplicate_ids<'a>(rows: impl Iterator<Item = &'a PluginRow>) -> Vec<Problem> {
    // By id: a file of many rows costs a lookup per row.
    let mut seen: HashMap<&str, &PluginRow> = HashMap::new();
    let mut problems = Vec::new();
    for row in rows {
        match seen.get(row.id.as_str()) {
            Some(first) => problems.push(Problem::new(
                row.place.clone(),
                format!(
                    "a plugin with id `{}` is already listed at {}",
                    row.id, first.place
                ),
            )),
            None => {
                seen.insert(&row.id, row);
            }
        }
    }
    problems
}

/// The config of plugin `id` in the profile folder `dir` (`None`: no
/// profile, so no config): from `cordis.yml` with the user's
/// `cordis.patch.yml` applied, or, in a folder that holds only the config
/// node, as the fixture cases do, from `profile.yml`.
pub fn plugin_config(dir: Option<&Path>, id: &str) -> anyhow::Result<serde_json::Value> {
    let Some(dir) = dir else {
        return Ok(serde_json::Value::Null);
    };
    let node = dir.join("profile.yml");
    if node.is_file() && !dir.join(INSTALLED_FILE).exists() {
        return Ok(LocatedValue::load(&node)?.value);
    }
    let profile = Profile::load(dir)?;
    let (plugins, _warnings) = profile.plugins()?;
    match plugins.iter().find(|p| p.row.id == id) {
        Some(plugin) if !plugin.disabled => Ok(plugin.row.config_value()),
        Some(_) => anyhow::bail!("plugin `{id}` is disabled in the profile {}", dir.display()),
        None => anyhow::bail!(
            "the profile {} has no plugin `{id}`{}",
            dir.display(),
            did_you_mean(id, plugins.iter().map(|p| p.row.id.as_str()))
        ),
    }
}

/// The plugin's config errors as problems at the YAML place of the node each
/// one points at, in file order.
pub fn config_problems(config: &LocatedValue, errors: &[ConfigError]) -> Vec<Problem> {
    let mut problems: Vec<Problem> = errors
        .iter()
        .map(|e| Problem::new(config.place(&e.pointer), e.message.clone()))
        .collect();
    problems.sort_by_key(|p| (p.place.line, p.place.column));
    problems
}

/// The plugin's config errors, one line each, at the YAML place of the node
/// each one points at, in file order.
pub fn render_config_errors(config: &LocatedValue, errors: &[ConfigError]) -> String {
    Problems(config_problems(config, errors)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(installed: &str, patch: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(INSTALLED_FILE), installed).unwrap();
        std::fs::write(dir.path().join(PATCH_FILE), patch).unwrap();
        dir
    }

    #[test]
    fn plugin_config_reads_the_profile_with_its_patch_or_a_bare_node() {
        let dir = profile(
            "- id: lazy-tools\n  name: lazy-tools\n  component: c.wasm\n  config: {catalog: names}\n",
            "- id: lazy-tools\n  config: {catalog: groups}\n",
        );
        let config = plugin_config(Some(dir.path()), "lazy-tools").unwrap();
        assert_eq!(config, serde_json::json!({"catalog": "groups"}));
        let err = plugin_config(Some(dir.path()), "lazy-tool").unwrap_err();
        assert!(
            err.to_string().contains("did you mean `lazy-tools`"),
            "{err}"
        );

        let bare = tempfile::tempdir().unwrap();
        std::fs::write(bare.path().join("profile.yml"), "defer: [x]\n").unwrap();
        let config = plugin_config(Some(bare.path()), "lazy-tools").unwrap();
        assert_eq!(config, serde_json::json!({"defer": ["x"]}));
        assert_eq!(
            plugin_config(None, "lazy-tools").unwrap(),
            serde_json::Value::Null
        );
    }

    #[test]
    fn the_patch_replaces_config_and_disables() {
        let dir = profile(
            "- {id: a, name: a, component: a.wasm, config: {defer: [x]}}\n- {id: b, name: b, component: b.wasm}\n",
            "- id: a\n  config:\n    noDefer: [y]\n- id: b\n  disabled: true\n- id: bb\n  disabled: true\n",
        );
        let profile = Profile::load(dir.path()).unwrap();
        let (plugins, warnings) = profile.plugins().unwrap();
        let config = plugins[0].row.config.as_ref().unwrap();
        assert_eq!(config.value, serde_json::json!({"noDefer": ["y"]}));
        // The config is located in the file it came from.
        assert!(config.file().ends_with(PATCH_FILE));
        assert_eq!(config.place("/noDefer/0").line, 3);
        assert!(plugins[1].disabled);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].message.ends_with("did you mean `b`?"),
            "{}",
            warnings[0]
        );
    }

    #[test]
    fn problems_of_both_files_are_reported_together() {
        let dir = profile("- {id: a, name: a}\n", "- id: a\n  disable: true\n");
        let err = Profile::load(dir.path()).unwrap_err().to_string();
        let lines: Vec<_> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(lines[0].ends_with("cordis.yml:1:3: the plugin row has no `component`"));
        assert!(
            lines[1]
                .ends_with("cordis.patch.yml:2:3: unknown key `disable`; did you mean `disabled`?")
        );
    }

    #[test]
    fn problems_never_carry_control_characters() {
        // An unknown key and an id with an escape sequence that would clear
        // the screen: shown, not obeyed.
        let dir = profile(
            "- {id: \"a\\e[2J\", name: a, component: a.wasm, \"x\\e]0;t\\a\": 1}\n",
            "",
        );
        let err = Profile::load(dir.path()).unwrap_err().to_string();
        assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
        assert!(err.contains("unknown key `x\\u{1b}]0;t\\u{7}`"), "{err}");
        assert!(err.contains("invalid plugin id `a\\u{1b}[2J`"), "{err}");
    }

    #[test]
    fn oversized_files_are_refused_at_their_name() {
        let dir = profile("", "");
        let path = dir.path().join(INSTALLED_FILE);
        std::fs::write(&path, "#".repeat(crate::yaml::MAX_FILE_BYTES as usize + 10)).unwrap();
        let err = anyhow::Error::new(Profile::load(dir.path()).unwrap_err());
        // Printed as a chain, as the harness prints errors: the cause said once.
        assert_eq!(
            format!("{err:#}"),
            format!(
                "reading {}: the file is larger than 8 MiB, the most a YAML file here may have",
                path.display()
            )
        );
    }

    #[test]
    fn many_rows_are_checked_for_duplicates_by_id() {
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!("- {{id: p{i}, name: p, component: c.wasm}}\n"));
        }
        text.push_str("- {id: p7, name: p, component: c.wasm}\n");
        let dir = profile(&text, "");
        let err = Profile::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("cordis.yml:20001:3: a plugin with id `p7` is already listed at"),
            "{err}"
        );
        assert!(err.ends_with("cordis.yml:8:3"), "{err}");
    }

    #[test]
    fn a_long_patch_is_applied_by_id() {
        let mut installed = String::new();
        let mut patch = String::new();
        for i in 0..20_000 {
            installed.push_str(&format!("- {{id: p{i}, name: p, component: c.wasm}}\n"));
            if i % 2 == 1 {
                patch.push_str(&format!("- {{id: p{i}, disabled: true}}\n"));
            }
        }
        for i in 0..LISTED_MISSES + 5 {
            patch.push_str(&format!("- {{id: p{i}x, disabled: true}}\n"));
        }
        let dir = profile(&installed, &patch);
        let (plugins, warnings) = Profile::load(dir.path()).unwrap().plugins().unwrap();
        assert_eq!(plugins.len(), 20_000);
        assert!(
            plugins
                .iter()
                .enumerate()
                .all(|(i, p)| p.disabled == (i % 2 == 1) && p.row.id == format!("p{i}"))
        );
        // The first misses with a suggestion each, then one row for the rest.
        assert_eq!(warnings.len(), LISTED_MISSES + 1);
        assert!(
            warnings[0].to_string().ends_with(
                "cordis.patch.yml:10001:3: no plugin `p0x` is installed, so this row changes \
                 nothing; did you mean `p0`?"
            ),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[LISTED_MISSES].to_string().ends_with(
                "cordis.patch.yml:10021:3: no plugin `p20x` is installed, so this row changes \
                 nothing; nor do 4 more rows after it (not listed)"
            ),
            "{}",
            warnings[LISTED_MISSES]
        );
    }

    #[test]
    fn inserted_ids_must_be_new() {
        let dir = profile(
            "- {id: a, name: a, component: a.wasm}\n",
            "- insert:\n  - {id: a, name: a, component: other.wasm}\n",
        );
        let err = Profile::load(dir.path()).unwrap().plugins().unwrap_err();
        assert!(
            err.to_string()
                .contains("a plugin with id `a` is already listed at"),
            "{err}"
        );
    }
}
