//! Timing helpers shared by the bench commands: every figure is a median of
//! repeated runs.

use std::time::{Duration, Instant};

use anyhow::Result;

/// Runs `f` `runs` times and returns each run's wall time.
pub fn repeat(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<Vec<Duration>> {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            f()?;
            Ok(started.elapsed())
        })
        .collect()
}

/// The median of `samples` (the upper one of an even count). Panics on no
/// samples: every bench takes at least one run.
pub fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}
