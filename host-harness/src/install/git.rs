//! Shallow git checkouts of plugin bundles, with the `git` command.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// Makes `dir` a shallow checkout of `rev` (a branch, tag or full commit id;
/// default: the remote's HEAD) of `url`, and returns the commit checked out.
///
/// A checkout of the same URL already in `dir` is updated in place: files
/// that did not change keep their timestamps, so cargo does not rebuild
/// them when the same plugin is added again.
///
/// `url` and `rev` come from a parsed [`Source`](super::source::Source);
/// `rev` is checked again here, and both are passed after `--`, so neither
/// can be read as an option.
pub fn checkout(url: &str, rev: Option<&str>, dir: &Path) -> Result<String> {
    if let Some(rev) = rev
        && let Err(reason) = super::source::check_rev(rev)
    {
        bail!("the revision `{}` {reason}", crate::terminal::escape(rev));
    }
    if origin(dir).as_deref() != Some(url) {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("removing the old checkout {}", dir.display()))?;
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        run(git(dir)?.args(["init", "-q"]), "git init")?;
        run(
            git(dir)?.args(["remote", "add", "--", "origin", url]),
            "git remote add",
        )?;
    }
    let wanted = rev.unwrap_or("HEAD");
    run(
        git(dir)?.args([
            // A server that stops answering fails the fetch rather than
            // hanging `add` for ever (http and https; the variables
            // GIT_HTTP_LOW_SPEED_LIMIT and _TIME still override these).
            "-c",
            "http.lowSpeedLimit=1000",
            "-c",
            "http.lowSpeedTime=60",
            "fetch",
            "--depth",
            "1",
            "--no-tags",
            "--",
            "origin",
            wanted,
        ]),
        &format!("fetching `{wanted}` from {url}"),
    )?;
    run(
        git(dir)?.args([
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "-q",
            "--force",
            "--detach",
            "FETCH_HEAD",
        ]),
        "git checkout",
    )?;
    // Leftovers of an earlier revision must not reach the build.
    run(git(dir)?.args(["clean", "-q", "-ffdx"]), "git clean")?;
    let commit = run(git(dir)?.args(["rev-parse", "HEAD"]), "git rev-parse")?;
    Ok(commit.trim().to_string())
}

/// The URL `dir`'s checkout was fetched from, when it is one: as recorded,
/// not as `url.*.insteadOf` rewrites it (`git remote get-url` would), or a
/// user with such a rule would never find a checkout to reuse.
pub fn origin(dir: &Path) -> Option<String> {
    if !dir.join(".git").is_dir() {
        return None;
    }
    run(
        git(dir)
            .ok()?
            .args(["config", "--get", "remote.origin.url"]),
        "git config",
    )
    .ok()
    .map(|url| url.trim().to_string())
}

/// The commit checked out in `dir`, when it is a git work tree.
pub fn head_commit(dir: &Path) -> Option<String> {
    run(git(dir).ok()?.args(["rev-parse", "HEAD"]), "git rev-parse")
        .ok()
        .map(|c| c.trim().to_string())
}

fn git(dir: &Path) -> Result<Command> {
    let mut command = super::program::GIT.command(dir)?;
    // A hook or an outer repository's variables must not redirect git, and
    // a URL that wants credentials must fail, not wait for a password.
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_COMMON_DIR",
    ] {
        command.env_remove(var);
    }
    command.env("GIT_TERMINAL_PROMPT", "0");
    // Only the transports a source may name (no `ext::`, which runs
    // commands), whatever the user's git config allows.
    command.env("GIT_ALLOW_PROTOCOL", super::source::SCHEMES.join(":"));
    Ok(command)
}

/// Runs git and returns its stdout; on failure, says what failed with git's
/// own message.
fn run(command: &mut Command, what: &str) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("{what}: could not run git (is it installed?)"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!("{what} failed: {}", stderr.trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
