//! The second host: the JavaScript shell under `hosts/js/` runs the very
//! component this crate was built with, transpiled by jco, through every
//! fixture case under `tests/cases/` with node's own test runner. It shares
//! no code with this crate; this test only installs its locked npm
//! dependencies (`npm ci`, skipped while `package-lock.json` is unchanged)
//! and runs `node --test`, failing with node's output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| {
        panic!("could not run {what} ({e}): the JS host needs node 20 or newer and npm on PATH")
    });
    if !output.status.success() {
        panic!(
            "{what} failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    output
}

/// `npm ci` in `hosts/js`, unless `node_modules` was installed from the same
/// lock file (a stamp holds the lock's sha256).
fn install(js: &Path) {
    let lock = std::fs::read(js.join("package-lock.json")).expect("hosts/js/package-lock.json");
    let digest: String = Sha256::digest(&lock)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let stamp = js.join("node_modules/.lazy-tools-lock-sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == digest) {
        return;
    }
    run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(js),
        "npm ci in hosts/js",
    );
    std::fs::write(&stamp, digest).expect("writing the npm install stamp");
}

#[test]
fn the_js_host_passes_every_fixture_case() {
    let root = repo_root();
    let js = root.join("hosts/js");
    install(&js);
    let output = run(
        Command::new("node")
            .args(["--test", "--test-reporter=spec", "test/"])
            .current_dir(&js)
            .env("LAZY_TOOLS_COMPONENT", env!("LAZY_TOOLS_COMPONENT"))
            .env(
                "LAZY_TOOLS_JS_OUT",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("js-host"),
            ),
        "node --test in hosts/js",
    );
    let report = String::from_utf8_lossy(&output.stdout);
    // Every case folder the Rust harness runs ran, and passed, in the JS host: with the
    // registry as a list (its default) and as one table (WIT 0.3.0 `registry-table`).
    let mut cases: Vec<String> = std::fs::read_dir(root.join("tests/cases"))
        .expect("tests/cases")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("case.yml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    let missing: Vec<&String> = cases
        .iter()
        .filter(|case| {
            [
                format!("✔ {case} ("),
                format!("✔ {case}, with a registry table ("),
            ]
            .iter()
            .any(|passed| {
                !report
                    .lines()
                    .any(|line| line.trim_start().starts_with(passed.as_str()))
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the JS host did not pass {missing:?}:\n{report}"
    );
    println!("{report}");
}
