//! `host-harness bench profile`: reading a large profile (one plugin whose
//! config is a mapping of many keys), against parsing the same YAML with no
//! places and no checks.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use super::timing::{median, repeat};
use crate::profile::{INSTALLED_FILE, Profile};

/// Times `Profile::load_installed` on a generated `cordis.yml` of `keys`
/// config keys.
/// `bench profile`.
#[derive(clap::Args)]
pub struct Args {
    /// Keys in the generated config (124,000 is about 3.1 MB).
    #[arg(long, default_value_t = 124_000)]
    keys: usize,
    /// Reads to time.
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

impl Args {
    pub fn run(self) -> Result<()> {
        run(self.keys, self.runs)
    }
}

pub fn run(keys: usize, runs: usize) -> Result<()> {
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    let dir = tempfile::tempdir().context("creating a temporary profile folder")?;
    let mut text = String::with_capacity(keys * 24 + 100);
    text.push_str("- id: big\n  name: big\n  component: big.wasm\n  config:\n");
    for i in 0..keys {
        text.push_str(&format!("    tool_{i:06}: allowed\n"));
    }
    let path = dir.path().join(INSTALLED_FILE);
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    println!(
        "profile: one plugin row whose config has {keys} keys ({:.1} MB)",
        text.len() as f64 / 1e6
    );

    let raw = repeat(runs, || {
        let value: serde_json::Value =
            serde_saphyr::from_str(&text).context("parsing the generated profile")?;
        std::hint::black_box(value);
        Ok(())
    })?;
    let load = repeat(runs, || {
        let rows = Profile::load_installed(dir.path())
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("reading the generated profile")?;
        std::hint::black_box(rows);
        Ok(())
    })?;
    println!(
        "baseline: serde-saphyr to JSON, no places or checks, median of {runs}: {}",
        ms(median(&raw))
    );
    println!(
        "Profile::load_installed (places, duplicate keys, rows), median of {runs}: {}",
        ms(median(&load))
    );
    Ok(())
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}
