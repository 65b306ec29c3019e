//! Helpers the suites share.

use std::path::Path;
use std::sync::OnceLock;

use host_harness::mcp::reference::{self, Set};
use host_harness::shell::Shell;

/// lazy-tools' guard tools, in the order it registers them.
pub const GUARDS: [&str; 3] = ["tool_search", "defer_execute_tool", "load_tools"];

/// The names of the tools on `agent`'s next request, in prompt order (or
/// collected into a set).
pub fn visible_names<C: FromIterator<String>>(shell: &mut Shell, agent: &str) -> C {
    shell
        .next_request(agent)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// Reads a session process's output until a line holding `wanted` came: the session then
/// waits for its next line.
pub fn read_until(stdout: &mut impl std::io::BufRead, wanted: &str) -> String {
    let mut seen = String::new();
    while !seen.contains(wanted) {
        let mut line = String::new();
        let read = stdout.read_line(&mut line).unwrap();
        assert!(read > 0, "the session ended early: {seen}");
        seen.push_str(&line);
    }
    seen
}

/// Sends `signal` (`-INT`, `-TERM`) to a session process waiting for a line, reads the rest of
/// its output and checks that it ended as `quit` does: exit 0, "interrupted: the session
/// ends". Returns its standard error.
pub fn interrupt(
    child: std::process::Child,
    stdout: &mut impl std::io::Read,
    signal: &str,
) -> String {
    send_signal(&child, signal);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(rest.contains("interrupted: the session ends"), "{rest}");
    stderr
}

/// Sends `signal` (`kill`'s spelling: `-TERM`, `-STOP`) to `child`.
pub fn send_signal(child: &std::process::Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {}", child.id());
}

/// The target dir the suites were built in, where the harness installs the reference servers.
pub fn target_dir() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
}

/// The reference MCP servers from npm (everything, filesystem, memory), installed in the
/// target dir from the repository's lock file when missing or out of date: once per test
/// binary, by whichever test asks first (`reference::install` also locks the folder against
/// other processes).
pub fn reference_servers() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        reference::install(Set::Three, &reference::dir_in(target_dir(), Set::Three)).unwrap()
    })
}
