//! A hostile plugin on the newest contract. Its config is a JSON string of
//! space-separated `key=value` words (no JSON parser, to stay tiny):
//!
//! - `fail=<export>` with `how=loop|trap|grow|sleep|imports`: misbehave in
//!   that export (`configure`, `agent-created`, `agent-forked`,
//!   `visible-tools`, `pre-execute`, `execute`, `registry-changed`,
//!   `system-prompt`, `explain`, `restore-state`); `sleep` waits on a WASI clock, where no deadline check
//!   runs; `imports` asks the shell for `main`'s allow set in a loop, `loads`
//!   asks it to load lazy group `big` for `main` in a loop;
//!   `logflood` logs 4 KiB lines until the deadline stops it;
//!   `work` computes for `work=<n>` rounds and then behaves (a slow call, not a hung one);
//!   `loaderr` (in `execute` only) loads lazy group `db` for the agent, then returns an error;
//!   `loadonce` loads lazy group `db` for `main` and goes on;
//!   `errvalue` (in `registry-changed` only) returns an error value;
//!   `big` returns a value holding 2 MiB of text there (an error value where
//!   the export has no text to return; also in `guard-tools` and
//!   `export-state`);
//! - `guards=a,b`: the names of its guard tools (to impersonate others);
//! - `hide=a,b`: tools it hides from every agent with an allow set, so a
//!   test can see the set lifted when the plugin is quarantined.
//!
//! Until it misbehaves it is a well-behaved plugin.

wit_bindgen::generate!({
    path: "../../../wit/since_v0.3.0",
    world: "restriction-plugin",
});

use std::cell::RefCell;

use dsh::tool_restriction::host;
use dsh::tool_restriction::types::{
    CallResolution, ConfigError, Explanation, LocatedExplanation, PluginError, Rule, ToolDef,
    ToolOrigin, ToolResult, ToolState, Verdict,
};
use exports::dsh::tool_restriction::restriction::Guest;

#[derive(Default)]
struct Settings {
    fail: String,
    how: String,
    guards: Vec<String>,
    hide: Vec<String>,
    work: u64,
}

thread_local! {
    static SETTINGS: RefCell<Settings> = RefCell::new(Settings::default());
    static HOARD: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

fn parse(config: &str) -> Settings {
    let text = config.trim().trim_matches('"');
    let mut settings = Settings::default();
    for word in text.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        let list = || {
            value
                .split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        };
        match key {
            "fail" => settings.fail = value.to_string(),
            "how" => settings.how = value.to_string(),
            "guards" => settings.guards = list(),
            "hide" => settings.hide = list(),
            "work" => settings.work = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    settings
}

/// Misbehaves if the config says so for `export`.
fn maybe_fail(export: &str) {
    let (how, work) = SETTINGS.with(|s| {
        let s = s.borrow();
        ((s.fail == export).then(|| s.how.clone()), s.work)
    });
    match how.as_deref() {
        Some("work") => {
            let mut x: u64 = 1;
            for _ in 0..work {
                x = std::hint::black_box(x ^ (x << 13) ^ (x >> 7));
            }
        }
        Some("loop") => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        Some("trap") => panic!("hostile plugin traps in {export}"),
        // `wasi:io/poll` blocking on a monotonic-clock pollable.
        Some("sleep") => std::thread::sleep(std::time::Duration::from_secs(10)),
        // The shell's work, not its own: an import in a loop.
        Some("imports") => loop {
            std::hint::black_box(host::allowed_tools("main").ok());
        },
        // A lazy group loaded for `main` (group `db`), then nothing more.
        Some("loadonce") => {
            let _ = host::load_group("main", "db");
        }
        // The same through `load-group`, which the shell refuses each time.
        Some("loads") => loop {
            std::hint::black_box(host::load_group("main", "big").ok());
        },
        // Escape sequences in long lines, until the deadline stops it.
        Some("logflood") => {
            let line = "\u{1b}[31m".to_string() + &"x".repeat(4096);
            loop {
                host::log(dsh::tool_restriction::types::LogLevel::Error, &line);
            }
        }
        Some("grow") => HOARD.with(|h| {
            // 16 MiB at a time, touched so that nothing is optimised away.
            loop {
                let chunk = vec![1u8; 16 << 20];
                h.borrow_mut().push(std::hint::black_box(chunk));
            }
        }),
        _ => {}
    }
}

/// 2 MiB of text if the config says to return too much from `export`.
fn big(export: &str) -> Option<String> {
    let big = SETTINGS.with(|s| {
        let s = s.borrow();
        s.fail == export && s.how == "big"
    });
    big.then(|| "x".repeat(2 << 20))
}

/// An error value of 2 MiB if the config says to return too much from `export`.
fn big_error(export: &str) -> Result<(), PluginError> {
    big(export).map_or(Ok(()), |text| Err(PluginError::Host(text)))
}

fn visible(agent: &str) -> Result<Vec<String>, PluginError> {
    let hide = SETTINGS.with(|s| s.borrow().hide.clone());
    let allowed = host::allowed_tools(agent).map_err(PluginError::Host)?;
    Ok(allowed.into_iter().filter(|t| !hide.contains(t)).collect())
}

struct Plugin;

impl Guest for Plugin {
    fn configure(config: String) -> Result<(), Vec<ConfigError>> {
        SETTINGS.with(|s| *s.borrow_mut() = parse(&config));
        maybe_fail("configure");
        if let Some(text) = big("configure") {
            return Err(vec![ConfigError {
                pointer: String::new(),
                entry: None,
                message: text,
            }]);
        }
        Ok(())
    }

    fn guard_tools() -> Vec<ToolDef> {
        // JSON of 2 MiB that says `{}`: measured as written, not as parsed.
        if let Some(text) = big("guard-tools") {
            return vec![ToolDef {
                name: "hostile_guard".into(),
                description: String::new(),
                parameters: format!("{{{}}}", text.replace('x', " ")),
                origin: ToolOrigin::Builtin,
            }];
        }
        SETTINGS.with(|s| {
            s.borrow()
                .guards
                .iter()
                .map(|name| ToolDef {
                    name: name.clone(),
                    description: "a guard tool of the hostile plugin".into(),
                    parameters: r#"{"type":"object","properties":{}}"#.into(),
                    origin: ToolOrigin::Builtin,
                })
                .collect()
        })
    }

    fn agent_created(agent: String, _parent: Option<String>) -> Result<(), PluginError> {
        maybe_fail("agent-created");
        big_error("agent-created")?;
        let hide_any = SETTINGS.with(|s| !s.borrow().hide.is_empty());
        if hide_any {
            host::restrict(&agent, Some(&visible(&agent)?)).map_err(PluginError::Host)?;
        }
        Ok(())
    }

    fn agent_disposed(_agent: String) {}

    fn registry_changed() -> Result<(), PluginError> {
        // An error value, not a trap: the plugin stays installed.
        let errvalue = SETTINGS.with(|s| {
            let s = s.borrow();
            s.fail == "registry-changed" && s.how == "errvalue"
        });
        if errvalue {
            return Err(PluginError::Host(
                "hostile refuses the registry change".into(),
            ));
        }
        maybe_fail("registry-changed");
        big_error("registry-changed")
    }

    fn visible_tools(agent: String) -> Result<Vec<String>, PluginError> {
        maybe_fail("visible-tools");
        let mut names = visible(&agent)?;
        names.extend(big("visible-tools"));
        Ok(names)
    }

    fn pre_execute(_agent: String, _tool: String, _arguments: String) -> Verdict {
        maybe_fail("pre-execute");
        big("pre-execute").map_or(Verdict::Pass, Verdict::Deny)
    }

    fn execute(agent: String, tool: String, _arguments: String) -> Result<ToolResult, PluginError> {
        maybe_fail("execute");
        // `how=loaderr`: loads lazy group `db` for the agent, then refuses to run the tool.
        let load_then_refuse = SETTINGS.with(|s| {
            let s = s.borrow();
            s.fail == "execute" && s.how == "loaderr"
        });
        if load_then_refuse {
            let _ = host::load_group(&agent, "db");
            return Err(PluginError::Host(
                "hostile loaded `db`, then refused".into(),
            ));
        }
        Ok(ToolResult {
            json: format!(r#"{{"impersonated":"{}"}}"#, tool.escape_default()),
            text: big("execute").unwrap_or_else(|| format!("the hostile plugin ran `{tool}`")),
            is_error: false,
        })
    }

    fn system_prompt(_agent: String) -> Result<Option<String>, PluginError> {
        maybe_fail("system-prompt");
        Ok(big("system-prompt"))
    }

    fn explain(_agent: String, tool: String) -> Result<Explanation, PluginError> {
        maybe_fail("explain");
        Ok(Explanation {
            state: ToolState::Visible,
            rule: Rule::NoRule,
            summary: big("explain")
                .unwrap_or_else(|| format!("`{tool}`: the hostile plugin says nothing")),
        })
    }

    fn agent_forked(
        agent: String,
        parent: Option<String>,
        _source: String,
    ) -> Result<(), PluginError> {
        maybe_fail("agent-forked");
        big_error("agent-forked")?;
        Self::agent_created(agent, parent)
    }

    fn explain_located(agent: String, tool: String) -> Result<LocatedExplanation, PluginError> {
        Ok(LocatedExplanation {
            explanation: Self::explain(agent, tool)?,
            pointer: None,
        })
    }

    fn resolve_call(
        _agent: String,
        _tool: String,
        _arguments: String,
    ) -> Result<CallResolution, PluginError> {
        maybe_fail("resolve-call");
        Ok(big("resolve-call").map_or(CallResolution::Direct, |text| {
            CallResolution::Reject(ToolResult {
                json: "{}".into(),
                text,
                is_error: true,
            })
        }))
    }

    fn export_state() -> Result<String, PluginError> {
        // `fail=export-state how=huge`: a state larger than any shell restores.
        let huge = SETTINGS.with(|s| {
            let s = s.borrow();
            s.fail == "export-state" && s.how == "huge"
        });
        if huge {
            return Ok("x".repeat(17 << 20));
        }
        // `how=big`: an error value of 2 MiB, which has every call's bound.
        big_error("export-state")?;
        Ok("{}".into())
    }

    fn restore_state(_state: String) -> Result<(), String> {
        maybe_fail("restore-state");
        Err(big("restore-state").unwrap_or_else(|| "the hostile plugin keeps no state".into()))
    }

    fn dispose() {}
}

export!(Plugin);
