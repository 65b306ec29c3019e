//! Hash maps keyed by text from outside the plugin: tool, group and server names and the words
//! of their descriptions, which an MCP server chooses.
//!
//! rustc-hash's FxHash, the plugin's hasher elsewhere, has no key: anyone can compute offline
//! words that share a bucket. 20,000 words whose FxHash shares its low 15 bits (found by brute
//! force in about 40 s), as the descriptions of ten tools, made a native index build take 113
//! and 125 ms against 12.8 and 12.2 ms for 20,000 other words of the same form, when the term
//! dictionary hashed with FxHash; keyed, 12.7 against 12.5 ms (`cargo run --release -p
//! lazy-tools --example hash_flood`, two runs each).
//! These maps hash with foldhash keyed from the system's random source (WASI's in the
//! component): foldhash's own default seeds come from addresses and the clock, and a
//! component's addresses are the same on every run.

use std::hash::{BuildHasher, RandomState};
use std::sync::LazyLock;

use foldhash::SharedSeed;
use foldhash::fast::{FoldHasher, SeedableRandomState};

/// The process's shared seed, drawn once.
static SHARED_SEED: LazyLock<SharedSeed> =
    LazyLock::new(|| SharedSeed::from_u64(RandomState::new().hash_one(0u8)));

/// foldhash with a random shared seed and a random seed per map.
#[derive(Clone, Debug)]
pub struct Keyed(SeedableRandomState);

impl Default for Keyed {
    fn default() -> Self {
        // std draws its keys from the system once per thread and steps them per `new`.
        let per_map = RandomState::new().hash_one(1u8);
        Self(SeedableRandomState::with_seed(
            per_map,
            LazyLock::force(&SHARED_SEED),
        ))
    }
}

impl BuildHasher for Keyed {
    type Hasher = FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

pub type KeyedMap<K, V> = std::collections::HashMap<K, V, Keyed>;
pub type KeyedSet<T> = std::collections::HashSet<T, Keyed>;

#[cfg(test)]
mod tests {
    use super::*;

    /// What makes precomputed collisions useless: the same name lands elsewhere in each map.
    #[test]
    fn each_map_draws_its_own_keys() {
        let hashes: std::collections::HashSet<u64> = (0..64)
            .map(|_| Keyed::default().hash_one("search_repositories"))
            .collect();
        assert_eq!(hashes.len(), 64);
        let same = Keyed::default();
        assert_eq!(same.hash_one("a"), same.hash_one("a"));
    }
}
