//! `host-harness explain --profile <name> [--agent <path>] <tool>`: which rule
//! decides a tool's visibility for an agent (guard, agent scope, NoDefer
//! entry, Defer entry, preset, switch off, budget, parent restriction), in
//! one line a person understands, from the profile's running plugins.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use lazy_tools::suggest::did_you_mean;

use super::args::{CatalogArg, ProfileArg};
use super::session::{self, MAIN_AGENT};
use crate::home::DshHome;
use crate::plugin_api::Rule;
use crate::shell::Shell;
use crate::terminal::escape;

/// `host-harness explain`.
#[derive(clap::Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    profile: ProfileArg,
    #[command(flatten)]
    catalog: CatalogArg,
    /// The agent, by path from the root (`main/worker`); agents of the path
    /// that do not exist are created.
    #[arg(long, value_name = "PATH")]
    agent: Option<String>,
    /// The tool, as the model sees its name (`github__create_issue`).
    tool: String,
}

impl ExplainArgs {
    pub fn run(self) -> Result<()> {
        run(
            &DshHome::from_env()?,
            &self.profile.profile,
            self.agent.as_deref(),
            Some(&self.catalog.path()),
            &self.tool,
            &mut std::io::stdout().lock(),
        )
    }
}

/// Prints why `tool` is in its state for `agent`; a tool the registry does
/// not hold is an error with a "did you mean".
pub fn run(
    home: &DshHome,
    profile: &str,
    agent: Option<&str>,
    catalog: Option<&Path>,
    tool: &str,
    out: &mut dyn Write,
) -> Result<()> {
    let agent = agent.unwrap_or(MAIN_AGENT);
    // The whole path, before the profile starts or an agent of it is created.
    crate::shell_core::check_agent_id(agent).map_err(|e| anyhow!("--agent: {e}"))?;
    let mut session = session::start(home, profile, catalog)?;
    if session.running.is_empty() {
        bail!(
            "profile `{profile}` runs no plugin, so no rule hides anything: the agent sees every \
             tool it may call"
        );
    }
    create_chain(&mut session.shell, agent)?;
    let core = session.shell.core();
    if !core.tools().iter().any(|t| t.name == tool) {
        bail!(
            "no tool named `{}` is registered{}",
            escape(tool),
            did_you_mean(tool, core.tools().iter().map(|t| t.name.as_str()))
        );
    }
    drop(core);
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
        // The summary quotes the config's entries, which may hold any character.
        let summary = escape(&explanation.summary);
        writeln!(out, "{prefix}{summary}{written_at}")?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A path past the limits is refused at once, before the profile starts: creating it
    /// agent by agent took seconds per thousand agents, and ever longer per agent.
    #[test]
    fn an_agent_path_past_the_limits_is_refused_before_anything_starts() {
        let home = tempfile::tempdir().unwrap();
        let path = format!("main{}", "/a".repeat(2_000));
        let err = run(
            &DshHome::new(home.path()),
            "no-such-profile",
            Some(&path),
            None,
            "read",
            &mut std::io::sink(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "--agent: agent `{}…` is 2001 agents deep; a chain holds at most 64 (`main` is 1)",
                &path[..40]
            )
        );
    }
}
