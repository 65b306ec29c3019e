//! The target plugins are built for, whether a toolchain has it, and the rustup call that
//! adds it. Shared by `build.rs` (which includes this file) and `plugin add`.
//!
//! rustup installs a `rust-toolchain.toml`'s `targets` only when it installs that toolchain:
//! on a machine that already had the toolchain, the target stays missing until it is added.

use std::path::Path;

pub const TARGET: &str = "wasm32-wasip2";

/// Whether the toolchain whose sysroot is `sysroot` has the target's standard library.
pub fn installed(sysroot: &str) -> bool {
    Path::new(sysroot)
        .join("lib/rustlib")
        .join(TARGET)
        .join("lib")
        .is_dir()
}

/// The toolchain's name in what `rustup show active-toolchain` prints
/// (`1.95.0-x86_64-unknown-linux-gnu (overridden by '.../rust-toolchain.toml')`).
pub fn toolchain_name(active: &str) -> &str {
    active.split_whitespace().next().unwrap_or_default()
}

/// rustup's arguments that add the target to `toolchain`.
pub fn rustup_add_args(toolchain: &str) -> [&str; 5] {
    ["target", "add", TARGET, "--toolchain", toolchain]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_toolchain_is_the_first_word_of_rustups_answer() {
        let active = "1.95.0-x86_64-unknown-linux-gnu (overridden by '/w/rust-toolchain.toml')\n";
        let toolchain = toolchain_name(active);
        assert_eq!(toolchain, "1.95.0-x86_64-unknown-linux-gnu");
        assert_eq!(
            rustup_add_args(toolchain).join(" "),
            "target add wasm32-wasip2 --toolchain 1.95.0-x86_64-unknown-linux-gnu"
        );
        assert_eq!(toolchain_name(""), "");
    }

    #[test]
    fn a_sysroot_without_the_targets_library_lacks_it() {
        let sysroot = tempfile::tempdir().unwrap();
        let root = sysroot.path().to_str().unwrap();
        assert!(!installed(root));
        std::fs::create_dir_all(sysroot.path().join("lib/rustlib/wasm32-wasip2/lib")).unwrap();
        assert!(installed(root));
    }
}
