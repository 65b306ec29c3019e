//! How lazy-tools grows its linear memory on a large registry: a first load copies its tools
//! into memory grown in one step (which a kernel with transparent huge pages backs 2 MiB at a
//! time), and whole fetches of the same registry afterwards do not grow it again and again.

use host_harness::catalog::Catalog;
use host_harness::commands::args::bundled_catalogs;
use host_harness::commands::bench::speed::{generate, register_unannounced};
use host_harness::shell::Shell;
use host_harness::shell_core::MAX_REGISTRY_LOG;
use host_harness::wasm_host::WasmHost;
use serde_json::json;

const PLUGIN: &str = "lazy-tools";

/// A shell with lazy-tools deferring everything, installed before any catalog tool, and the
/// `tools` tools generated from the bundled catalogs (registered unannounced).
fn shell_with_unannounced(tools: usize) -> (Shell, Catalog) {
    let catalogs: Vec<Catalog> = bundled_catalogs()
        .iter()
        .map(|path| Catalog::load(path).unwrap())
        .collect();
    let catalog = generate(&catalogs, tools).unwrap();
    let mut shell = Shell::new();
    let component = WasmHost::global().lazy_tools().unwrap();
    shell
        .install_plugin(PLUGIN, &component, &json!({"defer": ["Defer(*)"]}))
        .unwrap();
    register_unannounced(&mut shell.core(), &catalog).unwrap();
    (shell, catalog)
}

fn registry_changed(shell: &mut Shell) {
    let plugin = shell.plugin_mut(PLUGIN).unwrap();
    plugin.registry_changed().unwrap().unwrap();
}

#[test]
fn a_first_large_load_grows_the_plugins_memory_in_a_few_steps() {
    let (mut shell, _) = shell_with_unannounced(5_000);
    let before = shell.plugin_mut(PLUGIN).unwrap().memory_grows();
    registry_changed(&mut shell);
    let plugin = shell.plugin_mut(PLUGIN).unwrap();
    let grows = plugin.memory_grows() - before;
    // The tools' copies come from one block grown ahead; the index after them grows in steps
    // (19 times here; 64 when the copies grew the heap piece by piece).
    assert!(
        grows <= 30,
        "the first load of 5,000 tools grew linear memory {grows} times"
    );
}

#[test]
fn whole_fetches_of_the_same_registry_do_not_keep_growing_the_plugins_memory() {
    let (mut shell, catalog) = shell_with_unannounced(5_000);
    registry_changed(&mut shell);
    let first = shell.plugin_mut(PLUGIN).unwrap().memory_bytes();
    let mut after = Vec::new();
    for _ in 0..4 {
        // More changes than the shell's log keeps: the plugin fetches the whole table again.
        {
            let mut core = shell.core();
            for (_, tool) in catalog.tools() {
                core.unregister(&tool.name, None).unwrap();
            }
        }
        assert!(2 * catalog.tool_count() > MAX_REGISTRY_LOG);
        register_unannounced(&mut shell.core(), &catalog).unwrap();
        registry_changed(&mut shell);
        after.push(shell.plugin_mut(PLUGIN).unwrap().memory_bytes());
    }
    // 20.4 MB at the fourth, as without any block; a block on every fetch reached 23.6 MB.
    let last = *after.last().unwrap();
    assert!(
        last <= first / 5 * 8,
        "linear memory went from {first} bytes after the first load to {after:?}"
    );
}
