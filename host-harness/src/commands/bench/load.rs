//! `host-harness bench load`: loading a component from the precompiled
//! cache against compiling it, and what its checks cost against mapping the
//! code unchecked.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::timing::{median, repeat};
use crate::wasm_host::cache::{CompiledCache, DEFAULT_SETTLE, Verified};
use crate::wasm_host::{WasmHost, hex};

/// Times loading from the precompiled cache against compiling.
/// `bench load`.
#[derive(clap::Args)]
pub struct Args {
    /// The component [default: the lazy-tools component this binary was
    /// built with].
    #[arg(long, value_name = "FILE")]
    component: Option<PathBuf>,
    /// Loads from the cache to time.
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// Compilations to time (each takes seconds).
    #[arg(long, default_value_t = 5)]
    compile_runs: usize,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let component = self
            .component
            .unwrap_or_else(crate::wasm_host::lazy_tools_component_path);
        load(&component, self.runs, self.compile_runs)
    }
}

pub fn load(path: &Path, runs: usize, compile_runs: usize) -> Result<()> {
    if runs == 0 || compile_runs == 0 {
        bail!("--runs and --compile-runs must be at least 1");
    }
    let host = WasmHost::global();
    let bytes = crate::wasm_host::read_component(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    let dir = tempfile::tempdir().context("creating a temporary cache folder")?;
    let cache = CompiledCache::new(dir.path().join("cache"), dir.path().join("cache.key"));
    // The same cache, but never signing the files' identities: every load
    // hashes both files.
    let hashing = cache.clone().with_settle(None);
    println!(
        "component {} ({} KiB, sha256 {})",
        path.display(),
        bytes.len() / 1024,
        &sha256[..16]
    );

    let compile = repeat(compile_runs, || {
        Component::new(host.engine(), &bytes)
            .map(drop)
            .map_err(|e| anyhow::anyhow!("{e:#}"))
            .context("compiling the component")
    })?;
    let started = Instant::now();
    host.load_cached(path, Some(&sha256), &cache)?;
    let first = started.elapsed();
    let entry = cache.entry_path(&sha256, host.engine_key());
    let entry_size = std::fs::metadata(&entry)
        .with_context(|| format!("the cache entry {} was not written", entry.display()))?
        .len();
    // `load_from_disk_cache` skips the in-process map: every run checks,
    // verifies and maps the entry as a new process would. First with both
    // files hashed on every load, then (once they settled and one load
    // signed their identities) as every later load finds them.
    let hashed = repeat(runs, || {
        host.load_from_disk_cache(path, &sha256, &hashing)?
            .map(drop)
            .context("the cache entry was rejected")
    })?;
    std::thread::sleep(DEFAULT_SETTLE);
    let started = Instant::now();
    let signing = cache
        .load(host.engine(), host.engine_key(), &sha256, path)
        .map_err(|e| anyhow::anyhow!("the cache entry was rejected: {e}"))?;
    let signing_took = started.elapsed();
    let trusted = cache
        .load(host.engine(), host.engine_key(), &sha256, path)
        .map_err(|e| anyhow::anyhow!("the cache entry was rejected: {e}"))?;
    if signing.verified != Verified::Hashed || trusted.verified != Verified::ByIdentity {
        bail!(
            "expected a hashed load that signs the identities, then a load by identity; got {:?} then {:?}",
            signing.verified,
            trusted.verified
        );
    }
    let cached = repeat(runs, || {
        host.load_from_disk_cache(path, &sha256, &cache)?
            .map(drop)
            .context("the cache entry was rejected")
    })?;

    // Baselines in the same run: mapping the code with no check at all, and
    // the unkeyed check of cache format 2 (read the code, xxh3-128 it, map
    // it), which a copied or patched entry could pass.
    let code_path = entry.clone();
    let map_only = repeat(runs, || {
        // SAFETY: the entry was written by this process just above.
        unsafe { Component::deserialize_file(host.engine(), &code_path) }
            .map(drop)
            .map_err(|e| anyhow::anyhow!("{e:#}"))
    })?;
    let unkeyed = repeat(runs, || {
        let code = std::fs::read(&code_path)?;
        std::hint::black_box(xxhash_rust::xxh3::xxh3_128(&code));
        // SAFETY: as above.
        unsafe { Component::deserialize_file(host.engine(), &code_path) }
            .map(drop)
            .map_err(|e| anyhow::anyhow!("{e:#}"))
    })?;

    println!(
        "compile (Component::new), median of {compile_runs}: {}",
        ms(median(&compile))
    );
    println!(
        "first load, empty cache (compile + write {} KiB entry): {}",
        entry_size / 1024,
        ms(first)
    );
    println!(
        "baseline: map the code, no check, median of {runs}: {}",
        ms(median(&map_only))
    );
    println!(
        "baseline: format-2 check (read the code, unkeyed xxh3-128, map it), median of {runs}: {}",
        ms(median(&unkeyed))
    );
    println!(
        "load from cache, hashing both files (read the check, MAC the code with the home's key, hash the {} KiB component, map it), median of {runs}: {}",
        bytes.len() / 1024,
        ms(median(&hashed)),
    );
    println!(
        "first load after the files settled ({} s; hashes both, signs their identities into the check): {}",
        DEFAULT_SETTLE.as_secs(),
        ms(signing_took)
    );
    println!(
        "load from cache (read the check and verify its MAC, stat both files against the signed identities, map the code), median of {runs}: {} (min {}, max {})",
        ms(median(&cached)),
        ms(*cached.iter().min().expect("runs >= 1")),
        ms(*cached.iter().max().expect("runs >= 1")),
    );
    println!(
        "speed-up: {:.0}x",
        median(&compile).as_secs_f64() / median(&cached).as_secs_f64()
    );
    Ok(())
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}
