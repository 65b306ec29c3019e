//! The guard tools' definitions, as the host registers them: which ones a
//! strategy offers, and their JSON Schemas.

use serde_json::json;

use super::{
    DEFAULT_TOP_K, DEFER_EXECUTE_TOOL, DEFERRED_TOOL_CALL, LOAD_TOOLS, MAX_QUERIES, MAX_TOP_K,
    TOOL_SEARCH,
};
use crate::config::Strategy;
use crate::registry::{Origin, ToolDef};

/// The guard tools of `strategy` as the host registers them: `inject` keeps
/// `defer_execute_tool` (a tool loads for the next request), `dispatch`
/// offers the forwarder instead. The origin is filled in per agent by the
/// host; `Builtin` here only marks "not from an MCP server".
pub fn definitions(strategy: Strategy) -> Vec<ToolDef> {
    let search_tail = match strategy {
        Strategy::Inject => {
            "Matching tools become callable on your next request; call them only after this \
             result returns."
        }
        Strategy::Dispatch => {
            "The result holds the schemas of the tools it loaded: call them at once through \
             deferred_tool_call."
        }
    };
    let mut tools = vec![ToolDef {
        name: TOOL_SEARCH.into(),
        description: format!(
            "Find and load tools that are not visible yet. Write each query as what the tool \
             does and on what, in English where you can: \"create issue in github \
             repository\", \"convert pdf to text\", not \"github\" or a whole task. One \
             capability per query; for several needs send several queries in one call. If you \
             know a tool's exact name, pass it in tool_names instead. {search_tail}"
        ),
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
    }];
    if strategy == Strategy::Inject {
        tools.push(ToolDef {
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
        });
    }
    let load_tail = match strategy {
        Strategy::Inject => "They join your tools from your next request.",
        Strategy::Dispatch => "Call them in the same turn through deferred_tool_call.",
    };
    tools.push(ToolDef {
        name: LOAD_TOOLS.into(),
        description: format!(
            "Load a tool group from the catalog (every tool of it, or only tool_names) and \
             get their schemas in the result. Loading again returns the same schemas. \
             {load_tail}"
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "group_id": {
                    "type": "string",
                    "description": "The group's id, as the catalog lists it."
                },
                "tool_names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Load only these tools of the group."
                }
            },
            "required": ["group_id"],
            "additionalProperties": false
        })
        .to_string(),
        origin: Origin::Builtin,
    });
    if strategy == Strategy::Dispatch {
        tools.push(ToolDef {
            name: DEFERRED_TOOL_CALL.into(),
            description: "Call a tool that is not in your tool list: a tool of a group from \
                the catalog, by its exact name, with its arguments. A tool you have not \
                loaded yet is loaded on the way; bad arguments come back with its schema."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "tool_name": {
                        "type": "string",
                        "description": "The exact name of the tool to call."
                    },
                    "arguments": {
                        "type": "object",
                        "description": "The tool's arguments, as its schema describes them."
                    }
                },
                "required": ["tool_name"],
                "additionalProperties": false
            })
            .to_string(),
            origin: Origin::Builtin,
        });
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the model reads decides what it searches for (issue 12): the tool, its object, in
    /// English, one capability a query, several queries in one call.
    #[test]
    fn tool_search_tells_the_model_how_to_write_queries() {
        for strategy in [Strategy::Inject, Strategy::Dispatch] {
            let definitions = definitions(strategy);
            let search = definitions
                .iter()
                .find(|d| d.name == TOOL_SEARCH)
                .expect("every strategy offers tool_search");
            let description = search.description.to_lowercase();
            for guidance in [
                "what the tool does and on what",
                "in english",
                "one capability per query",
                "several queries in one call",
            ] {
                assert!(description.contains(guidance), "{guidance}: {description}");
            }
            let schema: serde_json::Value = serde_json::from_str(&search.parameters).unwrap();
            let queries = &schema["properties"]["queries"];
            assert_eq!(queries["type"], "array");
            assert_eq!(queries["maxItems"], MAX_QUERIES);
            assert!(
                queries["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("per capability")),
                "{queries}"
            );
        }
    }
}
