//! Token economics through the real component: the budget boundary, auto
//! mode without flapping, the fallback estimate, byte-stable catalogs and
//! the cold-start targets on the bundled catalog.

use std::path::Path;

use host_harness::catalog::Catalog;
use host_harness::commands::tokens::{CatalogMode, report};
use host_harness::plugin_api::Rule;
use host_harness::shell::{CallOutcome, Origin, Shell, Tool, core_builtins};
use host_harness::tokens::Tokenizer;
use host_harness::wasm_host::WasmHost;
use proptest::prelude::*;
use serde_json::{Value, json};

fn catalog(name: &str) -> Catalog {
    Catalog::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../catalogs")
            .join(name),
    )
    .unwrap()
}

fn tools() -> Vec<Tool> {
    let params = |p: &str| json!({"type": "object", "properties": {p: {"type": "string", "description": format!("The {p}")}}, "required": [p]});
    vec![
        Tool::new("bash", "Run a shell command.", Origin::Builtin)
            .with_parameters(params("command")),
        Tool::new(
            "gh__create_issue",
            "Create a new issue in a GitHub repository.",
            Origin::Mcp("gh".into()),
        )
        .with_parameters(params("title")),
        Tool::new(
            "gh__list_issues",
            "List the issues of a repository.",
            Origin::Mcp("gh".into()),
        )
        .with_parameters(params("repo")),
        Tool::new(
            "slack__post",
            "Post a message to a Slack channel.",
            Origin::Mcp("slack".into()),
        )
        .with_parameters(params("text")),
    ]
}

fn big_tool() -> Tool {
    Tool::new(
        "db__query",
        "Run a SQL query. ".repeat(40),
        Origin::Mcp("db".into()),
    )
}

fn shell(tokenizer: Option<Tokenizer>, tools: Vec<Tool>, config: Value) -> Shell {
    let mut shell = Shell::new();
    shell.core().set_tokenizer(tokenizer);
    shell.register_tools(tools).unwrap();
    shell.create_agent("main", None).unwrap();
    let component = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &component, &config)
        .unwrap();
    shell
}

fn visible(shell: &mut Shell) -> Vec<String> {
    crate::common::visible_names(shell, "main")
}

/// What the tools cost as the model receives them, counted by the harness.
fn exact(tools: &[Tool], tokenizer: Tokenizer) -> u32 {
    let schemas: Vec<_> = tools.iter().map(Tool::schema).collect();
    u32::try_from(tokenizer.count_tools(&schemas)).unwrap()
}

fn auto(budget: u32) -> Value {
    json!({"deferToolLoading": "auto", "tokenBudget": budget, "defer": ["gh__*", "slack__*", "db__*"]})
}

#[test]
fn budget_boundary_just_under_and_just_over() {
    let tokens = exact(&tools(), Tokenizer::O200k);
    // At the budget: nothing is deferred.
    let mut at = shell(Some(Tokenizer::O200k), tools(), auto(tokens));
    assert_eq!(
        visible(&mut at),
        [
            "bash",
            "gh__create_issue",
            "gh__list_issues",
            "slack__post",
            "tool_search",
            "defer_execute_tool",
            "load_tools"
        ]
    );
    let why = at
        .explain("lazy-tools", "main", "gh__create_issue")
        .unwrap();
    assert_eq!(why.rule, Rule::Budget);
    assert!(
        why.summary.contains(&format!(
            "take {tokens} tokens, within the budget of {tokens}"
        )),
        "{}",
        why.summary
    );
    // One token under: the eligible tools are deferred.
    let mut over = shell(Some(Tokenizer::O200k), tools(), auto(tokens - 1));
    assert_eq!(
        visible(&mut over),
        ["bash", "tool_search", "defer_execute_tool", "load_tools"]
    );
    let why = over
        .explain("lazy-tools", "main", "gh__create_issue")
        .unwrap();
    assert_eq!(why.rule, Rule::DeferEntry);
    assert!(
        why.summary.contains("exceed the token budget"),
        "{}",
        why.summary
    );
}

#[test]
fn auto_mode_never_flaps() {
    let budget = exact(&tools(), Tokenizer::O200k);
    let mut shell = shell(Some(Tokenizer::O200k), tools(), auto(budget));
    assert_eq!(visible(&mut shell).len(), 7);
    // A server connects and pushes the schemas over the budget: deferral
    // starts, for every eligible tool.
    shell.register_tools([big_tool()]).unwrap();
    assert_eq!(
        visible(&mut shell),
        ["bash", "tool_search", "defer_execute_tool", "load_tools"]
    );
    // It leaves again: back under the budget, but the others stay deferred.
    shell.unregister_tools(&["db__query"], None).unwrap();
    assert_eq!(
        visible(&mut shell),
        ["bash", "tool_search", "defer_execute_tool", "load_tools"]
    );
    shell.register_tools([big_tool()]).unwrap();
    shell.unregister_tools(&["db__query"], None).unwrap();
    assert_eq!(
        visible(&mut shell),
        ["bash", "tool_search", "defer_execute_tool", "load_tools"]
    );
    // A new config weighs the budget afresh.
    shell.reconfigure("lazy-tools", &auto(budget)).unwrap();
    assert_eq!(visible(&mut shell).len(), 7);
}

#[test]
fn without_a_counter_the_estimate_decides_and_errs_high() {
    let tokens = exact(&tools(), Tokenizer::O200k);
    // With the host's counter the tools fit; the estimate says they do not.
    let mut counted = shell(Some(Tokenizer::O200k), tools(), auto(tokens));
    assert_eq!(visible(&mut counted).len(), 7);
    let mut estimated = shell(None, tools(), auto(tokens));
    assert_eq!(
        visible(&mut estimated),
        ["bash", "tool_search", "defer_execute_tool", "load_tools"]
    );
}

#[test]
fn the_estimate_is_never_below_the_exact_count() {
    let mut all: Vec<Tool> = core_builtins();
    for name in ["livemcpbench.json", "reference-servers.json"] {
        all.extend(catalog(name).tools().map(|(_, t)| t));
    }
    for tool in &all {
        let schema = serde_json::to_string(&tool.schema()).unwrap();
        // The plugin counts the same text the model receives.
        let def = lazy_tools::registry::ToolDef {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters_json().to_string(),
            origin: lazy_tools::registry::Origin::Builtin,
        };
        assert_eq!(lazy_tools::tokens::schema_text(&def), schema);
        let estimate = lazy_tools::tokens::estimate_tokens(&schema);
        for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k] {
            let count = tokenizer.count(&schema);
            assert!(
                estimate >= count,
                "{}: estimate {estimate} < {tokenizer} {count}",
                tool.name
            );
        }
    }
}

#[test]
fn never_defer_and_always_defer_hold_under_auto() {
    let mut tools = tools();
    tools.push(Tool::new("web_search", "Search the web.", Origin::Builtin));
    tools.push(Tool::new(
        "pw__browser_click",
        "Click.",
        Origin::Mcp("pw".into()),
    ));
    // Far under the budget: only the always-deferred family is hidden. The
    // lists are written: the shipped ones belong to the zero-config preset.
    let mut written = shell(
        Some(Tokenizer::O200k),
        tools.clone(),
        json!({"deferToolLoading": "auto", "defer": ["Defer(*)"],
               "neverDefer": ["web_search"], "alwaysDefer": ["*browser_*"]}),
    );
    let seen = visible(&mut written);
    assert!(
        seen.contains(&"web_search".to_string()) && seen.contains(&"gh__create_issue".to_string())
    );
    assert!(!seen.contains(&"pw__browser_click".to_string()), "{seen:?}");
    let why = written
        .explain("lazy-tools", "main", "pw__browser_click")
        .unwrap();
    assert_eq!(why.rule, Rule::AlwaysDefer);
    // The zero-config preset (auto by default) does the same with its
    // shipped lists.
    let mut preset = shell(Some(Tokenizer::O200k), tools, Value::Null);
    let seen = visible(&mut preset);
    assert!(seen.contains(&"gh__create_issue".to_string()), "{seen:?}");
    assert!(!seen.contains(&"pw__browser_click".to_string()), "{seen:?}");
}

#[test]
fn cold_start_meets_the_targets_on_the_bundled_catalog() {
    let catalog = catalog("livemcpbench.json");
    let none = report(
        &catalog,
        &Value::Null,
        Some(CatalogMode::None),
        5,
        Tokenizer::O200k,
    )
    .unwrap();
    assert!(none.eager > 80_000, "{none:?}");
    assert!(none.cold_start_ratio <= 0.015, "{none:?}");
    assert!(none.after_activation > none.cold_start);
    // What guides the model's queries stays cheap: both guard schemas under 450 tokens.
    assert!(
        none.guard_schema_tokens > 100 && none.guard_schema_tokens < 450,
        "{none:?}"
    );
    let names = report(
        &catalog,
        &Value::Null,
        Some(CatalogMode::Names),
        5,
        Tokenizer::O200k,
    )
    .unwrap();
    assert!(names.cold_start_ratio <= 0.03, "{names:?}");
    assert!(
        names.catalog_tokens > 0 && names.catalog_tokens <= 2000,
        "{names:?}"
    );
}

fn catalog_text(order: &[usize], activations: &[usize], mode: &str) -> String {
    let all: Vec<Tool> = catalog("reference-servers.json")
        .tools()
        .map(|(_, t)| t)
        .collect();
    let mut shell = Shell::new();
    shell.core().set_tokenizer(Some(Tokenizer::O200k));
    let cat = catalog("reference-servers.json");
    for server in &cat.servers {
        shell.core().set_group(&server.name, &server.description);
    }
    shell
        .register_tools(order.iter().map(|&i| all[i].clone()))
        .unwrap();
    shell.create_agent("main", None).unwrap();
    let config = json!({"catalog": mode, "catalogTokens": 100_000});
    let component = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin("lazy-tools", &component, &config)
        .unwrap();
    for &i in activations {
        let outcome = shell
            .call(
                "main",
                "defer_execute_tool",
                &json!({"toolName": all[i].name}),
            )
            .unwrap();
        assert!(matches!(outcome, CallOutcome::Completed(_)));
    }
    shell.assemble("main").unwrap().system_prompt.unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The catalog text is byte-identical for any registry order and any
    /// activation order.
    #[test]
    fn catalog_is_byte_stable(
        order in Just((0..catalog("reference-servers.json").tool_count()).collect::<Vec<_>>()).prop_shuffle(),
        activations in proptest::collection::vec(0..40usize, 0..6),
    ) {
        let n = order.len();
        let sorted: Vec<usize> = (0..n).collect();
        for mode in ["names", "groups"] {
            let baseline = catalog_text(&sorted, &[], mode);
            prop_assert_eq!(&catalog_text(&order, &activations, mode), &baseline);
        }
    }
}
