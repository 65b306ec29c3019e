//! The target plugins are built for, whether a toolchain has it, and the rustup call that
//! adds it. Shared by `build.rs` (which includes this file) and `plugin add`.
//!
//! rustup installs a `rust-toolchain.toml`'s `targets` only when it installs that toolchain:
//! on a machine that already had the toolchain, the target stays missing until it is added.

use std::path::Path;

pub const TARGET: &str = "wasm32-wasip2";

/// Whether the toolchain whose sysroot is `sysroot` has the target's standard library.
fn installed(sysroot: &str) -> bool {
    Path::new(sysroot)
        .join("lib/rustlib")
        .join(TARGET)
        .join("lib")
        .is_dir()
}

/// The two programs [`ensure`] asks, each run by its caller's own rules (where it is found,
/// what environment it gets).
#[derive(Debug, Clone, Copy)]
pub enum Tool {
    Rustc,
    Rustup,
}

/// Why [`ensure`] could not make sure of the target.
#[derive(Debug)]
pub enum Missing {
    /// `rustc --print sysroot` failed: why.
    NoSysroot(String),
    /// The toolchain at `sysroot` lacks the target and rustup cannot be asked.
    NoRustup { sysroot: String },
    /// `command` (a rustup command line) failed, or ran and did not install the target.
    NotAdded {
        sysroot: String,
        command: String,
        why: String,
    },
}

/// Makes sure the toolchain that `run` reaches has the target, adding it through rustup when
/// it does not (after telling `announce` the command line). `run(tool, args)` gives the
/// program's trimmed stdout, or why it failed.
pub fn ensure(
    mut run: impl FnMut(Tool, &[&str]) -> Result<String, String>,
    announce: impl FnOnce(&str),
) -> Result<(), Missing> {
    let sysroot = run(Tool::Rustc, &["--print", "sysroot"]).map_err(Missing::NoSysroot)?;
    if installed(&sysroot) {
        return Ok(());
    }
    let Ok(active) = run(Tool::Rustup, &["show", "active-toolchain"]) else {
        return Err(Missing::NoRustup { sysroot });
    };
    let toolchain = toolchain_name(&active);
    let args = ["target", "add", TARGET, "--toolchain", toolchain];
    let command = format!("rustup {}", args.join(" "));
    announce(&command);
    let why = match run(Tool::Rustup, &args) {
        Ok(_) if installed(&sysroot) => return Ok(()),
        Ok(_) => format!("it did not install the target into {sysroot}"),
        Err(why) => why,
    };
    Err(Missing::NotAdded {
        sysroot,
        command,
        why,
    })
}

/// The toolchain's name in what `rustup show active-toolchain` prints
/// (`1.95.0-x86_64-unknown-linux-gnu (overridden by '.../rust-toolchain.toml')`).
fn toolchain_name(active: &str) -> &str {
    active.split_whitespace().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toolchain at a temporary sysroot, `with` the target or not, and a rustup that adds it
    /// there when `adds`; records the command lines run.
    fn toolchain(
        with: bool,
        rustup: bool,
        adds: bool,
    ) -> (
        tempfile::TempDir,
        impl FnMut(Tool, &[&str]) -> Result<String, String>,
    ) {
        let sysroot = tempfile::tempdir().unwrap();
        let root = sysroot.path().to_path_buf();
        let library = root.join("lib/rustlib").join(TARGET).join("lib");
        if with {
            std::fs::create_dir_all(&library).unwrap();
        }
        let run = move |tool: Tool, args: &[&str]| match (tool, args) {
            (Tool::Rustc, ["--print", "sysroot"]) => Ok(root.display().to_string()),
            (Tool::Rustup, _) if !rustup => Err("no rustup".to_string()),
            (Tool::Rustup, ["show", "active-toolchain"]) => Ok(
                "1.95.0-x86_64-unknown-linux-gnu (overridden by '/w/rust-toolchain.toml')".into(),
            ),
            (
                Tool::Rustup,
                [
                    "target",
                    "add",
                    TARGET,
                    "--toolchain",
                    "1.95.0-x86_64-unknown-linux-gnu",
                ],
            ) => {
                if adds {
                    std::fs::create_dir_all(&library).unwrap();
                }
                Ok(String::new())
            }
            other => Err(format!("unexpected {other:?}")),
        };
        (sysroot, run)
    }

    #[test]
    fn the_toolchain_is_the_first_word_of_rustups_answer() {
        let active = "1.95.0-x86_64-unknown-linux-gnu (overridden by '/w/rust-toolchain.toml')\n";
        assert_eq!(toolchain_name(active), "1.95.0-x86_64-unknown-linux-gnu");
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

    #[test]
    fn a_toolchain_with_the_target_is_left_alone() {
        let (_root, run) = toolchain(true, false, false);
        assert!(ensure(run, |c| panic!("ran {c}")).is_ok());
    }

    #[test]
    fn a_missing_target_is_added_for_the_toolchain_rustup_names() {
        let (_root, run) = toolchain(false, true, true);
        let mut announced = None;
        ensure(run, |c| announced = Some(c.to_string())).unwrap();
        assert_eq!(
            announced.as_deref(),
            Some("rustup target add wasm32-wasip2 --toolchain 1.95.0-x86_64-unknown-linux-gnu")
        );
    }

    #[test]
    fn a_target_rustup_cannot_add_says_why() {
        let (_root, run) = toolchain(false, false, false);
        assert!(matches!(ensure(run, |_| {}), Err(Missing::NoRustup { .. })));
        let (_root, run) = toolchain(false, true, false);
        let Err(Missing::NotAdded { why, command, .. }) = ensure(run, |_| {}) else {
            panic!("added");
        };
        assert!(why.starts_with("it did not install the target"), "{why}");
        assert!(command.starts_with("rustup target add"), "{command}");
    }
}
