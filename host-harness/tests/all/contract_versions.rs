//! The host keeps running plugins built against older contract versions.

use std::path::Path;

use host_harness::plugin_api::{Rule, ToolState};
use host_harness::shell::{CallOutcome, Origin, Shell, Tool};
use host_harness::tokens::Tokenizer;
use host_harness::wasm_host::{WasmHost, hex};
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

/// Each `wit/since_v<version>/` folder with its version, parsed (`0.3.0` -> [0, 3, 0]).
fn contract_folders(wit: &Path) -> Vec<(Vec<u32>, String, std::path::PathBuf)> {
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(wit).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if let Some(version) = name.strip_prefix("since_v") {
            let parsed = version.split('.').map(|n| n.parse().unwrap()).collect();
            folders.push((parsed, version.to_owned(), path));
        }
    }
    folders.sort();
    folders
}

/// The section of `changelog` headed `## <version>`: its heading's rest and its lines.
fn changelog_section<'a>(changelog: &'a str, version: &str) -> Option<(&'a str, Vec<&'a str>)> {
    let mut lines = changelog.lines();
    let heading = lines.find_map(|line| {
        let rest = line.strip_prefix("## ")?.strip_prefix(version)?;
        (rest.is_empty() || rest.starts_with(' ')).then_some(rest.trim())
    })?;
    Some((
        heading,
        lines.take_while(|l| !l.starts_with("## ")).collect(),
    ))
}

/// A released contract is frozen (wit/CHANGELOG.md says how): its section lists each file of
/// its folder with its SHA-256, and the files are still those. Editing a released folder,
/// adding a file to it, releasing a version without its hashes, or leaving a version
/// unreleased below a newer one fails here.
#[test]
fn released_contract_folders_are_never_edited() {
    use sha2::{Digest, Sha256};
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let changelog = std::fs::read_to_string(wit.join("CHANGELOG.md")).unwrap();
    let folders = contract_folders(&wit);
    assert!(folders.len() >= 3, "{folders:?}");
    let newest = folders.len() - 1;
    for (at, (_, version, folder)) in folders.iter().enumerate() {
        let (heading, lines) = changelog_section(&changelog, version)
            .unwrap_or_else(|| panic!("wit/CHANGELOG.md has no section for {version}"));
        if heading == "(unreleased)" {
            assert_eq!(at, newest, "{version} is unreleased below a newer version");
            continue;
        }
        assert_eq!(heading, "(released)", "{version}'s heading");
        // "`<file>` <sha256>" lines.
        let listed: std::collections::BTreeMap<&str, &str> = lines
            .iter()
            .filter_map(|line| {
                let (file, hash) = line.strip_prefix('`')?.split_once("` ")?;
                (hash.len() == 64).then_some((file, hash))
            })
            .collect();
        let mut files = std::collections::BTreeMap::new();
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            files.insert(name, hex(&Sha256::digest(std::fs::read(&path).unwrap())));
        }
        let files: std::collections::BTreeMap<&str, &str> = files
            .iter()
            .map(|(f, h)| (f.as_str(), h.as_str()))
            .collect();
        assert!(
            !listed.is_empty(),
            "released {version} lists no file hashes"
        );
        assert_eq!(
            files, listed,
            "wit/since_v{version} is released: its files must be those wit/CHANGELOG.md \
             lists (a change is a new version)"
        );
    }
}
