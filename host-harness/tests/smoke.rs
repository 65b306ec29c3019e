use host_harness::shell::{CallOutcome, Origin, Shell, Tool};
use host_harness::wasm_host::WasmHost;
use serde_json::json;

#[test]
fn smoke() {
    let component = WasmHost::global().lazy_tools().unwrap();
    let mut shell = Shell::new();
    shell
        .register_tools([
            Tool::new("bash", "Run a shell command", Origin::Builtin),
            Tool::new(
                "gh__create_issue",
                "Create a GitHub issue",
                Origin::Mcp("gh".into()),
            ),
        ])
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        .install_plugin("lazy-tools", &component, &json!(null))
        .unwrap();
    let names: Vec<_> = shell
        .next_request("main")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("{names:?}");
    let out = shell.call("main", "gh__create_issue", &json!({})).unwrap();
    println!("{out:?}");
    assert!(matches!(out, CallOutcome::Denied { .. }));
    let out = shell
        .call("main", "tool_search", &json!({"queries": ["github issue"]}))
        .unwrap();
    println!("{out:?}");
    let names: Vec<_> = shell
        .next_request("main")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("{names:?}");
}
