//! Invariants of lazy-tools inside the real component, over random tool
//! sets, configs, agent trees, parent restrictions and activations.
//!
//! Each case builds two shells from the same inputs, one with the plugin and
//! one without, so "what the agent may see" comes from the shell alone and
//! never from the plugin under test.

use std::collections::BTreeSet;

use host_harness::shell::{CallOutcome, Shell};
use host_harness::wasm_host::WasmHost;
use proptest::prelude::*;
use serde_json::json;

use crate::chain::{AGENTS, chain_shell};
use crate::common::{GUARDS, visible_names};

/// A small universe so that patterns, restrictions and activations collide.
const TOOL_NAMES: &[&str] = &[
    "bash",
    "read",
    "web_fetch",
    "todo_write",
    "gh__create_issue",
    "gh__list_issues",
    "slack__post",
    "slack__list",
    "browser_click",
    "browser_type",
];

const PATTERNS: &[&str] = &[
    "*",
    "gh__*",
    "slack__*",
    "*_issues",
    "browser_*",
    "bash",
    "read",
    "*list*",
    "b*",
    "nothing",
];

#[derive(Debug, Clone)]
struct Entry {
    list_is_defer: bool,
    /// `None`: a bare pattern; `Some(true)`: `Defer(..)`; `Some(false)`: `NoDefer(..)`.
    modifier: Option<bool>,
    pattern: &'static str,
}

impl Entry {
    fn text(&self) -> String {
        match self.modifier {
            None => self.pattern.to_string(),
            Some(true) => format!("Defer({})", self.pattern),
            Some(false) => format!("NoDefer({})", self.pattern),
        }
    }

    fn defers(&self) -> bool {
        self.modifier.unwrap_or(self.list_is_defer)
    }
}

#[derive(Debug, Clone)]
struct Case {
    tools: Vec<&'static str>,
    entries: Vec<Entry>,
    /// Restrictions a parent puts on `main/worker` and `main/worker/sub`.
    worker_allow: Option<Vec<&'static str>>,
    sub_allow: Option<Vec<&'static str>>,
    /// A tool in the worker's own scope.
    worker_own: bool,
    /// Activations: (agent index, tool name).
    activations: Vec<(usize, &'static str)>,
}

fn case() -> impl Strategy<Value = Case> {
    let tools = proptest::sample::subsequence(TOOL_NAMES, 1..=TOOL_NAMES.len());
    let entry = (
        any::<bool>(),
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
        proptest::sample::select(PATTERNS),
    )
        .prop_map(|(list_is_defer, modifier, pattern)| Entry {
            list_is_defer,
            modifier,
            pattern,
        });
    let allow = proptest::option::of(proptest::sample::subsequence(
        TOOL_NAMES,
        0..=TOOL_NAMES.len(),
    ));
    (
        tools,
        proptest::collection::vec(entry, 0..5),
        allow.clone(),
        allow,
        any::<bool>(),
        proptest::collection::vec((0..3usize, proptest::sample::select(TOOL_NAMES)), 0..4),
    )
        .prop_map(
            |(tools, entries, worker_allow, sub_allow, worker_own, activations)| Case {
                tools,
                entries,
                worker_allow,
                sub_allow,
                worker_own,
                activations,
            },
        )
}

fn config(case: &Case) -> serde_json::Value {
    let list = |defer: bool| -> Vec<String> {
        case.entries
            .iter()
            .filter(|e| e.list_is_defer == defer)
            .map(Entry::text)
            .collect()
    };
    // Always name both lists so the preset does not apply, and empty the
    // never/always-defer defaults: the properties are about the entries.
    json!({"defer": list(true), "noDefer": list(false), "neverDefer": [], "alwaysDefer": []})
}

/// `*`-only glob, written independently of the plugin's globset patterns.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob_matches(rest, &tail[i..]))
        }
    }
}

/// Builds a shell with the case's tools, agents and parent restrictions.
fn shell(case: &Case) -> Shell {
    chain_shell(
        &case.tools,
        case.worker_allow.as_deref(),
        case.sub_allow.as_deref(),
        case.worker_own,
    )
}

fn visible(shell: &mut Shell, agent: &str) -> BTreeSet<String> {
    visible_names(shell, agent)
}

fn own_scope(shell: &Shell, agent: &str) -> BTreeSet<String> {
    shell
        .core()
        .tools()
        .iter()
        .filter(|t| t.origin.scope() == Some(agent))
        .map(|t| t.name.clone())
        .collect()
}

fn with_plugin(case: &Case) -> Shell {
    let mut shell = shell(case);
    let component = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &component, &config(case))
        .unwrap();
    for (agent, tool) in &case.activations {
        let outcome = shell
            .call(
                AGENTS[*agent],
                "defer_execute_tool",
                &json!({"toolName": tool}),
            )
            .unwrap();
        assert!(
            matches!(outcome, CallOutcome::Completed(ref o) if !o.is_error),
            "{outcome:?}"
        );
    }
    shell
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// The plugin never widens: what an agent sees lies within what the shell
    /// alone lets it see, plus its own scope (where the guards live).
    #[test]
    fn visible_within_parent_allowed_plus_own_scope(case in case()) {
        let mut without = shell(&case);
        let mut with = with_plugin(&case);
        for agent in AGENTS {
            let allowed = visible(&mut without, agent);
            let own = own_scope(&with, agent);
            let seen = visible(&mut with, agent);
            let outside: Vec<_> = seen.iter().filter(|t| !allowed.contains(*t) && !own.contains(*t)).collect();
            prop_assert!(outside.is_empty(), "{agent} sees {outside:?} beyond {allowed:?} + {own:?}");
        }
    }

    /// The guard tools are visible to every agent, whatever the config.
    #[test]
    fn guards_always_visible(case in case()) {
        let mut with = with_plugin(&case);
        for agent in AGENTS {
            let seen = visible(&mut with, agent);
            for guard in GUARDS {
                prop_assert!(seen.contains(guard), "{agent} lost {guard}: {seen:?}");
            }
        }
    }

    /// A tool a NoDefer entry matches is visible wherever the shell lets the
    /// agent see it, even when Defer entries (`*` included) match it too.
    #[test]
    fn no_defer_beats_defer(case in case()) {
        let mut without = shell(&case);
        let mut with = with_plugin(&case);
        let no_defer = |name: &str| case.entries.iter().any(|e| !e.defers() && glob_matches(e.pattern, name));
        for agent in AGENTS {
            let allowed = visible(&mut without, agent);
            let seen = visible(&mut with, agent);
            for tool in allowed.iter().filter(|t| no_defer(t)) {
                // A child only inherits what its parent sees; a NoDefer tool is
                // visible to the parent too, so the chain cannot hide it.
                prop_assert!(seen.contains(tool), "{agent}: `{tool}` matches NoDefer but is hidden");
            }
        }
    }

    /// A deferred tool that was not loaded is hidden from the agent and its
    /// direct call is denied with the hint.
    #[test]
    fn deferred_tools_are_hidden_and_denied(case in case()) {
        let mut with = with_plugin(&case);
        let defer = |name: &str| {
            let matched = |defers: bool| case.entries.iter().any(|e| e.defers() == defers && glob_matches(e.pattern, name));
            matched(true) && !matched(false)
        };
        let agent = "main";
        let activated: BTreeSet<&str> = case.activations.iter().filter(|(a, _)| *a == 0).map(|(_, t)| *t).collect();
        let seen = visible(&mut with, agent);
        for tool in case.tools.iter().filter(|t| defer(t) && !activated.contains(*t)) {
            prop_assert!(!seen.contains(*tool), "`{tool}` should be deferred: {seen:?}");
            let outcome = with.call(agent, tool, &json!({})).unwrap();
            let denied = matches!(&outcome, CallOutcome::Denied { reason, .. } if reason.contains("tool_search"));
            prop_assert!(denied, "`{tool}`: {outcome:?}");
        }
    }
}

#[test]
fn reference_glob_agrees_on_basics() {
    assert!(glob_matches("*", "anything"));
    assert!(glob_matches("gh__*", "gh__x"));
    assert!(glob_matches("*list*", "slack__list"));
    assert!(!glob_matches("b*", "web_fetch"));
    assert!(glob_matches("*_issues", "gh__list_issues"));
}
