//! What the model reads back from the guard tools: matches, loads with
//! their schemas, and the hints a refused call carries.

use serde::Serialize;
use serde_json::Value;

use super::{DEFER_EXECUTE_TOOL, DEFERRED_TOOL_CALL, LOAD_TOOLS, TOOL_SEARCH};
use crate::config::Strategy;

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
    /// `dispatch`: the schemas of the tools this call loaded or found
    /// loaded, so the model calls them through the forwarder at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schemas: Option<Vec<Schema>>,
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
        match &self.schemas {
            None => lines.push(format!(
                "Loaded tools are callable from your next request. Remaining deferred tools: {}.",
                self.remaining_deferred
            )),
            Some(schemas) => {
                lines.push(format!(
                    "Call loaded tools now through {DEFERRED_TOOL_CALL}. Remaining deferred tools: {}.",
                    self.remaining_deferred
                ));
                push_schemas(&mut lines, schemas);
            }
        }
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

/// A tool's full definition, as `load_tools` (and `tool_search` in
/// `dispatch`) return it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schema {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

fn push_schemas(lines: &mut Vec<String>, schemas: &[Schema]) {
    if schemas.is_empty() {
        return;
    }
    lines.push("Schemas:".into());
    for schema in schemas {
        lines.push(format!("- {}: {}", schema.name, schema.description.trim()));
        lines.push(format!("  parameters: {}", schema.parameters));
    }
}

/// A tool `load_tools` could not load, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unavailable {
    pub name: String,
    pub reason: String,
}

/// What `load_tools` did: the tools of the group it loaded (or found
/// loaded), what of the group is left, and the loaded tools' schemas.
/// Loading again gives the same schemas, byte for byte.
#[derive(Debug, Serialize)]
pub struct LoadOutput {
    pub group_id: String,
    /// Every member of the group this agent may load is loaded.
    pub expanded: bool,
    pub tool_names: Vec<String>,
    /// Members of the group still not loaded.
    pub remaining: Vec<String>,
    pub schemas: Vec<Schema>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
}

impl LoadOutput {
    pub fn text(&self, strategy: Strategy) -> String {
        let mut lines = vec![if self.tool_names.is_empty() {
            format!("Group \"{}\": no tools loaded.", self.group_id)
        } else {
            format!(
                "Group \"{}\": loaded {}.",
                self.group_id,
                self.tool_names.join(", ")
            )
        }];
        for u in &self.unavailable {
            lines.push(format!("- {}: unavailable ({})", u.name, u.reason));
        }
        if !self.remaining.is_empty() {
            lines.push(format!("Not loaded yet: {}.", self.remaining.join(", ")));
        }
        lines.push(match strategy {
            Strategy::Inject => "Loaded tools are callable from your next request.".into(),
            Strategy::Dispatch => {
                format!("Call loaded tools now through {DEFERRED_TOOL_CALL}.")
            }
        });
        push_schemas(&mut lines, &self.schemas);
        lines.join("\n")
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
pub fn deferred_hint(tool: &str, strategy: Strategy) -> String {
    match strategy {
        Strategy::Inject => format!(
            "Tool \"{tool}\" is deferred and not loaded yet. Call {TOOL_SEARCH} with tool_names: \
             [\"{tool}\"], or {DEFER_EXECUTE_TOOL} with toolName: \"{tool}\", then call it again."
        ),
        Strategy::Dispatch => format!(
            "Tool \"{tool}\" is not in your tool list. Call it through {DEFERRED_TOOL_CALL} with \
             tool_name: \"{tool}\" and its arguments (it loads on the way), or get its schema \
             first with {LOAD_TOOLS} or {TOOL_SEARCH}."
        ),
    }
}

/// The reason a pre-execute hook gives for refusing a tool that was loaded
/// but whose definition (description or parameters) changed since: the
/// model has not seen the new schema.
pub fn changed_hint(tool: &str, strategy: Strategy) -> String {
    match strategy {
        Strategy::Inject => format!(
            "Tool \"{tool}\" was loaded, but its definition has changed since (a new description \
             or parameters), so it is deferred again. Call {DEFER_EXECUTE_TOOL} with toolName: \
             \"{tool}\" (or {TOOL_SEARCH} with tool_names: [\"{tool}\"]) to load the new \
             definition, then call it again."
        ),
        Strategy::Dispatch => format!(
            "Tool \"{tool}\" was loaded, but its definition has changed since (a new description \
             or parameters). Load it again with {TOOL_SEARCH} with tool_names: [\"{tool}\"] to \
             see the new schema, then call it through {DEFERRED_TOOL_CALL}."
        ),
    }
}

/// Where the first sentence of `text` ends, as a byte offset: after `.`, `!` or `?` followed
/// by whitespace or the end, after `。`, `！` or `？`, or before a line break. Read by bytes (an
/// index build reads every description): each candidate is the first byte of a character.
pub fn sentence_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\n' => return i,
            b'.' | b'!' | b'?' => {
                let next = text[i + 1..].chars().next();
                if next.is_none_or(char::is_whitespace) {
                    return i + 1;
                }
            }
            // The lead bytes of 。 (E3 80 82), ！ (EF BC 81) and ？ (EF BC 9F).
            0xE3 | 0xEF => {
                let end = i + 3;
                if matches!(text.get(i..end), Some("。" | "！" | "？")) {
                    return end;
                }
            }
            _ => {}
        }
    }
    text.len()
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

    proptest::proptest! {
        #[test]
        fn sentence_end_reads_chars_as_bytes(text in "[a .!?\n\t。！？é…股\u{3000}Ａあ]{0,20}") {
            let by_chars = text
                .char_indices()
                .find(|&(i, c)| {
                    matches!(c, '。' | '！' | '？' | '\n')
                        || (matches!(c, '.' | '!' | '?')
                            && text[i + c.len_utf8()..]
                                .chars()
                                .next()
                                .is_none_or(char::is_whitespace))
                })
                .map_or(text.len(), |(i, c)| if c == '\n' { i } else { i + c.len_utf8() });
            proptest::prop_assert_eq!(sentence_end(&text), by_chars);
        }
    }

    #[test]
    fn definitions_are_valid_json_schemas() {
        for strategy in [Strategy::Inject, Strategy::Dispatch] {
            for def in super::super::definitions(strategy) {
                let schema: Value = serde_json::from_str(&def.parameters).unwrap();
                assert_eq!(schema["type"], "object");
            }
        }
    }

    #[test]
    fn hints_name_the_strategys_tools() {
        assert!(deferred_hint("t", Strategy::Inject).contains("defer_execute_tool"));
        let dispatch = deferred_hint("t", Strategy::Dispatch);
        assert!(dispatch.contains("deferred_tool_call") && !dispatch.contains("defer_execute"));
    }
}
