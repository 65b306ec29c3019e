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
use lazy_tools::LazyTools;
use lazy_tools::host::{Host, LogLevel};
use lazy_tools::registry::{Enrichment, LazyGroup, RegistryDelta, ToolDef, ToolGroup};
use serde_json::json;

struct CountingHost {
    inner: HostView,
    allowed_calls: Cell<usize>,
    registry_calls: Cell<usize>,
    /// Whether the host says what changed in the registry (WIT 0.3.0 `registry-changes`).
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
        self.inner.lazy_groups()
    }
    fn load_group(&self, name: &str) -> Result<Vec<ToolDef>, String> {
        self.inner.load_group(name)
    }
    fn tool_enrichment(&self) -> Vec<Enrichment> {
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
    let mut plugin = LazyTools::new(CountingHost {
        inner: HostView::new(Arc::clone(&core), "lazy-tools"),
        allowed_calls: Cell::new(0),
        registry_calls: Cell::new(0),
        deltas,
    });
    plugin
        .configure(r#"{"defer": ["gh__*", "slack__*"]}"#)
        .unwrap();
    for (id, parent) in AGENTS {
        core.lock().unwrap().create_agent(id, parent).unwrap();
        plugin.agent_created(id, parent).unwrap();
    }
    (core, plugin)
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
