//! The long scripted session of `host-harness bench session` on the bundled
//! 527-tool catalog (25 requests, 6 loads, a child agent): dispatch keeps
//! every agent's tools array byte-identical (the bench fails otherwise) and
//! sends at most half of inject's uncached input tokens. Token counts only:
//! nothing here is timed.

use std::path::Path;

use host_harness::catalog::Catalog;
use host_harness::commands::bench::session::{Strategy, measure, uncached};

#[test]
fn dispatch_keeps_the_tools_array_and_halves_inject_s_uncached_input() {
    let catalog =
        Catalog::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalogs/livemcpbench.json"))
            .unwrap();
    let totals = measure(&catalog).unwrap();
    for (strategy, requests) in &totals {
        assert!(
            requests.len() >= 20,
            "{strategy:?}: {} requests",
            requests.len()
        );
    }
    let changes = |s: Strategy| {
        totals
            .iter()
            .find(|(t, _)| *t == s)
            .map(|(_, r)| r.iter().filter(|r| r.tools_changed).count())
            .unwrap()
    };
    assert_eq!(changes(Strategy::Dispatch), 0);
    assert!(
        changes(Strategy::Inject) >= 4,
        "inject's loads change its tools array"
    );
    let (inject, dispatch) = (
        uncached(&totals, Strategy::Inject),
        uncached(&totals, Strategy::Dispatch),
    );
    assert!(
        dispatch * 2 <= inject,
        "dispatch sends {dispatch} uncached input tokens, inject {inject}"
    );
}
