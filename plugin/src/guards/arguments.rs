//! The guard tools' arguments and the limits that keep one call cheap: a
//! bad shape or size is an error result the model reads, never an error of
//! the plugin.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::outcome::ToolResult;

pub const DEFAULT_TOP_K: u32 = 5;
pub const MAX_TOP_K: u32 = 50;
/// Limits that keep one call cheap: a query is a few words, not a document.
pub const MAX_QUERY_CHARS: usize = 500;
pub const MAX_QUERIES: usize = 10;
/// Tool names are bounded like queries (see [`crate::shown::MAX_TOOL_NAME_CHARS`]).
pub use crate::shown::MAX_TOOL_NAME_CHARS;
pub const MAX_TOOL_NAMES: usize = 50;
/// The largest forwarded call (`deferred_tool_call`'s whole arguments).
pub const MAX_FORWARD_BYTES: usize = 1 << 20;
/// The largest arguments of `tool_search`, `defer_execute_tool` and `load_tools`: ten queries
/// and fifty names within their limits, every character written as a `\u` escape, fit three
/// times over. Checked before parsing, which would hold every entry of a longer list at once
/// (eight megabytes of empty queries grew the plugin's memory by a hundred).
pub const MAX_ARGUMENT_BYTES: usize = 256 << 10;

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadArgs {
    pub group_id: String,
    #[serde(default)]
    pub tool_names: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardArgs {
    pub tool_name: String,
    /// An object; a JSON text of one is accepted too (models send both). Kept as the model
    /// wrote it: a parse into values would round every number through `f64` (an id of 30
    /// digits reached the tool as `1.2345678901234568e+29`) and keep one of repeated keys.
    #[serde(default)]
    pub arguments: Option<Box<RawValue>>,
}

impl ForwardArgs {
    /// The real arguments as JSON text of an object, as written, or what is wrong.
    pub fn arguments_json(&self) -> Result<String, String> {
        let Some(raw) = &self.arguments else {
            return Ok("{}".into());
        };
        let text = raw.get().trim();
        if !text.starts_with('"') {
            return object_text(text);
        }
        let not_json = |e: serde_json::Error| format!("arguments is a text that is not JSON: {e}");
        let inner: String = serde_json::from_str(text).map_err(not_json)?;
        let inner = RawValue::from_string(inner.trim().to_string()).map_err(not_json)?;
        object_text(inner.get())
    }
}

/// `json` (one JSON value) when it is an object a host can read; else what it is instead.
fn object_text(json: &str) -> Result<String, String> {
    let found = match json.as_bytes().first() {
        Some(b'{') => {
            // A raw value is only scanned: it may nest past the depth a parser takes or hold a
            // lone surrogate escape (`\ud800`), which the host's reading would refuse as the
            // plugin's fault. Read once here (a skip does not check either), and dropped: the
            // text goes on as written.
            serde_json::from_str::<serde_json::Value>(json)
                .map_err(|e| format!("arguments are not JSON a tool can take: {e}"))?;
            return Ok(json.to_string());
        }
        Some(b'[') => "a list",
        Some(b'"') => "a text",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    };
    Err(format!("arguments must be an object, found {found}"))
}

/// A guard tool's arguments, at most `limit` bytes ([`MAX_ARGUMENT_BYTES`], or
/// [`MAX_FORWARD_BYTES`] for a forwarded call); a bad shape is an error result the model
/// reads, not an error of the plugin.
pub fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: &str,
    limit: usize,
) -> Result<T, ToolResult> {
    if arguments.len() > limit {
        return Err(ToolResult::error(format!(
            "{tool}: {} bytes of arguments; at most {limit}",
            arguments.len()
        )));
    }
    serde_json::from_str(arguments)
        .map_err(|e| ToolResult::error(format!("{tool}: invalid arguments: {e}")))
}

/// What is wrong with the queries of a `tool_search` call, if anything.
pub fn query_problem(queries: &[String]) -> Option<String> {
    if queries.len() > MAX_QUERIES {
        return Some(format!(
            "at most {MAX_QUERIES} queries per call, got {}",
            queries.len()
        ));
    }
    queries.iter().enumerate().find_map(|(i, query)| {
        let chars = query.chars().count();
        if query.trim().is_empty() {
            Some(format!("query {} is empty", i + 1))
        } else if chars > MAX_QUERY_CHARS {
            Some(format!(
                "query {} has {chars} characters; at most {MAX_QUERY_CHARS}",
                i + 1
            ))
        } else {
            None
        }
    })
}

/// What is wrong with the tool names of a guard-tool call, if anything.
pub fn names_problem(names: &[String]) -> Option<String> {
    if names.len() > MAX_TOOL_NAMES {
        return Some(format!(
            "at most {MAX_TOOL_NAMES} tool names per call, got {}",
            names.len()
        ));
    }
    names.iter().enumerate().find_map(|(i, name)| {
        let chars = name.chars().count();
        (chars > MAX_TOOL_NAME_CHARS).then(|| {
            format!(
                "tool name {} has {chars} characters; at most {MAX_TOOL_NAME_CHARS}",
                i + 1
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queries(list: &[&str]) -> Vec<String> {
        list.iter().map(|q| q.to_string()).collect()
    }

    #[test]
    fn queries_within_the_limits_pass() {
        assert_eq!(query_problem(&queries(&["read a file", "读取文件"])), None);
        assert_eq!(query_problem(&[]), None);
        let longest = "字".repeat(MAX_QUERY_CHARS);
        assert_eq!(query_problem(&[longest]), None);
        assert_eq!(query_problem(&queries(&["q"; MAX_QUERIES])), None);
    }

    #[test]
    fn tool_names_are_bounded_like_queries() {
        let longest = "n".repeat(MAX_TOOL_NAME_CHARS);
        assert_eq!(names_problem(&[longest]), None);
        // A 1 MB name cost 45 s of "did you mean" against every registered name.
        let huge = "n".repeat(1 << 20);
        assert_eq!(
            names_problem(&[String::new(), huge]).as_deref(),
            Some("tool name 2 has 1048576 characters; at most 256")
        );
        assert_eq!(
            names_problem(&queries(&["t"; MAX_TOOL_NAMES + 1])).as_deref(),
            Some("at most 50 tool names per call, got 51")
        );
    }

    #[test]
    fn queries_past_the_limits_say_what_is_wrong() {
        assert_eq!(
            query_problem(&queries(&["ok", "  "])).as_deref(),
            Some("query 2 is empty")
        );
        let long = "字".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(
            query_problem(&[long]).as_deref(),
            Some("query 1 has 501 characters; at most 500")
        );
        assert_eq!(
            query_problem(&queries(&["q"; MAX_QUERIES + 1])).as_deref(),
            Some("at most 10 queries per call, got 11")
        );
    }

    #[test]
    fn forwarded_arguments_are_objects_given_as_objects_or_text() {
        let args = |v: &str| {
            serde_json::from_str::<ForwardArgs>(v)
                .unwrap()
                .arguments_json()
        };
        assert_eq!(args(r#"{"tool_name":"t"}"#).unwrap(), "{}");
        assert_eq!(
            args(r#"{"tool_name":"t","arguments":{"a":1}}"#).unwrap(),
            r#"{"a":1}"#
        );
        assert_eq!(
            args(r#"{"tool_name":"t","arguments":"{\"a\":1}"}"#).unwrap(),
            r#"{"a":1}"#
        );
        assert_eq!(
            args(r#"{"tool_name":"t","arguments":[1]}"#).unwrap_err(),
            "arguments must be an object, found a list"
        );
        assert_eq!(
            args(r#"{"tool_name":"t","arguments":" 7 "}"#).unwrap_err(),
            "arguments must be an object, found a number"
        );
        assert!(
            args(r#"{"tool_name":"t","arguments":"{\"a\":"}"#)
                .unwrap_err()
                .starts_with("arguments is a text that is not JSON: ")
        );
    }

    /// Arguments no JSON reader takes are the model's error to read, not a call the host
    /// cannot read: nested past serde_json's depth, or a lone surrogate in a text.
    #[test]
    fn forwarded_arguments_a_reader_refuses_are_an_error() {
        let deep = format!("{{\"a\": {}1{}}}", "[".repeat(200), "]".repeat(200));
        let surrogate = r#"{"title": "\ud800"}"#;
        for written in [deep.as_str(), surrogate] {
            for call in [
                format!(r#"{{"tool_name":"t","arguments":{written}}}"#),
                serde_json::json!({"tool_name": "t", "arguments": written}).to_string(),
            ] {
                // The call itself reads: only its arguments are scanned.
                let args: ForwardArgs = serde_json::from_str(&call).unwrap();
                let err = args.arguments_json().unwrap_err();
                assert!(
                    err.starts_with("arguments are not JSON a tool can take: "),
                    "{err}"
                );
            }
        }
    }

    /// The tool receives the arguments the model wrote, not a reading of them: numbers past
    /// `f64`'s precision, repeated keys and spacing reach it unchanged, given as an object or
    /// as text.
    #[test]
    fn forwarded_arguments_are_passed_as_written() {
        let written = r#"{"id": 123456789012345678901234567890, "x": 0.1000000000000000055511151231257827, "k": 1, "k": 2}"#;
        let as_object = format!(r#"{{"tool_name":"t","arguments":{written}}}"#);
        let as_text = serde_json::json!({"tool_name": "t", "arguments": written}).to_string();
        for call in [as_object, as_text] {
            let args: ForwardArgs = serde_json::from_str(&call).unwrap();
            assert_eq!(args.arguments_json().unwrap(), written);
        }
    }
}
