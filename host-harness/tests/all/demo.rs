//! `host-harness demo`, the main job, as a user runs it.

use std::process::Command;

fn demo(args: &[&str]) -> (bool, String, String) {
    demo_in(Command::new(env!("CARGO_BIN_EXE_host-harness")), args)
}

fn demo_in(mut command: Command, args: &[&str]) -> (bool, String, String) {
    let output = command.arg("demo").args(args).output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_demo_over_the_bundled_catalog_defers_finds_and_denies() {
    let (ok, stdout, stderr) = demo(&[]);
    assert!(ok, "{stderr}");
    for step in [
        "1. Without lazy-tools",
        "3. The model searches in English",
        "5. The model calls the deferred tool",
    ] {
        assert!(stdout.contains(step), "{stdout}");
    }
}

#[test]
fn the_demo_over_a_catalog_within_the_budget_says_nothing_is_deferred() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("small.json");
    std::fs::write(
        &catalog,
        r#"{"servers": [{"name": "weather", "tools": [{"name": "get_weather", "description": "Get the weather for a city."}]}]}"#,
    )
    .unwrap();
    let (ok, stdout, stderr) = demo(&["--catalog", catalog.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(
            "these schemas fit the preset's budget of 8000 o200k tokens, so nothing is deferred"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("3. The model searches"), "{stdout}");
}

#[test]
fn the_live_demo_defers_real_servers_and_starts_only_those_it_calls() {
    // The servers the other tests installed (`target/mcp-servers`), where the demo looks.
    let servers = crate::mcp::reference_servers();
    let mut command = Command::new(env!("CARGO_BIN_EXE_host-harness"));
    command.env("CARGO_TARGET_DIR", servers.parent().unwrap());
    let (ok, stdout, stderr) = demo_in(command, &["--live"]);
    // Three servers' schemas fit the preset's budget: the live story configures deferral,
    // and says so, or nothing would be deferred and the direct call would run.
    assert!(ok, "{stdout}\n{stderr}");
    for step in [
        "configured `deferToolLoading: true`",
        "Servers running: none.",
        "denied by lazy-tools",
        "Loading started the server: filesystem",
        "On disk: \"written through lazy-tools\"",
        "Servers started: filesystem (Visible), memory (Visible)",
    ] {
        assert!(stdout.contains(step), "{step}: {stdout}");
    }
    assert!(!stdout.contains("everything ("), "{stdout}");
}
