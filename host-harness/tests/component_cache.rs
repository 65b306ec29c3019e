//! The precompiled component cache, with the real lazy-tools component on the
//! real engine: an entry is written once and used after, and an entry that is
//! corrupt, foreign or for another component or engine is never used.

use std::path::Path;

use host_harness::shell::{Origin, Shell, Tool};
use host_harness::wasm_host::cache::{CompiledCache, Rejection};
use host_harness::wasm_host::{LoadError, LoadedFrom, WasmHost, hex, lazy_tools_component_path};
use serde_json::json;
use sha2::{Digest, Sha256};

/// A copy of the component in a temporary folder, with an empty cache.
struct Fixture {
    _dir: tempfile::TempDir,
    component: std::path::PathBuf,
    cache: CompiledCache,
    sha256: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let component = dir.path().join("lazy_tools.wasm");
    std::fs::copy(lazy_tools_component_path(), &component).unwrap();
    let cache = CompiledCache::new(dir.path().join("cache"));
    let sha256 = hex(&Sha256::digest(std::fs::read(&component).unwrap()));
    Fixture {
        _dir: dir,
        component,
        cache,
        sha256,
    }
}

/// The loaded component really runs: it hides an MCP tool behind its guards.
fn runs(component: &host_harness::wasm_host::PluginComponent) {
    let mut shell = Shell::new();
    shell
        .register_tools([
            Tool::new("bash", "Run a command", Origin::Builtin),
            Tool::new("gh__issue", "Create an issue", Origin::Mcp("gh".into())),
        ])
        .unwrap();
    shell.create_agent("main", None).unwrap();
    shell
        // The preset defers whatever the budget: two tools fit in any budget.
        .install_plugin("lazy-tools", component, &json!({"deferToolLoading": true}))
        .unwrap();
    let names: Vec<String> = shell
        .next_request("main")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["bash", "tool_search", "defer_execute_tool"]);
}

#[test]
fn compiles_once_then_loads_from_the_cache() {
    let f = fixture();
    let host = WasmHost::global();
    let (first, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    assert_eq!(first.sha256, f.sha256);
    let entry = f.cache.entry_path(&f.sha256, host.engine_key());
    assert!(entry.is_file(), "no entry at {}", entry.display());
    assert!(f.cache.check_path(&f.sha256, host.engine_key()).is_file());

    let (second, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Cache);
    runs(&second);
    // Without a recorded sha256 the component is hashed, then found.
    let (_, from) = host
        .load_through_cache(&f.component, None, &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Cache);
}

#[test]
fn bad_entries_are_rejected_and_recompiled() {
    let f = fixture();
    let host = WasmHost::global();
    host.load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    let code_path = f.cache.entry_path(&f.sha256, host.engine_key());
    let check_path = f.cache.check_path(&f.sha256, host.engine_key());
    let (code, check) = (
        std::fs::read(&code_path).unwrap(),
        std::fs::read(&check_path).unwrap(),
    );
    // Loads the entry with `code` and `check` in place of the good files.
    let reject = |bad_code: &[u8], bad_check: &[u8]| {
        std::fs::write(&code_path, bad_code).unwrap();
        std::fs::write(&check_path, bad_check).unwrap();
        match f.cache.load(host.engine(), host.engine_key(), &f.sha256) {
            Ok(_) => panic!("a bad entry was loaded"),
            Err(rejection) => rejection,
        }
    };

    // One flipped bit in the code.
    let mut flipped = code.clone();
    let near_end = flipped.len() - 100;
    flipped[near_end] ^= 0x10;
    assert!(matches!(reject(&flipped, &check), Rejection::Corrupt));
    // Cut short, as by a crash while writing (which the rename prevents).
    assert!(matches!(
        reject(&code[..code.len() / 2], &check),
        Rejection::Corrupt
    ));
    // A check file some other program wrote.
    assert!(matches!(reject(&code, b"{}"), Rejection::Foreign));
    // Written for another engine: the check's engine key differs.
    let mut other_engine = check.clone();
    other_engine[16 + 4 + 64] ^= 0x01;
    assert!(matches!(reject(&code, &other_engine), Rejection::OtherKey));
    // The code without its check file is no entry.
    std::fs::remove_file(&check_path).unwrap();
    assert!(matches!(
        f.cache.load(host.engine(), host.engine_key(), &f.sha256),
        Err(Rejection::Missing)
    ));

    // Loading through the cache now recompiles and repairs the entry.
    reject(&flipped, &check);
    let (component, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Compiled);
    runs(&component);
    assert_eq!(std::fs::read(&code_path).unwrap(), code);
    assert_eq!(std::fs::read(&check_path).unwrap(), check);
    let (_, from) = host
        .load_through_cache(&f.component, Some(&f.sha256), &f.cache)
        .unwrap();
    assert_eq!(from, LoadedFrom::Cache);
}

#[test]
fn a_missing_or_changed_component_is_reported() {
    let f = fixture();
    let host = WasmHost::global();
    let missing = f.component.with_file_name("gone.wasm");
    let err = host
        .load_through_cache(&missing, Some(&f.sha256), &f.cache)
        .unwrap_err();
    assert!(
        matches!(err, LoadError::Missing(ref p) if p == &missing),
        "{err}"
    );

    let other = "0".repeat(64);
    let err = host
        .load_through_cache(&f.component, Some(&other), &f.cache)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the component {} has sha256 {}, not the recorded {other}",
            f.component.display(),
            f.sha256
        )
    );
    assert!(!Path::new(&f.cache.entry_path(&other, host.engine_key())).exists());
}
