//! Plugin configuration from profile YAML, and errors shown where the user
//! wrote the offending entry.

use std::path::Path;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::plugin_api::ConfigError;
use crate::yaml::LocatedValue;

/// The config node of plugin `id` in the profile folder `dir` (`None`: no
/// profile, so no config). A folder may hold the node alone in
/// `profile.yml`, as the fixture cases do.
pub fn plugin_config(dir: Option<&Path>, id: &str) -> Result<Value> {
    let Some(dir) = dir else {
        return Ok(Value::Null);
    };
    let node = dir.join("profile.yml");
    if node.is_file() {
        return Ok(LocatedValue::load(&node)?.value);
    }
    bail!(
        "{} holds no profile.yml with the config of plugin `{id}`",
        dir.display()
    )
}

/// The plugin's config errors, one line each, at the YAML place of the node
/// each one points at, in file order.
pub fn render_config_errors(config: &LocatedValue, errors: &[ConfigError]) -> String {
    let mut located: Vec<_> = errors
        .iter()
        .map(|e| (config.place(&e.pointer), &e.message))
        .collect();
    located.sort_by_key(|(place, _)| (place.line, place.column));
    located
        .into_iter()
        .map(|(place, message)| format!("{place}: {message}"))
        .collect::<Vec<_>>()
        .join("\n")
}
