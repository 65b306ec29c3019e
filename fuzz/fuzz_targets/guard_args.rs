//! The guard tools' arguments as a model writes them: any text is a result
//! (an error result for bad arguments), never a panic or a plugin error, and
//! every result carries valid JSON.

#![no_main]

use lazy_tools::guards::{DEFER_EXECUTE_TOOL, TOOL_SEARCH};
use lazy_tools_fuzz::{AGENTS, plugin, small_tools};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let tool = if selector & 1 == 0 {
        TOOL_SEARCH
    } else {
        DEFER_EXECUTE_TOOL
    };
    let agent = AGENTS[usize::from(selector >> 1) % AGENTS.len()];
    let arguments = String::from_utf8_lossy(rest);
    // The preset defers every MCP tool: there is something to find and load.
    let mut plugin = plugin(small_tools(), "null").expect("the preset");
    let result = plugin
        .execute(agent, tool, &arguments)
        .expect("a guard call with any arguments is a result");
    let json: serde_json::Value = serde_json::from_str(&result.json).expect("the result is JSON");
    assert!(!result.text.is_empty(), "a result with no text");
    if !result.is_error {
        // Whatever the call loaded is now visible and passes pre-execute.
        let visible = plugin.visible_tools(agent).expect("visible-tools");
        let mut loaded: Vec<&str> = json["matches"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["status"] == "loaded")
            .filter_map(|m| m["name"].as_str())
            .collect();
        if json["status"] == "loaded" {
            loaded.extend(json["toolName"].as_str());
        }
        for name in loaded {
            assert!(
                visible.iter().any(|v| v == name),
                "`{name}` loaded but not visible"
            );
            assert_eq!(plugin.pre_execute(agent, name), lazy_tools::Verdict::Pass);
        }
    }
});
