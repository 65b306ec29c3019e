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

/// The median of `samples` (the upper one of an even count): durations, or
/// signed figures such as per-run differences. Panics on no samples: every
/// bench takes at least one run.
pub fn median<T: Copy + PartialOrd>(samples: &[T]) -> T {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    sorted[sorted.len() / 2]
}
