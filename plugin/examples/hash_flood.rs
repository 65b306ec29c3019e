//! What words built to share a hash bucket cost a full index build, natively: the words a
//! malicious MCP server could put in its tools' descriptions. The words are found by brute
//! force against rustc-hash's unkeyed FxHash (what the term dictionary used to hash with), so
//! this takes about a minute. Run: `cargo run --release -p lazy-tools --example hash_flood`;
//! run it at an older commit to see the cost before the dictionary's hash was keyed.

use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use lazy_tools::registry::{Origin, Registry, ToolDef, ToolGroup};
use lazy_tools::search::SearchIndex;
use rustc_hash::FxBuildHasher;

/// Words of consonants only (no `s`, `y`), which the English stemmer leaves as they are.
fn word(mut i: u64) -> String {
    const LETTERS: &[u8] = b"bcdfghjkmnpqrtvwxz";
    let mut word = String::from("zq");
    for _ in 0..9 {
        word.push(LETTERS[(i % LETTERS.len() as u64) as usize] as char);
        i /= LETTERS.len() as u64;
    }
    word
}

fn registry(words: &[String]) -> Registry {
    // 2,000 words (24 KB) a description: under the 32 KiB a text that is indexed.
    let tools = words
        .chunks(2_000)
        .enumerate()
        .map(|(i, chunk)| ToolDef {
            name: format!("flood__tool_{i}"),
            description: chunk.join(" "),
            parameters: "{}".into(),
            origin: Origin::Mcp("flood".into()),
        })
        .collect();
    let groups = vec![ToolGroup {
        name: "flood".into(),
        description: "A server.".into(),
    }];
    Registry::new(tools, groups)
}

fn median_build(registry: &Registry) -> Duration {
    let mut times: Vec<Duration> = (0..9)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(SearchIndex::build(registry));
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

fn main() {
    const WORDS: usize = 20_000;
    // A dictionary of 20,000 terms has 32,768 buckets: the low 15 bits choose one.
    const MASK: u64 = (1 << 15) - 1;
    let started = Instant::now();
    let colliding: Vec<String> = (0..)
        .map(word)
        .filter(|w| FxBuildHasher.hash_one(w.as_str()) & MASK == 0)
        .take(WORDS)
        .collect();
    println!(
        "{WORDS} words sharing FxHash's low 15 bits found in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let other: Vec<String> = (0..WORDS as u64).map(|i| word(i * 7_919 + 3)).collect();
    let (flood, plain) = (registry(&colliding), registry(&other));
    let (a, b) = (median_build(&flood), median_build(&plain));
    println!("index build, {WORDS} words built to collide: {a:.1?} (median of 9)");
    println!("index build, {WORDS} other words of the same form: {b:.1?} (median of 9)");
    println!("ratio {:.2}", a.as_secs_f64() / b.as_secs_f64());
}
