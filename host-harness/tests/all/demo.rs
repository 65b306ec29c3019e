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
    // Installed by this test binary (once, whichever test asks first), where the demo looks.
    crate::common::reference_servers();
    let mut command = Command::new(env!("CARGO_BIN_EXE_host-harness"));
    command.env("CARGO_TARGET_DIR", crate::common::target_dir());
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

/// A signal ends the live demo at its next step, and its servers with what they started;
/// left to the signal's default, the harness would die and leave that to the kernel.
#[test]
fn a_signal_ends_the_live_demo_and_its_servers() {
    use std::io::{BufRead as _, BufReader, Read as _};
    crate::common::reference_servers();
    let mut child = Command::new(env!("CARGO_BIN_EXE_host-harness"))
        .args(["demo", "--live"])
        .env("CARGO_TARGET_DIR", crate::common::target_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("0. First run") {
        assert!(stdout.read_line(&mut seen).unwrap() > 0, "{seen}");
    }
    // The demo's scratch folder, which its servers' command lines name.
    let files = seen
        .split("files in ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the first line names the files")
        .to_string();
    // Held still while the signal is sent, so that it comes before the demo's end.
    for signal in ["-STOP", "-TERM", "-CONT"] {
        crate::common::send_signal(&child, signal);
    }
    stdout.read_to_string(&mut seen).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{seen}");
    assert!(
        stderr.contains("interrupted: the demo stopped where it was, and stopped its servers"),
        "{stderr}"
    );
    assert!(!seen.contains("8. Its next request"), "{seen}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(&files))
        .collect();
    assert!(left.is_empty(), "still running: {left:?}");
}
