//! The plugin's own tools ("guards"): their definitions, their arguments and
//! the results the model reads. They live in every agent's own scope, so no
//! rule or restriction can hide them.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::registry::{Origin, ToolDef};

pub const TOOL_SEARCH: &str = "tool_search";
pub const DEFER_EXECUTE_TOOL: &str = "defer_execute_tool";
pub const GUARD_NAMES: &[&str] = &[TOOL_SEARCH, DEFER_EXECUTE_TOOL];

pub const DEFAULT_TOP_K: u32 = 5;
pub const MAX_TOP_K: u32 = 50;
/// Limits that keep one call cheap: a query is a few words, not a document.
pub const MAX_QUERY_CHARS: usize = 500;
pub const MAX_QUERIES: usize = 10;
/// Tool names are bounded like queries: a name is compared with every
/// registered name for "did you mean", so a huge one costs seconds.
pub const MAX_TOOL_NAME_CHARS: usize = 256;
pub const MAX_TOOL_NAMES: usize = 50;

pub fn is_guard(name: &str) -> bool {
    GUARD_NAMES.contains(&name)
}

/// The guard tools as the host registers them. The origin is filled in per
/// agent by the host; `Builtin` here only marks "not from an MCP server".
pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: TOOL_SEARCH.into(),
            description: "Find and load tools that are not visible yet. Write each query as \
                what the tool does and on what, in English where you can: \"create issue in \
                github repository\", \"convert pdf to text\", not \"github\" or a whole task. \
                One capability per query; for several needs send several queries in one call. \
                If you know a tool's exact name, pass it in tool_names instead. Matching tools \
                become callable on your next request; call them only after this result returns."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "tool_names": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Exact tool names to load. Do not use partial names."
                    },
                    "queries": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_QUERIES,
                        "description": "One short query per capability: action + object (+ service), \
                            e.g. [\"send message to slack channel\", \"read file from disk\"]. \
                            English works best; other languages (中文) also work."
                    },
                    "top_k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_TOP_K,
                        "default": DEFAULT_TOP_K,
                        "description": "How many tools each query may load."
                    }
                },
                "additionalProperties": false
            })
            .to_string(),
            origin: Origin::Builtin,
        },
        ToolDef {
            name: DEFER_EXECUTE_TOOL.into(),
            description: "Load one deferred tool by its exact name, so you can call it \
                directly on your next request. Use it after tool_search, or when you already \
                know the name."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "toolName": {
                        "type": "string",
                        "description": "The exact name of the tool to load."
                    }
                },
                "required": ["toolName"],
                "additionalProperties": false
            })
            .to_string(),
            origin: Origin::Builtin,
        },
    ]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    #[serde(default)]
    pub tool_names: Vec<String>,
    #[serde(default)]
    pub queries: Vec<String>,
    #[serde(default)]
    pub top_k: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivateArgs {
    #[serde(rename = "toolName")]
    pub tool_name: String,
}

/// What activating a tool did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It was deferred and is now loaded.
    Loaded,
    /// It was visible already.
    AlreadyLoaded,
    /// This agent cannot have it; `reason` says why.
    Unavailable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Match {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it was loaded without being asked for (a family's core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchOutput {
    pub matches: Vec<Match>,
    pub remaining_deferred: usize,
}

impl SearchOutput {
    /// The short text the model reads next to the JSON.
    pub fn text(&self) -> String {
        if self.matches.is_empty() {
            return format!(
                "No matching deferred tools. {} deferred tools remain; try other words or exact names.",
                self.remaining_deferred
            );
        }
        let mut lines = vec!["Tool search results:".to_string()];
        for m in &self.matches {
            let mut line = format!("- {}: {}", m.name, status_text(m.status));
            if let Some(reason) = &m.reason {
                line.push_str(&format!(" ({reason})"));
            } else if let Some(via) = &m.via {
                line.push_str(&format!(" (with {via})"));
            } else if !m.description.is_empty() {
                line.push_str(&format!(": {}", m.description));
            }
            lines.push(line);
        }
        lines.push(format!(
            "Loaded tools are callable from your next request. Remaining deferred tools: {}.",
            self.remaining_deferred
        ));
        lines.join("\n")
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivateOutput {
    pub tool_name: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tools loaded with it: the core of its family.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_loaded: Vec<String>,
}

impl ActivateOutput {
    pub fn text(&self) -> String {
        let mut text = match &self.reason {
            Some(reason) => format!(
                "Tool \"{}\": {} ({reason}).",
                self.tool_name,
                status_text(self.status)
            ),
            None => format!("Tool \"{}\": {}.", self.tool_name, status_text(self.status)),
        };
        if !self.also_loaded.is_empty() {
            text.push_str(&format!(" Also loaded: {}.", self.also_loaded.join(", ")));
        }
        text
    }
}

fn status_text(status: Status) -> &'static str {
    match status {
        Status::Loaded => "loaded",
        Status::AlreadyLoaded => "already_loaded",
        Status::Unavailable => "unavailable",
    }
}

/// The reason a pre-execute hook gives for refusing a deferred tool.
pub fn deferred_hint(tool: &str) -> String {
    format!(
        "Tool \"{tool}\" is deferred and not loaded yet. Call {TOOL_SEARCH} with tool_names: \
         [\"{tool}\"], or {DEFER_EXECUTE_TOOL} with toolName: \"{tool}\", then call it again."
    )
}

/// The reason a pre-execute hook gives for refusing a tool that was loaded
/// but whose definition (description or parameters) changed since: the
/// model has not seen the new schema.
pub fn changed_hint(tool: &str) -> String {
    format!(
        "Tool \"{tool}\" was loaded, but its definition has changed since (a new description \
         or parameters), so it is deferred again. Call {DEFER_EXECUTE_TOOL} with toolName: \
         \"{tool}\" (or {TOOL_SEARCH} with tool_names: [\"{tool}\"]) to load the new \
         definition, then call it again."
    )
}

/// Where the first sentence of `text` ends, as a byte offset: after `.`, `!` or `?` followed
/// by whitespace or the end, after `。`, `！` or `？`, or before a line break.
pub fn sentence_end(text: &str) -> usize {
    text.char_indices()
        .find(|&(i, c)| {
            matches!(c, '。' | '！' | '？' | '\n')
                || (matches!(c, '.' | '!' | '?')
                    && text[i + c.len_utf8()..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace))
        })
        .map_or(
            text.len(),
            |(i, c)| {
                if c == '\n' { i } else { i + c.len_utf8() }
            },
        )
}

/// The first sentence of a description, at most `max_chars` characters, for
/// search results and catalogs.
pub fn first_sentence(description: &str, max_chars: usize) -> String {
    let text = description.trim();
    let end = sentence_end(text);
    let sentence = text[..end].trim();
    if sentence.chars().count() <= max_chars {
        return sentence.to_string();
    }
    let mut cut: String = sentence.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_stops_at_sentence_ends() {
        assert_eq!(
            first_sentence("Reads a file. Then more.", 100),
            "Reads a file."
        );
        assert_eq!(
            first_sentence("v1.2 is parsed. Yes", 100),
            "v1.2 is parsed."
        );
        assert_eq!(first_sentence("读取文件。然后", 100), "读取文件。");
        assert_eq!(first_sentence("line one\nline two", 100), "line one");
        assert_eq!(first_sentence("abcdefgh", 5), "abcd…");
        assert_eq!(first_sentence("", 5), "");
    }

    #[test]
    fn definitions_are_valid_json_schemas() {
        for def in definitions() {
            let schema: serde_json::Value = serde_json::from_str(&def.parameters).unwrap();
            assert_eq!(schema["type"], "object");
        }
    }
}
