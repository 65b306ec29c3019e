//! What a change costs the other agents (issue 9, load): the plugin asks the
//! shell again what an agent may call only when a change reaches that agent.
//! With 1,000 agents over 10,000 tools, every load (an exposure change) used
//! to make every other agent fetch its 10,000 names again.
//!
//! The plugin runs natively over the real shell core, behind a host that
//! counts `allowed-tools` calls and delegates everything else.

use std::cell::Cell;
use std::sync::{Arc, Mutex};

use host_harness::host_view::HostView;
use host_harness::shell::{Origin, Shell, Tool};
use host_harness::shell_core::ShellCore;
use host_harness::tool::SearchText;
use lazy_tools::LazyTools;
use lazy_tools::host::{AllowedDelta, Host, LogLevel};
use lazy_tools::registry::{Enrichment, LazyGroup, LoadRefusal, RegistryDelta, ToolDef, ToolGroup};
use serde_json::json;

struct CountingHost {
    inner: HostView,
    allowed_calls: Cell<usize>,
    registry_calls: Cell<usize>,
    /// Calls that fetch groups, lazy groups or search text whole.
    metadata_calls: Cell<usize>,
    /// Whether the host says what changed in the registry and for each agent (WIT 0.3.0
    /// `registry-changes`, `allowed-changes`).
    deltas: bool,
}

impl Host for CountingHost {
    fn registry(&self) -> Vec<ToolDef> {
        self.registry_calls.set(self.registry_calls.get() + 1);
        self.inner.registry()
    }
    fn registry_revision(&self) -> Option<u64> {
        self.inner.registry_revision().filter(|_| self.deltas)
    }
    fn registry_changes(&self, since: u64) -> Option<RegistryDelta> {
        self.inner.registry_changes(since).filter(|_| self.deltas)
    }
    fn metadata_revision(&self) -> Option<u64> {
        self.inner.metadata_revision().filter(|_| self.deltas)
    }
    fn allowed_changes(&self, agent: &str, since: u64) -> Option<AllowedDelta> {
        self.inner
            .allowed_changes(agent, since)
            .filter(|_| self.deltas)
    }
    fn allowed_tools(&self, agent: &str) -> Result<Vec<String>, String> {
        self.allowed_calls.set(self.allowed_calls.get() + 1);
        self.inner.allowed_tools(agent)
    }
    fn expose(&self, agent: &str, visible: Option<&[String]>) -> Result<(), String> {
        self.inner.expose(agent, visible)
    }
    fn log(&self, level: LogLevel, message: &str) {
        self.inner.log(level, message)
    }
    fn tool_groups(&self) -> Vec<ToolGroup> {
        self.metadata_calls.set(self.metadata_calls.get() + 1);
        self.inner.tool_groups()
    }
    fn count_tokens(&self, texts: &[String]) -> Option<Vec<u32>> {
        self.inner.count_tokens(texts)
    }
    fn tools_generation(&self) -> u64 {
        self.inner.tools_generation()
    }
    fn agent_generation(&self, agent: &str) -> u64 {
        self.inner.agent_generation(agent)
    }
    fn lazy_groups(&self) -> Vec<LazyGroup> {
        self.metadata_calls.set(self.metadata_calls.get() + 1);
        self.inner.lazy_groups()
    }
    fn load_group(&self, agent: &str, name: &str) -> Result<Vec<ToolDef>, LoadRefusal> {
        self.inner.load_group(agent, name)
    }
    fn tool_enrichment(&self) -> Vec<Enrichment> {
        self.metadata_calls.set(self.metadata_calls.get() + 1);
        self.inner.tool_enrichment()
    }
}

const AGENTS: [(&str, Option<&str>); 4] = [
    ("main", None),
    ("main/a", Some("main")),
    ("main/b", Some("main")),
    ("side", None),
];

fn setup() -> (Arc<Mutex<ShellCore>>, LazyTools<CountingHost>) {
    setup_with(false)
}

fn setup_with(deltas: bool) -> (Arc<Mutex<ShellCore>>, LazyTools<CountingHost>) {
    setup_configured(deltas, r#"{"defer": ["gh__*", "slack__*"]}"#)
}

fn setup_configured(
    deltas: bool,
    config: &str,
) -> (Arc<Mutex<ShellCore>>, LazyTools<CountingHost>) {
    let mut shell = Shell::new();
    let tools = [
        "bash",
        "read",
        "gh__create_issue",
        "gh__list_issues",
        "slack__post",
    ];
    shell
        .register_tools(tools.iter().map(|&n| Tool::new(n, "", Origin::Builtin)))
        .unwrap();
    let core = shell.shared_core();
    for (id, parent) in AGENTS {
        core.lock().unwrap().create_agent(id, parent).unwrap();
    }
    let plugin = plugin_over(&core, deltas, config);
    (core, plugin)
}

/// A plugin configured over `core`, told of every agent of [`AGENTS`] (already created there).
fn plugin_over(
    core: &Arc<Mutex<ShellCore>>,
    deltas: bool,
    config: &str,
) -> LazyTools<CountingHost> {
    let mut plugin = LazyTools::new(CountingHost {
        inner: HostView::new(Arc::clone(core), "lazy-tools"),
        allowed_calls: Cell::new(0),
        registry_calls: Cell::new(0),
        metadata_calls: Cell::new(0),
        deltas,
    });
    plugin.configure(config).unwrap();
    for (id, parent) in AGENTS {
        plugin.agent_created(id, parent).unwrap();
    }
    plugin
}

/// Every agent's next request, counting the `allowed-tools` calls it made.
fn requests(plugin: &mut LazyTools<CountingHost>) -> (usize, Vec<Vec<String>>) {
    plugin.host().allowed_calls.set(0);
    let views = AGENTS
        .iter()
        .map(|(id, _)| plugin.visible_tools(id).unwrap())
        .collect();
    (plugin.host().allowed_calls.get(), views)
}

fn load(plugin: &mut LazyTools<CountingHost>, agent: &str, tool: &str) {
    let arguments = json!({ "tool_names": [tool] }).to_string();
    let loaded = plugin.execute(agent, "tool_search", &arguments).unwrap();
    assert!(!loaded.is_error, "{}", loaded.text);
}

/// A registry change as a plugin sees it when the host says what changed and when it fetches
/// the whole registry: the same views and the same search, without fetching every tool.
#[test]
fn a_registry_change_fetches_only_what_changed_and_sees_the_same() {
    let mut seen = Vec::new();
    for deltas in [false, true] {
        let (core, mut plugin) = setup_with(deltas);
        plugin.host().registry_calls.set(0);
        {
            let mut core = core.lock().unwrap();
            core.register(Tool::new(
                "gh__close_issue",
                "Close an issue of a repository.",
                Origin::Builtin,
            ))
            .unwrap();
            core.unregister("gh__list_issues", None).unwrap();
        }
        plugin.registry_changed().unwrap();
        assert_eq!(
            plugin.host().registry_calls.get(),
            usize::from(!deltas),
            "with deltas the plugin fetches only the changed tools"
        );
        let (_, views) = requests(&mut plugin);
        let arguments = json!({ "queries": ["close an issue"], "top_k": 3 }).to_string();
        let found = plugin.execute("side", "tool_search", &arguments).unwrap();
        assert!(found.text.contains("gh__close_issue"), "{}", found.text);
        assert!(!found.text.contains("gh__list_issues"), "{}", found.text);
        seen.push((views, found.text));
    }
    assert_eq!(seen[0], seen[1]);
}

/// The groups, lazy groups and search text are fetched again only when the shell's metadata
/// revision moved (WIT 0.3.0 `metadata-revision`), and what changed there is searched.
#[test]
fn a_registry_change_fetches_groups_and_search_text_only_when_they_changed() {
    let mut seen = Vec::new();
    for deltas in [false, true] {
        let (core, mut plugin) = setup_with(deltas);
        let mut fetches = Vec::new();
        let mut change = |plugin: &mut LazyTools<CountingHost>, step: &dyn Fn(&mut ShellCore)| {
            step(&mut core.lock().unwrap());
            plugin.host().metadata_calls.set(0);
            plugin.registry_changed().unwrap();
            fetches.push(plugin.host().metadata_calls.get());
        };
        // A tool without search text, then a group described anew, then a tool with some.
        change(&mut plugin, &|core| {
            core.register(Tool::new(
                "gh__close_issue",
                "Close an issue.",
                Origin::Builtin,
            ))
            .unwrap();
        });
        change(&mut plugin, &|core| {
            core.set_group("slack", "Personal notebook and memo pad.");
            core.register(Tool::new(
                "slack__write",
                "Write.",
                Origin::Mcp("slack".into()),
            ))
            .unwrap();
        });
        change(&mut plugin, &|core| {
            let text = SearchText {
                keywords: vec!["nudge".into()],
                ..SearchText::default()
            };
            core.register(
                Tool::new("slack__remind", "Set it.", Origin::Builtin).with_search_text(Some(text)),
            )
            .unwrap();
        });
        change(&mut plugin, &|core| {
            core.set_group("slack", "Personal notebook and memo pad.");
        });
        // Each fetch asks for all three lists.
        let expected = if deltas { [0, 3, 3, 0] } else { [3, 3, 3, 3] };
        assert_eq!(fetches, expected, "deltas: {deltas}");
        let mut found = Vec::new();
        for query in ["memo pad", "nudge"] {
            let arguments = json!({ "queries": [query], "top_k": 1 }).to_string();
            let result = plugin.execute("side", "tool_search", &arguments).unwrap();
            found.push(result.text);
        }
        assert!(found[0].contains("slack__write"), "{}", found[0]);
        assert!(found[1].contains("slack__remind"), "{}", found[1]);
        seen.push(found);
    }
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn a_load_by_one_agent_does_not_make_the_others_ask_again() {
    let (_core, mut plugin) = setup();
    requests(&mut plugin);
    load(&mut plugin, "main/a", "gh__create_issue");
    let (asked, views) = requests(&mut plugin);
    assert_eq!(asked, 0, "a load reaches only the agent that loaded");
    assert!(views[1].contains(&"gh__create_issue".to_string()));
    assert!(!views[2].contains(&"gh__create_issue".to_string()));
}

#[test]
fn a_change_makes_exactly_the_agents_it_reaches_ask_again() {
    let (core, mut plugin) = setup();
    requests(&mut plugin);
    // A restriction on `main` reaches main and its children, not `side`.
    core.lock()
        .unwrap()
        .restrict(
            "main",
            "profile",
            Some(vec!["read".into(), "gh__list_issues".into()]),
        )
        .unwrap();
    let (asked, views) = requests(&mut plugin);
    assert_eq!(asked, 3);
    assert_eq!(views[0], ["read"]);
    assert_eq!(views[3], ["bash", "read"]);
    // A tool registered anywhere reaches every agent.
    core.lock()
        .unwrap()
        .register(Tool::new("grep", "", Origin::Builtin))
        .unwrap();
    let (asked, _) = requests(&mut plugin);
    assert_eq!(asked, 4);
}

/// When most names the plugin numbered have left the registry, it numbers
/// them afresh: what agents loaded and the layers the shell holds survive.
#[test]
fn a_registry_that_turns_over_keeps_loads_and_layers() {
    let (core, mut plugin) = setup();
    let extra: Vec<String> = (0..1_100).map(|i| format!("gh__tool_{i}")).collect();
    {
        let mut core = core.lock().unwrap();
        for name in &extra {
            core.register(Tool::new(name, "", Origin::Builtin)).unwrap();
        }
    }
    plugin.registry_changed().unwrap();
    load(&mut plugin, "main/a", "gh__create_issue");
    {
        let mut core = core.lock().unwrap();
        for name in &extra {
            core.unregister(name, None).unwrap();
        }
        core.register(Tool::new("gh__close_issue", "", Origin::Builtin))
            .unwrap();
    }
    plugin.registry_changed().unwrap();
    let renumbered = plugin
        .host()
        .inner
        .recent_logs()
        .iter()
        .any(|(_, line)| line.contains("numbered tool names afresh"));
    assert!(
        renumbered,
        "the plugin kept numbers for 1,100 departed names"
    );
    let (_, views) = requests(&mut plugin);
    assert_eq!(views[1], ["bash", "read", "gh__create_issue"]);
    assert_eq!(views[2], ["bash", "read"]);
    assert!(matches!(
        plugin.pre_execute("main/a", "gh__close_issue"),
        lazy_tools::Verdict::Deny(_)
    ));
    assert_eq!(
        plugin.pre_execute("main/a", "gh__create_issue"),
        lazy_tools::Verdict::Pass
    );
    // The shell holds the same layer the plugin computed.
    let core = core.lock().unwrap();
    let layer: Vec<&str> = core
        .exposure("main/a", "lazy-tools")
        .unwrap()
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(layer, ["bash", "gh__create_issue", "read"]);
}

/// A server joining (or leaving) reaches every agent, but only through the tools it
/// registers: with `allowed-changes` no agent asks `allowed-tools` again, and every view is
/// the one a whole fetch gives.
#[test]
fn a_server_joining_makes_no_agent_ask_for_everything_again() {
    for config in [r#"{"defer": ["gh__*", "slack__*"]}"#, "null"] {
        let mut seen = Vec::new();
        for deltas in [false, true] {
            let (core, mut plugin) = setup_configured(deltas, config);
            load(&mut plugin, "main/a", "gh__create_issue");
            requests(&mut plugin);
            plugin.host().allowed_calls.set(0);
            let joining = ["linear__create", "linear__search", "linear__comment"];
            {
                let mut core = core.lock().unwrap();
                for name in joining {
                    core.register(Tool::new(
                        name,
                        "A tracker tool.",
                        Origin::Mcp("linear".into()),
                    ))
                    .unwrap();
                }
                core.unregister("slack__post", None).unwrap();
                // A changed definition lapses the loaded tool.
                core.unregister("gh__create_issue", None).unwrap();
                core.register(Tool::new("gh__create_issue", "Changed.", Origin::Builtin))
                    .unwrap();
            }
            plugin.registry_changed().unwrap();
            let during = plugin.host().allowed_calls.get();
            let (asked, views) = requests(&mut plugin);
            let asked = asked + during;
            if deltas {
                assert_eq!(asked, 0, "{config}: a registration made an agent ask again");
            } else {
                assert_eq!(asked, AGENTS.len());
            }
            let verdicts: Vec<_> = AGENTS
                .iter()
                .map(|(id, _)| plugin.pre_execute(id, "gh__create_issue"))
                .collect();
            let prompts: Vec<_> = AGENTS
                .iter()
                .map(|(id, _)| plugin.system_prompt(id).unwrap())
                .collect();
            seen.push((views, verdicts, prompts));
        }
        assert_eq!(seen[0], seen[1], "{config}");
    }
}

/// Shells driven through the same steps, one plugin refreshing agents from deltas and one
/// always fetching them whole: after any sequence of tool registrations and removals (global
/// and in agents' scopes, with or without telling the plugin), restrictions, another
/// plugin's exposure layers and loads, both plugins answer every agent the same, and each
/// shell holds the same exposure layers.
mod deltas_against_whole_fetches {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 6] = [
        "bash",
        "read",
        "gh__create_issue",
        "gh__list_issues",
        "slack__post",
        "linear__create",
    ];
    const CONFIGS: [&str; 6] = [
        r#"{"defer": ["gh__*", "slack__*"]}"#,
        // The preset, by budget: a few tools cross it, or many.
        r#"{"tokenBudget": 150}"#,
        r#"{"tokenBudget": 400}"#,
        r#"{"deferToolLoading": "auto", "tokenBudget": 250, "defer": ["gh__*"]}"#,
        // A catalog in the system prompt, kept in name order from one change to the next.
        r#"{"defer": ["gh__*", "slack__*", "bash"], "catalog": "names"}"#,
        r#"{"tokenBudget": 150, "catalog": "groups"}"#,
    ];

    #[derive(Debug, Clone)]
    enum Step {
        /// Registered (again, with description `size`, when the scope holds it).
        Register {
            name: usize,
            scope: Option<usize>,
            size: usize,
        },
        Unregister {
            name: usize,
            scope: Option<usize>,
        },
        Restrict {
            agent: usize,
            allow: Option<Vec<usize>>,
        },
        Expose {
            agent: usize,
            allow: Option<Vec<usize>>,
        },
        Load {
            agent: usize,
            name: usize,
        },
        RegistryChanged,
    }

    fn step() -> impl Strategy<Value = Step> {
        let name = 0..NAMES.len();
        let agent = 0..AGENTS.len();
        let allow = proptest::option::of(proptest::collection::vec(name.clone(), 0..5));
        prop_oneof![
            4 => (name.clone(), proptest::option::weighted(0.2, agent.clone()), 0usize..40)
                .prop_map(|(name, scope, size)| Step::Register { name, scope, size }),
            2 => (name.clone(), proptest::option::weighted(0.2, agent.clone()))
                .prop_map(|(name, scope)| Step::Unregister { name, scope }),
            1 => (agent.clone(), allow.clone()).prop_map(|(agent, allow)| Step::Restrict { agent, allow }),
            1 => (agent.clone(), allow).prop_map(|(agent, allow)| Step::Expose { agent, allow }),
            2 => (agent, name).prop_map(|(agent, name)| Step::Load { agent, name }),
            3 => Just(Step::RegistryChanged),
        ]
    }

    fn apply(
        core: &Arc<Mutex<ShellCore>>,
        plugin: &mut LazyTools<CountingHost>,
        step: &Step,
    ) -> String {
        let names = |list: &Option<Vec<usize>>| {
            list.as_ref()
                .map(|l| l.iter().map(|&i| NAMES[i].to_string()).collect())
        };
        let scope = |s: &Option<usize>| s.map(|a| AGENTS[a].0);
        let mut core = core.lock().unwrap();
        // Refused steps (an unknown name in a layer) change nothing, alike in both shells.
        match step {
            Step::Register {
                name,
                scope: at,
                size,
            } => {
                let _ = core.unregister(NAMES[*name], scope(at));
                let origin = match (scope(at), NAMES[*name].split_once("__")) {
                    (Some(agent), _) => Origin::Agent(agent.into()),
                    (None, Some((server, _))) => Origin::Mcp(server.into()),
                    (None, None) => Origin::Builtin,
                };
                let description = "word ".repeat(*size);
                format!(
                    "{:?}",
                    core.register(Tool::new(NAMES[*name], description, origin))
                )
            }
            Step::Unregister { name, scope: at } => {
                format!("{:?}", core.unregister(NAMES[*name], scope(at)).map(|_| ()))
            }
            Step::Restrict { agent, allow } => {
                format!(
                    "{:?}",
                    core.restrict(AGENTS[*agent].0, "profile", names(allow))
                )
            }
            Step::Expose { agent, allow } => {
                format!("{:?}", core.expose(AGENTS[*agent].0, "q", names(allow)))
            }
            Step::Load { agent, name } => {
                drop(core);
                let arguments = json!({ "tool_names": [NAMES[*name]] }).to_string();
                format!(
                    "{:?}",
                    plugin.execute(AGENTS[*agent].0, "tool_search", &arguments)
                )
            }
            Step::RegistryChanged => {
                drop(core);
                format!("{:?}", plugin.registry_changed())
            }
        }
    }

    /// Everything an agent's model and the shell get from the plugin.
    fn answers(core: &Arc<Mutex<ShellCore>>, plugin: &mut LazyTools<CountingHost>) -> Vec<String> {
        answers_in(core, plugin, Order::AsGiven)
    }

    /// How visible tools are compared: in the order the plugin gives them, or as a set (a
    /// plugin that lived through changes keeps its tools in the order it first saw them).
    #[derive(Clone, Copy, PartialEq)]
    enum Order {
        AsGiven,
        Sorted,
    }

    fn answers_in(
        core: &Arc<Mutex<ShellCore>>,
        plugin: &mut LazyTools<CountingHost>,
        order: Order,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for (id, _) in AGENTS {
            let mut visible = plugin.visible_tools(id);
            if let (Ok(tools), Order::Sorted) = (&mut visible, order) {
                tools.sort();
            }
            out.push(format!("{visible:?}"));
            out.push(format!("{:?}", plugin.system_prompt(id)));
            for name in NAMES {
                out.push(format!("{:?}", plugin.pre_execute(id, name)));
                out.push(format!("{:?}", plugin.explain(id, name)));
            }
            out.push(format!(
                "{:?}",
                core.lock().unwrap().exposure(id, "lazy-tools")
            ));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn a_view_refreshed_by_deltas_answers_as_one_fetched_whole(
            config in 0..CONFIGS.len(),
            steps in proptest::collection::vec(step(), 1..30),
        ) {
            let (whole_core, mut whole) = setup_configured(false, CONFIGS[config]);
            let (delta_core, mut delta) = setup_configured(true, CONFIGS[config]);
            for step in &steps {
                let a = apply(&whole_core, &mut whole, step);
                let b = apply(&delta_core, &mut delta, step);
                prop_assert_eq!(a, b, "{:?}", step);
                prop_assert_eq!(answers(&whole_core, &mut whole), answers(&delta_core, &mut delta), "after {:?}", step);
            }
        }

        /// What the plugin remembers of a name between refreshes (its class and cost, by
        /// number) is forgotten whenever it could change: after any changes, agents created
        /// anew in a plugin that lived through them see what they see in a plugin configured
        /// afresh over the same shell. (New agents: no loads, and no budget standing, which
        /// stays over once over.)
        #[test]
        fn new_agents_of_a_long_lived_plugin_see_what_a_fresh_plugin_shows(
            config in 0..CONFIGS.len(),
            steps in proptest::collection::vec(step(), 1..30),
        ) {
            let (core, mut plugin) = setup_configured(false, CONFIGS[config]);
            for step in &steps {
                apply(&core, &mut plugin, step);
                // Any request refreshes the views the change reached.
                answers(&core, &mut plugin);
            }
            plugin.registry_changed().unwrap();
            for (id, parent) in AGENTS {
                plugin.agent_disposed(id);
                plugin.agent_created(id, parent).unwrap();
            }
            let lived = answers_in(&core, &mut plugin, Order::Sorted);
            let mut fresh = plugin_over(&core, false, CONFIGS[config]);
            prop_assert_eq!(lived, answers_in(&core, &mut fresh, Order::Sorted));
        }
    }
}
