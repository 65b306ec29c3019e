//! Builds the lazy-tools plugin as a wasm32-wasip2 component, so that
//! `cargo test` and `cargo run` on a fresh clone need no other step.
//!
//! The nested cargo gets its own target dir (sharing ours deadlocks on the
//! build lock) and none of the flags cargo hands to build scripts (see
//! `src/install/cargo_env.rs`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

// The same list `plugin add` clears, kept in one place.
#[path = "src/install/cargo_env.rs"]
mod cargo_env;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("host-harness sits in the workspace");
    for path in [
        "plugin/src",
        "plugin/Cargo.toml",
        "tests/guests",
        "wit",
        "Cargo.lock",
        "Cargo.toml",
        "host-harness/src/install/cargo_env.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }

    // The plugin itself; a prebuilt one can be named instead (offline
    // packaging, CI caches).
    println!("cargo:rerun-if-env-changed=LAZY_TOOLS_COMPONENT");
    let plugin = match env::var("LAZY_TOOLS_COMPONENT") {
        Ok(path) => PathBuf::from(path),
        Err(_) => build_guest(
            &root.join("plugin"),
            &root.join("target").join("plugin-wasm"),
            "lazy_tools",
        ),
    };
    println!("cargo:rustc-env=LAZY_TOOLS_COMPONENT={}", plugin.display());

    // A minimal plugin on the oldest contract version, for the host's
    // version tests.
    let old = build_guest(
        &root.join("tests/guests/restriction-v0.1.0"),
        &root.join("target").join("test-guests"),
        "restriction_v0_1_0",
    );
    println!(
        "cargo:rustc-env=RESTRICTION_V0_1_0_COMPONENT={}",
        old.display()
    );

    // A plugin that loops, traps or grows its memory where its config says:
    // the containment tests' subject.
    let hostile = build_guest(
        &root.join("tests/guests/hostile"),
        &root.join("target").join("test-guests"),
        "hostile",
    );
    println!("cargo:rustc-env=HOSTILE_COMPONENT={}", hostile.display());
}

/// Builds the crate at `dir` for wasm32-wasip2 in release, into
/// `target_dir`, and returns the path of `<artifact>.wasm`.
fn build_guest(dir: &Path, target_dir: &Path, artifact: &str) -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(dir)
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    cargo_env::clean(&mut command);

    let status = command
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build {}: {e}", dir.display()));
    if !status.success() {
        panic!(
            "building {} for {TARGET} failed (see above). If the target is missing, run: \
             rustup target add {TARGET}",
            dir.display()
        );
    }
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join(format!("{artifact}.wasm"));
    assert!(
        wasm.is_file(),
        "the build of {} succeeded but {} is missing",
        dir.display(),
        wasm.display()
    );
    wasm
}
