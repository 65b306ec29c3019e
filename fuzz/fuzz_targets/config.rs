//! The profile config parser, through `configure` as a host calls it: any
//! text is accepted or refused with errors, never a panic; a refused
//! reconfigure keeps the old config in force; whatever was accepted serves
//! every call.

#![no_main]

use std::sync::OnceLock;

use lazy_tools::registry::ToolDef;
use lazy_tools::{LazyTools, Verdict};
use lazy_tools_fuzz::{AGENTS, FuzzHost, SMALL, catalog_tools, plugin};
use libfuzzer_sys::fuzz_target;

fn tools() -> Vec<ToolDef> {
    static TOOLS: OnceLock<Vec<ToolDef>> = OnceLock::new();
    TOOLS
        .get_or_init(|| catalog_tools().into_iter().take(SMALL).collect())
        .clone()
}

fn verdicts(plugin: &mut LazyTools<FuzzHost>) -> Vec<Verdict> {
    let names: Vec<String> = tools().into_iter().map(|t| t.name).collect();
    names
        .iter()
        .map(|name| plugin.pre_execute(AGENTS[1], name))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // A fresh plugin configured with the input.
    if let Some(mut fresh) = plugin(tools(), &text) {
        for agent in AGENTS {
            fresh.visible_tools(agent).expect("visible-tools");
            fresh.system_prompt(agent).expect("system-prompt");
            fresh.explain(agent, "everything__echo").expect("explain");
        }
        verdicts(&mut fresh);
    }
    // A reconfigure: refused, the old config stays in force.
    let mut running = plugin(tools(), r#"{"defer": ["everything__*"]}"#).expect("seed config");
    let before = verdicts(&mut running);
    match running.configure(&text) {
        Ok(()) => {
            verdicts(&mut running);
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "refused without an error");
            for error in &errors {
                assert!(!error.message.is_empty(), "an error without a message");
            }
            assert_eq!(
                verdicts(&mut running),
                before,
                "a refused config changed verdicts"
            );
        }
    }
});
