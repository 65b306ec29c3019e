//! Runs every fixture folder under `tests/cases/` against the real
//! lazy-tools component. A folder holds:
//! - `case.yml`: tools, agents and steps, each step with what it must produce;
//! - `profile.yml` (optional): the plugin's config node; none means no config;
//! - `error.txt` (optional): the exact error the config must be rejected with.

mod support;

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use host_harness::profile::render_config_errors;
use host_harness::script::{Script, run_step};
use host_harness::shell::{InstallError, Shell};
use host_harness::wasm_host::WasmHost;
use host_harness::yaml::LocatedValue;
use libtest_mimic::{Arguments, Failed, Trial};

const PLUGIN: &str = "lazy-tools";

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases");
    let dirs = support::fixture_dirs(&root);
    let trials = dirs
        .into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            Trial::test(name, move || {
                run_case(&dir).map_err(|e| Failed::from(format!("{e:#}")))
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn run_case(dir: &Path) -> Result<()> {
    let script = Script::load(&dir.join("case.yml"))?;
    let config = match dir.join("profile.yml") {
        path if path.exists() => {
            let text = std::fs::read_to_string(&path)?;
            Some(LocatedValue::parse(Path::new("profile.yml"), &text)?)
        }
        _ => None,
    };
    let expected_error = std::fs::read_to_string(dir.join("error.txt")).ok();

    let mut shell = Shell::new();
    script.set_up(&mut shell, dir)?;
    let component = WasmHost::global().lazy_tools()?;
    let config_value = config
        .as_ref()
        .map(|c| c.value.clone())
        .unwrap_or(serde_json::Value::Null);
    match (
        shell.install_plugin(PLUGIN, &component, &config_value),
        expected_error,
    ) {
        (Ok(()), None) => {}
        (Ok(()), Some(expected)) => bail!("the config was accepted; expected:\n{expected}"),
        (Err(InstallError::Config { errors, .. }), Some(expected)) => {
            let config = config.context("config errors without a profile.yml")?;
            let actual = render_config_errors(&config, &errors);
            if actual.trim() != expected.trim() {
                bail!(
                    "config errors differ.\nexpected:\n{}\nactual:\n{actual}",
                    expected.trim()
                );
            }
            return Ok(());
        }
        (Err(e), _) => return Err(e.into()),
    }
    for (index, step) in script.steps.iter().enumerate() {
        run_step(&mut shell, PLUGIN, &step.value).with_context(|| {
            format!(
                "case.yml:{}: step {} failed",
                step.referenced.line(),
                index + 1
            )
        })?;
    }
    Ok(())
}
