//! Writing a profile: `cordis.yml` is replaced atomically and only with text
//! that reads back to the same rows; the user's `cordis.patch.yml` is only
//! ever created, never rewritten.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::rows::{self, PluginRow};
use super::{INSTALLED_FILE, PATCH_FILE};
use crate::atomic_write::write_atomic;
use crate::yaml::{LocatedValue, MAX_FILE_BYTES};

/// Replaces the profile's `cordis.yml` with `rows`.
pub fn write_installed(dir: &Path, profile: &str, rows: &[PluginRow]) -> Result<()> {
    let path = dir.join(INSTALLED_FILE);
    let text = installed_text(profile, rows)?;
    // Never write what could not be read back: not even a file too large
    // for the harness to read.
    if text.len() as u64 > MAX_FILE_BYTES {
        bail!("{}", too_large(&path, text.len(), rows));
    }
    let doc = LocatedValue::parse(&path, &text).context("the new cordis.yml is not YAML")?;
    let mut problems = Vec::new();
    let read_back = rows::installed_rows(&doc, &mut problems);
    if !problems.is_empty() || read_back.len() != rows.len() {
        bail!(
            "the new cordis.yml does not read back: {}",
            super::Problems(problems)
        );
    }
    write_atomic(&path, text.as_bytes())
}

/// Why a `cordis.yml` of `size` bytes is refused, naming the row whose
/// config is the largest (the one to make smaller).
fn too_large(path: &Path, size: usize, rows: &[PluginRow]) -> String {
    let config_len = |row: &PluginRow| {
        row.config.as_ref().map_or(0, |c| {
            serde_json::to_string(&c.value).map_or(0, |t| t.len())
        })
    };
    let largest = rows
        .iter()
        .max_by_key(|row| config_len(row))
        .map(|row| {
            format!(
                "; the largest config is plugin `{}`'s ({} bytes as JSON), from {}",
                row.id,
                config_len(row),
                row.place
            )
        })
        .unwrap_or_default();
    format!(
        "the new {} would be {size} bytes, larger than the {} MiB a profile file may be, \
         so nothing was written{largest}",
        crate::terminal::escape(&path.display().to_string()),
        MAX_FILE_BYTES >> 20
    )
}

/// The text of `cordis.yml` holding `rows`.
pub fn installed_text(profile: &str, rows: &[PluginRow]) -> Result<String> {
    let list: Vec<RowText> = rows.iter().map(RowText::new).collect();
    let body = if list.is_empty() {
        "[]\n".to_string()
    } else {
        // Plain scalars, not folded blocks: long paths stay on one line.
        let options = serde_saphyr::ser_options! { prefer_block_scalars: false };
        serde_saphyr::to_string_with_options(&list, options)
            .context("writing the plugin rows as YAML")?
    };
    Ok(format!(
        "# The plugins of profile `{profile}`, written by `host-harness plugin add/remove`.\n\
         # This file is rewritten: put your changes in {PATCH_FILE}.\n{body}"
    ))
}

/// A row as `cordis.yml` writes it.
#[derive(Serialize)]
struct RowText<'a> {
    id: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    component: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<Flow<'a>>,
}

impl<'a> RowText<'a> {
    fn new(row: &'a PluginRow) -> Self {
        Self {
            id: &row.id,
            name: &row.name,
            source: row.source.as_deref(),
            revision: row.revision.as_deref(),
            sha256: row.sha256.as_deref(),
            component: row.component.as_deref(),
            config: row.config.as_ref().map(|c| Flow(&c.value)),
        }
    }
}

/// A config in flow style (`{defer: [a, b]}`): in block style every level
/// of nesting indents each line below it again, so a deeply nested config
/// could grow many times over and no longer be readable.
struct Flow<'a>(&'a Value);

impl Serialize for Flow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(_) => serde_saphyr::FlowMap(self.0).serialize(serializer),
            Value::Array(_) => serde_saphyr::FlowSeq(self.0).serialize(serializer),
            scalar => scalar.serialize(serializer),
        }
    }
}

/// Creates the user's `cordis.patch.yml` with a short guide, when the
/// profile has none; an existing one is never touched.
pub fn create_patch_file(dir: &Path, profile: &str) -> Result<()> {
    let path = dir.join(PATCH_FILE);
    let mut file = match std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
    };
    write!(
        file,
        "# Your changes to profile `{profile}`, applied on top of {INSTALLED_FILE}.\n\
         # host-harness never rewrites this file.\n\
         #\n\
         # - id: lazy-tools          # replace a plugin's config\n\
         #   config:\n\
         #     noDefer: [read, bash]\n\
         # - id: lazy-tools          # or turn it off\n\
         #   disabled: true\n\
         # - insert:                 # or add a plugin from a component file\n\
         #     - {{id: mine, name: mine, component: /path/to/mine.wasm}}\n"
    )
    .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn rows_read_back_with_their_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(INSTALLED_FILE),
            "- id: a\n  name: pkg\n  source: 'git:file:///r#v1'\n  sha256: '0123456789012345678901234567890123456789012345678901234567890123'\n  component: /c/a.wasm\n  config:\n    defer: ['Defer(*)', 'no']\n    deferToolLoading: true\n",
        )
        .unwrap();
        let rows = Profile::load_installed(dir.path()).unwrap();
        write_installed(dir.path(), "p", &rows).unwrap();
        let again = Profile::load_installed(dir.path()).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].source.as_deref(), Some("git:file:///r#v1"));
        // Strings that look like numbers or booleans stay strings.
        assert_eq!(again[0].sha256, rows[0].sha256);
        assert_eq!(again[0].config_value(), rows[0].config_value());
    }

    /// A profile folder whose `cordis.yml` holds one row with `config`.
    fn one_row(config: &str) -> (tempfile::TempDir, Vec<PluginRow>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(INSTALLED_FILE),
            format!("- id: a\n  name: pkg\n  component: /c/a.wasm\n  config: {config}\n"),
        )
        .unwrap();
        let rows = Profile::load_installed(dir.path()).unwrap();
        (dir, rows)
    }

    #[test]
    fn a_deeply_nested_config_is_written_no_larger_than_it_reads() {
        // 40 levels, then 120,000 items: 240 KB as read; each item on a line
        // indented 78 columns would be 9.8 MB.
        let depth = 40;
        let items = vec!["x"; 120_000].join(",");
        let config = format!("{}[{items}]{}", "{a: ".repeat(depth), "}".repeat(depth));
        let (dir, rows) = one_row(&config);
        write_installed(dir.path(), "p", &rows).unwrap();
        let written = std::fs::metadata(dir.path().join(INSTALLED_FILE))
            .unwrap()
            .len();
        assert!(written < 2 * config.len() as u64, "{written} bytes");
        let again = Profile::load_installed(dir.path()).unwrap();
        assert_eq!(again[0].config_value(), rows[0].config_value());

        // Strings flow style must quote still read back as they were.
        let tricky = r##"{"a, b": ["[x]", "{y}", "k: v", "# no", " lead", "true", "1", "null", "", "~", "- z", "\u001b[2J", "é", "'q'", "\"d\""], "n": [1, -2.5, true, null, {}, []]}"##;
        let (dir, rows) = one_row(tricky);
        write_installed(dir.path(), "p", &rows).unwrap();
        let again = Profile::load_installed(dir.path()).unwrap();
        assert_eq!(again[0].config_value(), rows[0].config_value());
    }

    #[test]
    fn a_cordis_yml_too_large_to_read_is_never_written() {
        let (dir, mut rows) = one_row("{small: true}");
        let path = dir.path().join(INSTALLED_FILE);
        let before = std::fs::read(&path).unwrap();
        // As the bundle manifest gives it: nine strings of 1 MB.
        let manifest = Path::new("/bundle/cordis.patch.yml");
        let big = format!(
            "[{}]",
            vec![format!("'{}'", "y".repeat(1 << 20)); 9].join(", ")
        );
        rows[0].config = Some(LocatedValue::parse(manifest, &big).unwrap());
        rows[0].place = crate::yaml::Place {
            file: manifest.into(),
            line: 3,
            column: 7,
        };
        let err = write_installed(dir.path(), "p", &rows)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("the new {} would be ", path.display())),
            "{err}"
        );
        assert!(
            err.ends_with(
                "bytes, larger than the 8 MiB a profile file may be, so nothing was written; \
                 the largest config is plugin `a`'s (9437212 bytes as JSON), from \
                 /bundle/cordis.patch.yml:3:7"
            ),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn the_patch_file_is_created_once_and_then_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        create_patch_file(dir.path(), "p").unwrap();
        let guide = std::fs::read_to_string(dir.path().join(PATCH_FILE)).unwrap();
        // The guide is all comments: the profile means the same with it.
        assert!(Profile::load_patch(dir.path()).unwrap().changes.is_empty());
        std::fs::write(dir.path().join(PATCH_FILE), "- {id: x, disabled: true}\n").unwrap();
        create_patch_file(dir.path(), "p").unwrap();
        let kept = std::fs::read_to_string(dir.path().join(PATCH_FILE)).unwrap();
        assert_ne!(kept, guide);
    }
}
