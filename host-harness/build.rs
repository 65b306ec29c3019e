//! Builds the lazy-tools plugin as a wasm32-wasip2 component, so that
//! `cargo test` and `cargo run` on a fresh clone need no other step.
//!
//! The nested cargo gets its own target dir (sharing ours deadlocks on the
//! build lock) and none of the flags cargo hands to build scripts (see
//! `src/install/cargo_env.rs`). A debug host gets the component of the
//! `wasm-quick` profile (the shipped settings without fat LTO); a release or
//! bench host gets the shipped one (`release`), so figures are measured on
//! what users install.
//!
//! Cargo hides a build script's output, so the nested build's progress goes
//! straight to the terminal, when there is one.
//!
//! The test guests (`tests/guests/`) are not built here: the tests that load
//! them build them (see `host-harness/tests/`).

use std::env;
use std::fs::File;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

// The same list `plugin add` clears, kept in one place.
#[path = "src/install/cargo_env.rs"]
mod cargo_env;
// The target, and how `plugin add` finds and adds it.
#[path = "src/install/wasm_target.rs"]
mod wasm_target;

use wasm_target::TARGET;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("host-harness sits in the workspace");
    for path in [
        "plugin/src",
        "plugin/Cargo.toml",
        "wit",
        "Cargo.lock",
        "Cargo.toml",
        "host-harness/src/install/cargo_env.rs",
        "host-harness/src/install/wasm_target.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }

    // A prebuilt plugin can be named instead (offline packaging, CI caches).
    println!("cargo:rerun-if-env-changed=LAZY_TOOLS_COMPONENT");
    if let Ok(path) = env::var("LAZY_TOOLS_COMPONENT") {
        println!("cargo:rustc-env=LAZY_TOOLS_COMPONENT={path}");
        return;
    }
    let profile = match env::var("PROFILE").as_deref() {
        Ok("release") => "release",
        _ => "wasm-quick",
    };
    let plugin = build_component(
        &root.join("plugin"),
        &root.join("target").join("wasm"),
        profile,
        "lazy_tools",
    );
    println!("cargo:rustc-env=LAZY_TOOLS_COMPONENT={}", plugin.display());
}

/// Builds the crate at `dir` for wasm32-wasip2 with `profile` into
/// `target_dir`, showing cargo's progress on the terminal, and returns the
/// path of `<artifact>.wasm`.
fn build_component(dir: &Path, target_dir: &Path, profile: &str, artifact: &str) -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(dir)
        .args(["build", "--target", TARGET, "--profile", profile])
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cargo_env::clean(&mut command);
    // The shipped settings panic with abort; the workspace's release profile
    // leaves it out for the host's `bench` profile (see Cargo.toml).
    command.env("CARGO_PROFILE_RELEASE_PANIC", "abort");

    let started = Instant::now();
    let mut terminal = Terminal::open();
    let label = format!("lazy-tools component ({TARGET}, profile {profile})");
    ensure_target(dir, &mut terminal, &label);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("could not run cargo to build {}: {e}", dir.display()));
    let mut output = String::new();
    let stderr = child.stderr.take().expect("piped");
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap_or_default();
        terminal.show(&label, &line);
        output.push_str(&line);
        output.push('\n');
    }
    let status = child.wait().expect("cargo ran");
    if !status.success() {
        panic!(
            "building {} for {TARGET} failed ({status}):\n{output}\nIf the target is missing, \
             run: rustup target add {TARGET}",
            dir.display()
        );
    }
    let wasm = target_dir
        .join(TARGET)
        .join(profile)
        .join(format!("{artifact}.wasm"));
    assert!(
        wasm.is_file(),
        "the build of {} succeeded but {} is missing",
        dir.display(),
        wasm.display()
    );
    terminal.show(
        &label,
        &format!(
            "ready in {:.1}s: {}",
            started.elapsed().as_secs_f64(),
            wasm.display()
        ),
    );
    wasm
}

/// Adds the target through rustup when the toolchain that builds in `dir` lacks it, as
/// `plugin add` does: rustup adds `rust-toolchain.toml`'s targets only to a toolchain it
/// installs, so on a machine that already had Rust 1.95 the first `cargo run` would fail.
/// Without rustup, the build's own error says what is missing.
fn ensure_target(dir: &Path, terminal: &mut Terminal, label: &str) {
    // Asked as the nested cargo will ask: in `dir`, without the proxy's toolchain override.
    let run = |tool: wasm_target::Tool, args: &[&str]| {
        let program = match tool {
            wasm_target::Tool::Rustc => "rustc",
            wasm_target::Tool::Rustup => "rustup",
        };
        let mut command = Command::new(program);
        command.current_dir(dir).args(args).stdin(Stdio::null());
        cargo_env::clean(&mut command);
        let output = command
            .output()
            .map_err(|e| format!("running {program}: {e}"))?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let announce =
        |command: &str| terminal.show(label, &format!("installing the {TARGET} target: {command}"));
    // Where rustup cannot help, the nested build goes on and its error names what is missing.
    match wasm_target::ensure(run, announce) {
        Ok(()) => {}
        Err(wasm_target::Missing::NoSysroot(why)) => {
            // One line: cargo reads each line of a build script's output as a directive.
            let why = why.replace(['\n', '\r'], " ");
            println!("cargo:warning=could not ask rustc for its sysroot: {why}");
        }
        Err(wasm_target::Missing::NoRustup { sysroot }) => {
            println!(
                "cargo:warning=the Rust toolchain at {sysroot} has no {TARGET} target and rustup \
                 is not available to add it"
            );
        }
        Err(wasm_target::Missing::NotAdded {
            sysroot,
            command,
            why,
        }) => panic!(
            "the Rust toolchain at {sysroot} has no {TARGET} target and `{command}` did not add \
             it:\n{why}"
        ),
    }
}

/// The terminal the user runs cargo in, if any: cargo captures a build
/// script's stdout and stderr and shows them only when it fails, so a
/// minutes-long nested build would otherwise look stuck.
struct Terminal(Option<File>);

impl Terminal {
    fn open() -> Self {
        Terminal(File::options().write(true).open("/dev/tty").ok())
    }

    /// Shows one line of the nested cargo's output, above cargo's own
    /// progress bar (which it redraws).
    fn show(&mut self, label: &str, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        if let Some(tty) = &mut self.0 {
            // Clear the line cargo's progress bar is on, then print ours.
            if writeln!(tty, "\r\x1b[2K   [{label}] {line}").is_err() {
                self.0 = None;
            }
        }
    }
}
