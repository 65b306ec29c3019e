//! Helpers the suites share.

use host_harness::shell::Shell;

/// lazy-tools' guard tools, in the order it registers them.
pub const GUARDS: [&str; 3] = ["tool_search", "defer_execute_tool", "load_tools"];

/// The names of the tools on `agent`'s next request, in prompt order (or
/// collected into a set).
pub fn visible_names<C: FromIterator<String>>(shell: &mut Shell, agent: &str) -> C {
    shell
        .next_request(agent)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}
