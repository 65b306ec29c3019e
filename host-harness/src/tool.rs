//! Tools as the shell holds them, and what the model receives.

use serde::Serialize;
use serde_json::Value;

pub type AgentId = String;

/// Where a tool comes from; for `Agent` also the scope it lives in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    Builtin,
    Mcp(String),
    Agent(AgentId),
}

impl Origin {
    /// The agent whose own scope holds the tool; `None` for the global scope.
    pub fn scope(&self) -> Option<&str> {
        match self {
            Origin::Agent(agent) => Some(agent),
            Origin::Builtin | Origin::Mcp(_) => None,
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builtin => f.write_str("built-in"),
            Origin::Mcp(server) => write!(f, "MCP server `{server}`"),
            Origin::Agent(agent) => write!(f, "agent `{agent}`"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments, and the same as JSON text: plugins fetch the whole
    /// registry as text after every change, so it is encoded once, when it is set.
    parameters: Value,
    parameters_json: String,
    pub origin: Origin,
    /// The plugin that runs this tool (its guard tools); `None` for the
    /// shell's own and MCP tools.
    pub owner: Option<String>,
    /// What the shell knows of the tool for search beyond its definition (boxed: most tools
    /// have none).
    pub search_text: Option<Box<SearchText>>,
}

/// Equal when all but the parameters' text is: that text is encoded from the parameters, and
/// a schema whose keys come in another order is the same schema. A server that lists its tools
/// again with keys reordered (or a cached listing that did) changes nothing registered.
impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        self.same_definition(other)
            && self.origin == other.origin
            && self.owner == other.owner
            && self.search_text == other.search_text
    }
}

/// Search text for a tool beyond its definition (a catalog's `x-lazy-tools`, or what a
/// shell's model wrote once for it): plugins receive it through WIT 0.3.0
/// `host.tool-enrichment`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchText {
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub examples: Vec<String>,
    /// The description in other languages.
    #[serde(default)]
    pub descriptions: Vec<String>,
}

impl Tool {
    pub fn new(name: impl Into<String>, description: impl Into<String>, origin: Origin) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: Value::Null,
            parameters_json: String::new(),
            origin,
            owner: None,
            search_text: None,
        }
        .with_parameters(serde_json::json!({"type": "object", "properties": {}}))
    }

    pub fn with_parameters(mut self, parameters: Value) -> Self {
        self.parameters_json = parameters.to_string();
        self.parameters = parameters;
        self
    }

    pub fn with_search_text(mut self, text: Option<SearchText>) -> Self {
        self.search_text = text.map(Box::new);
        self
    }

    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// [`Tool::parameters`] as compact JSON text.
    pub fn parameters_json(&self) -> &str {
        &self.parameters_json
    }

    /// Whether `other` is the same tool as the model reads it: name, description and
    /// parameters as JSON values (a schema whose keys come in another order is the same
    /// schema), not who runs it or its search text.
    pub fn same_definition(&self, other: &Tool) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.parameters == other.parameters
    }

    /// The tool as the model receives it.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.parameters.clone(),
        }
    }
}

/// The tools' names, comma-separated, for people.
pub fn names(tools: &[ToolSchema]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One entry of the tool list sent to the model, in the field order of the
/// Anthropic and MCP APIs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}
