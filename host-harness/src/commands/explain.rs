//! `host-harness explain --profile <name> [--agent <path>] <tool>`: which rule
//! decides a tool's visibility for an agent (guard, agent scope, NoDefer
//! entry, Defer entry, preset, switch off, budget, parent restriction), in
//! one line a person understands, from the profile's running plugins.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};

use super::session::{self, MAIN_AGENT};
use crate::home::DshHome;
use crate::plugin_api::Rule;
use crate::shell::Shell;

pub fn run(
    home: &DshHome,
    profile: &str,
    agent: Option<&str>,
    catalog: Option<&Path>,
    tool: &str,
    out: &mut dyn Write,
) -> Result<()> {
    let mut session = session::start(home, profile, catalog)?;
    if session.running.is_empty() {
        bail!(
            "profile `{profile}` runs no plugin, so no rule hides anything: the agent sees every \
             tool it may call"
        );
    }
    let agent = agent.unwrap_or(MAIN_AGENT);
    create_chain(&mut session.shell, agent)?;
    for plugin in &session.running {
        let located = session.shell.explain_located(&plugin.row.id, agent, tool)?;
        let explanation = located.explanation;
        let prefix = if session.running.len() > 1 {
            format!("{}: ", plugin.row.id)
        } else {
            String::new()
        };
        // The plugin names the deciding entry by JSON pointer; the profile
        // knows the file, line and column it is written at.
        let written_at = match (&located.pointer, &plugin.row.config) {
            (Some(pointer), Some(config)) => format!(" (written at {})", config.place(pointer)),
            (None, Some(config))
                if matches!(explanation.rule, Rule::DeferEntry | Rule::NoDeferEntry) =>
            {
                format!(" (config at {})", config.place(""))
            }
            _ => String::new(),
        };
        writeln!(out, "{prefix}{}{written_at}", explanation.summary)?;
    }
    if session.running.iter().any(|p| p.row.id == "lazy-tools") {
        writeln!(out, "\n{}", lazy_tools::PRECEDENCE)?;
    }
    Ok(())
}

/// Creates the agents of `path` (`main/worker/helper`) that do not exist,
/// parents first.
fn create_chain(shell: &mut Shell, path: &str) -> Result<()> {
    let mut parent: Option<String> = None;
    for name in path.split('/') {
        let id = match &parent {
            Some(parent) => format!("{parent}/{name}"),
            None => name.to_string(),
        };
        if !shell.core().has_agent(&id) {
            shell.create_agent(name, parent.as_deref())?;
        }
        parent = Some(id);
    }
    Ok(())
}
