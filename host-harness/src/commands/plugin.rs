//! `host-harness plugin --profile <name> add|list|remove`: install plugins
//! from git or a local folder into a profile, as the shell's plugin command
//! does.

use std::io::Write;

use anyhow::{Context as _, Result};
use clap::Subcommand;

use super::args::ProfileArg;
use crate::home::DshHome;
use crate::install::{self, Change, existing_profile_dir, invalid};
use crate::profile::{INSTALLED_FILE, PATCH_FILE, Profile};
use crate::terminal::escape;

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Fetch a plugin bundle, build its component(s) and record them in the
    /// profile. Adding the same plugin again is harmless.
    Add {
        /// Where the bundle is: `git:<url>[#<rev>]` or `link:<path>` (a
        /// local folder, built in place). The URL may be written
        /// `git:host/owner/repo` (fetched over https),
        /// `git:https://host/owner/repo` (or http, ssh, git),
        /// `git:git@host:owner/repo.git` (ssh) or `git:file:///path/to/repo`
        /// (`git:/path/to/repo` too). `rev` is a branch, tag or full commit
        /// id; never an option.
        source: String,
    },
    /// The profile's plugins, with the user's patch applied.
    List,
    /// Remove a plugin from the profile.
    Remove {
        /// The plugin's id.
        id: String,
    },
}

/// `host-harness plugin --profile <NAME> add|list|remove`.
#[derive(clap::Args)]
pub struct PluginArgs {
    #[command(flatten)]
    profile: ProfileArg,
    #[command(subcommand)]
    command: PluginCommand,
}

impl PluginArgs {
    pub fn run(self) -> Result<()> {
        run(&DshHome::from_env()?, &self.profile.profile, self.command)
    }
}

pub fn run(home: &DshHome, profile: &str, command: PluginCommand) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    // Progress goes to stderr, results to stdout.
    let mut progress = BestEffort(std::io::stderr());
    match command {
        PluginCommand::Add { source } => {
            let added = install::add(home, profile, &source, &mut progress)
                .with_context(|| format!("adding {} to profile `{profile}`", escape(&source)))?;
            for added in added {
                let row = &added.row;
                let what = match added.change {
                    Change::Added => "added",
                    Change::Replaced => "updated",
                    Change::Unchanged => "already installed, unchanged:",
                };
                // A linked folder's path and a revision are whatever they are.
                writeln!(
                    stdout,
                    "{what} {} (package `{}`) to profile `{profile}`: {} at {}, sha256 {}",
                    row.id,
                    row.name,
                    escape(row.source.as_deref().unwrap_or("?")),
                    escape(row.revision.as_deref().unwrap_or("no git revision")),
                    row.sha256.as_deref().unwrap_or("?"),
                )?;
            }
        }
        PluginCommand::List => list(home, profile, &mut stdout)?,
        PluginCommand::Remove { id } => {
            let removed = install::remove(home, profile, &id, &mut progress)
                .with_context(|| format!("removing `{}` from profile `{profile}`", escape(&id)))?;
            writeln!(stdout, "removed {} from profile `{profile}`", removed.id)?;
        }
    }
    Ok(())
}

/// A writer whose failures are ignored: progress is for a person watching, and a closed
/// standard error (`add ... 2>&1 | head -4` once `head` quit) must not stop an install half way.
struct BestEffort<W>(W);

impl<W: Write> Write for BestEffort<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

fn list(home: &DshHome, profile: &str, out: &mut dyn Write) -> Result<()> {
    let dir = existing_profile_dir(home, profile)?;
    let loaded = Profile::load(&dir).map_err(|e| invalid(profile, e))?;
    let (plugins, warnings) = loaded.plugins().map_err(|e| invalid(profile, e.into()))?;
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    if plugins.is_empty() {
        writeln!(out, "profile `{profile}` has no plugins")?;
        return Ok(());
    }
    writeln!(
        out,
        "profile `{profile}` ({}):",
        escape(&dir.display().to_string())
    )?;
    // Ids, names and sha256s are checked when read; sources, revisions, paths
    // and config values are text from the file, shown escaped.
    for plugin in plugins {
        let row = &plugin.row;
        let state = if plugin.disabled {
            " [disabled in cordis.patch.yml]"
        } else {
            ""
        };
        writeln!(out, "{} (package `{}`){state}", row.id, row.name)?;
        let origin = if plugin.inserted_by_patch {
            format!("inserted by {PATCH_FILE}")
        } else {
            row.source.clone().unwrap_or_else(|| "?".into())
        };
        writeln!(out, "  source     {}", escape(&origin))?;
        if let Some(revision) = &row.revision {
            writeln!(out, "  revision   {}", escape(revision))?;
        }
        if let Some(sha256) = &row.sha256 {
            writeln!(out, "  sha256     {sha256}")?;
        }
        if let Some(path) = row.component_path() {
            writeln!(out, "  component  {}", escape(&path.display().to_string()))?;
        }
        let config = match &row.config {
            Some(config) => {
                let file = if config.file().ends_with(PATCH_FILE) {
                    PATCH_FILE
                } else {
                    INSTALLED_FILE
                };
                let value = config.value.to_string();
                format!("{} (from {file}:{})", escape(&value), config.place("").line)
            }
            None => "none (the plugin's defaults)".into(),
        };
        writeln!(out, "  config     {config}")?;
    }
    Ok(())
}
