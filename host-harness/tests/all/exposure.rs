//! Exposure is per agent, authorization is inherited (issue 8), checked
//! inside the real component over random agent trees, parent restrictions,
//! configs, loads (by exact name, by a misspelt name, by query) and forks.
//!
//! Every case builds the same tree twice, once without the plugin: that
//! reference shell alone says what each agent's chain authorizes.

use std::collections::BTreeSet;

use host_harness::shell::{CallOutcome, Origin, Shell, Tool};
use host_harness::wasm_host::WasmHost;
use proptest::prelude::*;
use serde_json::json;

use crate::common::{GUARDS, visible_names};

const TOOL_NAMES: &[&str] = &[
    "bash",
    "read",
    "web_search",
    "gh__create_issue",
    "gh__create_issues",
    "gh__list_issues",
    "slack__post_message",
    "slack__post_messages",
    "pw__browser_click",
];

const CONFIGS: &[&str] = &[
    r#"{"defer": ["*"]}"#,
    r#"{"defer": ["gh__*", "slack__*"], "noDefer": ["gh__list_issues"]}"#,
    r#"{"deferToolLoading": true}"#,
    r#"{"defer": ["Defer(*)"], "alwaysDefer": ["*browser*"], "neverDefer": ["read"]}"#,
];

/// One thing the model or the shell does.
#[derive(Debug, Clone)]
enum Action {
    /// `defer_execute_tool` by exact name, or misspelt (last letter dropped).
    Load {
        agent: usize,
        tool: usize,
        misspelt: bool,
    },
    /// `tool_search` by a query naming a tool's words.
    Search { agent: usize, tool: usize },
    /// A new agent under `parent`, forked from `source`.
    Fork { parent: usize, source: usize },
}

#[derive(Debug, Clone)]
struct Case {
    tools: Vec<&'static str>,
    config: &'static str,
    /// Agent `i + 1`'s parent (an index below `i + 1`); agent 0 is `main`.
    parents: Vec<usize>,
    /// The parent's restriction on agent `i + 1`, if any.
    restrictions: Vec<Option<Vec<&'static str>>>,
    actions: Vec<Action>,
}

fn case() -> impl Strategy<Value = Case> {
    let tools = proptest::sample::subsequence(TOOL_NAMES, 2..=TOOL_NAMES.len());
    let tree = (1..4usize).prop_flat_map(|children| {
        let parents: Vec<_> = (0..children).map(|i| 0..=i).collect();
        let restriction = proptest::option::of(proptest::sample::subsequence(
            TOOL_NAMES,
            0..=TOOL_NAMES.len(),
        ));
        (
            parents,
            proptest::collection::vec(restriction, children..=children),
        )
    });
    let action = prop_oneof![
        4 => (0..8usize, 0..TOOL_NAMES.len(), proptest::bool::weighted(0.3))
            .prop_map(|(agent, tool, misspelt)| Action::Load { agent, tool, misspelt }),
        2 => (0..8usize, 0..TOOL_NAMES.len()).prop_map(|(agent, tool)| Action::Search { agent, tool }),
        1 => (0..8usize, 0..8usize).prop_map(|(parent, source)| Action::Fork { parent, source }),
    ];
    (
        tools,
        proptest::sample::select(CONFIGS),
        tree,
        proptest::collection::vec(action, 0..8),
    )
        .prop_map(|(tools, config, (parents, restrictions), actions)| Case {
            tools,
            config,
            parents,
            restrictions,
            actions,
        })
}

/// The two shells of a case, kept in step.
struct World {
    with: Shell,
    without: Shell,
    agents: Vec<String>,
    registered: BTreeSet<String>,
}

impl World {
    fn new(case: &Case) -> Self {
        let mut agents = vec!["main".to_string()];
        for (i, parent) in case.parents.iter().enumerate() {
            agents.push(format!("{}/a{}", agents[*parent], i + 1));
        }
        let build = || {
            let mut shell = Shell::new();
            let tools = case.tools.iter().map(|name| {
                let origin = match name.split_once("__") {
                    Some((server, _)) => Origin::Mcp(server.into()),
                    None => Origin::Builtin,
                };
                Tool::new(
                    *name,
                    format!("The {} tool.", name.replace('_', " ")),
                    origin,
                )
            });
            shell.register_tools(tools).unwrap();
            shell.create_agent("main", None).unwrap();
            for (i, parent) in case.parents.iter().enumerate() {
                let id = &agents[i + 1];
                shell
                    .create_agent(&format!("a{}", i + 1), Some(&agents[*parent]))
                    .unwrap();
                if let Some(allow) = &case.restrictions[i] {
                    let allow = allow
                        .iter()
                        .filter(|n| case.tools.contains(n))
                        .map(|n| n.to_string())
                        .collect();
                    shell.restrict(id, "parent", Some(allow)).unwrap();
                }
            }
            shell
        };
        let without = build();
        let mut with = build();
        let component = WasmHost::global().lazy_tools().unwrap();
        let config: serde_json::Value = serde_json::from_str(case.config).unwrap();
        with.install_plugin("lazy-tools", &component, &config)
            .unwrap();
        Self {
            with,
            without,
            agents,
            registered: case.tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    /// What `agent`'s chain authorizes: the shell without the plugin.
    fn authorized(&mut self, agent: &str) -> BTreeSet<String> {
        names(&mut self.without, agent)
    }

    fn seen(&mut self, agent: &str) -> BTreeSet<String> {
        names(&mut self.with, agent)
    }

    fn agent(&self, index: usize) -> String {
        self.agents[index % self.agents.len()].clone()
    }

    fn fork(&mut self, parent: usize, source: usize) -> String {
        let (parent, source) = (self.agent(parent), self.agent(source));
        let name = format!("f{}", self.agents.len());
        let id = self.with.fork_agent(&name, Some(&parent), &source).unwrap();
        self.without.create_agent(&name, Some(&parent)).unwrap();
        self.agents.push(id.clone());
        id
    }

    /// Runs a guard tool and checks that its result names no registered
    /// tool the agent's chain does not authorize, except those the model
    /// named itself.
    fn guard_call(
        &mut self,
        agent: &str,
        tool: &str,
        args: serde_json::Value,
        asked: &[&str],
    ) -> Result<serde_json::Value, TestCaseError> {
        let outcome = self.with.call(agent, tool, &args).unwrap();
        let CallOutcome::Completed(out) = outcome else {
            return Err(TestCaseError::fail(format!(
                "{agent}: {tool} did not run: {outcome:?}"
            )));
        };
        let authorized = self.authorized(agent);
        let text = format!("{} {}", out.json, out.text);
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let leaked = self.registered.contains(word)
                && !authorized.contains(word)
                && !asked.contains(&word);
            prop_assert!(
                !leaked,
                "{agent}: {tool}({args}) names `{word}`, which its chain does not authorize: {text}"
            );
        }
        Ok(out.json)
    }
}

fn names(shell: &mut Shell, agent: &str) -> BTreeSet<String> {
    visible_names(shell, agent)
}

/// Nothing an agent sees or may call exceeds what its chain authorizes
/// (its own scope, where the guards live, aside).
fn check_within(world: &mut World) -> Result<(), TestCaseError> {
    for agent in world.agents.clone() {
        let authorized = world.authorized(&agent);
        let seen = world.seen(&agent);
        let beyond: Vec<_> = seen
            .iter()
            .filter(|t| !authorized.contains(*t) && !GUARDS.contains(&t.as_str()))
            .collect();
        prop_assert!(
            beyond.is_empty(),
            "{agent} sees {beyond:?} beyond {authorized:?}"
        );
        for tool in world.registered.clone() {
            if authorized.contains(&tool) {
                continue;
            }
            let outcome = world.with.call(&agent, &tool, &json!({})).unwrap();
            prop_assert!(
                !matches!(outcome, CallOutcome::Completed(_)),
                "{agent} ran `{tool}`, which its chain does not authorize"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Whatever was loaded or forked before, and by whom: every agent may
    /// load exactly what its chain authorizes, never more, and hints never
    /// name what the chain hides.
    #[test]
    fn each_agent_loads_exactly_what_its_chain_authorizes(case in case()) {
        let mut world = World::new(&case);
        for action in &case.actions {
            match action {
                Action::Load { agent, tool, misspelt } => {
                    let agent = world.agent(*agent);
                    let name = TOOL_NAMES[*tool];
                    let asked = if *misspelt { &name[..name.len() - 1] } else { name };
                    let result = world.guard_call(&agent, "defer_execute_tool", json!({"toolName": asked}), &[asked])?;
                    let authorized = world.authorized(&agent);
                    let status = result["status"].as_str().unwrap_or_default();
                    prop_assert_eq!(
                        status != "unavailable",
                        authorized.contains(asked),
                        "{} loading `{}`: {}", agent, asked, result
                    );
                }
                Action::Search { agent, tool } => {
                    let agent = world.agent(*agent);
                    let query = TOOL_NAMES[*tool].replace('_', " ");
                    world.guard_call(&agent, "tool_search", json!({"queries": [query]}), &[])?;
                }
                Action::Fork { parent, source } => {
                    let source_id = world.agent(*source);
                    let before = world.seen(&source_id);
                    let fork = world.fork(*parent, *source);
                    let authorized = world.authorized(&fork);
                    let seen = world.seen(&fork);
                    let missing: Vec<_> = before
                        .iter()
                        .filter(|t| authorized.contains(*t) && !seen.contains(*t))
                        .collect();
                    prop_assert!(missing.is_empty(), "fork {fork} of {source_id} lost {missing:?}");
                }
            }
            check_within(&mut world)?;
        }
        // Loading everything gives each agent exactly what its chain
        // authorizes, whatever its ancestors loaded.
        for agent in world.agents.clone() {
            let all: Vec<&str> = TOOL_NAMES.to_vec();
            world.guard_call(&agent, "tool_search", json!({"tool_names": all}), &all)?;
            let mut expected = world.authorized(&agent);
            expected.extend(GUARDS.iter().map(|g| g.to_string()));
            let seen = world.seen(&agent);
            prop_assert_eq!(&seen, &expected, "{} after loading everything", agent);
        }
    }
}
