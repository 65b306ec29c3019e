//! Starting a profile's plugins in a shell: each enabled plugin's component
//! is loaded (through the precompiled cache) and installed with its config.
//! Every failure is a problem at the place in the profile that caused it.

use super::{EffectivePlugin, Problem, Problems, config_problems};
use crate::shell::{InstallError, Shell};
use crate::wasm_host::cache::CompiledCache;
use crate::wasm_host::{LoadError, WasmHost};

/// Installs the enabled `plugins` into `shell`, in order, and returns their
/// ids. `profile` names the profile in hints. A plugin that fails does not
/// stop the others from being checked, so every problem is reported at once.
pub fn install_plugins(
    shell: &mut Shell,
    plugins: &[EffectivePlugin],
    cache: &CompiledCache,
    profile: &str,
) -> Result<Vec<String>, Problems> {
    let mut problems = Vec::new();
    let mut installed = Vec::new();
    for plugin in plugins.iter().filter(|p| !p.disabled) {
        let row = &plugin.row;
        let Some(path) = row.component_path() else {
            problems.push(Problem::new(
                row.place.clone(),
                format!("plugin `{}` has no `component`", row.id),
            ));
            continue;
        };
        let component = match WasmHost::global().load_cached(&path, row.sha256.as_deref(), cache) {
            Ok((component, _)) => component,
            Err(e) => {
                let rebuild = match &row.source {
                    Some(source) => format!(
                        "; build it with `host-harness plugin --profile {profile} add {source}`"
                    ),
                    None => String::new(),
                };
                let message = match e {
                    LoadError::Missing(_) | LoadError::Sha256Mismatch { .. } => {
                        format!("plugin `{}`: {e}{rebuild}", row.id)
                    }
                    LoadError::Other(e) => format!("plugin `{}`: {e:#}", row.id),
                };
                problems.push(Problem::new(row.component_place.clone(), message));
                continue;
            }
        };
        match shell.install_plugin(&row.id, &component, &row.config_value()) {
            Ok(()) => installed.push(row.id.clone()),
            Err(InstallError::Config { errors, .. }) => match &row.config {
                Some(config) => problems.extend(config_problems(config, &errors)),
                // No config node to point into: the plugin rejects `null`.
                None => problems.extend(errors.iter().map(|e| {
                    Problem::new(
                        row.place.clone(),
                        format!("plugin `{}` needs a config: {e}", row.id),
                    )
                })),
            },
            Err(InstallError::Other(e)) => problems.push(Problem::new(
                row.place.clone(),
                format!("plugin `{}` failed to start: {e:#}", row.id),
            )),
        }
    }
    if problems.is_empty() {
        Ok(installed)
    } else {
        Err(Problems(problems))
    }
}
