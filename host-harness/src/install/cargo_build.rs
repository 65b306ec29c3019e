//! Building a plugin's component with cargo, as the shell does: in the
//! bundle's own folder (so its `rust-toolchain.toml` and `.cargo/config.toml`
//! apply), with its own target dir, none of our environment's build flags,
//! and progress shown while it builds.

use std::io::{BufRead as _, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use super::cargo_env;
use super::program::{CARGO, Program, RUSTC, RUSTUP};
use super::wasm_target::{self, Missing, TARGET, Tool};
use crate::terminal::escape;

/// One component build.
pub struct Build<'a> {
    /// The folder with the bundle's manifest (a cargo workspace or package).
    pub source_dir: &'a Path,
    /// The cargo package that builds the component.
    pub package: &'a str,
    pub target_dir: &'a Path,
}

/// Makes sure the toolchain that builds in `source_dir` has the wasm
/// target: installs it with rustup, or says exactly what to run.
pub fn ensure_target(source_dir: &Path, progress: &mut dyn Write) -> Result<()> {
    let run = |program: Tool, args: &[&str]| {
        let program = match program {
            Tool::Rustc => &RUSTC,
            Tool::Rustup => &RUSTUP,
        };
        tool(source_dir, program, args).map_err(|e| format!("{e:#}"))
    };
    let mut announced = Ok(());
    // The toolchain is the bundle's rust-toolchain.toml's.
    let ensured = wasm_target::ensure(run, |command| {
        announced = writeln!(
            progress,
            "installing the {TARGET} target: {}",
            escape(command)
        );
    });
    announced?;
    match ensured {
        Ok(()) => Ok(()),
        Err(Missing::NoSysroot(why)) => bail!(
            "asking rustc for its sysroot in {}: {why}",
            source_dir.display()
        ),
        Err(Missing::NoRustup { sysroot }) => bail!(
            "the Rust toolchain at {sysroot} has no {TARGET} target, and rustup is not \
             available to install it: install the {TARGET} standard library for that toolchain"
        ),
        Err(Missing::NotAdded {
            sysroot,
            command,
            why,
        }) => bail!("could not install the {TARGET} target into {sysroot}; run: {command}\n{why}"),
    }
}

/// Builds the component and returns the path of the `.wasm` cargo made.
pub fn build_component(build: &Build, progress: &mut dyn Write) -> Result<PathBuf> {
    // Manifests are checked when read; this is the last stop before argv.
    if let Err(e) = crate::profile::rows::check_package_name(build.package) {
        bail!("{e}");
    }
    writeln!(
        progress,
        "building `{}` for {TARGET} in {} (cargo target dir {})",
        build.package,
        super::shown(build.source_dir),
        super::shown(build.target_dir)
    )?;
    let started = Instant::now();
    let mut command = CARGO.command(build.source_dir)?;
    command
        .args([
            "build",
            "--release",
            "--target",
            TARGET,
            "-p",
            build.package,
        ])
        // Our own progress lines replace cargo's status lines; its
        // diagnostics are still rendered on stderr.
        .args(["--message-format=json-render-diagnostics", "--quiet"])
        .arg("--target-dir")
        .arg(build.target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cargo_env::clean(&mut command);
    let mut child = command
        .spawn()
        .context("running cargo (is Rust installed?)")?;
    let stdout = child.stdout.take().context("cargo's output")?;
    let mut compiled = 0;
    let mut component = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let (name, version) = package_of(message["package_id"].as_str().unwrap_or_default());
        if message["fresh"] == false {
            compiled += 1;
            // A path package's name is its folder's, when its id gives none.
            writeln!(
                progress,
                "  [{compiled}] compiled {} v{}",
                escape(&name),
                escape(&version)
            )?;
        }
        if name == build.package && is_cdylib(&message) {
            component = wasm_file(&message).or(component);
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!(
            "cargo could not build package `{}` ({status}); its messages are above",
            build.package
        );
    }
    let component = component.with_context(|| {
        format!(
            "cargo built package `{}` but no .wasm component: its [lib] needs crate-type = [\"cdylib\"]",
            build.package
        )
    })?;
    let seconds = started.elapsed().as_secs_f64();
    if compiled == 0 {
        writeln!(
            progress,
            "`{}` is up to date ({seconds:.1} s)",
            build.package
        )?;
    } else {
        writeln!(
            progress,
            "built `{}` in {seconds:.1} s ({compiled} crates compiled)",
            build.package
        )?;
    }
    Ok(component)
}

/// Runs a Rust tool in `dir` with the cleaned environment and returns its
/// trimmed stdout.
fn tool(dir: &Path, program: &Program, args: &[&str]) -> Result<String> {
    let mut command = program.command(dir)?;
    // A backtrace of rustup's would bury its one-line reason.
    command.args(args).env("RUST_BACKTRACE", "0");
    cargo_env::clean(&mut command);
    let program = program.name();
    let output = command
        .output()
        .with_context(|| format!("running {program}"))?;
    if !output.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn is_cdylib(message: &Value) -> bool {
    message["target"]["kind"]
        .as_array()
        .is_some_and(|kinds| kinds.iter().any(|k| k == "cdylib"))
}

fn wasm_file(message: &Value) -> Option<PathBuf> {
    message["filenames"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|f| f.ends_with(".wasm"))
        .map(PathBuf::from)
}

/// Name and version from a cargo package id, in the current spec form
/// (`path+file:///p/plugin#lazy-tools@0.1.0`, `...#0.1.0` when the name is
/// the folder's) or the old one (`serde 1.0.0 (registry+...)`).
fn package_of(id: &str) -> (String, String) {
    if let Some((url, fragment)) = id.rsplit_once('#') {
        return match fragment.split_once('@') {
            Some((name, version)) => (name.into(), version.into()),
            None => {
                let name = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
                (name.into(), fragment.into())
            }
        };
    }
    let mut parts = id.split(' ');
    let name = parts.next().unwrap_or_default();
    let version = parts.next().unwrap_or_default();
    (name.into(), version.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_ids_in_every_form() {
        for (id, name, version) in [
            (
                "path+file:///tmp/r/plugin#lazy-tools@0.1.0",
                "lazy-tools",
                "0.1.0",
            ),
            (
                "registry+https://github.com/rust-lang/crates.io-index#serde@1.0.228",
                "serde",
                "1.0.228",
            ),
            ("path+file:///tmp/r/lazy-tools#0.1.0", "lazy-tools", "0.1.0"),
            (
                "serde 1.0.0 (registry+https://github.com/rust-lang/crates.io-index)",
                "serde",
                "1.0.0",
            ),
        ] {
            assert_eq!(package_of(id), (name.into(), version.into()), "{id}");
        }
    }
}
