//! The world the property suites draw cases in: a three-agent chain over a
//! small universe of tools, with the parents' restrictions, and no plugin.

use host_harness::shell::{Origin, Shell, Tool};

/// The agents of the chain, parents first.
pub const AGENTS: [&str; 3] = ["main", "main/worker", "main/worker/sub"];

/// A tool named `server__tool` is an MCP tool of `server`, else a built-in.
pub fn tool(name: &str, description: &str) -> Tool {
    let origin = match name.split_once("__") {
        Some((server, _)) => Origin::Mcp(server.into()),
        None => Origin::Builtin,
    };
    Tool::new(name, description, origin)
}

/// A shell with `tools`, the agents of [`AGENTS`], the parents' restrictions
/// on the worker and the sub-agent (names the registry does not hold are
/// left out), and with `worker_own` a tool in the worker's own scope.
pub fn chain_shell(
    tools: &[&str],
    worker_allow: Option<&[&str]>,
    sub_allow: Option<&[&str]>,
    worker_own: bool,
) -> Shell {
    let mut shell = Shell::new();
    shell
        .register_tools(
            tools
                .iter()
                .map(|name| tool(name, &format!("The {name} tool."))),
        )
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell.create_agent("worker", Some("main")).unwrap();
    shell.create_agent("sub", Some("main/worker")).unwrap();
    let registered = |allow: &[&str]| -> Vec<String> {
        allow
            .iter()
            .filter(|n| tools.contains(n))
            .map(|n| n.to_string())
            .collect()
    };
    if let Some(allow) = worker_allow {
        shell
            .restrict("main/worker", "parent", Some(registered(allow)))
            .unwrap();
    }
    if let Some(allow) = sub_allow {
        shell
            .restrict("main/worker/sub", "parent", Some(registered(allow)))
            .unwrap();
    }
    if worker_own {
        shell
            .register_tools([Tool::new(
                "notes",
                "Own notes.",
                Origin::Agent("main/worker".into()),
            )])
            .unwrap();
    }
    shell
}
