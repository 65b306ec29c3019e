//! A `tools/call` result as the shell shows it to the model: the text of
//! its content blocks (other blocks summarised), or its structured content
//! when it has no text, and whether it is an error.

use serde_json::Value;

use crate::shell::ToolOutput;

/// The shell's output for an MCP `CallToolResult` (as JSON).
pub fn render(result: &Value) -> ToolOutput {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let blocks: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(block).collect())
        .unwrap_or_default();
    let text = match (blocks.is_empty(), result.get("structuredContent")) {
        (true, Some(structured)) => structured.to_string(),
        _ => blocks.join("\n"),
    };
    ToolOutput {
        json: result.clone(),
        text,
        is_error,
    }
}

/// One content block as text.
fn block(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_string(),
        kind @ ("image" | "audio") => format!(
            "[{kind}: {}, {} bytes of base64]",
            field("mimeType"),
            field("data").len()
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            let uri = resource
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!("[resource {uri}: binary]"),
            }
        }
        "resource_link" => format!("[link {}: {}]", field("uri"), field("name")),
        other => format!("[{other} content]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_are_the_text_and_errors_stay_errors() {
        let output = render(&json!({
            "content": [{"type": "text", "text": "one"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
            "isError": true
        }));
        assert_eq!(output.text, "one\n[image: image/png, 4 bytes of base64]");
        assert!(output.is_error);
    }

    #[test]
    fn structured_content_shows_when_there_is_no_text() {
        let output = render(&json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(output.text, r#"{"sum":3}"#);
        assert!(!output.is_error);
        assert_eq!(output.json["structuredContent"]["sum"], 3);
    }
}
