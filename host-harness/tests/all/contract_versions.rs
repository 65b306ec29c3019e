//! The host keeps running plugins built against older contract versions.

use std::path::Path;

use host_harness::plugin_api::{Rule, ToolState};
use host_harness::shell::{CallOutcome, Origin, Shell, Tool};
use host_harness::tokens::Tokenizer;
use host_harness::wasm_host::WasmHost;
use serde_json::{Value, json};

use crate::guests;

fn shell_with(component: &Path) -> Shell {
    let mut shell = Shell::new();
    shell
        .register_tools([
            Tool::new("bash", "Run a command.", Origin::Builtin),
            Tool::new("forbidden_rm", "Remove everything.", Origin::Builtin),
            Tool::new(
                "hidden_search",
                "Search the web.",
                Origin::Mcp("web".into()),
            ),
        ])
        .unwrap();
    shell.create_agent("main", None).unwrap();
    let component = WasmHost::global().load(component).unwrap();
    shell
        .install_plugin("old", &component, &Value::Null)
        .unwrap();
    shell
}

#[test]
fn a_0_1_0_plugin_runs_with_its_own_semantics() {
    let mut shell = shell_with(&guests::component("restriction-v0-1-0"));
    assert_eq!(shell.plugin_mut("old").unwrap().contract_version(), "0.1.0");
    let request = shell.assemble("main").unwrap();
    let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bash", "forbidden_rm", "hidden_search"]);
    // 0.1.0 has no system-prompt hook and no explain.
    assert_eq!(request.system_prompt, None);
    let err = shell.explain("old", "main", "bash").unwrap_err();
    assert!(
        format!("{err:#}").contains("0.1.0, which has no explain"),
        "{err:#}"
    );
    let outcome = shell.call("main", "forbidden_rm", &json!({})).unwrap();
    assert_eq!(
        outcome,
        CallOutcome::Denied {
            by: "old".into(),
            reason: "`forbidden_rm` is forbidden".into()
        }
    );
    assert!(matches!(
        shell.call("main", "bash", &json!({})).unwrap(),
        CallOutcome::Completed(_)
    ));
}

#[test]
fn a_0_2_0_plugin_runs_with_its_own_semantics() {
    let mut shell = shell_with(&guests::component("restriction-v0-2-0"));
    assert_eq!(shell.plugin_mut("old").unwrap().contract_version(), "0.2.0");
    shell.core().set_tokenizer(Some(Tokenizer::O200k));
    shell.core().set_group("web", "Searching the web.");

    // visible-tools hides `hidden_*`.
    let request = shell.assemble("main").unwrap();
    let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["bash", "forbidden_rm"]);

    // system-prompt, built from what 0.2.0 added to the host: tool groups,
    // token counts and the tools generation, all reaching the guest through
    // the bindings remapped onto the newest version.
    let tokens = Tokenizer::O200k.count("hidden_search");
    let generation = shell.core().generation();
    assert_eq!(
        request.system_prompt.as_deref(),
        Some(
            format!(
                "hidden tools:\n- hidden_search ({tokens} tokens)\ngroups: web (Searching the web.)\ngeneration: {generation}"
            )
            .as_str()
        )
    );

    // explain, with 0.2.0's states and rules.
    let hidden = shell.explain("old", "main", "hidden_search").unwrap();
    assert_eq!(
        (hidden.state, hidden.rule, hidden.summary.as_str()),
        (
            ToolState::Deferred,
            Rule::DeferEntry,
            "hidden_search: deferred: its name starts with `hidden_`"
        )
    );
    let bash = shell.explain("old", "main", "bash").unwrap();
    assert_eq!((bash.state, bash.rule), (ToolState::Visible, Rule::NoRule));
    let missing = shell.explain("old", "main", "nope").unwrap();
    assert_eq!(
        (missing.state, missing.rule),
        (ToolState::Unavailable, Rule::UnknownTool)
    );

    // pre-execute denies what it hides; the rest runs.
    assert_eq!(
        shell.call("main", "hidden_search", &json!({})).unwrap(),
        CallOutcome::Denied {
            by: "old".into(),
            reason: "`hidden_search` is hidden".into()
        }
    );
    assert!(matches!(
        shell.call("main", "forbidden_rm", &json!({})).unwrap(),
        CallOutcome::Completed(_)
    ));
}

#[test]
fn the_current_plugin_speaks_the_newest_version() {
    let mut shell = shell_with(&host_harness::wasm_host::lazy_tools_component_path());
    assert_eq!(shell.plugin_mut("old").unwrap().contract_version(), "0.3.0");
}

#[test]
fn a_component_without_the_interface_is_refused_with_the_versions() {
    let mut shell = Shell::new();
    shell.create_agent("main", None).unwrap();
    // A valid component that exports nothing is not a plugin.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.wasm");
    std::fs::write(&path, wat_empty_component()).unwrap();
    let component = WasmHost::global().load(&path).unwrap();
    let err = shell
        .install_plugin("x", &component, &Value::Null)
        .unwrap_err();
    let err = format!("{:#}", anyhow::Error::from(err));
    assert!(
        err.contains("does not export dsh:tool-restriction/restriction in a version this host supports (0.3.0, 0.2.0, 0.1.0)"),
        "{err}"
    );
}

/// The binary encoding of `(component)`: magic, version 0x0d, layer 1.
fn wat_empty_component() -> Vec<u8> {
    vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]
}
