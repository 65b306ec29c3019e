//! Hides every tool whose name starts with `hidden_` and denies calls to
//! them: just enough of a 0.2.0 plugin to exercise what 0.2.0 added to the
//! host's bindings (tool groups, token counts, the tools generation) and to
//! the plugin's exports (system prompt, explain).

wit_bindgen::generate!({
    path: "../../../wit/since_v0.2.0",
    world: "restriction-plugin",
});

use dsh::tool_restriction::host;
use dsh::tool_restriction::types::{
    ConfigError, Explanation, PluginError, Rule, ToolDef, ToolResult, ToolState, Verdict,
};
use exports::dsh::tool_restriction::restriction::Guest;

const HIDDEN: &str = "hidden_";

struct Plugin;

impl Guest for Plugin {
    fn configure(config: String) -> Result<(), Vec<ConfigError>> {
        match config.trim() {
            "null" | "{}" | "" => Ok(()),
            _ => Err(vec![ConfigError {
                pointer: String::new(),
                entry: None,
                message: "this plugin takes no config".into(),
            }]),
        }
    }

    fn guard_tools() -> Vec<ToolDef> {
        Vec::new()
    }

    fn agent_created(_agent: String, _parent: Option<String>) -> Result<(), PluginError> {
        Ok(())
    }

    fn agent_disposed(_agent: String) {}

    fn registry_changed() -> Result<(), PluginError> {
        Ok(())
    }

    fn visible_tools(agent: String) -> Result<Vec<String>, PluginError> {
        let mut tools = host::allowed_tools(&agent).map_err(PluginError::Host)?;
        tools.retain(|name| !name.starts_with(HIDDEN));
        Ok(tools)
    }

    fn pre_execute(_agent: String, tool: String, _arguments: String) -> Verdict {
        if tool.starts_with(HIDDEN) {
            Verdict::Deny(format!("`{tool}` is hidden"))
        } else {
            Verdict::Pass
        }
    }

    fn execute(
        _agent: String,
        tool: String,
        _arguments: String,
    ) -> Result<ToolResult, PluginError> {
        Err(PluginError::UnknownTool(tool))
    }

    /// One line per hidden tool with the host's token count of its name,
    /// then the groups and the tools generation the host reports.
    fn system_prompt(agent: String) -> Result<Option<String>, PluginError> {
        let mut hidden = host::allowed_tools(&agent).map_err(PluginError::Host)?;
        hidden.retain(|name| name.starts_with(HIDDEN));
        if hidden.is_empty() {
            return Ok(None);
        }
        hidden.sort();
        let counts = host::count_tokens(&hidden);
        let mut text = String::from("hidden tools:\n");
        for (index, name) in hidden.iter().enumerate() {
            match &counts {
                Some(counts) => text.push_str(&format!("- {name} ({} tokens)\n", counts[index])),
                None => text.push_str(&format!("- {name}\n")),
            }
        }
        let mut groups: Vec<String> = host::tool_groups()
            .into_iter()
            .map(|group| format!("{} ({})", group.name, group.description))
            .collect();
        groups.sort();
        text.push_str(&format!("groups: {}\n", groups.join(", ")));
        text.push_str(&format!("generation: {}", host::tools_generation()));
        Ok(Some(text))
    }

    fn explain(agent: String, tool: String) -> Result<Explanation, PluginError> {
        let allowed = host::allowed_tools(&agent).map_err(PluginError::Host)?;
        let (state, rule, why) = if !allowed.contains(&tool) {
            (
                ToolState::Unavailable,
                Rule::UnknownTool,
                "the agent may not call it",
            )
        } else if tool.starts_with(HIDDEN) {
            (
                ToolState::Deferred,
                Rule::DeferEntry,
                "its name starts with `hidden_`",
            )
        } else {
            (ToolState::Visible, Rule::NoRule, "no rule names it")
        };
        let state_name = match state {
            ToolState::Visible => "visible",
            ToolState::Deferred => "deferred",
            ToolState::Unavailable => "unavailable",
        };
        Ok(Explanation {
            state,
            rule,
            summary: format!("{tool}: {state_name}: {why}"),
        })
    }

    fn dispose() {}
}

export!(Plugin);
