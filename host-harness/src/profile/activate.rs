//! Starting a profile's plugins in a shell: each enabled plugin's component
//! is loaded (through the precompiled cache) and installed with its config.
//! Every failure is a problem at the place in the profile that caused it.

use crate::source::Source;
use crate::terminal::escape;

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
                let rebuild = row
                    .source
                    .as_deref()
                    .map(|source| rebuild_hint(profile, source))
                    .unwrap_or_default();
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

/// How to build a missing component again: the recorded source is quoted
/// for a shell, and only when it is a valid source; a source that is not
/// (someone edited `cordis.yml`) is never echoed back as a command to run.
fn rebuild_hint(profile: &str, source: &str) -> String {
    match Source::parse(source) {
        Ok(_) => match shlex::try_quote(source) {
            Ok(quoted) => {
                format!("; build it with `host-harness plugin --profile {profile} add {quoted}`")
            }
            Err(_) => String::new(),
        },
        Err(e) => format!(
            "; its recorded source `{}` is not valid ({e}), so there is no command to rebuild it",
            escape(source)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rebuild_hint_never_echoes_a_command() {
        // What a shell reads from the hint's command: the source, as one word.
        let words = |hint: &str| {
            let command = hint
                .split_once("build it with `")
                .and_then(|(_, c)| c.strip_suffix('`'))
                .unwrap_or_else(|| panic!("no command in {hint}"));
            shlex::split(command).unwrap()
        };
        for source in [
            "git:https://h.example/o/r#v1",
            "git:https://h.example/o/r;$(touch x)",
            "git:https://h.example/o/r'`touch x`",
            "link:/a b/c",
        ] {
            let hint = rebuild_hint("work", source);
            assert_eq!(
                words(&hint),
                ["host-harness", "plugin", "--profile", "work", "add", source],
                "{hint}"
            );
        }
        let hint = rebuild_hint("work", "git:/r#--upload-pack=touch x;\u{1b}");
        assert!(hint.contains("is not valid"), "{hint}");
        assert!(!hint.contains("build it with"), "{hint}");
        let hint = rebuild_hint("work", "git:/r#\u{1b}[2J");
        assert!(!hint.contains('\u{1b}'), "{hint}");
    }
}
