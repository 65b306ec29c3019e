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
    checkout_within(url, rev, dir, max_checkout_bytes()?)
}

/// [`checkout`], the fetch and checkout growing `dir` by at most `allowance` bytes.
fn checkout_within(url: &str, rev: Option<&str>, dir: &Path, allowance: u64) -> Result<String> {
    if let Some(rev) = rev
        && let Err(reason) = super::source::check_rev(rev)
    {
        bail!("the revision `{}` {reason}", crate::terminal::escape(rev));
    }
    let fresh = origin(dir).as_deref() != Some(url);
    if fresh {
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
    // A checkout updated in place holds its earlier revisions' packs and files: what this
    // fetch and checkout add is what is bounded.
    let before = if fresh {
        0
    } else {
        disk_use_within(dir, u64::MAX)
    };
    let bound = Bound {
        dir,
        max_bytes: before.saturating_add(allowance),
        allowance,
        fresh,
    };
    grown_within(
        &bound,
        git(dir)?.args([
            // A server that stops answering fails the fetch rather than
            // hanging `add` for ever (http and https; the variables
            // GIT_HTTP_LOW_SPEED_LIMIT and _TIME still override these).
            "-c",
            "http.lowSpeedLimit=1000",
            "-c",
            "http.lowSpeedTime=60",
            // No gc of git's own choosing, in the background, while the bound is measured:
            // an update runs its own below.
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
            "fetch",
            "--depth",
            "1",
            "--no-tags",
            // No remote-tracking branch: it would keep the branch's revision after the
            // checkout moved to another (see `drop_earlier_revisions`).
            "--refmap=",
            "--",
            "origin",
            wanted,
        ]),
        &format!("fetching `{wanted}` from {url}"),
    )?;
    grown_within(
        &bound,
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
    if !fresh {
        drop_earlier_revisions(dir);
    }
    Ok(commit.trim().to_string())
}

/// Deletes what earlier revisions left in an updated checkout's repository: only the
/// revision checked out is ever built, and each update's pack stayed, so a plugin updated
/// often held every revision it ever had. The earlier commits are reachable from HEAD's
/// reflog and, in checkouts fetched before `--refmap=`, from remote-tracking branches. The
/// update stands if this fails: it is only disk.
fn drop_earlier_revisions(dir: &Path) {
    let git_run = |args: &[&str], what: &str| run(git(dir)?.args(args), what);
    let dropped = || -> Result<()> {
        let remote_refs = git_run(
            &["for-each-ref", "--format=%(refname)", "refs/remotes/"],
            "git for-each-ref",
        )?;
        for name in remote_refs.lines() {
            git_run(&["update-ref", "-d", "--", name], "git update-ref")?;
        }
        git_run(
            &["reflog", "expire", "--expire=now", "--all"],
            "git reflog expire",
        )?;
        git_run(&["gc", "--prune=now", "--quiet"], "git gc")?;
        Ok(())
    };
    if let Err(e) = dropped() {
        tracing::warn!(
            "{}: the earlier revisions stay on disk: {e:#}",
            dir.display()
        );
    }
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
    let secs = setting("DSH_GIT_TIMEOUT", 86_400, "seconds")?;
    Ok(secs.map_or(DEFAULT_TIMEOUT, Duration::from_secs))
}

/// The whole number from 1 to `max` that the variable `name` holds, if it is set.
fn setting(name: &str, max: u64, unit: &str) -> Result<Option<u64>> {
    let Some(value) = std::env::var_os(name) else {
        return Ok(None);
    };
    let number = value
        .to_str()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|n| (1..=max).contains(n))
        .with_context(|| {
            format!(
                "{name} is `{}`: it must be a whole number of {unit} from 1 to {max}",
                crate::terminal::escape(&value.to_string_lossy())
            )
        })?;
    Ok(Some(number))
}

/// The most a checkout (its `.git` and its files) may hold by default: a plugin bundle is a
/// few megabytes, and a repository that sends gigabytes (or a small pack that checks out
/// into gigabytes) must not fill the user's disk. `DSH_GIT_MAX_MB` changes it.
const DEFAULT_MAX_CHECKOUT_MB: u64 = 1024;

/// The most a checkout may hold: `DSH_GIT_MAX_MB` mebibytes (1 to 1,048,576), else 1 GiB.
fn max_checkout_bytes() -> Result<u64> {
    let megabytes = setting("DSH_GIT_MAX_MB", 1 << 20, "mebibytes")?;
    Ok(megabytes.unwrap_or(DEFAULT_MAX_CHECKOUT_MB) << 20)
}

/// A folder that a git command may grow only up to a size.
struct Bound<'a> {
    dir: &'a Path,
    /// The most the folder may hold: what it held before, and the allowance.
    max_bytes: u64,
    allowance: u64,
    /// Whether this add made the folder (a new checkout), or updates an installed one.
    fresh: bool,
}

/// Runs a git command that writes into `bound.dir` (a fetch, a checkout), stopping it once the
/// folder holds more than the bound, and checking the folder again when it ends (a local fetch
/// can end between two looks). The checkout is then deleted, a new one or an installed one: a
/// stopped fetch or checkout leaves objects, locks (`shallow.lock`, `index.lock`) and a work
/// tree between two revisions that no later add could trust. An installed plugin's component
/// does not need it; the next add fetches afresh.
fn grown_within(bound: &Bound, command: &mut Command, what: &str) -> Result<String> {
    let outcome = run_bounded(command, what, Some(bound));
    let past = match &outcome {
        Err(e) => e.downcast_ref::<PastBound>().is_some(),
        Ok(_) => disk_use_within(bound.dir, bound.max_bytes) > bound.max_bytes,
    };
    if !past {
        return outcome;
    }
    let mut message = format!(
        "{what} was stopped: the checkout in {} grew by more than {} MiB (a repository too large \
         for a plugin bundle? DSH_GIT_MAX_MB sets the limit in mebibytes); ",
        bound.dir.display(),
        bound.allowance >> 20
    );
    match std::fs::remove_dir_all(bound.dir) {
        Ok(()) if bound.fresh => message.push_str("the new checkout was deleted"),
        Ok(()) => message.push_str(
            "the checkout was deleted (the installed component is kept; the next add fetches \
             afresh)",
        ),
        Err(e) => message.push_str(&format!("deleting the checkout failed: {e}")),
    }
    bail!(message)
}

/// A git command stopped because the folder it wrote into grew past its bound.
#[derive(Debug)]
struct PastBound;

impl std::fmt::Display for PastBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the checkout grew past its bound")
    }
}

impl std::error::Error for PastBound {}

/// How much of the disk `dir` takes, counted until it passes `max_bytes` (then any larger
/// figure is returned): each file's length, and a block for each entry, so that a million
/// empty files count too. Symbolic links are not followed; an entry that vanishes while it
/// is counted (git renames its temporary files) is passed over.
fn disk_use_within(dir: &Path, max_bytes: u64) -> u64 {
    const ENTRY_BYTES: u64 = 4096;
    let mut total = 0u64;
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.path().symlink_metadata() else {
                continue;
            };
            total = total.saturating_add(ENTRY_BYTES);
            if metadata.is_dir() {
                folders.push(entry.path());
            } else {
                total = total.saturating_add(metadata.len());
            }
            if total > max_bytes {
                return total;
            }
        }
    }
    total
}

/// Runs git and returns its stdout; on failure, says what failed with git's
/// own message. Git runs in a process group of its own, which is killed when it
/// outlives [`timeout`] (the group: git's ssh goes with it).
fn run(command: &mut Command, what: &str) -> Result<String> {
    run_bounded(command, what, None)
}

/// [`run`], and when `bound` is given, the group is also killed once the bound's folder
/// holds more than it allows (the error is then a [`PastBound`]).
fn run_bounded(command: &mut Command, what: &str, bound: Option<&Bound>) -> Result<String> {
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
    let started = Instant::now();
    let deadline = started + limit;
    let mut next_measure = started + MEASURE_EVERY;
    let ended = loop {
        if let Some(status) = child
            .try_wait()
            .with_context(|| format!("{what}: waiting for git"))?
        {
            break Ended::Exited(status);
        }
        let now = Instant::now();
        if now >= deadline {
            child_process::signal_group(child.id(), libc::SIGKILL);
            let _ = child.wait();
            break Ended::OutOfTime;
        }
        if let Some(bound) = bound
            && now >= next_measure
        {
            if disk_use_within(bound.dir, bound.max_bytes) > bound.max_bytes {
                child_process::signal_group(child.id(), libc::SIGKILL);
                let _ = child.wait();
                break Ended::PastBound;
            }
            next_measure = Instant::now() + MEASURE_EVERY;
        }
        std::thread::sleep(POLL);
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let status = match ended {
        Ended::Exited(status) => status,
        Ended::OutOfTime => bail!(
            "{what} did not finish in {} s and was stopped (a server that stopped answering? \
             DSH_GIT_TIMEOUT sets the limit in seconds)",
            limit.as_secs()
        ),
        Ended::PastBound => return Err(PastBound.into()),
    };
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        bail!("{what} failed: {}", stderr.trim());
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// How often a running git is looked at: a local command ends within a few of these.
const POLL: Duration = Duration::from_millis(5);
/// How often the folder a fetch or checkout writes into is measured: a walk of a checkout
/// costs milliseconds, and what git writes in between is bounded by the disk's speed.
const MEASURE_EVERY: Duration = Duration::from_millis(250);

/// How a git command's wait ended.
enum Ended {
    Exited(std::process::ExitStatus),
    OutOfTime,
    PastBound,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository of one commit holding `blob` random bytes (xorshift: no pack shrinks it).
    fn repo_with_blob(dir: &Path, bytes: usize, seed: u64) {
        let mut state = seed | 1;
        let blob: Vec<u8> = (0..bytes)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(format!("blob-{seed}")), blob).unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .current_dir(dir)
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        if !dir.join(".git").exists() {
            git(&["init", "-q", "-b", "main"]);
        }
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "blob"]);
    }

    /// A scratch folder with a repository holding one commit of a 400 kB blob, its `file://`
    /// URL, and where its checkout goes.
    fn a_repo_of_one_blob() -> (
        tempfile::TempDir,
        std::path::PathBuf,
        String,
        std::path::PathBuf,
    ) {
        let work = tempfile::tempdir().unwrap();
        let repo = work.path().join("repo");
        let url = format!("file://{}", repo.display());
        let dir = work.path().join("checkout");
        repo_with_blob(&repo, 400_000, 1);
        (work, repo, url, dir)
    }

    /// An installed checkout updated in place is bounded by what the update adds, not by what
    /// earlier revisions left in it; an update past the bound deletes the checkout (what a
    /// stopped fetch leaves, locks included, no later add could trust), and the next add
    /// fetches afresh.
    #[test]
    fn an_update_in_place_is_bounded_by_what_it_adds() {
        let (work, repo, url, dir) = a_repo_of_one_blob();
        let first = checkout_within(&url, None, &dir, 1 << 20).unwrap();
        // A second revision of 400 kB more: the folder then holds more than 1 MiB, its growth
        // less.
        repo_with_blob(&repo, 400_000, 2);
        let second = checkout_within(&url, None, &dir, 1 << 20).unwrap();
        assert_ne!(first, second);
        assert!(disk_use_within(&dir, u64::MAX) > 1 << 20);
        // A third of 3 MB grows it past the bound: stopped, and the checkout deleted.
        repo_with_blob(&repo, 3_000_000, 3);
        let err = checkout_within(&url, None, &dir, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(err.contains("grew by more than 1 MiB"), "{err}");
        assert!(err.ends_with("the next add fetches afresh)"), "{err}");
        assert!(!dir.exists());
        // Within a larger bound the same revision is fetched afresh.
        let third = checkout_within(&url, None, &dir, 16 << 20).unwrap();
        assert_eq!(head_commit(&dir).as_deref(), Some(third.as_str()));
        // A new checkout past the bound is deleted as well.
        let fresh = work.path().join("fresh");
        let err = checkout_within(&url, None, &fresh, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("the new checkout was deleted"), "{err}");
        assert!(!fresh.exists());
    }

    /// Updated in place again and again, a checkout holds its one revision: each update's
    /// pack of 400 kB stayed before, 1.9 MB in `.git` after six.
    #[test]
    fn an_updated_checkout_keeps_only_its_revision() {
        let (_work, repo, url, dir) = a_repo_of_one_blob();
        checkout_within(&url, None, &dir, 16 << 20).unwrap();
        for seed in 2..=6 {
            // The same file, new bytes: one revision holds 400 kB.
            std::fs::remove_file(repo.join(format!("blob-{}", seed - 1))).unwrap();
            repo_with_blob(&repo, 400_000, seed);
            let commit = checkout_within(&url, None, &dir, 16 << 20).unwrap();
            assert_eq!(head_commit(&dir).as_deref(), Some(commit.as_str()));
        }
        assert!(dir.join("blob-6").exists() && !dir.join("blob-5").exists());
        let repository = disk_use_within(&dir.join(".git"), u64::MAX);
        assert!(repository < 600_000, "{repository} bytes in .git");

        // From one branch to another: the first branch's revision goes too.
        let git = |dir: &Path, args: &[&str]| {
            let out = Command::new("git")
                .current_dir(dir)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&repo, &["branch", "-q", "stable"]);
        checkout_within(&url, Some("stable"), &dir, 16 << 20).unwrap();
        git(&repo, &["checkout", "-q", "-b", "next"]);
        std::fs::remove_file(repo.join("blob-6")).unwrap();
        repo_with_blob(&repo, 400_000, 7);
        checkout_within(&url, Some("next"), &dir, 16 << 20).unwrap();
        assert!(dir.join("blob-7").exists());
        assert_eq!(git(&dir, &["for-each-ref", "refs/remotes/"]), "");
        let repository = disk_use_within(&dir.join(".git"), u64::MAX);
        assert!(repository < 600_000, "{repository} bytes in .git");
    }

    #[test]
    fn a_command_that_keeps_writing_is_stopped_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let bound = Bound {
            dir: dir.path(),
            max_bytes: 1 << 20,
            allowance: 1 << 20,
            fresh: true,
        };
        // Writes 64 KiB every 10 ms for ever: only the bound stops it.
        let mut command = Command::new("sh");
        command.current_dir(dir.path()).args([
            "-c",
            "while :; do head -c 65536 /dev/zero >> grows; sleep 0.01; done",
        ]);
        let started = Instant::now();
        let error = run_bounded(&mut command, "writing", Some(&bound)).unwrap_err();
        assert!(error.downcast_ref::<PastBound>().is_some(), "{error:#}");
        assert!(started.elapsed() < Duration::from_secs(60));
        // Stopped soon after it passed the bound, not at the time limit.
        let written = std::fs::metadata(dir.path().join("grows")).unwrap().len();
        assert!(written < 16 << 20, "{written}");
    }

    #[test]
    fn disk_use_counts_nested_files_and_entries_but_not_what_links_point_to() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![0u8; 1 << 20]).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/file"), vec![0u8; 1000]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        // a, a/b, a/b/file and link: four entries, the file's 1000 bytes, and the link's own
        // length (the path it holds), not the megabyte it points to.
        let link = outside.path().as_os_str().len() as u64;
        assert_eq!(
            disk_use_within(dir.path(), u64::MAX),
            4 * 4096 + 1000 + link
        );
        // Past a bound the count stops early, with a figure past it.
        assert!(disk_use_within(dir.path(), 5000) > 5000);
    }
}
