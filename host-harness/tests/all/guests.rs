//! The test guests of `tests/guests/` (one cargo workspace), built for
//! wasm32-wasip2 the first time a test of this process asks for one: a plain
//! `cargo run` never pays for them.
//!
//! They build with the `wasm-quick` profile into `target/wasm`, beside the
//! harness's own build of the plugin, so wit-bindgen's macros compile once.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "wasm-quick";

/// The component of the guest package `package` (its `Cargo.toml` name).
pub fn component(package: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(build_all);
    let wasm = dir.join(format!("{}.wasm", package.replace('-', "_")));
    assert!(
        wasm.is_file(),
        "no component {} after building tests/guests: is `{package}` a member of \
         tests/guests/Cargo.toml?",
        wasm.display()
    );
    wasm
}

/// Builds every guest, showing cargo's progress as it goes, and returns the
/// folder that holds their components.
fn build_all() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host-harness sits in the workspace");
    let guests = root.join("tests/guests");
    let target_dir = root.join("target/wasm");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&guests)
        .args([
            "build",
            "--workspace",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ])
        .arg("--manifest-path")
        .arg(guests.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    host_harness::install::cargo_env::clean(&mut command);
    let shown = format!("{command:?}");
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("could not run {shown}: {e}"));
    // Written to the process's stderr, which the test harness does not
    // capture: a first build takes a while and should not look stuck.
    let mut progress = std::io::stderr();
    let mut output = String::new();
    for line in BufReader::new(child.stderr.take().expect("piped")).lines() {
        let line = line.unwrap_or_default();
        writeln!(progress, "[test guests] {line}").ok();
        output.push_str(&line);
        output.push('\n');
    }
    let status = child.wait().expect("cargo ran");
    assert!(
        status.success(),
        "building the test guests failed ({status}): {shown}\n{output}"
    );
    target_dir.join(TARGET).join(PROFILE)
}
