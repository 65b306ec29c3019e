//! lazy-tools' invariants over many random shells: 10,000 cases per property in an optimized
//! build (`cargo test --profile bench -p host-harness --test properties_deep`, a phase of
//! `.ci/run`), 256 in a debug `cargo test`.
//!
//! The plugin crate runs natively over the harness's real shell core (`HostView`: the same
//! `Host` the component's imports delegate to), so a case costs microseconds; the component
//! itself is covered by `properties.rs` with the same kind of cases. Each case builds two shells
//! from the same inputs, one with the plugin and one without, so "what the agent may see" comes
//! from the shell alone and never from the plugin under test.

use std::collections::BTreeSet;

use host_harness::host_view::HostView;
use host_harness::native_plugin::native_lazy_tools;
use host_harness::shell::Shell;

#[path = "support/chain.rs"]
mod chain;
use chain::{AGENTS, chain_shell, tool};
use lazy_tools::{LazyTools, Verdict};
use proptest::prelude::*;
use serde_json::{Value, json};

const CASES: u32 = if cfg!(debug_assertions) { 256 } else { 10_000 };

/// A small universe, so that patterns, restrictions and activations collide.
const TOOL_NAMES: &[&str] = &[
    "bash",
    "read",
    "write",
    "web_fetch",
    "todo_write",
    "gh__create_issue",
    "gh__list_issues",
    "gh__merge_pull_request",
    "slack__post_message",
    "slack__list_channels",
    "browser_click",
    "browser_type",
    "browser_navigate",
    "db__query",
    "db__list_tables",
    "mail__send",
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
    "db__*",
    "*__*",
    "nothing",
];

const QUERIES: &[&str] = &[
    "create an issue",
    "send a message to a channel",
    "click in the browser",
    "run a sql query",
    "list",
    "读取文件",
];

const PLUGIN: &str = "lazy-tools";

#[derive(Debug, Clone)]
enum Entry {
    /// A pattern in `defer` (true) or `noDefer` (false), bare or with a modifier.
    Rule {
        in_defer: bool,
        modifier: Option<bool>,
        pattern: &'static str,
    },
}

#[derive(Debug, Clone)]
enum Switch {
    Unwritten,
    On,
    Off,
    Auto(u32),
}

#[derive(Debug, Clone)]
enum Action {
    /// `defer_execute_tool` by an agent (index) for a tool.
    Load(usize, &'static str),
    /// `tool_search` by name.
    LoadByName(usize, Vec<&'static str>),
    /// `tool_search` with a query.
    Search(usize, &'static str),
    /// Tools leave the registry and one comes (or comes back with a new description).
    RegistryChange(Vec<&'static str>, &'static str),
}

#[derive(Debug, Clone)]
struct Case {
    tools: Vec<&'static str>,
    /// `None`: no config at all (the zero-config preset).
    entries: Option<Vec<Entry>>,
    switch: Switch,
    worker_allow: Option<Vec<&'static str>>,
    sub_allow: Option<Vec<&'static str>>,
    worker_own: bool,
    actions: Vec<Action>,
}

fn case() -> impl Strategy<Value = Case> {
    let tools = proptest::sample::subsequence(TOOL_NAMES, 1..=TOOL_NAMES.len());
    let entry = (
        any::<bool>(),
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
        proptest::sample::select(PATTERNS),
    )
        .prop_map(|(in_defer, modifier, pattern)| Entry::Rule {
            in_defer,
            modifier,
            pattern,
        });
    let switch = prop_oneof![
        Just(Switch::Unwritten),
        Just(Switch::On),
        Just(Switch::Off),
        (1u32..3_000).prop_map(Switch::Auto),
    ];
    let allow = proptest::option::of(proptest::sample::subsequence(
        TOOL_NAMES,
        0..=TOOL_NAMES.len(),
    ));
    let agent = 0..AGENTS.len();
    let tool = proptest::sample::select(TOOL_NAMES);
    let action = prop_oneof![
        4 => (agent.clone(), tool.clone()).prop_map(|(a, t)| Action::Load(a, t)),
        2 => (agent.clone(), proptest::sample::subsequence(TOOL_NAMES, 1..4))
            .prop_map(|(a, t)| Action::LoadByName(a, t)),
        2 => (agent, proptest::sample::select(QUERIES)).prop_map(|(a, q)| Action::Search(a, q)),
        1 => (proptest::sample::subsequence(TOOL_NAMES, 0..3), tool)
            .prop_map(|(gone, new)| Action::RegistryChange(gone, new)),
    ];
    (
        tools,
        proptest::option::weighted(0.85, proptest::collection::vec(entry, 0..6)),
        switch,
        allow.clone(),
        allow,
        any::<bool>(),
        proptest::collection::vec(action, 0..6),
    )
        .prop_map(
            |(tools, entries, switch, worker_allow, sub_allow, worker_own, actions)| Case {
                tools,
                entries,
                switch,
                worker_allow,
                sub_allow,
                worker_own,
                actions,
            },
        )
}

fn config(case: &Case) -> Value {
    let Some(entries) = &case.entries else {
        return Value::Null;
    };
    let list = |defer: bool| -> Vec<String> {
        entries
            .iter()
            .filter(|Entry::Rule { in_defer, .. }| *in_defer == defer)
            .map(
                |Entry::Rule {
                     modifier, pattern, ..
                 }| match modifier {
                    None => pattern.to_string(),
                    Some(true) => format!("Defer({pattern})"),
                    Some(false) => format!("NoDefer({pattern})"),
                },
            )
            .collect()
    };
    let mut config = json!({"defer": list(true), "noDefer": list(false)});
    match case.switch {
        Switch::Unwritten => {}
        Switch::On => config["deferToolLoading"] = json!(true),
        Switch::Off => config["deferToolLoading"] = json!(false),
        Switch::Auto(budget) => {
            config["deferToolLoading"] = json!("auto");
            config["tokenBudget"] = json!(budget);
        }
    }
    config
}

/// A shell with the case's tools, agents and parent restrictions (no plugin).
fn shell(case: &Case) -> Shell {
    chain_shell(
        &case.tools,
        case.worker_allow.as_deref(),
        case.sub_allow.as_deref(),
        case.worker_own,
    )
}

/// Two shells from one case: without the plugin, and with it (after the case's actions).
struct Pair {
    without: Shell,
    with: Shell,
    plugin: LazyTools<HostView>,
}

impl Pair {
    fn new(case: &Case) -> Self {
        let without = shell(case);
        let with = shell(case);
        let mut plugin = native_lazy_tools(with.shared_core(), PLUGIN);
        plugin
            .configure(&config(case).to_string())
            .expect("the generated configs are valid");
        for (i, agent) in AGENTS.iter().enumerate() {
            let parent = i.checked_sub(1).map(|p| AGENTS[p]);
            plugin.agent_created(agent, parent).unwrap();
        }
        let mut pair = Self {
            without,
            with,
            plugin,
        };
        for action in &case.actions {
            pair.act(action);
        }
        pair
    }

    fn act(&mut self, action: &Action) {
        let (agent, tool, arguments) = match action {
            Action::Load(agent, tool) => {
                (*agent, "defer_execute_tool", json!({ "toolName": tool }))
            }
            Action::LoadByName(agent, tools) => {
                (*agent, "tool_search", json!({ "tool_names": tools }))
            }
            Action::Search(agent, query) => (*agent, "tool_search", json!({ "queries": [query] })),
            Action::RegistryChange(gone, new) => {
                for shell in [&mut self.without, &mut self.with] {
                    let registered: BTreeSet<String> = shell
                        .core()
                        .tools()
                        .iter()
                        .map(|t| t.name.clone())
                        .collect();
                    let gone: Vec<&str> = gone
                        .iter()
                        .copied()
                        .filter(|n| registered.contains(*n))
                        .collect();
                    shell.unregister_tools(&gone, None).unwrap();
                    if gone.contains(new) || !registered.contains(*new) {
                        // Back (with a changed definition) or new.
                        shell
                            .register_tools([tool(new, &format!("The new {new} tool."))])
                            .unwrap();
                    }
                }
                self.plugin.registry_changed().unwrap();
                return;
            }
        };
        // Any result: the tool may be unknown, not authorized, or loaded already.
        self.plugin
            .execute(AGENTS[agent], tool, &arguments.to_string())
            .unwrap();
    }

    /// What the shell alone lets `agent` see.
    fn authorized(&self, agent: &str) -> BTreeSet<String> {
        names(&self.without, agent)
    }

    /// What the model of `agent` sees with the plugin: the shell's tools (the plugin's
    /// exposure layer applied) filtered by the plugin's visible-tools.
    fn seen(&mut self, agent: &str) -> BTreeSet<String> {
        let view: BTreeSet<String> = self
            .plugin
            .visible_tools(agent)
            .unwrap()
            .into_iter()
            .collect();
        names(&self.with, agent)
            .into_iter()
            .filter(|name| view.contains(name))
            .collect()
    }

    fn verdicts(&mut self, agent: &str) -> Vec<Verdict> {
        let mut names: BTreeSet<String> = TOOL_NAMES.iter().map(|t| t.to_string()).collect();
        names.insert("notes".into());
        names
            .iter()
            .map(|name| self.plugin.pre_execute(agent, name))
            .collect()
    }
}

fn names(shell: &Shell, agent: &str) -> BTreeSet<String> {
    shell
        .core()
        .effective(agent, None)
        .unwrap()
        .into_iter()
        .map(|t| t.name.clone())
        .collect()
}

/// Random JSON built from the config's own words: keys it knows and some it does not, values
/// of every type, patterns with and without modifiers, broken ones and long ones.
fn config_value() -> impl Strategy<Value = Value> {
    let key = proptest::sample::select(
        &[
            "defer",
            "noDefer",
            "neverDefer",
            "alwaysDefer",
            "deferToolLoading",
            "tokenBudget",
            "families",
            "catalog",
            "catalogTokens",
            "catalogDescriptionChars",
            "members",
            "core",
            "noDefr",
            "",
        ][..],
    );
    let text = prop_oneof![
        proptest::sample::select(PATTERNS).prop_map(str::to_string),
        proptest::sample::select(PATTERNS).prop_map(|p| format!("Defer({p})")),
        proptest::sample::select(PATTERNS).prop_map(|p| format!("NoDefer({p})")),
        proptest::sample::select(
            &[
                "auto",
                "names",
                "groups",
                "none",
                "all",
                "Defer(",
                "NoDefer()",
                "[a-z]",
                "{a,b}",
                "\\*",
                "**"
            ][..]
        )
        .prop_map(str::to_string),
        "\\PC{0,12}",
        (1usize..3_000).prop_map(|n| "x*".repeat(n)),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop_oneof![
            Just(-1i64),
            Just(0),
            Just(1),
            Just(8_000),
            Just(u32::MAX as i64 + 1),
            any::<i64>()
        ]
        .prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        text.prop_map(Value::from),
    ];
    let value = leaf.prop_recursive(3, 24, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            proptest::collection::btree_map(key.clone(), inner, 0..4).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    });
    prop_oneof![
        1 => value.clone(),
        4 => proptest::collection::btree_map(
            proptest::sample::select(&[
                "defer", "noDefer", "neverDefer", "alwaysDefer", "deferToolLoading",
                "tokenBudget", "families", "catalog", "catalogTokens",
                "catalogDescriptionChars", "noDefr",
            ][..]),
            value,
            0..5,
        )
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    /// The plugin never widens: whatever the config, the restrictions, the loads, searches
    /// and registry changes, an agent sees only what the shell alone lets it see.
    #[test]
    fn never_widens_past_the_shell(case in case()) {
        let mut pair = Pair::new(&case);
        for agent in AGENTS {
            let authorized = pair.authorized(agent);
            let seen = pair.seen(agent);
            let outside: Vec<_> = seen.difference(&authorized).collect();
            prop_assert!(outside.is_empty(), "{agent} sees {outside:?} beyond {authorized:?}");
        }
    }

    /// A verdict agrees with what the model sees: a call is denied exactly when the tool is
    /// authorized for the agent but hidden from it (deferred or lapsed); a visible tool, and
    /// one the shell itself refuses, pass to the shell's own checks.
    #[test]
    fn verdicts_agree_with_visibility(case in case()) {
        let mut pair = Pair::new(&case);
        for agent in AGENTS {
            let authorized = pair.authorized(agent);
            let seen = pair.seen(agent);
            let mut names: BTreeSet<String> = TOOL_NAMES.iter().map(|t| t.to_string()).collect();
            names.insert("notes".into());
            for name in names {
                let denied = matches!(pair.plugin.pre_execute(agent, &name), Verdict::Deny(_));
                let hidden = authorized.contains(&name) && !seen.contains(&name);
                prop_assert_eq!(denied, hidden, "{}: `{}` (authorized {:?}, seen {:?})", agent, name, authorized, seen);
            }
        }
    }

    /// Loading is per agent: what one agent loads changes what no other agent sees.
    #[test]
    fn a_load_changes_only_its_agent(case in case(), loader in 0..AGENTS.len(), tool in proptest::sample::select(TOOL_NAMES)) {
        let mut pair = Pair::new(&case);
        let before: Vec<BTreeSet<String>> = AGENTS.iter().map(|a| pair.seen(a)).collect();
        pair.act(&Action::Load(loader, tool));
        for (i, agent) in AGENTS.iter().enumerate().filter(|(i, _)| *i != loader) {
            prop_assert_eq!(&pair.seen(agent), &before[i], "{} loading `{}` changed {}", AGENTS[loader], tool, agent);
        }
    }

    /// Any config value: configure never panics; a refused one says why (each error with a
    /// message) and keeps the old config in force (every view and verdict unchanged); an
    /// accepted one still never widens.
    #[test]
    fn any_config_is_accepted_or_refused_without_effect(case in case(), value in config_value()) {
        let mut pair = Pair::new(&case);
        let before: Vec<(BTreeSet<String>, Vec<Verdict>)> =
            AGENTS.iter().map(|a| (pair.seen(a), pair.verdicts(a))).collect();
        match pair.plugin.configure(&value.to_string()) {
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for error in &errors {
                    prop_assert!(!error.message.is_empty(), "an error without a message: {:?}", error);
                }
                for (i, agent) in AGENTS.iter().enumerate() {
                    prop_assert_eq!(&(pair.seen(agent), pair.verdicts(agent)), &before[i], "refused {} changed {}", value, agent);
                }
            }
            Ok(()) => {
                for agent in AGENTS {
                    let authorized = pair.authorized(agent);
                    let seen = pair.seen(agent);
                    prop_assert!(seen.is_subset(&authorized), "{agent} under {value}: {seen:?} beyond {authorized:?}");
                }
            }
        }
    }
}
