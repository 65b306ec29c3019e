//! `host-harness session --profile <name> --catalog <catalog.json>
//! [--steps <file>]`: agents running with a profile's plugins, as the shell
//! starts them: its core built-ins, the catalog's MCP tools, the agent
//! `main`, then every enabled plugin of the profile with its config.
//!
//! With `--steps` the session follows a script (the fixture format of
//! `tests/cases/`, see `script.rs`) and fails at the first step that does not
//! produce what it expects; without, a person plays the model (see `repl`).

pub mod repl;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};

use crate::catalog::Catalog;
use crate::home::DshHome;
use crate::install::{existing_profile_dir, invalid};
use crate::mcp::{self, ListingCache, McpConfig, SharedServers};
use crate::profile::activate::install_plugins;
use crate::profile::{EffectivePlugin, Profile};
use crate::script::{Script, run_step};
use crate::shell::{Shell, core_builtins};

/// The agent every session starts with.
pub const MAIN_AGENT: &str = "main";

/// A shell running `profile`'s plugins.
pub struct ProfileShell {
    pub shell: Shell,
    /// The plugins running (the enabled ones), in profile order.
    pub running: Vec<EffectivePlugin>,
    /// The profile's MCP servers (`mcp.yml`), when it declares any.
    pub mcp: Option<SharedServers>,
}

impl ProfileShell {
    pub fn plugin_ids(&self) -> Vec<String> {
        self.running.iter().map(|p| p.row.id.clone()).collect()
    }
}

/// Starts a shell as dsh does for `profile`: built-ins, the catalog's tools
/// (if any), the profile's MCP servers (`mcp.yml`: their tools, started
/// when needed), the agent `main`, then the profile's enabled plugins. A
/// profile problem is reported at its file, line and column.
pub fn start(home: &DshHome, profile: &str, catalog: Option<&Path>) -> Result<ProfileShell> {
    let dir = existing_profile_dir(home, profile)?;
    let loaded = Profile::load(&dir).map_err(|e| invalid(profile, e))?;
    let (plugins, warnings) = loaded.plugins().map_err(|e| invalid(profile, e.into()))?;
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    let mut shell = Shell::new();
    shell.register_tools(core_builtins())?;
    if let Some(path) = catalog {
        shell.register_catalog(&Catalog::load(path)?)?;
    }
    let servers = McpConfig::load(&dir).map_err(|e| invalid(profile, e))?;
    let mcp = if servers.servers.is_empty() {
        None
    } else {
        Some(mcp::attach(
            &mut shell,
            &servers,
            ListingCache::in_home(home.root()),
        )?)
    };
    shell.create_agent(MAIN_AGENT, None)?;
    let cache = home.compiled_cache();
    install_plugins(&mut shell, &plugins, &cache, profile)
        .map_err(|problems| anyhow!("profile `{profile}` cannot start:\n{problems}"))?;
    let running = plugins.into_iter().filter(|p| !p.disabled).collect();
    Ok(ProfileShell {
        shell,
        running,
        mcp,
    })
}

/// Saving and resuming a session's load state (what each agent loaded),
/// through the plugins' `export-state` / `restore-state` (WIT 0.3.0).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StateArgs {
    /// When the session ends, write the first plugin's load state (JSON)
    /// to this file.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Before the session starts, restore a load state written by
    /// `--save` (with the same strategy; the session's agents get their
    /// loads when they exist).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
}

impl StateArgs {
    /// Runs `session` with this state handling.
    pub fn run(
        &self,
        home: &DshHome,
        profile: &str,
        catalog: Option<&Path>,
        steps: Option<&Path>,
    ) -> Result<()> {
        let mut session = start(home, profile, catalog)?;
        let plugin = session.plugin_ids().into_iter().next();
        if let Some(path) = &self.resume {
            let plugin = plugin
                .as_deref()
                .context("--resume: the profile runs no plugin to restore into")?;
            let state = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            session
                .shell
                .restore_state(plugin, &state)
                .with_context(|| format!("resuming from {}", path.display()))?;
        }
        let mut session = run_session(session, steps)?;
        if let Some(path) = &self.save {
            let plugin = plugin
                .as_deref()
                .context("--save: the profile runs no plugin whose state to save")?;
            let state = session.shell.export_state(plugin)?;
            crate::atomic_write::write_atomic(path, state.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

pub fn run(
    home: &DshHome,
    profile: &str,
    catalog: Option<&Path>,
    steps: Option<&Path>,
) -> Result<()> {
    StateArgs::default().run(home, profile, catalog, steps)
}

/// Runs the steps (or the person's commands) and gives the session back.
fn run_session(mut session: ProfileShell, steps: Option<&Path>) -> Result<ProfileShell> {
    match steps {
        Some(steps) => {
            run_steps(&mut session, steps, &mut std::io::stdout().lock())?;
            Ok(session)
        }
        None => {
            let stdin = std::io::stdin();
            let prompt = stdin.is_terminal();
            let mut repl = repl::Repl::new(session);
            repl.run(&mut stdin.lock(), &mut std::io::stdout().lock(), prompt)?;
            Ok(repl.into_session())
        }
    }
}

/// Runs a steps file on the session and prints a transcript line per step.
/// The file may register more tools and agents (`main` and the built-ins
/// exist already); steps that address a plugin address the profile's first.
pub fn run_steps(
    session: &mut ProfileShell,
    path: &Path,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let script = Script::load(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    script
        .set_up(&mut session.shell, base)
        .with_context(|| format!("setting up {}", path.display()))?;
    let plugin = session.plugin_ids().into_iter().next().unwrap_or_default();
    for (index, step) in script.steps.iter().enumerate() {
        let line = step.referenced.line();
        let transcript = run_step(&mut session.shell, &plugin, &step.value)
            .with_context(|| format!("{}:{line}: step {} failed", path.display(), index + 1))?;
        writeln!(out, "{}:{line}: {transcript}", path.display())?;
    }
    writeln!(out, "{} steps passed", script.steps.len())?;
    Ok(())
}
