//! The profile config parser, through `configure` as a host calls it: any
//! text is accepted or refused with errors, never a panic; a refused
//! reconfigure keeps the old config in force; whatever was accepted serves
//! every call.

#![no_main]

use lazy_tools::{LazyTools, Verdict};
use lazy_tools_fuzz::{AGENTS, FuzzHost, plugin, small_tools};
use libfuzzer_sys::fuzz_target;

fn verdicts(plugin: &mut LazyTools<FuzzHost>) -> Vec<Verdict> {
    let names: Vec<String> = small_tools().into_iter().map(|t| t.name).collect();
    names
        .iter()
        .map(|name| plugin.pre_execute(AGENTS[1], name))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // A fresh plugin configured with the input.
    if let Some(mut fresh) = plugin(small_tools(), &text) {
        for agent in AGENTS {
            fresh.visible_tools(agent).expect("visible-tools");
            fresh.system_prompt(agent).expect("system-prompt");
            fresh.explain(agent, "everything__echo").expect("explain");
        }
        verdicts(&mut fresh);
    }
    // A reconfigure: refused, the old config stays in force.
    let mut running =
        plugin(small_tools(), r#"{"defer": ["everything__*"]}"#).expect("seed config");
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
