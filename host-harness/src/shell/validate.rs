//! Arguments of forwarded calls (`deferred_tool_call`) checked against the
//! real tool's JSON Schema before it runs: the model never saw that schema
//! in its tool list, so a mismatch comes back with the whole schema for it
//! to correct itself in one round trip.

use serde_json::{Value, json};

use super::ToolOutput;
use crate::tool::Tool;

/// The most problems one error result lists.
const MAX_PROBLEMS: usize = 20;

/// `None` when `arguments` match `tool`'s schema (or the schema itself is
/// not one a validator can compile: the tool's own fault, logged); the
/// error result the model reads otherwise.
pub fn check(tool: &Tool, arguments: &Value) -> Option<ToolOutput> {
    let validator = match jsonschema::validator_for(tool.parameters()) {
        Ok(validator) => validator,
        Err(e) => {
            tracing::warn!(tool = %tool.name, "the tool's schema does not compile, arguments unchecked: {e}");
            return None;
        }
    };
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(MAX_PROBLEMS)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        return None;
    }
    let schema = json!({
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters(),
    });
    let mut text = format!(
        "The arguments of \"{}\" do not match its schema:\n",
        tool.name
    );
    for problem in &problems {
        text.push_str(&format!("- {problem}\n"));
    }
    text.push_str(&format!(
        "Its schema: {schema}\nCall it again with arguments that match."
    ));
    Some(ToolOutput {
        json: json!({
            "error": "invalid arguments",
            "tool": tool.name,
            "problems": problems,
            "schema": schema,
        }),
        text,
        is_error: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Origin;

    fn tool() -> Tool {
        Tool::new("t", "A tool.", Origin::Builtin).with_parameters(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }))
    }

    #[test]
    fn matching_arguments_pass_and_others_carry_the_schema() {
        assert_eq!(check(&tool(), &json!({"n": 1})), None);
        let out = check(&tool(), &json!({"n": "x"})).unwrap();
        assert!(out.is_error);
        assert_eq!(out.json["schema"]["parameters"]["required"], json!(["n"]));
        assert!(
            out.json["problems"][0]
                .as_str()
                .unwrap()
                .starts_with("/n: "),
            "{}",
            out.json
        );
        assert!(out.text.contains("Its schema: "), "{}", out.text);
    }
}
