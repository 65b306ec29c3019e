//! `host-harness tokens`: what tool schemas cost per request, counted
//! exactly with a BPE vocabulary, with and without lazy-tools.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use serde_json::{Value, json};

use super::args::{CatalogArg, ProfileArg};
use crate::catalog::Catalog;
use crate::home::DshHome;
use crate::profile::{INSTALLED_FILE, PATCH_FILE, plugin_config};
use crate::shell::{CallOutcome, Request, Shell};
use crate::terminal::escape;
use crate::tokens::Tokenizer;
use crate::wasm_host::WasmHost;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogMode {
    None,
    Names,
    Groups,
}

impl CatalogMode {
    fn as_str(self) -> &'static str {
        match self {
            CatalogMode::None => "none",
            CatalogMode::Names => "names",
            CatalogMode::Groups => "groups",
        }
    }
}

/// The figures of one report.
#[derive(Debug, Clone, Serialize)]
pub struct TokenReport {
    pub tokenizer: &'static str,
    /// Every catalog tool visible.
    pub eager: u64,
    /// Visible tools (guards included) plus the catalog text.
    pub cold_start: u64,
    pub cold_start_ratio: f64,
    pub after_activation: u64,
    pub after_activation_ratio: f64,
    pub activated: usize,
    pub catalog_mode: &'static str,
    pub catalog_tokens: u64,
    pub visible_tools: usize,
    pub catalog_tools: usize,
    /// The schemas of `tool_search` and `defer_execute_tool` as the model receives them.
    pub guard_schema_tokens: u64,
}

/// The guard tools whose schemas [`TokenReport::guard_schema_tokens`] counts.
pub const SEARCH_GUARDS: [&str; 2] = ["tool_search", "defer_execute_tool"];

/// Builds the report: the catalog alone in a shell, then lazy-tools with
/// `config` (a `catalog` mode, if given, overrides the config's).
pub fn report(
    catalog: &Catalog,
    config: &Value,
    mode: Option<CatalogMode>,
    activate: usize,
    tokenizer: Tokenizer,
) -> Result<TokenReport> {
    let mut shell = Shell::new();
    shell.core().set_tokenizer(Some(tokenizer));
    shell.register_catalog(catalog)?;
    let agent = shell.create_agent("main", None)?;
    let eager = tokenizer.count_tools(&shell.next_request(&agent)?);

    let mut config = match config {
        Value::Null => json!({}),
        Value::Object(_) => config.clone(),
        other => bail!("the plugin config must be a mapping, not {other}"),
    };
    if let Some(mode) = mode {
        config["catalog"] = json!(mode.as_str());
    }
    let catalog_mode = match config.get("catalog").and_then(Value::as_str) {
        Some("names") => "names",
        Some("groups") => "groups",
        _ => "none",
    };
    let component = WasmHost::global().lazy_tools()?;
    shell
        .install_plugin("lazy-tools", &component, &config)
        .map_err(anyhow::Error::from)
        .context("installing lazy-tools")?;

    let cold = shell.assemble(&agent)?;
    let (cold_start, catalog_tokens) = cost(&cold, tokenizer);
    let guards: Vec<_> = cold
        .tools
        .iter()
        .filter(|t| SEARCH_GUARDS.contains(&t.name.as_str()))
        .cloned()
        .collect();
    let guard_schema_tokens = tokenizer.count_tools(&guards);

    let visible: Vec<String> = cold.tools.iter().map(|t| t.name.clone()).collect();
    let to_activate: Vec<String> = catalog
        .tools()
        .map(|(_, t)| t.name)
        .filter(|name| !visible.contains(name))
        .take(activate)
        .collect();
    for name in &to_activate {
        let outcome = shell.call(&agent, "defer_execute_tool", &json!({"toolName": name}))?;
        if !matches!(&outcome, CallOutcome::Completed(out) if !out.is_error) {
            bail!(
                "activating `{}` failed: {}",
                escape(name),
                escape(&outcome.to_string())
            );
        }
    }
    let (after_activation, _) = cost(&shell.assemble(&agent)?, tokenizer);

    let ratio = |n: u64| {
        if eager == 0 {
            0.0
        } else {
            n as f64 / eager as f64
        }
    };
    Ok(TokenReport {
        tokenizer: tokenizer.name(),
        eager,
        cold_start,
        cold_start_ratio: ratio(cold_start),
        after_activation,
        after_activation_ratio: ratio(after_activation),
        activated: to_activate.len(),
        catalog_mode,
        catalog_tokens,
        visible_tools: cold.tools.len(),
        catalog_tools: catalog.tool_count(),
        guard_schema_tokens,
    })
}

/// Tokens of a request's tools plus its system-prompt text, and of the text.
fn cost(request: &Request, tokenizer: Tokenizer) -> (u64, u64) {
    let text = request
        .system_prompt
        .as_deref()
        .map_or(0, |t| u64::from(tokenizer.count(t)));
    (tokenizer.count_tools(&request.tools) + text, text)
}

/// `host-harness tokens`.
#[derive(clap::Args)]
pub struct TokensArgs {
    #[command(flatten)]
    catalog: CatalogArg,
    #[command(flatten)]
    profile: ProfileArg,
    /// The catalog mode to measure, overriding the config's `catalog`.
    #[arg(long, value_enum)]
    catalog_mode: Option<CatalogMode>,
    /// How many deferred tools to load for the third figure.
    #[arg(long, default_value_t = 5)]
    activate: usize,
    /// The BPE vocabulary to count with.
    #[arg(long, value_enum, default_value_t = Tokenizer::O200k)]
    tokenizer: Tokenizer,
    /// `json` prints the figures as one JSON object.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// How a command prints its figures.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

impl TokensArgs {
    pub fn run(self) -> Result<()> {
        let dir = self.profile.dir(&DshHome::from_env()?)?;
        let config = profile_config(&dir, &self.profile.profile)?;
        run(
            &self.catalog.path(),
            &config,
            self.catalog_mode,
            self.activate,
            self.tokenizer,
            self.format == Format::Json,
        )
    }
}

/// The lazy-tools config of the profile in `dir`, read as `session` reads it: `cordis.yml`
/// with `cordis.patch.yml` applied (whose inserts alone may run the plugin), or a bare
/// `profile.yml`. A profile with none of them measures the zero-config preset.
fn profile_config(dir: &Path, profile: &str) -> Result<Value> {
    let files = [INSTALLED_FILE, PATCH_FILE, "profile.yml"];
    if files.iter().any(|file| dir.join(file).exists()) {
        return plugin_config(Some(dir), "lazy-tools");
    }
    eprintln!(
        "note: profile `{}` has no plugins; measuring lazy-tools' zero-config preset",
        escape(profile)
    );
    Ok(Value::Null)
}

pub fn run(
    catalog_path: &Path,
    config: &Value,
    mode: Option<CatalogMode>,
    activate: usize,
    tokenizer: Tokenizer,
    json_output: bool,
) -> Result<()> {
    let catalog = Catalog::load(catalog_path)?;
    let r = report(&catalog, config, mode, activate, tokenizer)?;
    if json_output {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    let pct = |ratio: f64| format!("{:.1}%", 100.0 * ratio);
    println!(
        "Tool schema tokens per request ({}), {} ({})",
        r.tokenizer,
        escape(&catalog_path.display().to_string()),
        tools(r.catalog_tools)
    );
    println!(
        "  eager (every tool visible)          {:>8}  100.0%",
        r.eager
    );
    println!(
        "  cold start (catalog: {:<6})         {:>8}  {:>6}  ({} visible, catalog text {} tokens)",
        r.catalog_mode,
        r.cold_start,
        pct(r.cold_start_ratio),
        tools(r.visible_tools),
        r.catalog_tokens
    );
    println!(
        "  after activating {:<9}          {:>8}  {:>6}",
        tools(r.activated),
        r.after_activation,
        pct(r.after_activation_ratio)
    );
    println!(
        "  guard schemas ({})  {:>8}",
        SEARCH_GUARDS.join(" + "),
        r.guard_schema_tokens
    );
    if r.cold_start > r.eager {
        println!(
            "  (over 100%: this catalog's schemas cost fewer tokens than lazy-tools' own tools \
             and catalog text add)"
        );
    }
    Ok(())
}

/// `n tools`, or `1 tool`.
fn tools(n: usize) -> String {
    format!("{n} tool{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile whose plugin comes from a `cordis.patch.yml` insert alone runs it in a
    /// session, so its config is the one measured (not the zero-config preset).
    #[test]
    fn a_profile_of_patch_inserts_alone_is_measured_with_its_config() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(profile_config(dir.path(), "p").unwrap(), Value::Null);
        std::fs::write(
            dir.path().join(PATCH_FILE),
            "- insert:\n    - {id: lazy-tools, name: lazy-tools, component: c.wasm, config: {catalog: names}}\n",
        )
        .unwrap();
        assert_eq!(
            profile_config(dir.path(), "p").unwrap(),
            json!({"catalog": "names"})
        );
        // Its problems are the profile's, as `session` says them.
        std::fs::write(
            dir.path().join(PATCH_FILE),
            "- insert: [{id: lazy-tools}]\n",
        )
        .unwrap();
        let err = format!("{:#}", profile_config(dir.path(), "p").unwrap_err());
        assert!(err.contains("cordis.patch.yml:1:"), "{err}");
    }
}
