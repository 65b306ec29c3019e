//! The shell's core built-in tools, as an agent shell ships them. The demo
//! and the token report register them next to MCP catalogs.

use serde_json::json;

use crate::tool::{Origin, Tool};

/// The core built-ins, in the order the shell registers them.
pub fn core_builtins() -> Vec<Tool> {
    let string = |description: &str| json!({"type": "string", "description": description});
    let object = |properties: serde_json::Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    let tool = |name: &str, description: &str, parameters: serde_json::Value| {
        Tool::new(name, description, Origin::Builtin).with_parameters(parameters)
    };
    vec![
        tool(
            "read",
            "Read a file from the local filesystem. Returns its lines with line numbers.",
            object(
                json!({
                    "path": string("Absolute path of the file"),
                    "offset": {"type": "integer", "description": "First line to read"},
                    "limit": {"type": "integer", "description": "How many lines to read"}
                }),
                &["path"],
            ),
        ),
        tool(
            "write",
            "Write a file to the local filesystem, replacing it if it exists.",
            object(
                json!({"path": string("Absolute path of the file"), "content": string("The whole new content")}),
                &["path", "content"],
            ),
        ),
        tool(
            "edit",
            "Replace an exact string in a file with another string.",
            object(
                json!({
                    "path": string("Absolute path of the file"),
                    "old_string": string("The text to replace; must be unique in the file"),
                    "new_string": string("The replacement")
                }),
                &["path", "old_string", "new_string"],
            ),
        ),
        tool(
            "bash",
            "Run a shell command and return its output.",
            object(
                json!({
                    "command": string("The command to run"),
                    "timeout": {"type": "integer", "description": "Timeout in milliseconds"}
                }),
                &["command"],
            ),
        ),
        tool(
            "glob",
            "Find files whose paths match a glob pattern such as src/**/*.rs.",
            object(
                json!({"pattern": string("The glob pattern"), "path": string("Directory to search in")}),
                &["pattern"],
            ),
        ),
        tool(
            "grep",
            "Search file contents with a regular expression.",
            object(
                json!({
                    "pattern": string("The regular expression"),
                    "path": string("File or directory to search in"),
                    "glob": string("Only search files matching this glob")
                }),
                &["pattern"],
            ),
        ),
        tool(
            "web_search",
            "Search the web and return result titles, links and snippets.",
            object(json!({"query": string("The search query")}), &["query"]),
        ),
        tool(
            "web_fetch",
            "Fetch a web page and return its content as markdown.",
            object(
                json!({"url": string("The URL to fetch"), "prompt": string("What to extract from the page")}),
                &["url"],
            ),
        ),
        tool(
            "ask_user_question",
            "Ask the user a question and wait for the answer.",
            object(
                json!({
                    "question": string("The question"),
                    "options": {"type": "array", "items": {"type": "string"}, "description": "Suggested answers"}
                }),
                &["question"],
            ),
        ),
        tool(
            "skill",
            "Load a skill: instructions and resources for a specialised task.",
            object(json!({"name": string("The skill's name")}), &["name"]),
        ),
    ]
}
