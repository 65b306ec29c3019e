//! Shallow git checkouts of plugin bundles, with the `git` command.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use crate::child_process;

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

/// How long one git command may run by default: a fetch whose server stops answering (ssh or
/// `git://`, which have no low-speed limit, or a local repository on a hung mount) is stopped
/// rather than hanging `add` for ever. `DSH_GIT_TIMEOUT` (seconds) changes it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The most of git's stdout and of its stderr kept: what it prints here is a commit id, a URL
/// or an error message.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// How long one git command may run: `DSH_GIT_TIMEOUT` seconds (1 to 86,400), else ten minutes.
fn timeout() -> Result<Duration> {
    let Some(value) = std::env::var_os("DSH_GIT_TIMEOUT") else {
        return Ok(DEFAULT_TIMEOUT);
    };
    value
        .to_str()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|secs| (1..=86_400).contains(secs))
        .map(Duration::from_secs)
        .with_context(|| {
            format!(
                "DSH_GIT_TIMEOUT is `{}`: it must be a whole number of seconds from 1 to 86400",
                crate::terminal::escape(&value.to_string_lossy())
            )
        })
}

/// Runs git and returns its stdout; on failure, says what failed with git's
/// own message. Git runs in a process group of its own, which is killed when it
/// outlives [`timeout`] (the group: git's ssh goes with it).
fn run(command: &mut Command, what: &str) -> Result<String> {
    let limit = timeout()?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    child_process::own_group(command);
    child_process::die_with_parent(command);
    let mut child = command
        .spawn()
        .with_context(|| format!("{what}: could not run git (is it installed?)"))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(pipe) = pipe {
                let mut pipe = pipe.take(MAX_OUTPUT_BYTES);
                let _ = pipe.read_to_end(&mut kept);
                // Past the limit, keep reading so that git never blocks on a full pipe.
                let _ = std::io::copy(&mut pipe.into_inner(), &mut std::io::sink());
            }
            kept
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .with_context(|| format!("{what}: waiting for git"))?
        {
            break Some(status);
        }
        if Instant::now() >= deadline {
            child_process::signal_group(child.id(), libc::SIGKILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(POLL);
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let Some(status) = status else {
        bail!(
            "{what} did not finish in {} s and was stopped (a server that stopped answering? \
             DSH_GIT_TIMEOUT sets the limit in seconds)",
            limit.as_secs()
        );
    };
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        bail!("{what} failed: {}", stderr.trim());
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// How often a running git is looked at: a local command ends within a few of these.
const POLL: Duration = Duration::from_millis(5);
