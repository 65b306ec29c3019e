//! What a user types or names, through the `host-harness` binary: a config entry that
//! holds control characters. Each profile runs the built lazy-tools component, inserted by its
//! `cordis.patch.yml` (nothing is installed).

use std::path::Path;
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
