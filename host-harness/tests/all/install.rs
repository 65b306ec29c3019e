//! Installing the plugin the way a user does, through the `host-harness`
//! binary: from a git repository made here out of the project's own plugin
//! sources (`git:file://...`), from a linked folder, re-adding, removing,
//! and then running it with `session` and `explain`.
//!
//! Every test uses its own profile in one shared `$DSH_HOME`, so the plugin
//! is built from scratch once per test run (about a minute); later adds find
//! cargo's target dir and the checkout in place and rebuild nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use host_harness::profile::Profile;
use host_harness::profile::rows::PluginRow;
use host_harness::wasm_host::hex;
use sha2::{Digest, Sha256};

/// The bundle manifest of the `bad-config` branch: line 7 holds the entry the
/// plugin rejects.
const BAD_MANIFEST: &str = "\
# The bundle manifest: installing this repository inserts the plugin into the
# profile. `name` is the cargo package that builds the component.
- insert:
    - id: lazy-tools
      name: lazy-tools
      config:
        defer: [\"Defer(github__*\"]
";

/// The manifest of the second commit: the bundle gives the plugin a config.
const CONFIGURED_MANIFEST: &str = "\
- insert:
    - id: lazy-tools
      name: lazy-tools
      config:
        defer: [\"Defer(*)\"]
        noDefer: [read, bash]
";

struct World {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    /// The first commit: the project's manifest, no config.
    v1: String,
    /// `main`'s head: the bundle gives a config.
    v2: String,
}

impl World {
    fn url(&self) -> String {
        format!("file://{}", self.repo.display())
    }

    fn profile_dir(&self, profile: &str) -> PathBuf {
        self.home.join("profiles").join(profile)
    }

    fn rows(&self, profile: &str) -> Vec<PluginRow> {
        Profile::load_installed(&self.profile_dir(profile)).expect("cordis.yml reads back")
    }
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(make_world)
}

/// A git repository holding the plugin bundle as the project ships it:
/// the workspace with only the plugin as member, its WIT, lock file,
/// toolchain file and manifest.
fn make_world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let repo = dir.path().join("lazy-tools");
    std::fs::create_dir_all(&repo).unwrap();
    for path in [
        "wit",
        "plugin",
        "Cargo.lock",
        "rust-toolchain.toml",
        "cordis.patch.yml",
    ] {
        copy(&project.join(path), &repo.join(path));
    }
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let members = r#"members = ["plugin", "host-harness"]"#;
    assert!(manifest.contains(members), "the workspace members changed");
    std::fs::write(
        repo.join("Cargo.toml"),
        manifest.replace(members, r#"members = ["plugin"]"#),
    )
    .unwrap();
    // Let cargo drop the harness's packages from the lock file, as a
    // repository of the plugin alone would have it. `--workspace` keeps every
    // locked version; cargo reads only the registry's index for this (no
    // crate is downloaded), so it works with an empty cargo cache.
    run(Command::new("cargo")
        .args(["update", "--workspace", "--quiet"])
        .current_dir(&repo));

    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "lazy-tools"]);
    let v1 = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("cordis.patch.yml"), CONFIGURED_MANIFEST).unwrap();
    git(
        &repo,
        &["commit", "-q", "-am", "the bundle configures the plugin"],
    );
    let v2 = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-q", "-b", "bad-config"]);
    std::fs::write(repo.join("cordis.patch.yml"), BAD_MANIFEST).unwrap();
    git(
        &repo,
        &["commit", "-q", "-am", "a config the plugin rejects"],
    );
    git(&repo, &["checkout", "-q", "main"]);
    World {
        home: dir.path().join("dsh-home"),
        repo,
        v1,
        v2,
        _dir: dir,
    }
}

fn copy(from: &Path, to: &Path) {
    if from.is_dir() {
        if from.file_name().is_some_and(|n| n == "target") {
            return;
        }
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    run(Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir))
}

/// Runs `command` to completion and returns its stdout, trimmed; if it
/// fails, panics with the command line and what it wrote to stderr.
fn run(command: &mut Command) -> String {
    let shown = format!("{command:?}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("could not run {shown}: {e}"));
    assert!(
        output.status.success(),
        "{shown} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// `host-harness session` running the steps file `steps` in `profile` over `catalog`.
fn run_steps(profile: &str, catalog: &str, steps: &Path) -> (bool, String, String) {
    let steps = steps.to_str().unwrap();
    harness(
        &[
            "session",
            "--profile",
            profile,
            "--catalog",
            catalog,
            "--steps",
            steps,
        ],
        "",
    )
}

/// Runs `host-harness` with the world's home, feeding `stdin`.
fn harness(args: &[&str], stdin: &str) -> (bool, String, String) {
    harness_in(&world().home, args, stdin)
}

fn harness_in(home: &Path, args: &[&str], stdin: &str) -> (bool, String, String) {
    harness_env(home, args, &[], stdin)
}

/// `plugin add <source>` to profile `p` of the harness home `home`.
fn add_in(home: &Path, source: &str) -> (bool, String, String) {
    harness_in(home, &["plugin", "--profile", "p", "add", source], "")
}

/// [`harness_in`] with variables set in its environment.
fn harness_env(
    home: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
    stdin: &str,
) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(args)
        .env("DSH_HOME", home)
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    (
        status.success(),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

/// `plugin add`, expected to succeed.
fn add(profile: &str, source: &str) -> (String, String) {
    let (ok, stdout, stderr) = try_add(profile, source);
    assert!(ok, "add {source} failed:\n{stderr}");
    (stdout, stderr)
}

/// `plugin add`, whatever comes of it.
fn try_add(profile: &str, source: &str) -> (bool, String, String) {
    harness(&["plugin", "--profile", profile, "add", source], "")
}

fn sha256_of(path: &Path) -> String {
    hex(&Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn add_from_git_records_the_install_and_adding_again_is_harmless() {
    let w = world();
    let profile = "from-git";
    let pinned = format!("git:{}#{}", w.url(), w.v1);
    let (stdout, stderr) = add(profile, &pinned);
    assert!(stdout.starts_with("added lazy-tools"), "{stdout}");
    assert!(
        stderr.contains("building `lazy-tools` for wasm32-wasip2"),
        "{stderr}"
    );

    let rows = w.rows(profile);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.source.as_deref(), Some(pinned.as_str()));
    assert_eq!(row.revision.as_deref(), Some(w.v1.as_str()));
    let component = row.component_path().unwrap();
    assert!(component.starts_with(&w.home), "{}", component.display());
    let sha256 = sha256_of(&component);
    assert_eq!(row.sha256.as_deref(), Some(sha256.as_str()));
    assert!(
        row.config.is_none(),
        "the first commit's bundle has no config"
    );
    // The component is precompiled for the next session.
    let cache = std::fs::read_dir(w.home.join("cache/components")).unwrap();
    assert!(
        cache
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .any(|name| name.starts_with(&format!("{sha256}-"))),
    );
    // The checkout is shallow, in its place, with no staging folder left.
    let checkout = w.home.join("plugins/lazy-tools/src");
    assert_eq!(git(&checkout, &["rev-list", "--count", "HEAD"]), "1");
    let plugins: Vec<String> = std::fs::read_dir(w.home.join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(plugins, ["lazy-tools"]);

    // The branch's head: the bundle's config now comes with it.
    let (stdout, _) = add(profile, &format!("git:{}", w.url()));
    assert!(stdout.starts_with("updated lazy-tools"), "{stdout}");
    let rows = w.rows(profile);
    assert_eq!(rows[0].revision.as_deref(), Some(w.v2.as_str()));
    assert_eq!(
        rows[0].config_value(),
        serde_json::json!({"defer": ["Defer(*)"], "noDefer": ["read", "bash"]})
    );

    // Adding it again changes nothing, not even the files.
    let dir = w.profile_dir(profile);
    std::fs::write(
        dir.join("cordis.patch.yml"),
        "- {id: lazy-tools, disabled: true}\n",
    )
    .unwrap();
    let before = (
        std::fs::read(dir.join("cordis.yml")).unwrap(),
        std::fs::read(dir.join("cordis.patch.yml")).unwrap(),
    );
    let (stdout, stderr) = add(profile, &format!("git:{}", w.url()));
    assert!(
        stdout.starts_with("already installed, unchanged: lazy-tools"),
        "{stdout}"
    );
    assert!(stderr.contains("`lazy-tools` is up to date"), "{stderr}");
    let after = (
        std::fs::read(dir.join("cordis.yml")).unwrap(),
        std::fs::read(dir.join("cordis.patch.yml")).unwrap(),
    );
    assert!(before == after, "adding again rewrote the profile");

    let (ok, stdout, stderr) = harness(&["plugin", "--profile", profile, "list"], "");
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("lazy-tools (package `lazy-tools`) [disabled in cordis.patch.yml]"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("revision   {}", w.v2)), "{stdout}");
}

#[test]
fn link_builds_the_folder_in_place() {
    let w = world();
    let profile = "linked";
    let (stdout, _) = add(profile, &format!("link:{}", w.repo.display()));
    assert!(stdout.starts_with("added lazy-tools"), "{stdout}");
    let rows = w.rows(profile);
    let canonical = std::fs::canonicalize(&w.repo).unwrap();
    assert_eq!(
        rows[0].source,
        Some(format!("link:{}", canonical.display()))
    );
    assert_eq!(rows[0].revision.as_deref(), Some(w.v2.as_str()));
    let component = rows[0].component_path().unwrap();
    assert_eq!(rows[0].sha256, Some(sha256_of(&component)));
    // Built in place, with the home's target dir: the folder gets no build
    // output of its own.
    assert!(!w.repo.join("target").exists());
}

#[test]
fn a_config_the_plugin_rejects_is_shown_in_the_bundle_and_changes_nothing() {
    let w = world();
    let profile = "bad-bundle";
    add(profile, &format!("git:{}", w.url()));
    let before = std::fs::read(w.profile_dir(profile).join("cordis.yml")).unwrap();
    let (ok, _, stderr) = try_add(profile, &format!("git:{}#bad-config", w.url()));
    assert!(!ok);
    let expected = format!(
        "the plugin rejects the config the bundle gives it:\n{}/cordis.patch.yml:7:17: \
         unbalanced parentheses in `Defer(github__*`: expected `Defer(pattern)` or `NoDefer(pattern)`",
        w.url()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    let after = std::fs::read(w.profile_dir(profile).join("cordis.yml")).unwrap();
    assert_eq!(before, after);
}

#[test]
fn a_session_shows_control_characters_from_a_catalog_and_never_obeys_them() {
    let w = world();
    let profile = "escaping";
    add(profile, &format!("git:{}", w.url()));
    let dir = w.profile_dir(profile);
    // A description that would set the terminal's title and colour, and forge a line.
    let catalog = dir.join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"servers": [{"name": "s", "description": "A server.", "tools": [
            {"name": "t", "description": "Reads the weather.\u001b]0;owned\u0007 \u001b[31mred\r\nforged: ok"}]}]}"#,
    )
    .unwrap();
    let catalog = catalog.to_str().unwrap();
    let steps = dir.join("steps.yml");
    std::fs::write(
        &steps,
        "steps:\n  - call: {agent: main, tool: tool_search, args: {tool_names: [s__t]}, expect: {outcome: ok}}\n",
    )
    .unwrap();
    let scripted = run_steps(profile, catalog, &steps);
    let played = harness(
        &["session", "--profile", profile, "--catalog", catalog],
        "tools\ncall tool_search {\"tool_names\": [\"s__t\"]}\nnext\ntools\nquit\n",
    );
    // The plugin's result shows the description on one line, its control characters as
    // spaces; the shell's own `tools` listing shows them escaped.
    for (ok, stdout, stderr) in [&scripted, &played] {
        assert!(ok, "{stderr}");
        assert!(stdout.contains("Reads the weather. ]0;owned"), "{stdout}");
        assert!(!stdout.contains(['\u{1b}', '\u{7}', '\r']), "{stdout:?}");
        assert!(!stdout.lines().any(|l| l.starts_with("forged")), "{stdout}");
    }
    assert!(
        played.1.contains("Reads the weather.\\u{1b}]0;owned\\u{7}"),
        "{}",
        played.1
    );
}

#[test]
fn a_session_that_fails_a_step_still_saves_what_was_loaded() {
    let w = world();
    let profile = "saving";
    add(profile, &format!("git:{}", w.url()));
    let dir = w.profile_dir(profile);
    std::fs::write(
        dir.join("cordis.patch.yml"),
        "- id: lazy-tools\n  config:\n    defer: [\"Defer(*)\"]\n    noDefer: [read]\n",
    )
    .unwrap();
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalogs/reference-servers.json");
    let steps = dir.join("steps.yml");
    std::fs::write(
        &steps,
        "steps:
  - call: {agent: main, tool: tool_search, args: {tool_names: [github__create_issue]}, expect: {outcome: ok}}
  - visible: {agent: main, includes: [no_such_tool]}
",
    )
    .unwrap();
    let saved = dir.join("state.json");
    let (ok, _, stderr) = harness(
        &[
            "session",
            "--profile",
            profile,
            "--catalog",
            catalog.to_str().unwrap(),
            "--steps",
            steps.to_str().unwrap(),
            "--save",
            saved.to_str().unwrap(),
        ],
        "",
    );
    assert!(!ok, "the second step fails");
    assert!(stderr.contains("step 2 failed"), "{stderr}");
    let state = std::fs::read_to_string(&saved).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(state.contains("github__create_issue"), "{state}");
}

#[test]
fn session_and_explain_run_the_installed_plugin() {
    let w = world();
    let profile = "session";
    add(profile, &format!("git:{}", w.url()));
    let dir = w.profile_dir(profile);
    std::fs::write(
        dir.join("cordis.patch.yml"),
        "# Keep the memory server visible.\n- id: lazy-tools\n  config:\n    defer: [\"Defer(*)\"]\n    noDefer: [read, bash, \"memory__*\"]\n",
    )
    .unwrap();
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalogs/reference-servers.json");
    let catalog = catalog.to_str().unwrap();

    let steps = dir.join("steps.yml");
    std::fs::write(
        &steps,
        "steps:
  - visible: {agent: main, includes: [read, bash, memory__create_entities, tool_search], excludes: [write, github__create_issue]}
  - call: {agent: main, tool: github__create_issue, args: {title: t}, expect: {outcome: denied, by: lazy-tools}}
  - call: {agent: main, tool: defer_execute_tool, args: {toolName: github__create_issue}, expect: {outcome: ok, json: {status: loaded}}}
  - visible: {agent: main, includes: [github__create_issue]}
",
    )
    .unwrap();
    let (ok, stdout, stderr) = run_steps(profile, catalog, &steps);
    assert!(ok, "{stderr}");
    assert!(stdout.ends_with("4 steps passed\n"), "{stdout}");
    // An empty steps file runs nothing: an error, not "0 steps passed".
    let empty = dir.join("empty.yml");
    std::fs::write(&empty, "").unwrap();
    let (ok, stdout, stderr) = run_steps(profile, catalog, &empty);
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("empty.yml has no steps: a steps file lists them under `steps:`"),
        "{stderr}"
    );

    // A person plays the model.
    let (ok, stdout, stderr) = harness(
        &["session", "--profile", profile, "--catalog", catalog],
        "tools\n\
         call github__create_issue {\"title\": \"t\"}\n\
         call tool_search {\"tool_names\": [\"github__create_issue\"]}\n\
         spawn worker\n\
         call github__create_issue {}\n\
         agent main\n\
         call github__create_issue {not json}\n\
         next\n\
         frobnicate\n\
         quit\n",
    );
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    assert!(has("main sees "), "{stdout}");
    assert!(has("  memory__create_entities  "), "{stdout}");
    assert!(has("denied by lazy-tools: "), "{stdout}");
    assert!(
        has("started main/worker; you are now its model"),
        "{stdout}"
    );
    assert!(has("you are now the model of main"), "{stdout}");
    assert!(
        has("error: the arguments are not JSON: {not json}"),
        "{stdout}"
    );
    assert!(has("unknown command `frobnicate`"), "{stdout}");
    // After tool_search loaded it, the next request carries it.
    let request = lines
        .iter()
        .find(|l| l.starts_with("request 1 of main: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(request.contains("github__create_issue"), "{request}");

    // Each answer, then the precedence list.
    let explain = |args: &[&str]| {
        let mut all = vec!["explain", "--profile", profile, "--catalog", catalog];
        all.extend(args);
        let (ok, stdout, stderr) = harness(&all, "");
        assert!(ok, "{stderr}");
        let (answer, precedence) = stdout
            .split_once("\n\n")
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(
            precedence.starts_with("Precedence, first match wins: 1."),
            "{stdout}"
        );
        format!("{answer}\n")
    };
    let patch = dir.join("cordis.patch.yml");
    let deferred = format!(
        "github__create_issue: deferred: it matches the Defer entry defer[0] `Defer(*)` (at /defer/0) (written at {}:4:13)\n",
        patch.display()
    );
    assert_eq!(explain(&["github__create_issue"]), deferred);
    assert_eq!(
        explain(&["memory__create_entities"]),
        format!(
            "memory__create_entities: visible: it matches the NoDefer entry noDefer[2] `memory__*` (at /noDefer/2) (written at {}:5:27)\n",
            patch.display()
        )
    );
    // The child's real reason: main loaded nothing, and no restriction was
    // configured, so the worker has the tool deferred by the same entry.
    assert_eq!(
        explain(&["--agent", "main/worker", "github__create_issue"]),
        deferred
    );
    assert_eq!(
        explain(&["tool_search"]),
        "tool_search: visible: it is one of lazy-tools' own tools, which are never deferred\n"
    );
}

/// The README's scripted-session example runs as written against a profile
/// with the plugin and no config (the preset over the bundled catalog), and
/// a fixture case copied as it is runs in its own world.
#[test]
fn shipped_steps_and_fixture_cases_run_in_session() {
    let w = world();
    let profile = "steps";
    add(profile, &format!("git:{}", w.url()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = |steps: &Path| {
        harness(
            &[
                "session",
                "--profile",
                profile,
                "--steps",
                steps.to_str().unwrap(),
            ],
            "",
        )
    };
    let (ok, stdout, stderr) = run(&root.join("examples/session-steps.yml"));
    assert!(ok, "{stderr}");
    assert!(stdout.ends_with("8 steps passed\n"), "{stdout}");

    // A case with its own tools and agents: `main` is the file's, not the
    // session's, so creating it is no conflict. The profile has no config,
    // so the case's expectations of `deferToolLoading: true` come from a patch.
    std::fs::write(
        w.profile_dir(profile).join("cordis.patch.yml"),
        "- id: lazy-tools\n  config: {deferToolLoading: true}\n",
    )
    .unwrap();
    let (ok, stdout, stderr) = run(&root.join("tests/cases/search-then-visible/case.yml"));
    assert!(ok, "{stderr}");
    assert!(stdout.ends_with("6 steps passed\n"), "{stdout}");
}

/// `explain` of a tool no catalog holds fails, with a "did you mean".
#[test]
fn explain_of_an_unknown_tool_fails_with_a_suggestion() {
    let w = world();
    let profile = "explain-unknown";
    add(profile, &format!("git:{}", w.url()));
    let (ok, _, stderr) = harness(
        &["explain", "--profile", profile, "weather__get_wether"],
        "",
    );
    assert!(!ok);
    assert!(
        stderr.contains(
            "no tool named `weather__get_wether` is registered; did you mean `weather__get_weather`?"
        ),
        "{stderr}"
    );
}

#[test]
fn remove_takes_the_plugin_out_of_the_profile() {
    let w = world();
    let profile = "removal";
    add(profile, &format!("git:{}", w.url()));
    let remove = |id: &str| harness(&["plugin", "--profile", profile, "remove", id], "");

    let (ok, _, stderr) = remove("lazy-tool");
    assert!(!ok);
    assert!(
        stderr.contains("profile `removal` has no plugin `lazy-tool`; did you mean `lazy-tools`?"),
        "{stderr}"
    );
    let (ok, stdout, stderr) = remove("lazy-tools");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "removed lazy-tools from profile `removal`\n");
    assert!(w.rows(profile).is_empty());
    let (ok, stdout, stderr) = harness(&["plugin", "--profile", profile, "list"], "");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "profile `removal` has no plugins\n");
    let (ok, _, stderr) = remove("lazy-tools");
    assert!(!ok);
    assert!(stderr.contains("has no plugin `lazy-tools`"), "{stderr}");
}

/// `remove` rewrites only cordis.yml, so a broken cordis.patch.yml does not stop it; but its
/// rows naming the plugin went unchecked, and the user hears so (it was passed over silently).
#[test]
fn a_remove_past_a_broken_patch_file_says_it_went_unchecked() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("profiles/p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cordis.yml"),
        "- id: x\n  name: x\n  component: /nowhere/x.wasm\n",
    )
    .unwrap();
    std::fs::write(dir.join("cordis.patch.yml"), "- disabld: true\n").unwrap();
    let (ok, _, stderr) = harness_in(
        home.path(),
        &["plugin", "--profile", "p", "remove", "x"],
        "",
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("warning: your cordis.patch.yml cannot be read, so its rows naming `x` were not checked:"),
        "{stderr}"
    );
    assert!(stderr.contains("cordis.patch.yml:1:"), "{stderr}");
    assert!(
        !std::fs::read_to_string(dir.join("cordis.yml"))
            .unwrap()
            .contains("id: x")
    );
}

#[test]
fn a_broken_profile_is_never_rewritten() {
    let w = world();
    let profile = "broken";
    let dir = w.profile_dir(profile);
    std::fs::create_dir_all(&dir).unwrap();
    let broken = "- id: lazy-tools\n  name: [lazy-tools\n";
    std::fs::write(dir.join("cordis.yml"), broken).unwrap();
    let (ok, _, stderr) = try_add(profile, &format!("git:{}", w.url()));
    assert!(!ok);
    assert!(
        stderr.contains("profile `broken` is not valid:"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}:2:", dir.join("cordis.yml").display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("cordis.yml")).unwrap(),
        broken
    );

    // Nor is a profile whose cordis.patch.yml has problems: `add` cannot see which ids it
    // inserts.
    let patched = "broken-patch";
    let (dir, stderr) = add_refused_over_patch(w, patched, "- {id: lazy-tools, disable: true}\n");
    assert!(
        stderr.contains(&format!(
            "profile `{patched}`'s cordis.patch.yml has problems; fix them first:\n{}:1:",
            dir.join("cordis.patch.yml").display()
        )),
        "{stderr}"
    );

    let (ok, _, stderr) = try_add(profile, "https://x.test/p");
    assert!(!ok);
    assert!(
        stderr.contains(
            "`https://x.test/p` is not a plugin source: write git:<url>[#<rev>] or link:<path>"
        ),
        "{stderr}"
    );
}

#[test]
fn a_failed_fetch_leaves_nothing_behind() {
    // A home of its own: no other test's clone is in progress in it.
    let home = tempfile::tempdir().unwrap();
    let missing = format!("git:file://{}/missing", home.path().display());
    let (ok, _, stderr) = harness_in(
        home.path(),
        &["plugin", "--profile", "nowhere", "add", &missing],
        "",
    );
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "fetching `HEAD` from file://{}/missing failed: fatal:",
            home.path().display()
        )),
        "{stderr}"
    );
    assert!(!home.path().join("profiles/nowhere/cordis.yml").exists());
    let leftovers: Vec<_> = std::fs::read_dir(home.path().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".staging-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_folder_under_plugins_that_no_id_names_is_passed_over() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A copy the user made by hand: no plugin id has a space.
    std::fs::create_dir_all(home.path().join("plugins/old copy")).unwrap();
    let source = repo_of(&work.path().join("bundle"), &[SHADOW_MANIFEST]);
    let (ok, _, stderr) = add_in(home.path(), &source);
    assert!(!ok);
    // Past the look for an existing checkout, as far as the real cargo.
    assert!(!stderr.contains("invalid plugin id"), "{stderr}");
    assert_cargo_failed(&stderr);
}

#[test]
fn a_plugin_that_does_not_start_leaves_no_component_behind() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    std::fs::create_dir_all(bundle.join("src")).unwrap();
    // A component that builds and exports nothing a shell calls.
    let source = repo_of(
        &bundle,
        &[
            SHADOW_MANIFEST,
            (
                "Cargo.toml",
                "[package]\nname = \"shadow\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
                 [lib]\ncrate-type = [\"cdylib\"]\n[workspace]\n",
                false,
            ),
            ("src/lib.rs", "", false),
        ],
    );
    let (ok, _, stderr) = add_in(home.path(), &source);
    assert!(!ok);
    assert!(
        stderr.contains("the built plugin does not start"),
        "{stderr}"
    );
    // No row names it, so `remove` could never reach what this add kept.
    for kept in ["components", "cache/components"] {
        let files: Vec<_> = std::fs::read_dir(home.path().join(kept))
            .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default();
        assert!(files.is_empty(), "{kept}: {files:?}");
    }
    assert!(!home.path().join("profiles/p/cordis.yml").exists());
}

#[test]
fn an_id_the_user_inserts_is_not_installed_twice() {
    let patch = "- insert:\n    - {id: lazy-tools, name: lazy-tools, component: mine.wasm}\n";
    let (dir, stderr) = add_refused_over_patch(world(), "own-insert", patch);
    assert!(
        stderr.contains(&format!(
            "your cordis.patch.yml already inserts a plugin `lazy-tools` at {}:2:7",
            dir.join("cordis.patch.yml").display()
        )),
        "{stderr}"
    );
}

/// `plugin add` of the fixture's repository to `profile`, whose cordis.patch.yml is `patch`:
/// refused, the patch as it was and no cordis.yml written. The profile's folder and stderr.
fn add_refused_over_patch(w: &World, profile: &str, patch: &str) -> (PathBuf, String) {
    let dir = w.profile_dir(profile);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cordis.patch.yml"), patch).unwrap();
    let (ok, _, stderr) = try_add(profile, &format!("git:{}", w.url()));
    assert!(!ok, "{stderr}");
    assert!(!dir.join("cordis.yml").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("cordis.patch.yml")).unwrap(),
        patch
    );
    (dir, stderr)
}

/// Files anywhere under `dir` named `name`.
fn find_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == name) {
            found.push(path.clone());
        }
        if path.is_dir() && !path.is_symlink() {
            found.extend(find_named(&path, name));
        }
    }
    found
}

#[test]
fn a_revision_or_url_never_reaches_git_as_an_option() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let pwned = outside.path().join("pwned");
    // The exploit of issue 9, writing outside $DSH_HOME; and its variants.
    let exploit = format!(
        "git:/some/repo#--upload-pack=touch {}; git-upload-pack",
        pwned.display()
    );
    for (source, message) in [
        (
            exploit.as_str(),
            "starts with `-`, so git would read it as an option",
        ),
        ("git:/some/repo#-q", "the revision `-q` starts with `-`"),
        ("git:/some/repo#main:refs/heads/x", "is a refspec"),
        (
            &format!("git:ext::sh -c touch% {}", pwned.display()),
            "`<transport>::` forms run helper programs",
        ),
        (
            &format!("git:--upload-pack=touch {}", pwned.display()),
            "the URL starts with `-`",
        ),
    ] {
        let (ok, _, stderr) = add_in(home.path(), source);
        assert!(!ok, "{source} was accepted");
        assert!(stderr.contains(message), "{source}: {stderr}");
        assert!(
            stderr.contains("name a branch, tag or commit id") || stderr.contains("write git:"),
            "{source}: no hint of what to write: {stderr}"
        );
    }
    assert!(!pwned.exists(), "the exploit ran");
    assert!(find_named(home.path(), "pwned").is_empty());
    assert!(!home.path().join("profiles/p/cordis.yml").exists());
    // Refused before anything was fetched.
    assert!(!home.path().join("plugins").exists());
}

#[test]
fn a_bundle_name_that_is_not_a_package_never_reaches_cargo() {
    let home = tempfile::tempdir().unwrap();
    let bundle = tempfile::tempdir().unwrap();
    let ran = bundle.path().join("ran");
    let manifest = format!(
        "- insert:\n    - id: x\n      name: '--config=build.rustc-wrapper={}'\n",
        ran.display()
    );
    std::fs::write(bundle.path().join("cordis.patch.yml"), &manifest).unwrap();
    let source = format!("link:{}", bundle.path().display());
    let (ok, _, stderr) = add_in(home.path(), &source);
    assert!(!ok);
    let shown = bundle
        .path()
        .canonicalize()
        .unwrap()
        .join("cordis.patch.yml");
    assert!(
        stderr.contains(&format!(
            "{}:3:7: `--config=build.rustc-wrapper=",
            shown.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("is not a cargo package name: it must start with a letter or `_`"),
        "{stderr}"
    );
    assert!(!ran.exists());
    assert!(!home.path().join("build").exists(), "cargo was run");
}

#[test]
fn control_characters_in_a_source_are_shown_escaped() {
    let home = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = harness_in(
        home.path(),
        &[
            "plugin",
            "--profile",
            "p",
            "add",
            "git:/r#\u{1b}]0;owned\u{7}",
        ],
        "",
    );
    assert!(!ok);
    assert!(
        !stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{stderr:?}"
    );
    assert!(stderr.contains("\\u{1b}]0;owned\\u{7}"), "{stderr}");
}

/// A git repository of one commit in `dir` holding `files` (path, text, executable).
fn repo_of(dir: &Path, files: &[(&str, &str, bool)]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    // The project's toolchain: a test bundle selecting it needs nothing installed.
    std::fs::write(dir.join("rust-toolchain.toml"), toolchain_file()).unwrap();
    for (path, text, executable) in files {
        let path = dir.join(path);
        std::fs::write(&path, text).unwrap();
        if *executable {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "bundle"]);
    format!("git:file://{}", dir.display())
}

/// The project's toolchain file: a test bundle selecting it needs nothing installed.
fn toolchain_file() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml"))
        .unwrap()
}

#[test]
fn programs_a_repository_ships_are_never_run_for_it() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("ran");
    let script = format!("#!/bin/sh\necho \"$0\" >> '{}'\nexit 1\n", marker.display());
    // A bundle with no Cargo.toml: the real cargo fails; only which programs ran matters.
    let source = repo_of(
        &work.path().join("bundle"),
        &[
            SHADOW_MANIFEST,
            ("git", &script, true),
            ("cargo", &script, true),
            ("rustc", &script, true),
            ("rustup", &script, true),
        ],
    );
    // An empty PATH entry means the current folder: the checkout's, when git and cargo run.
    let path = format!(":.:{}", std::env::var("PATH").unwrap());
    let (ok, _, stderr) = harness_env(
        home.path(),
        &["plugin", "--profile", "p", "add", &source],
        &[("PATH", &path)],
        "",
    );
    assert!(!ok);
    assert!(
        !marker.exists(),
        "the repository's programs ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    // It went as far as the real cargo.
    assert_cargo_failed(&stderr);
}

/// A bundle's manifest inserting `shadow`, a package no bundle here has: such a bundle is
/// fetched and checked out, then cargo fails.
const SHADOW_MANIFEST: (&str, &str, bool) = (
    "cordis.patch.yml",
    "- insert:\n    - {id: shadow, name: shadow}\n",
    false,
);

/// An add of a [`SHADOW_MANIFEST`] bundle went as far as the real cargo.
fn assert_cargo_failed(stderr: &str) {
    assert!(
        stderr.contains("cargo could not build package `shadow`"),
        "{stderr}"
    );
}

#[test]
fn a_checkout_is_reused_when_git_rewrites_its_url() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("bundle");
    let source = repo_of(
        &repo,
        &[(
            "cordis.patch.yml",
            "- insert:\n    - {id: kept, name: kept}\n",
            false,
        )],
    );
    // The user's git fetches the URL through another name for the same repository.
    let alias = work.path().join("alias");
    std::os::unix::fs::symlink(&repo, &alias).unwrap();
    let config = work.path().join("gitconfig");
    std::fs::write(
        &config,
        format!(
            "[url \"file://{}\"]\n\tinsteadOf = file://{}\n",
            alias.display(),
            repo.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let add = || {
        // The bundle does not build; its checkout is in place by then.
        let (ok, _, stderr) = harness_env(
            home.path(),
            &["plugin", "--profile", "p", "add", &source],
            &[("GIT_CONFIG_GLOBAL", config)],
            "",
        );
        assert!(!ok);
        assert!(
            stderr.contains("cargo could not build package `kept`"),
            "{stderr}"
        );
    };
    // The checkout an earlier install left (a failed one leaves none).
    let checkout = home.path().join("plugins/kept/src");
    run(Command::new("git")
        .args(["clone", "-q", "--depth", "1"])
        .arg(source.strip_prefix("git:").unwrap())
        .arg(&checkout));
    let mark = checkout.join(".git/mark");
    std::fs::write(&mark, "").unwrap();
    add();
    assert!(mark.exists(), "the checkout was cloned again");
}

#[test]
fn a_manifest_that_is_a_symbolic_link_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A manifest outside the repository, valid: only where it is matters.
    let outside = work.path().join("outside.yml");
    std::fs::write(&outside, "- insert:\n    - {id: linked, name: linked}\n").unwrap();
    let repo = work.path().join("bundle");
    std::fs::create_dir_all(&repo).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("cordis.patch.yml")).unwrap();
    let source = repo_of(&repo, &[]);
    let (ok, _, stderr) = add_in(home.path(), &source);
    assert!(!ok);
    assert!(
        stderr.contains(
            "cordis.patch.yml is a symbolic link; a bundle's manifest must be a file in the bundle"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("building"), "{stderr}");
}

#[test]
fn plugin_list_shows_control_characters_escaped() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("profiles/p");
    std::fs::create_dir_all(&dir).unwrap();
    // A cordis.yml written by hand (or by an older harness): every value as it is in the file.
    std::fs::write(
        dir.join("cordis.yml"),
        "- id: x\n  name: x\n  source: \"git:https://h.example/r\\e]0;X\\a\"\n  \
         revision: \"\\e[2J\\u202e\"\n  component: \"c\\e[31m.wasm\"\n  \
         config: {defer: [\"\\u202eX\"]}\n",
    )
    .unwrap();
    let (ok, stdout, stderr) = harness_in(home.path(), &["plugin", "--profile", "p", "list"], "");
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("source     git:https://h.example/r\\u{1b}]0;X\\u{7}"),
        "{stdout}"
    );
    assert!(
        !stdout
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{stdout:?}"
    );
}

#[test]
fn a_linked_folder_whose_path_holds_a_control_character_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // A source cannot hold control characters, but the folder a link resolves to can.
    let folder = work.path().join("b\u{1b}]0;X\u{7}");
    std::fs::create_dir_all(folder.join("src")).unwrap();
    for (path, text) in [
        (
            "cordis.patch.yml",
            "- insert:\n    - {id: shadow, name: shadow}\n",
        ),
        ("rust-toolchain.toml", &toolchain_file()),
        (
            "Cargo.toml",
            "[package]\nname = \"other\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[workspace]\n",
        ),
        ("src/lib.rs", ""),
    ] {
        std::fs::write(folder.join(path), text).unwrap();
    }
    let plain = work.path().join("plain");
    std::os::unix::fs::symlink(&folder, &plain).unwrap();
    let source = format!("link:{}", plain.display());
    // Each `add` through the link is refused before anything is built or recorded: the
    // recorded source could not hold the path, so adding again would not find the row.
    let add_refused = || {
        let (ok, _, stderr) = add_in(home.path(), &source);
        assert!(!ok, "{stderr}");
        assert!(!home.path().join("build").exists());
        assert!(!home.path().join("profiles/p/cordis.yml").exists());
        stderr
    };
    // The folder moved from `from` to `to`, and the link pointing there.
    let moved = |from: &Path, to: &Path| {
        std::fs::rename(from, to).unwrap();
        std::fs::remove_file(&plain).unwrap();
        std::os::unix::fs::symlink(to, &plain).unwrap();
    };
    let stderr = add_refused();
    let real = std::fs::canonicalize(&folder).unwrap();
    let escaped = real
        .display()
        .to_string()
        .replace('\u{1b}', "\\u{1b}")
        .replace('\u{7}', "\\u{7}");
    assert!(
        stderr.contains(&format!(
            "{source}: the folder's real path {escaped} holds a control or formatting \
             character (U+001B), which a source cannot; rename the folder (a link to it does \
             not help: its real path is what is recorded)"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(['\u{1b}', '\u{7}']), "{stderr:?}");

    // Nor a formatting character, which a source refuses as well: installed, the folder could
    // never be added again (its recorded source would not read back).
    let bidi = work.path().join("b\u{202e}lt");
    moved(&folder, &bidi);
    let stderr = add_refused();
    assert!(
        stderr.contains("holds a control or formatting character (U+202E)"),
        "{stderr}"
    );
    moved(&bidi, &folder);

    // Nor can a source record a path that is not UTF-8, which cargo cannot build in either.
    use std::os::unix::ffi::OsStrExt as _;
    let latin1 = work.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    moved(&folder, &latin1);
    let stderr = add_refused();
    assert!(
        stderr.contains("is not UTF-8, which cargo cannot build in"),
        "{stderr}"
    );
}

#[test]
fn another_repository_cannot_take_over_an_installed_id() {
    let w = world();
    let profile = "takeover";
    add(profile, &format!("git:{}", w.url()));
    let installed = w.profile_dir(profile).join("cordis.yml");
    let before = std::fs::read(&installed).unwrap();
    // Another repository whose bundle inserts the same id.
    let other = tempfile::tempdir().unwrap();
    let copy = other.path().join("copy");
    run(Command::new("git")
        .args(["clone", "-q"])
        .arg(&w.repo)
        .arg(&copy));
    for source in [
        format!("git:file://{}", copy.display()),
        format!("link:{}", copy.display()),
    ] {
        let (ok, stdout, stderr) = try_add(profile, &source);
        assert!(!ok, "{source} took over lazy-tools: {stdout}");
        assert!(
            stderr.contains(&format!(
                "plugin `lazy-tools` is already installed from git:{} (at {}), not from \
                 this bundle; to install this one instead, run `host-harness plugin --profile \
                 {profile} remove lazy-tools` first",
                w.url(),
                w.rows(profile)[0].place
            )),
            "{stderr}"
        );
        assert_eq!(std::fs::read(&installed).unwrap(), before);
        // The installed repository's checkout is still its own.
        let checkout = w.home.join("plugins/lazy-tools/src");
        assert_eq!(
            git(&checkout, &["config", "--get", "remote.origin.url"]),
            w.url()
        );
    }
    // Nor from another profile of the home: a checkout is the home's, one per id.
    let elsewhere = "takeover-elsewhere";
    let (ok, stdout, stderr) = try_add(elsewhere, &format!("git:file://{}", copy.display()));
    assert!(!ok, "another profile took over lazy-tools: {stdout}");
    // Named by the first profile found holding it (others of this world's tests hold it too).
    let owner = stderr
        .split("plugin `lazy-tools` is already installed in profile `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        stderr.contains(&format!("` from git:{}", w.url()))
            && stderr.contains(&format!(
                "run `host-harness plugin --profile {owner} remove lazy-tools` first"
            )),
        "{stderr}"
    );
    assert!(!w.profile_dir(elsewhere).join("cordis.yml").exists());
    let checkout = w.home.join("plugins/lazy-tools/src");
    assert_eq!(
        git(&checkout, &["config", "--get", "remote.origin.url"]),
        w.url()
    );
}

/// Runs `host-harness` in `cwd` with `DSH_HOME` set to `home` as given
/// (relative, or not UTF-8).
fn harness_at(cwd: &Path, home: &std::ffi::OsStr, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(args)
        .env("DSH_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn a_relative_home_is_the_same_home_from_anywhere() {
    let w = world();
    let profile = "relative-home";
    // The world's home, named relative to its parent folder.
    let parent = w.home.parent().unwrap();
    let relative = w.home.file_name().unwrap();
    let source = format!("git:{}", w.url());
    let (ok, stdout, stderr) = harness_at(
        parent,
        relative,
        &["plugin", "--profile", profile, "add", &source],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("lazy-tools"), "{stdout}");
    // The component is recorded where it is, whatever folder reads it.
    let row = &w.rows(profile)[0];
    let component = row.component.as_deref().unwrap();
    assert!(Path::new(component).is_absolute(), "{component}");
    assert!(Path::new(component).starts_with(&w.home), "{component}");
    // Cargo built in the home, not in a folder of the checkout.
    assert!(find_named(&w.home.join("plugins"), "build").is_empty());
    let (ok, stdout, stderr) = harness(&["plugin", "--profile", profile, "list"], "");
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("component  {component}")),
        "{stdout}"
    );
}

/// Progress is for a person watching: an `add` whose standard error is closed (`add ... 2>&1 |
/// head -4` once `head` has quit) still installs, and exits without a panic.
#[test]
fn an_add_whose_progress_cannot_be_written_still_installs() {
    let w = world();
    let profile = "closed-stderr";
    let source = format!("git:{}", w.url());
    let mut child = Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(["plugin", "--profile", profile, "add", &source])
        .env("DSH_HOME", &w.home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    assert_eq!(w.rows(profile).len(), 1);
}

#[test]
fn a_home_whose_path_is_not_utf8_is_refused_up_front() {
    use std::os::unix::ffi::OsStrExt as _;
    let work = tempfile::tempdir().unwrap();
    let home = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let (ok, _, stderr) = harness_at(
        work.path(),
        home,
        &["plugin", "--profile", "p", "add", "link:/nowhere"],
    );
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "the shell's home {}/caf\u{fffd} (from DSH_HOME) is not UTF-8: plugins cannot be \
             built or recorded there; set DSH_HOME to a folder whose path is UTF-8",
            work.path().display()
        )),
        "{stderr}"
    );
    // Nothing was made in it.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
}

/// Starts `host-harness` with `home` and `vars`, its stderr piped.
fn spawn_harness(home: &Path, args: &[&str], vars: &[(&str, &str)]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(args)
        .env("DSH_HOME", home)
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits up to `secs` seconds for `child`; kills it if it is still running.
fn wait_within(child: &mut std::process::Child, secs: u64) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

/// The stderr of `plugin add <source>` with `vars`, which must fail within `secs` seconds.
fn failed_add(source: &str, vars: &[(&str, &str)], secs: u64) -> String {
    let home = tempfile::tempdir().unwrap();
    let mut child = spawn_harness(
        home.path(),
        &["plugin", "--profile", "p", "add", source],
        vars,
    );
    let status = wait_within(&mut child, secs)
        .unwrap_or_else(|| panic!("`plugin add {source}` still runs after {secs} s"));
    assert!(!status.success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    stderr
}

/// A TCP port on which connections are accepted and never answered.
fn silent_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    port
}

#[test]
fn a_server_that_never_answers_fails_the_fetch() {
    let port = silent_port();
    // Git's own variable shortens the minute the harness allows to 2 s.
    let stderr = failed_add(
        &format!("git:http://127.0.0.1:{port}/repo"),
        &[("GIT_HTTP_LOW_SPEED_TIME", "2")],
        30,
    );
    assert!(
        stderr.contains(&format!(
            "fetching `HEAD` from http://127.0.0.1:{port}/repo failed:"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("Operation too slow"), "{stderr}");
}

#[test]
fn a_git_protocol_server_that_never_answers_is_stopped_at_the_time_limit() {
    // `git://` (as ssh) has no low-speed limit: only the harness's own limit stops it.
    let port = silent_port();
    let stderr = failed_add(
        &format!("git:git://127.0.0.1:{port}/repo"),
        &[("DSH_GIT_TIMEOUT", "2")],
        60,
    );
    assert!(
        stderr.contains(&format!(
            "fetching `HEAD` from git://127.0.0.1:{port}/repo did not finish in 2 s and was stopped"
        )),
        "{stderr}"
    );
}

#[test]
fn git_limits_that_are_not_whole_numbers_are_refused() {
    for (var, value, said) in [
        (
            "DSH_GIT_TIMEOUT",
            "10m",
            "a whole number of seconds from 1 to 86400",
        ),
        (
            "DSH_GIT_MAX_MB",
            "1G",
            "a whole number of mebibytes from 1 to 1048576",
        ),
        (
            "DSH_GIT_MAX_MB",
            "0",
            "a whole number of mebibytes from 1 to 1048576",
        ),
    ] {
        let stderr = failed_add("git:https://example.invalid/repo", &[(var, value)], 60);
        assert!(
            stderr.contains(&format!("{var} is `{value}`: it must be {said}")),
            "{stderr}"
        );
    }
}

/// `len` bytes that no compression shrinks (xorshift), so that a pack of them is as large.
fn incompressible(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[test]
fn a_repository_larger_than_the_checkout_bound_is_stopped_and_deleted() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(bundle.join("blob.bin"), incompressible(3 << 20)).unwrap();
    let source = repo_of(&bundle, &[SHADOW_MANIFEST]);
    let mut child = spawn_harness(
        home.path(),
        &["plugin", "--profile", "p", "add", &source],
        &[("DSH_GIT_MAX_MB", "1")],
    );
    let status = wait_within(&mut child, 120).expect("the add still runs after 120 s");
    assert!(!status.success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains("grew by more than 1 MiB (a repository too large for a plugin bundle?"),
        "{stderr}"
    );
    // Nothing of it is kept: no staging folder, no checkout, no row.
    let plugins: Vec<_> = std::fs::read_dir(home.path().join("plugins"))
        .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(plugins.is_empty(), "{plugins:?}");
    assert!(!home.path().join("profiles/p/cordis.yml").exists());
    // The same repository within a larger bound is fetched: the bound, not the repository,
    // stopped it (cargo then fails on its shadow manifest).
    let stderr = failed_add(&source, &[("DSH_GIT_MAX_MB", "64")], 120);
    assert!(!stderr.contains("grew by more than"), "{stderr}");
    assert_cargo_failed(&stderr);
}

#[test]
fn a_second_add_says_it_waits_for_the_first() {
    use std::io::BufRead as _;
    let home = tempfile::tempdir().unwrap();
    let lock_path = home.path().join(".lock");
    // Another add or remove, holding the home's lock.
    let held = std::fs::File::create(&lock_path).unwrap();
    held.lock().unwrap();
    let mut child = spawn_harness(
        home.path(),
        &["plugin", "--profile", "p", "add", "link:/nowhere"],
        &[],
    );
    let stderr = child.stderr.take().unwrap();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            send.send(line.unwrap()).unwrap();
        }
    });
    let first = receive.recv_timeout(std::time::Duration::from_secs(20));
    // Let it go on either way, so that it ends.
    drop(held);
    let status = wait_within(&mut child, 30).expect("add still waits after the lock is free");
    assert_eq!(
        first.expect("add waited without a word"),
        format!(
            "waiting for another plugin add or remove (lock {})",
            lock_path.display()
        )
    );
    // Then it did its work: the folder is missing.
    assert!(!status.success());
    let rest: Vec<String> = receive.iter().collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("link:/nowhere: no such folder")),
        "{rest:?}"
    );
}

#[test]
fn a_failed_or_interrupted_add_leaves_no_checkout_behind() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // What an add killed while cloning leaves.
    let stale = home.path().join("plugins/.staging-old/src");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("Cargo.toml"), "").unwrap();
    // A bundle with no Cargo.toml: fetched and checked out, then cargo fails.
    let source = repo_of(&work.path().join("bundle"), &[SHADOW_MANIFEST]);
    let (ok, _, stderr) = add_in(home.path(), &source);
    assert!(!ok);
    assert_cargo_failed(&stderr);
    let left = |dir: &str| -> Vec<String> {
        std::fs::read_dir(home.path().join(dir))
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(left("plugins"), Vec::<String>::new());
    assert_eq!(left("build"), Vec::<String>::new());
    assert!(!home.path().join("profiles/p/cordis.yml").exists());
}
