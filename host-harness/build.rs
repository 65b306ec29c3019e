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
    let plugin = root.join("plugin");
    let target_dir = root.join("target").join("plugin-wasm");

    for path in [
        "plugin/src",
        "plugin/Cargo.toml",
        "wit",
        "Cargo.lock",
        "Cargo.toml",
        "host-harness/src/install/cargo_env.rs",
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
    cargo_env::clean(&mut command);

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
