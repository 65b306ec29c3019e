//! `host-harness session --profile <name> --catalog <catalog.json>
//! [--steps <file>]`: agents running with a profile's plugins, as the shell
//! starts them: its core built-ins, the catalog's MCP tools, the agent
//! `main`, then every enabled plugin of the profile with its config.
//!
//! With `--steps` the session follows a script (the fixture format of
//! `tests/cases/`, see `script.rs`) and fails at the first step that does not
//! produce what it expects; without, a person plays the model (see `repl`).

mod input;
pub mod repl;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};

use super::args::{CatalogArg, ProfileArg};
use super::signals;
use crate::catalog::Catalog;
use crate::home::DshHome;
use crate::install::{existing_profile_dir, invalid};
use crate::mcp::{self, Event, Interrupt, ListingCache, McpConfig, SharedServers};
use crate::profile::activate::install_plugins;
use crate::profile::{EffectivePlugin, Profile};
use crate::script::{Script, run_step};
use crate::shell::{Shell, ShellError, core_builtins};
use crate::terminal::escape;

/// The agent every session starts with.
pub const MAIN_AGENT: &str = "main";

/// A shell running `profile`'s plugins.
pub struct ProfileShell {
    pub shell: Shell,
    /// The plugins running (the enabled ones), in profile order.
    pub running: Vec<EffectivePlugin>,
    /// The profile's MCP servers (`mcp.yml`), when it declares any.
    pub mcp: Option<SharedServers>,
    /// How many of the servers' events [`ProfileShell::mcp_warnings`] has told.
    mcp_told: usize,
}

impl ProfileShell {
    pub fn plugin_ids(&self) -> Vec<String> {
        self.running.iter().map(|p| p.row.id.clone()).collect()
    }

    /// What went wrong with the profile's MCP servers since the last call, a line each: a
    /// server that does not start, or whose listing is refused, has no tools in the session,
    /// and an entry of a listing left out is not there either; the user must hear why. A
    /// server that failed while running keeps its tools (their calls say why until it
    /// restarts), and the user hears that too.
    pub fn mcp_warnings(&mut self) -> Vec<String> {
        let Some(mcp) = &self.mcp else {
            return Vec::new();
        };
        let servers = mcp.lock();
        let events = servers.events();
        let new = events.get(self.mcp_told..).unwrap_or_default();
        self.mcp_told = events.len();
        let mut warnings = Vec::new();
        for event in new {
            let (server, what, fault, tools) = match event {
                Event::StartFailed {
                    server,
                    fault,
                    kept_tools,
                } => (
                    server,
                    "did not start",
                    fault,
                    if *kept_tools {
                        "the tools it listed before stay in the session, and the first call to \
                         one after a backoff starts it again"
                    } else {
                        "its tools are not in the session"
                    },
                ),
                Event::Failed { server, fault } => (
                    server,
                    "failed",
                    fault,
                    "its tools stay in the session, and the first call to one after a backoff \
                     restarts it",
                ),
                Event::ToolsLeftOut { server, why, more } => {
                    warnings.extend(why.iter().map(|why| {
                        format!(
                            "MCP server `{}`: {}; that entry is left out, its other tools are \
                             in the session",
                            escape(server),
                            escape(why)
                        )
                    }));
                    if *more > 0 {
                        warnings.push(format!(
                            "MCP server `{}`: {more} more entries of its tools/list have no name \
                             or a name listed before; they are left out too",
                            escape(server)
                        ));
                    }
                    continue;
                }
                Event::Started { .. } | Event::ToolsChanged { .. } => continue,
            };
            warnings.push(format!(
                "MCP server `{}` {what}: {}; {tools}",
                escape(server),
                escape(fault)
            ));
        }
        warnings
    }
}

/// Starts a shell as dsh does for `profile`: built-ins, the catalog's tools
/// (if any), the agent `main`, the profile's MCP servers (`mcp.yml`: their
/// tools, started when needed), then the profile's enabled plugins. A
/// profile problem is reported at its file, line and column.
pub fn start(home: &DshHome, profile: &str, catalog: Option<&Path>) -> Result<ProfileShell> {
    start_interruptible(home, profile, catalog, Arc::default())
}

/// [`start`], whose waits for the MCP servers (their first starts among them) `interrupt`
/// ends.
fn start_interruptible(
    home: &DshHome,
    profile: &str,
    catalog: Option<&Path>,
    interrupt: Arc<Interrupt>,
) -> Result<ProfileShell> {
    start_with(home, profile, Some(interrupt), |shell| {
        shell.register_tools(core_builtins())?;
        if let Some(path) = catalog {
            shell.register_catalog(&Catalog::load(path)?)?;
        }
        shell.create_agent(MAIN_AGENT, None)?;
        Ok(())
    })
}

/// Starts a shell for `profile` whose tools and agents `world` sets up
/// before the profile's plugins start, and before its MCP servers when
/// `mcp_interrupt` is given (what ends the servers' waits); without, the
/// world is all there is, as in a fixture case.
fn start_with(
    home: &DshHome,
    profile: &str,
    mcp_interrupt: Option<Arc<Interrupt>>,
    world: impl FnOnce(&mut Shell) -> Result<()>,
) -> Result<ProfileShell> {
    let dir = existing_profile_dir(home, profile)?;
    let plugins = Profile::load(&dir).and_then(|loaded| Ok(loaded.plugins()?));
    let servers = mcp_interrupt
        .map(|interrupt| McpConfig::load(&dir).map(|servers| (servers, interrupt)))
        .transpose();
    // Every file's problems at once: the plugins' files and mcp.yml.
    let ((plugins, warnings), servers) = match (plugins, servers) {
        (Ok(plugins), Ok(servers)) => (plugins, servers),
        (Err(a), Err(b)) => return Err(invalid(profile, a.and(b))),
        (Err(e), _) | (_, Err(e)) => return Err(invalid(profile, e)),
    };
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    let mut shell = Shell::new();
    world(&mut shell)?;
    let mcp = match servers {
        Some((servers, interrupt)) if !servers.servers.is_empty() => Some(
            mcp::attach_interruptible(
                &mut shell,
                &servers,
                ListingCache::in_home(home.root()),
                interrupt,
            )
            .map_err(|e| mcp_start_error(e, &dir))?,
        ),
        _ => None,
    };
    let cache = home.compiled_cache();
    install_plugins(&mut shell, &plugins, &cache, profile)
        .map_err(|problems| anyhow!("profile `{profile}` cannot start:\n{problems}"))?;
    let running = plugins.into_iter().filter(|p| !p.disabled).collect();
    Ok(ProfileShell {
        shell,
        running,
        mcp,
        mcp_told: 0,
    })
}

/// Why the MCP servers of the profile in `dir` did not start, with the file; a tool name that
/// is registered already gets a hint, since a `--catalog` server of the same name does that.
fn mcp_start_error(error: anyhow::Error, dir: &Path) -> anyhow::Error {
    let file = escape(&dir.join(mcp::MCP_FILE).display().to_string()).into_owned();
    let taken = matches!(
        error.downcast_ref::<ShellError>(),
        Some(ShellError::DuplicateTool { .. })
    );
    let hint = if taken {
        ": a server's tool takes a name that is registered already (a server of the same name \
         in the --catalog does that: run with --no-catalog, or rename the server)"
    } else {
        ""
    };
    error.context(format!("starting the MCP servers of {file}{hint}"))
}

/// `host-harness session`.
#[derive(clap::Args)]
pub struct SessionArgs {
    #[command(flatten)]
    profile: ProfileArg,
    #[command(flatten)]
    catalog: CatalogArg,
    /// Register no catalog: only the built-ins and the profile's MCP servers.
    #[arg(long, conflicts_with = "catalog")]
    no_catalog: bool,
    /// A steps file to run instead of an interactive session: YAML `tools`,
    /// `agents` and `steps` with expectations, as in
    /// examples/session-steps.yml (the format is in README.md, "Scripted
    /// sessions").
    #[arg(long, value_name = "FILE")]
    steps: Option<PathBuf>,
    #[command(flatten)]
    state: StateArgs,
}

impl SessionArgs {
    pub fn run(self) -> Result<()> {
        let catalog = (!self.no_catalog).then(|| self.catalog.path());
        run(
            &DshHome::from_env()?,
            &self.profile.profile,
            catalog.as_deref(),
            self.steps.as_deref(),
            &self.state,
        )
    }
}

/// Saving and resuming a session's load state (what each agent loaded),
/// through the plugins' `export-state` / `restore-state` (WIT 0.3.0).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StateArgs {
    /// When the session ends (a failed step ends it too), write the first
    /// plugin's load state (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Before the steps run, restore a load state written by `--save`
    /// (with the same strategy; agents created later get their loads when
    /// they are created).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
}

impl StateArgs {
    /// Refuses a `--save` target that is not a regular file, before the session starts:
    /// said at the end, the session's loads would be lost.
    fn check(&self) -> Result<()> {
        match &self.save {
            Some(path) => crate::atomic_write::check_target(path).context("--save"),
            None => Ok(()),
        }
    }

    /// Restores the `--resume` file into the session's first plugin.
    fn restore(&self, session: &mut ProfileShell) -> Result<()> {
        let Some(path) = &self.resume else {
            return Ok(());
        };
        let plugin = session
            .plugin_ids()
            .into_iter()
            .next()
            .context("--resume: the profile runs no plugin to restore into")?;
        let limit = lazy_tools::MAX_STATE_BYTES as u64;
        let state = crate::bounded::read_text(path, limit, "a saved state")
            .with_context(|| format!("reading {}", path.display()))?;
        session
            .shell
            .restore_state(&plugin, &state)
            .with_context(|| format!("resuming from {}", path.display()))
    }

    /// Writes the session's first plugin's load state to the `--save` file.
    fn save(&self, session: &mut ProfileShell) -> Result<()> {
        let Some(path) = &self.save else {
            return Ok(());
        };
        let plugin = session
            .plugin_ids()
            .into_iter()
            .next()
            .context("--save: the profile runs no plugin whose state to save")?;
        let state = session.shell.export_state(&plugin).context("--save")?;
        // Again: the path may have changed while the session ran.
        self.check()?;
        crate::atomic_write::write_atomic(path, state.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }
}

pub fn run(
    home: &DshHome,
    profile: &str,
    catalog: Option<&Path>,
    steps: Option<&Path>,
    state: &StateArgs,
) -> Result<()> {
    state.check()?;
    let Some(path) = steps else {
        // Caught from the start: a signal while the servers start ends their starts, and the
        // session once it has started (it saves as after `quit`).
        let ending = signals::Ending::catch(|| {}).context("handling Ctrl-C")?;
        let interrupt = Arc::<Interrupt>::default();
        ending.watch(Arc::clone(&interrupt));
        let mut session = start_interruptible(home, profile, catalog, interrupt)?;
        tell_mcp_warnings(&mut session);
        state.restore(&mut session)?;
        let stdin = std::io::stdin();
        let prompt = stdin.is_terminal();
        let input = input::Inputs::read(std::io::BufReader::new(stdin), Some(ending));
        let mut repl = repl::Repl::new(session);
        let ran = repl.run(&input, &mut std::io::stdout().lock(), prompt);
        // However the session ended (the end of the input, `quit`, Ctrl-C, an input or
        // output that failed), what was loaded is saved.
        let saved = state.save(&mut repl.into_session());
        return ran_and_saved(ran, saved);
    };
    let script = Script::load(path)?;
    if script.steps.is_empty() {
        // An empty file: nothing would run, and "0 steps passed" reads as a success.
        bail!(
            "{} has no steps: a steps file lists them under `steps:` (as \
             examples/session-steps.yml does)",
            escape(&path.display().to_string())
        );
    }
    // Caught from here: a signal while the servers start ends their starts and the session.
    let ending = signals::Ending::catch(|| {
        eprintln!("interrupted: the session ends (a second Ctrl-C stops the harness at once)");
    })
    .context("handling Ctrl-C")?;
    let interrupt = Arc::<Interrupt>::default();
    ending.watch(Arc::clone(&interrupt));
    let base = path.parent().unwrap_or(Path::new("."));
    let set_up = |shell: &mut Shell| {
        script
            .set_up(shell, base)
            .with_context(|| format!("setting up {}", path.display()))
    };
    // A file that declares its tools or agents is the whole world, as a
    // fixture case is: the shell starts with nothing else, not the profile's
    // MCP servers either. One that only has steps runs in the session's
    // usual world.
    let mut session = if script.declares_world() {
        start_with(home, profile, None, set_up)?
    } else {
        let mut session = start_interruptible(home, profile, catalog, interrupt)?;
        set_up(&mut session.shell)?;
        session
    };
    tell_mcp_warnings(&mut session);
    state.restore(&mut session)?;
    let ran = run_script(
        &mut session,
        &script,
        path,
        Some(&ending),
        &mut std::io::stdout().lock(),
    );
    // A failed step ends the session too: what was loaded until then is saved.
    let saved = state.save(&mut session);
    ran_and_saved(ran, saved)
}

/// How a session ended and whether its state was saved: a failed save is said even when the
/// session failed before it (it is the session's error that the harness exits with).
fn ran_and_saved(ran: Result<()>, saved: Result<()>) -> Result<()> {
    match (ran, saved) {
        (Err(ran), Err(saved)) => {
            eprintln!("error: {}", escape(&format!("{saved:#}")));
            Err(ran)
        }
        (ran, saved) => ran.and(saved),
    }
}

/// Runs a steps file on a started session: its tools, catalog and agents
/// are added to the session's, then every step runs.
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
    run_script(session, &script, path, None, out)
}

/// Prints the MCP servers' new faults on standard error.
fn tell_mcp_warnings(session: &mut ProfileShell) {
    for warning in session.mcp_warnings() {
        eprintln!("warning: {warning}");
    }
}

/// Runs the steps and prints a transcript line per step; steps that address
/// a plugin address the profile's first. After an ending signal, no further step runs.
fn run_script(
    session: &mut ProfileShell,
    script: &Script,
    path: &Path,
    ending: Option<&signals::Ending>,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let plugin = session.plugin_ids().into_iter().next().unwrap_or_default();
    for (index, step) in script.steps.iter().enumerate() {
        let line = step.referenced.line();
        if ending.is_some_and(signals::Ending::signalled) {
            bail!(
                "{}:{line}: interrupted (Ctrl-C, SIGTERM or SIGHUP) before step {}: it and the \
                 {} after it did not run",
                escape(&path.display().to_string()),
                index + 1,
                script.steps.len() - index - 1
            );
        }
        let transcript = run_step(&mut session.shell, &plugin, &step.value)
            .with_context(|| format!("{}:{line}: step {} failed", path.display(), index + 1));
        tell_mcp_warnings(session);
        let transcript = transcript?;
        // One line per step, whatever the values in it hold.
        let shown = escape(&transcript);
        writeln!(
            out,
            "{}:{line}: {shown}",
            escape(&path.display().to_string())
        )?;
    }
    // A signal during the last step: it may have passed on a call the signal cut short.
    if ending.is_some_and(signals::Ending::signalled) {
        bail!(
            "{}: interrupted (Ctrl-C, SIGTERM or SIGHUP) during step {}, the last",
            escape(&path.display().to_string()),
            script.steps.len()
        );
    }
    writeln!(out, "{} steps passed", script.steps.len())?;
    Ok(())
}
