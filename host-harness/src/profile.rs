//! Plugin configuration from profile YAML, and errors shown where the user
//! wrote the offending entry.

use crate::plugin_api::ConfigError;
use crate::yaml::LocatedValue;

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
