//! Runs every profile fixture under `tests/profiles/`: the folder is a
//! profile (`cordis.yml`, optional `cordis.patch.yml`) started the way
//! `host-harness session` starts one, with the real lazy-tools component in
//! the profile folder as `lazy_tools.wasm`. A folder also holds either
//! - `error.txt`: the exact error the profile must be refused with, with
//!   paths written relative to the profile folder and the component's sha256
//!   as `<component sha256>`; or
//! - `steps.yml` (optional): steps the started session must pass.
//!
//! Starting a profile, broken or not, must leave its files as they were.

mod support;

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use host_harness::commands::session;
use host_harness::home::DshHome;
use host_harness::wasm_host::{hex, lazy_tools_component_path};
use libtest_mimic::{Arguments, Failed, Trial};
use sha2::{Digest, Sha256};

/// Files of a fixture folder that are not part of the profile.
const EXPECTATIONS: &[&str] = &["error.txt", "steps.yml"];

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/profiles");
    // One home for every case: they share the precompiled cache.
    let home = tempfile::tempdir().expect("a temporary home");
    let home_path = home.path().to_path_buf();
    let dirs = support::fixture_dirs(&root);
    let trials = dirs
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let home = home_path.clone();
            Trial::test(name, move || {
                run_case(&dir, &home).map_err(|e| Failed::from(format!("{e:#}")))
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    drop(home);
    conclusion.exit();
}

fn run_case(fixture: &Path, home: &Path) -> Result<()> {
    let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
    let profile = home.join("profiles").join(&name);
    std::fs::create_dir_all(&profile)?;
    for entry in std::fs::read_dir(fixture)? {
        let path = entry?.path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if !EXPECTATIONS.contains(&file.as_str()) {
            std::fs::copy(&path, profile.join(&file))?;
        }
    }
    let component = profile.join("lazy_tools.wasm");
    std::fs::copy(lazy_tools_component_path(), &component)?;
    let component_sha256 = hex(&Sha256::digest(std::fs::read(&component)?));
    let before = snapshot(&profile)?;

    let started = session::start(&DshHome::new(home), &name, None);
    let expected = std::fs::read_to_string(fixture.join("error.txt")).ok();
    let result = match (started, expected) {
        (Err(e), Some(expected)) => {
            let actual = format!("{e:#}")
                .replace(&format!("{}/", profile.display()), "")
                .replace(&component_sha256, "<component sha256>");
            if actual.trim() != expected.trim() {
                bail!(
                    "the error differs.\nexpected:\n{}\nactual:\n{actual}",
                    expected.trim()
                );
            }
            Ok(())
        }
        (Ok(_), Some(expected)) => bail!("the profile started; expected:\n{expected}"),
        (Err(e), None) => Err(e),
        (Ok(mut running), None) => match fixture.join("steps.yml") {
            steps if steps.is_file() => {
                session::run_steps(&mut running, &steps, &mut std::io::sink())
            }
            _ => Ok(()),
        },
    };
    if snapshot(&profile)? != before {
        bail!("starting the profile changed its files");
    }
    result
}

fn snapshot(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_file() {
            files.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&path)?,
            ));
        }
    }
    files.sort();
    Ok(files)
}
