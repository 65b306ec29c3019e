//! The search query path: any query up to the guard's length limit ranks
//! without panicking, returns at most `top_k` distinct registered tools, and
//! only tools the caller says the agent may load.

#![no_main]

use std::collections::HashSet;
use std::sync::OnceLock;

use lazy_tools::guards::{MAX_QUERY_CHARS, MAX_TOP_K};
use lazy_tools::registry::{Origin, Registry, ToolGroup};
use lazy_tools::search::SearchIndex;
use lazy_tools_fuzz::catalog_tools;
use libfuzzer_sys::fuzz_target;

fn index() -> &'static (Registry, SearchIndex) {
    static INDEX: OnceLock<(Registry, SearchIndex)> = OnceLock::new();
    INDEX.get_or_init(|| {
        let tools = catalog_tools();
        let mut groups: Vec<ToolGroup> = Vec::new();
        for tool in &tools {
            if let Origin::Mcp(server) = &tool.origin
                && !groups.iter().any(|g| &g.name == server)
            {
                groups.push(ToolGroup {
                    name: server.clone(),
                    description: format!("The {server} MCP server."),
                });
            }
        }
        let registry = Registry::new(tools, groups);
        let index = SearchIndex::build(&registry);
        (registry, index)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&k, rest)) = data.split_first() else {
        return;
    };
    let query = String::from_utf8_lossy(rest);
    if query.chars().count() > MAX_QUERY_CHARS {
        return; // the guard refuses it before it reaches the index
    }
    let top_k = 1 + usize::from(k) % MAX_TOP_K as usize;
    let (registry, index) = index();
    let hits = index.search(&query, top_k, |_| true);
    assert!(hits.len() <= top_k);
    let distinct: HashSet<&str> = hits.iter().copied().collect();
    assert_eq!(distinct.len(), hits.len(), "a tool ranked twice: {hits:?}");
    for hit in &hits {
        assert!(registry.contains(hit), "`{hit}` is not registered");
    }
    // Only eligible tools come back.
    let eligible = |name: &str| name.len().is_multiple_of(2);
    for hit in index.search(&query, top_k, eligible) {
        assert!(eligible(hit), "`{hit}` is not eligible");
    }
});
