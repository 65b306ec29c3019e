//! Builds the lazy-tools plugin as a wasm32-wasip2 component, so that
//! `cargo test` and `cargo run` on a fresh clone need no other step.
//!
//! The nested cargo gets its own target dir (sharing ours deadlocks on the
//! build lock) and none of the flags cargo hands to build scripts: inherited
//! `CARGO_ENCODED_RUSTFLAGS` (coverage, sanitizers) break a wasm build and
//! make the inner cargo ignore the guest's own config.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("host-harness sits in the workspace");
    let plugin = root.join("plugin");
    let target_dir = root.join("target").join("plugin-wasm");

    for path in [
        "plugin/src",
        "plugin/Cargo.toml",
        "wit",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=LAZY_TOOLS_COMPONENT");

    // A prebuilt component can be named instead (offline packaging, CI caches).
    if let Ok(path) = env::var("LAZY_TOOLS_COMPONENT") {
        println!("cargo:rustc-env=LAZY_TOOLS_COMPONENT={path}");
        return;
    }

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&plugin)
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(plugin.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        command.env_remove(var);
    }
    // Profile overrides meant for the host must not reach the guest.
    for (key, _) in env::vars() {
        if key.starts_with("CARGO_PROFILE_") {
            command.env_remove(key);
        }
    }

    let status = command
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build the plugin: {e}"));
    if !status.success() {
        panic!(
            "building the lazy-tools plugin for {TARGET} failed (see above). If the target is \
             missing, run: rustup target add {TARGET}"
        );
    }
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join("lazy_tools.wasm");
    assert!(
        Path::new(&wasm).is_file(),
        "the plugin build succeeded but {} is missing",
        wasm.display()
    );
    println!("cargo:rustc-env=LAZY_TOOLS_COMPONENT={}", wasm.display());
}
