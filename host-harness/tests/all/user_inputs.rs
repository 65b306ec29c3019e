//! What a user types or names, through the `host-harness` binary: a session's input that
//! is not text, a `--save` target that is not a file, a config entry that holds control
//! characters. Each profile runs the built lazy-tools component, inserted by its
//! `cordis.patch.yml` (nothing is installed).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use host_harness::wasm_host::lazy_tools_component_path;

/// A home whose profile `p` inserts lazy-tools with `config` (a YAML flow mapping).
fn home(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("profiles/p");
    std::fs::create_dir_all(&dir).unwrap();
    let component = lazy_tools_component_path();
    std::fs::write(
        dir.join("cordis.patch.yml"),
        format!(
            "- insert:\n    - id: lazy-tools\n      name: lazy-tools\n      component: {:?}\n      config: {config}\n",
            component.display().to_string()
        ),
    )
    .unwrap();
    home
}

/// Runs the harness in `home` with `stdin`: whether it succeeded, its stdout and stderr.
fn harness(home: &Path, args: &[&str], stdin: &[u8]) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(args)
        .env("DSH_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The harness may end before it reads all of it (a refused argument).
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `session --profile p --save <saved>` in `home` with `stdin`, run to its end: as [`harness`].
fn session_saving(home: &Path, saved: &Path, stdin: &[u8]) -> (bool, String, String) {
    let saved = saved.to_str().unwrap();
    harness(home, &["session", "--profile", "p", "--save", saved], stdin)
}

/// `session --profile p --save <saved>` in `home`, its output piped.
fn session_saving_to(home: &Path, saved: &Path, stdin: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(["session", "--profile", "p", "--save"])
        .arg(saved)
        .env("DSH_HOME", home)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

const LOAD_WEATHER: &[u8] = b"call tool_search {\"tool_names\":[\"weather__get_weather\"]}\n";

/// A byte that is not UTF-8 is said with its line, the session goes on, and what was
/// loaded is saved: it used to end the session before `--save` wrote anything.
#[test]
fn a_line_that_is_not_utf8_neither_ends_the_session_nor_loses_its_save() {
    let home = home("{deferToolLoading: true}");
    let saved = home.path().join("s2.json");
    let input = [LOAD_WEATHER, b"explain caf\xe9\ntools\nquit\n"].concat();
    let (ok, stdout, stderr) = session_saving(home.path(), &saved, &input);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("error: line 2 is not UTF-8 (at byte 12); it is skipped\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("main sees "),
        "the session went on: {stdout}"
    );
    let state = std::fs::read_to_string(&saved).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(state.contains("weather__get_weather"), "{state}");
}

/// An output that fails ends the session with an error, and what was loaded is still
/// saved.
#[test]
fn a_session_whose_output_fails_still_saves() {
    let home = home("{deferToolLoading: true}");
    let saved = home.path().join("s.json");
    let mut child = session_saving_to(home.path(), &saved, Stdio::null());
    // Nobody reads what it writes: its first line fails (a broken pipe).
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("Broken pipe"), "{stderr}");
    let state = std::fs::read_to_string(&saved).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(state.starts_with('{'), "{state}");
}

/// `--save` onto a FIFO or a symbolic link is refused before the session starts, and
/// leaves it as it was (the rename used to replace it with a regular file).
#[cfg(unix)]
#[test]
fn saving_onto_a_fifo_or_a_symbolic_link_is_refused_before_the_session_starts() {
    let home = home("{deferToolLoading: true}");
    let fifo = home.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let target = home.path().join("elsewhere.json");
    std::fs::write(&target, "{}").unwrap();
    let link = home.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let input = [LOAD_WEATHER, b"quit\n"].concat();
    for (path, kind) in [(&fifo, "a FIFO"), (&link, "a symbolic link")] {
        let (ok, stdout, stderr) = session_saving(home.path(), path, &input);
        assert!(!ok);
        assert!(
            stderr.contains(&format!(
                "--save: {} is {kind}, not a regular file",
                path.display()
            )),
            "{stderr}"
        );
        assert!(stdout.is_empty(), "the session did not start: {stdout}");
    }
    let file_type = |p: &PathBuf| std::fs::symlink_metadata(p).unwrap().file_type();
    use std::os::unix::fs::FileTypeExt as _;
    assert!(file_type(&fifo).is_fifo());
    assert!(file_type(&link).is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
}

/// `explain` quotes the deciding config entry, whatever it holds: a carriage return or a
/// NEL in it reaches the terminal escaped.
#[test]
fn explain_shows_a_config_entrys_control_characters_escaped() {
    let home = home(r#"{defer: ["Defer(*\r\N)"]}"#);
    let (ok, stdout, stderr) = harness(
        home.path(),
        &["explain", "--profile", "p", "weather__get_weather"],
        b"",
    );
    assert!(ok, "{stderr}");
    let answer = stdout.lines().next().unwrap();
    assert!(
        answer.starts_with(
            "weather__get_weather: deferred: it matches the Defer entry defer[0] `Defer(*\\r\\u{85})`"
        ),
        "{answer}"
    );
    assert!(!stdout.contains(['\r', '\u{85}']), "{stdout:?}");
}

/// A session resumed and saved to the same file keeps the loads of the agents it did not
/// start: they were restored into the plugin, and written back (they used to be dropped).
#[test]
fn resuming_and_saving_to_the_same_file_keeps_the_loads_of_agents_not_started() {
    let home = home("{deferToolLoading: true}");
    let saved = home.path().join("rt.json");
    let saved = saved.to_str().unwrap();
    let input = [b"spawn worker\n", LOAD_WEATHER, b"quit\n"].concat();
    let (ok, _, stderr) = session_saving(home.path(), Path::new(saved), &input);
    assert!(ok, "{stderr}");
    let first = std::fs::read_to_string(saved).unwrap();
    assert!(first.contains("\"main/worker\""), "{first}");
    let worker = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text).unwrap()["agents"]["main/worker"].clone()
    };
    for run in 1..=2 {
        let (ok, _, stderr) = harness(
            home.path(),
            &[
                "session",
                "--profile",
                "p",
                "--resume",
                saved,
                "--save",
                saved,
            ],
            b"quit\n",
        );
        assert!(ok, "{stderr}");
        let again = worker(&std::fs::read_to_string(saved).unwrap());
        assert_eq!(again["tools"], worker(&first)["tools"]);
        assert_eq!(again["groups"], worker(&first)["groups"]);
        // Carried forward, and counted: not forever.
        assert_eq!(again["unused_runs"], run);
    }
}

/// A session whose steps failed still says when its state could not be saved (it said only
/// the step's failure, and `--save` wrote nothing, silently).
#[test]
fn a_failed_save_is_said_when_a_step_failed_too() {
    let home = home("{deferToolLoading: true}");
    let steps = home.path().join("steps.yml");
    std::fs::write(
        &steps,
        "tools: [bash]\nagents: [main]\nsteps:\n  - dispose_plugin\n  \
         - visible: {agent: main, exactly: [nothing]}\n",
    )
    .unwrap();
    let saved = home.path().join("saved.json");
    let (ok, stdout, stderr) = harness(
        home.path(),
        &[
            "session",
            "--profile",
            "p",
            "--steps",
            steps.to_str().unwrap(),
            "--save",
            saved.to_str().unwrap(),
        ],
        b"",
    );
    assert!(!ok);
    let output = format!("{stdout}{stderr}");
    assert!(output.contains("step 2 failed"), "{output}");
    assert!(
        stderr.contains("error: --save: no plugin `lazy-tools` is installed"),
        "{output}"
    );
    assert!(!saved.exists());
}

/// A state whose agent id holds a line break is refused with the id escaped: it cannot
/// forge a line of the harness's output.
#[test]
fn a_restore_error_shows_the_states_text_escaped() {
    let home = home("{deferToolLoading: true}");
    let state = home.path().join("forged.json");
    std::fs::write(
        &state,
        r#"{"format": "lazy-tools/load-state", "version": 1, "strategy": "inject",
            "agents": {"main\nforged: the plugin is fine": {"tools": {"weather__get_weather": "+1"}}}}"#,
    )
    .unwrap();
    let (_, stdout, stderr) = harness(
        home.path(),
        &[
            "session",
            "--profile",
            "p",
            "--resume",
            state.to_str().unwrap(),
        ],
        b"quit\n",
    );
    let output = format!("{stdout}{stderr}");
    assert!(
        output.contains("agent `main\\nforged: the plugin is fine`: a name with a control or bidirectional character"),
        "{output}"
    );
    assert!(!output.lines().any(|l| l.starts_with("forged")), "{output}");
}

/// Ctrl-C ends an interactive session as `quit` does, while it waits for a line, and what
/// was loaded is saved (SIGINT used to stop the harness before `--save` wrote anything).
#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_session_and_saves_what_was_loaded() {
    use std::io::{BufReader, Write as _};
    let home = home("{deferToolLoading: true}");
    let saved = home.path().join("interrupted.json");
    let mut child = session_saving_to(home.path(), &saved, Stdio::piped());
    // The input stays open: the session waits for its next line when Ctrl-C comes.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(LOAD_WEATHER).unwrap();
    stdin.write_all(b"tools\n").unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    crate::common::read_until(&mut stdout, "main sees ");
    let stderr = crate::common::interrupt(child, &mut stdout, "-INT");
    let state = std::fs::read_to_string(&saved).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(state.contains("weather__get_weather"), "{state}");
    drop(stdin);
}
