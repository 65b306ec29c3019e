//! How much a value a plugin returned holds: what the shell would keep, print, or hand to the
//! model. The canonical ABI lifts any value that fits in the plugin's memory, so a plugin could
//! answer a request with a hundred megabytes of system prompt; the shell measures each answer
//! and fails the call past `Limits::returned_bytes`, as it fails one past its memory.

use super::wit::since_v0_3_0::wit::{
    CallResolution, ConfigError, Explanation, ForwardedCall, LocatedExplanation, PluginError,
    ToolDef, ToolOrigin, ToolResult, Verdict,
};

/// The bytes of text in a value, plus one per list item (a list of a million empty strings is
/// not empty to the shell).
pub trait ReturnedBytes {
    fn returned_bytes(&self) -> usize;
}

impl ReturnedBytes for () {
    fn returned_bytes(&self) -> usize {
        0
    }
}

impl ReturnedBytes for String {
    fn returned_bytes(&self) -> usize {
        self.len()
    }
}

impl<T: ReturnedBytes> ReturnedBytes for Vec<T> {
    fn returned_bytes(&self) -> usize {
        self.iter()
            .map(|item| item.returned_bytes().saturating_add(1))
            .fold(0, usize::saturating_add)
    }
}

impl<T: ReturnedBytes> ReturnedBytes for Option<T> {
    fn returned_bytes(&self) -> usize {
        self.as_ref().map_or(0, T::returned_bytes)
    }
}

impl<T: ReturnedBytes, E: ReturnedBytes> ReturnedBytes for Result<T, E> {
    fn returned_bytes(&self) -> usize {
        match self {
            Ok(value) => value.returned_bytes(),
            Err(error) => error.returned_bytes(),
        }
    }
}

impl ReturnedBytes for PluginError {
    fn returned_bytes(&self) -> usize {
        match self {
            PluginError::NotConfigured => 0,
            PluginError::UnknownAgent(text)
            | PluginError::UnknownTool(text)
            | PluginError::Host(text) => text.len(),
        }
    }
}

impl ReturnedBytes for ConfigError {
    fn returned_bytes(&self) -> usize {
        self.pointer.len() + self.entry.returned_bytes() + self.message.len()
    }
}

impl ReturnedBytes for Verdict {
    fn returned_bytes(&self) -> usize {
        match self {
            Verdict::Pass => 0,
            Verdict::Deny(reason) => reason.len(),
        }
    }
}

impl ReturnedBytes for ToolResult {
    fn returned_bytes(&self) -> usize {
        self.json.len() + self.text.len()
    }
}

impl ReturnedBytes for Explanation {
    fn returned_bytes(&self) -> usize {
        self.summary.len()
    }
}

impl ReturnedBytes for LocatedExplanation {
    fn returned_bytes(&self) -> usize {
        self.explanation.returned_bytes() + self.pointer.returned_bytes()
    }
}

impl ReturnedBytes for CallResolution {
    fn returned_bytes(&self) -> usize {
        match self {
            CallResolution::Direct => 0,
            CallResolution::Forward(ForwardedCall {
                tool, arguments, ..
            }) => tool.len() + arguments.len(),
            CallResolution::Reject(result) => result.returned_bytes(),
        }
    }
}

/// A guard tool as the plugin wrote it: its parameters are measured before they are parsed.
impl ReturnedBytes for ToolDef {
    fn returned_bytes(&self) -> usize {
        let origin = match &self.origin {
            ToolOrigin::Builtin => 0,
            ToolOrigin::Mcp(name) | ToolOrigin::Agent(name) => name.len(),
        };
        self.name.len() + self.description.len() + self.parameters.len() + origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_and_list_item_counts() {
        let names = vec![String::new(); 1_000];
        assert_eq!(names.returned_bytes(), 1_000);
        let error: Result<Vec<String>, PluginError> = Err(PluginError::Host("x".repeat(10)));
        assert_eq!(error.returned_bytes(), 10);
        let rejected = CallResolution::Reject(ToolResult {
            json: "{}".into(),
            text: "no".into(),
            is_error: true,
        });
        assert_eq!(Ok::<_, PluginError>(rejected).returned_bytes(), 4);
        let errors = vec![ConfigError {
            pointer: "/defer/0".into(),
            entry: Some("Defer(x)".into()),
            message: "bad".into(),
        }];
        assert_eq!(errors.returned_bytes(), 8 + 8 + 3 + 1);
        // A guard tool's parameters count as written, whitespace and all.
        let guard = ToolDef {
            name: "g".into(),
            description: String::new(),
            parameters: format!("{{{}}}", " ".repeat(100)),
            origin: ToolOrigin::Mcp("srv".into()),
        };
        assert_eq!(vec![guard].returned_bytes(), 1 + 102 + 3 + 1);
    }
}
