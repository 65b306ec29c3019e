//! `host-harness bench verdict`: the pre-execute verdict across the WASM
//! boundary next to the same policy called natively, on one shell state.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::catalog::Catalog;
use crate::commands::args::CatalogArg;
use crate::native_plugin::native_lazy_tools;
use crate::shell::{Shell, core_builtins};
use crate::wasm_host::{EngineOptions, Limits, WasmHost};

/// Per-call medians in nanoseconds, over `samples` batches of `batch` calls.
pub fn median_ns(samples: usize, batch: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..batch {
        f();
    }
    let mut per_call: Vec<f64> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                f();
            }
            start.elapsed().as_nanos() as f64 / batch as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[per_call.len() / 2]
}

/// `bench verdict`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    catalog: CatalogArg,
    /// How deferred tools reach the model: `inject` (the default: loaded
    /// schemas join the tools array) or `dispatch` (a fixed tools array and
    /// the `deferred_tool_call` forwarder).
    #[arg(long, default_value = "inject", value_parser = ["inject", "dispatch"])]
    strategy: String,
}

impl Args {
    pub fn run(self) -> Result<()> {
        run(&self.catalog.path(), &self.strategy)
    }
}

pub fn run(catalog: &Path, strategy: &str) -> Result<()> {
    let catalog = Catalog::load(catalog)?;
    // The preset (every MCP tool deferred) with the strategy asked for.
    let config = serde_json::json!({ "strategy": strategy });
    let component = WasmHost::global().lazy_tools()?;

    let mut shell = Shell::new();
    shell.register_tools(core_builtins())?;
    shell.register_catalog(&catalog)?;
    shell.create_agent("main", None)?;
    // The deadline is checked as in a shell, but it is far: a call descheduled for 50 ms on a
    // loaded machine would end the measurement, not say anything of the verdict's cost.
    shell.set_plugin_limits(bench_limits());
    shell
        .install_plugin("lazy-tools", &component, &config)
        .context("installing the component")?;

    // The native plugin runs over the same registry in a shell of its own, so
    // neither sees the other's allow sets.
    let mut native_shell = Shell::new();
    native_shell.register_tools(core_builtins())?;
    native_shell.register_catalog(&catalog)?;
    native_shell.create_agent("main", None)?;
    let mut native = native_lazy_tools(native_shell.shared_core(), "lazy-tools-native");
    native
        .configure(&config.to_string())
        .map_err(|e| anyhow::anyhow!("native configure: {e:?}"))?;
    native.agent_created("main", None)?;

    let deferred = catalog
        .tools()
        .map(|(_, t)| t.name)
        .next()
        .context("the catalog has no tools")?;
    let visible = "bash";
    let args = "{}";
    if native.pre_execute("main", &deferred) == lazy_tools::Verdict::Pass {
        bail!("`{deferred}` should be deferred under the preset");
    }

    const SAMPLES: usize = 101;
    const BATCH: usize = 2_000;
    println!(
        "pre-execute verdict, {} tools registered, strategy {strategy}, median per call over {SAMPLES} batches of {BATCH}:",
        shell.core().tools().len()
    );
    println!(
        "{:<28} {:>12} {:>12} {:>8}",
        "call", "wasm (ns)", "native (ns)", "ratio"
    );
    for (label, tool) in [
        ("deny (deferred tool)", deferred.as_str()),
        ("pass (visible tool)", visible),
    ] {
        let plugin = shell.plugin_mut("lazy-tools")?;
        let wasm = median_ns(SAMPLES, BATCH, || {
            black_box(plugin.pre_execute("main", tool, args).expect("no trap"));
        });
        let native_ns = median_ns(SAMPLES, BATCH, || {
            black_box(native.pre_execute("main", tool));
        });
        println!(
            "{label:<28} {wasm:>12.0} {native_ns:>12.1} {:>7.0}x",
            wasm / native_ns
        );
    }
    // The same component on an engine without epoch interruption: what the
    // per-call deadline (the epoch checks in the code, setting the deadline)
    // costs the verdict.
    let bare_host = WasmHost::new(EngineOptions {
        epochs: false,
        ..EngineOptions::SHELL
    })?;
    let bare_component = bare_host.load(&component.path)?;
    let mut bare = bare_host.instantiate(
        &bare_component,
        "lazy-tools-bare",
        shell.shared_core(),
        bench_limits(),
    )?;
    if let Err(e) = bare.configure(&config.to_string())? {
        bail!("the component rejects {config}: {e:?}");
    }
    bare.agent_created("main", None)?
        .map_err(|e| anyhow::anyhow!("agent-created: {e}"))?;
    println!(
        "{:<28} {:>12} {:>12} {:>8}",
        "epoch deadline", "with (ns)", "without (ns)", "cost"
    );
    for (label, tool) in [
        ("deny (deferred tool)", deferred.as_str()),
        ("pass (visible tool)", visible),
    ] {
        // Alternate the two, so that machine noise hits both alike.
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let plugin = shell.plugin_mut("lazy-tools")?;
            with.push(median_ns(SAMPLES, BATCH, || {
                black_box(plugin.pre_execute("main", tool, args).expect("no trap"));
            }));
            without.push(median_ns(SAMPLES, BATCH, || {
                black_box(bare.pre_execute("main", tool, args).expect("no trap"));
            }));
        }
        with.sort_by(f64::total_cmp);
        without.sort_by(f64::total_cmp);
        let (with, without) = (with[2], without[2]);
        println!(
            "{label:<28} {with:>12.0} {without:>12.0} {:>+7.1}%",
            (with / without - 1.0) * 100.0
        );
    }
    let call = median_ns(SAMPLES, 200, || {
        black_box(
            shell
                .call("main", &deferred, &Value::Null)
                .expect("no trap"),
        );
    });
    println!(
        "{:<28} {call:>12.0}   (whole shell call: resolve, waterfall)",
        "shell.call, denied"
    );
    println!(
        "component: {} bytes ({}), sha256 {}",
        component.size,
        component.path.display(),
        &component.sha256[..16]
    );
    Ok(())
}

/// The shell's limits with calls allowed ten seconds: the epoch checks cost what they cost
/// whatever the deadline, and a run on a busy machine completes.
fn bench_limits() -> Limits {
    Limits {
        call: Duration::from_secs(10),
        long_call: Duration::from_secs(10),
        ..Limits::default()
    }
}
