//! Writing a profile: `cordis.yml` is replaced atomically and only with text
//! that reads back to the same rows; the user's `cordis.patch.yml` is only
//! ever created, never rewritten.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde_json::{Map, Value};

use super::rows::{self, PluginRow};
use super::{INSTALLED_FILE, PATCH_FILE};
use crate::atomic_write::write_atomic;
use crate::yaml::LocatedValue;

/// Replaces the profile's `cordis.yml` with `rows`.
pub fn write_installed(dir: &Path, profile: &str, rows: &[PluginRow]) -> Result<()> {
    let path = dir.join(INSTALLED_FILE);
    let text = installed_text(profile, rows)?;
    // Never write what could not be read back.
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

/// The text of `cordis.yml` holding `rows`.
pub fn installed_text(profile: &str, rows: &[PluginRow]) -> Result<String> {
    let list: Vec<Value> = rows.iter().map(row_value).collect();
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

fn row_value(row: &PluginRow) -> Value {
    let mut map = Map::new();
    map.insert("id".into(), row.id.clone().into());
    map.insert("name".into(), row.name.clone().into());
    for (key, value) in [
        ("source", &row.source),
        ("revision", &row.revision),
        ("sha256", &row.sha256),
        ("component", &row.component),
    ] {
        if let Some(value) = value {
            map.insert(key.into(), value.clone().into());
        }
    }
    if let Some(config) = &row.config {
        map.insert("config".into(), config.value.clone());
    }
    Value::Object(map)
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
