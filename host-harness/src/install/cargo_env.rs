//! The environment a nested `cargo build` of a plugin must not inherit.
//! Shared by `build.rs` (which includes this file) and `plugin add`.
//!
//! A parent cargo hands its build scripts and binaries flags meant for the
//! host build: `CARGO_ENCODED_RUSTFLAGS` (coverage, sanitizers) breaks a wasm
//! build and makes the inner cargo ignore the guest's own config, a
//! `RUSTC_WRAPPER` may not know the wasm target, profile and target
//! overrides are for the host. rustup's proxy sets `RUSTUP_TOOLCHAIN`, which
//! would override the plugin's own `rust-toolchain.toml`.

use std::process::Command;

/// Removed by name.
pub const REMOVED: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_ENCODED_RUSTDOCFLAGS",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOC",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "CARGO_MAKEFLAGS",
    "CARGO_PRIMARY_PACKAGE",
    "RUSTUP_TOOLCHAIN",
    "RUSTUP_TOOLCHAIN_SOURCE",
];

/// Removed by prefix: profile overrides and per-target settings
/// (`CARGO_TARGET_DIR`, `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`, ...).
pub const REMOVED_PREFIXES: &[&str] = &["CARGO_PROFILE_", "CARGO_TARGET_"];

/// Clears the inherited variables above from `command`.
pub fn clean(command: &mut Command) {
    for var in REMOVED {
        command.env_remove(var);
    }
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if REMOVED_PREFIXES.iter().any(|p| key.starts_with(p)) {
            command.env_remove(key);
        }
    }
}
